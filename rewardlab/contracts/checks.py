"""The reward plug-in contract as pure checks on tensors and arrays.

kanachan's contract (its trainer's reward plug-in interface): after ``get_reward(data,
contiguous)`` returns, ``data["next", "reward"]`` exists, is a CPU tensor of
shape ``[B]`` or ``[B, 1]`` and dtype float16/32/64; ``data["next", "done"]``
is still a CPU bool tensor of shape ``[B]``; every other field (the IN
fields) is unchanged.  rewardlab adds what kanachan only trusts: rewards are
finite, every episode's last step is still ``done``, and it measures the
rewards' scale (kanachan's wiki advises mean 0 / std 1; whether a contract
asks for it is :func:`rewardlab.contracts.advice.scale_advice`'s question).

Reward terms beside the reward are checked in :mod:`rewardlab.contracts.terms`.

Each check returns ``None`` or a :class:`Violation` with a rule name, a
message that echoes the offending value and the batch-relative row of the
first offending transition; :mod:`rewardlab.plugins.runner` adds the plug-in, the
batch and the transition's source line (and says how it detects in-place
changes to IN fields).

Examples
--------
>>> import torch
>>> from rewardlab.contracts.checks import check_reward
>>> check_reward(torch.zeros(3, dtype=torch.float32), 3) is None
True
>>> check_reward(torch.zeros(3, dtype=torch.int64), 3).rule
'reward_dtype'
"""

from __future__ import annotations

import dataclasses
import math
import numpy as np
import torch

__all__ = [
    "REWARD_KEY",
    "DONE_KEY",
    "REWARD_DTYPES",
    "SCALE_MEAN_LIMIT",
    "SCALE_STD_LIMITS",
    "Violation",
    "RewardScale",
    "scale_masks",
    "tensor_type_problem",
    "key_text",
    "first_change",
    "check_reward",
    "check_float_values",
    "check_done",
    "check_done_form",
    "check_in_fields",
    "changed_in_place",
    "reward_scale",
    "compare_outputs",
    "PRECISION_TOLERANCE",
    "float16_precision",
]

REWARD_KEY = ("next", "reward")
DONE_KEY = ("next", "done")
_REWARD_TEXT = 'data["next", "reward"]'
_DONE_TEXT = 'data["next", "done"]'
#: Reward dtypes kanachan accepts.
REWARD_DTYPES = (torch.float16, torch.float32, torch.float64)

#: The scale warning fires when ``|mean|`` exceeds this ...
SCALE_MEAN_LIMIT = 1.0
#: ... or the standard deviation is outside this range.
SCALE_STD_LIMITS = (0.25, 4.0)


@dataclasses.dataclass(frozen=True)
class Violation:
    """One broken rule of the contract, found in one batch.

    Attributes
    ----------
    rule : str
        Short machine-readable name, e.g. ``"reward_shape"``.
    message : str
        What is wrong, echoing the offending value.
    row : int or None
        Batch-relative row of the first offending transition, when there is one.

    Examples
    --------
    >>> Violation("reward_shape", "data[...] should have shape [B]").row is None
    True
    """

    rule: str
    message: str
    row: int | None = None


def key_text(key) -> str:
    """How a TensorDict key reads in messages.

    Examples
    --------
    >>> key_text(("next", "done")), key_text("sparse")
    ('data["next", "done"]', 'data["sparse"]')
    """
    if isinstance(key, tuple):
        return "data[" + ", ".join(f'"{k}"' for k in key) + "]"
    return f'data["{key}"]'


def first_change(before: torch.Tensor, after: torch.Tensor) -> tuple[int, tuple[int, ...], object, object] | None:
    """The first element (in row-major order) where two same-shape tensors differ.

    Parameters
    ----------
    before, after : torch.Tensor of the same shape ``[B, ...]``

    Returns
    -------
    (row, index_within_row, old, new) or None
        ``row`` is the position along the first dimension; ``old`` and
        ``new`` are Python scalars.

    Examples
    --------
    >>> first_change(torch.tensor([[1, 2], [3, 4]]), torch.tensor([[1, 2], [3, 9]]))
    (1, (1,), 4, 9)
    """
    ne = before != after
    if before.dtype.is_floating_point:
        ne &= ~(torch.isnan(before) & torch.isnan(after))
    hit = torch.nonzero(ne.reshape(-1))
    if not hit.numel():
        return None
    flat = int(hit[0, 0])
    index = np.unravel_index(flat, tuple(before.shape)) if before.dim() else ()
    index = tuple(int(i) for i in index)
    old = before.reshape(-1)[flat].item()
    new = after.reshape(-1)[flat].item()
    return (index[0] if index else 0), index[1:], old, new


def _where(row: int, inner: tuple[int, ...]) -> str:
    return f"batch row {row}" + (f", position {', '.join(map(str, inner))}" if inner else "")


# --------------------------------------------------------------------------
# Per-call checks
# --------------------------------------------------------------------------


def tensor_type_problem(name: str, value) -> str | None:
    """Why ``value`` is not a plain, dense ``torch.Tensor`` (None when it is one).

    kanachan's trainer squeezes and indexes what a plug-in leaves; a tensor
    subclass (``nn.Parameter``, a ``__torch_function__`` wrapper) or a sparse
    tensor behaves differently there, so both are refused.

    Examples
    --------
    >>> tensor_type_problem('data["next", "reward"]', torch.zeros(2)) is None
    True
    >>> tensor_type_problem('data["next", "reward"]', [0.0, 1.0])
    'data["next", "reward"] should be a torch.Tensor; got list'
    >>> tensor_type_problem("r", torch.zeros(2).to_sparse())
    'r should be a dense (strided) torch.Tensor; got layout torch.sparse_coo'
    """
    if not isinstance(value, torch.Tensor):
        return f"{name} should be a torch.Tensor; got {type(value).__name__}"
    if type(value) is not torch.Tensor:
        return (f"{name} should be a plain torch.Tensor; got the subclass "
                f"{type(value).__module__}.{type(value).__qualname__} (convert it with "
                "torch.as_tensor(x).detach() or build the reward as a plain tensor)")
    if value.layout != torch.strided:
        return f"{name} should be a dense (strided) torch.Tensor; got layout {value.layout}"
    return None


def check_reward(reward, batch_size: int, *, returned=None) -> Violation | None:
    """Check ``data["next", "reward"]`` after a call.

    Parameters
    ----------
    reward : torch.Tensor or None
        The value the plug-in left under ``("next", "reward")`` (None: missing).
    batch_size : int
        ``B``, the batch's size.
    returned : object, optional
        What ``get_reward`` returned (used for a hint when the reward is missing).

    Returns
    -------
    Violation or None
        Rules ``reward_missing``, ``reward_type``, ``reward_device``,
        ``reward_dtype``, ``reward_shape``, ``reward_not_finite``.

    Examples
    --------
    >>> check_reward(torch.zeros(4, 2), 4).message
    'data["next", "reward"] should have shape [B] or [B, 1] with B = 4; got [4, 2]'
    """
    name = _REWARD_TEXT
    if reward is None:
        msg = f"{name} is missing; get_reward should set it to a float tensor of shape [B]"
        if isinstance(returned, torch.Tensor):
            msg += (f" (it returned a tensor of shape {list(returned.shape)} instead: assign it, "
                    f'`data["next", "reward"] = ...`, and return None)')
        return Violation("reward_missing", msg)
    return check_float_values(reward, batch_size, name=name, rule="reward")


def check_float_values(value, batch_size: int, *, name: str, rule: str) -> Violation | None:
    """Check a value a plug-in writes as a reward would be: a plain CPU float16/32/64 tensor of shape ``[B]``
    or ``[B, 1]``, finite (the reward, each reward term).

    Parameters
    ----------
    value : object
        What the plug-in left (not None).
    batch_size : int
        ``B``, the batch's size.
    name : str
        How messages write its key (``data["next", "reward"]``).
    rule : str
        The rules' prefix: ``{rule}_type``, ``{rule}_device``, ``{rule}_dtype``, ``{rule}_shape``,
        ``{rule}_not_finite`` (row: the first non-finite one).

    Examples
    --------
    >>> check_float_values(torch.tensor([0.0, float("nan")]), 2, name="r", rule="term").rule
    'term_not_finite'
    """
    bad_type = tensor_type_problem(name, value)
    if bad_type is not None:
        return Violation(f"{rule}_type", bad_type)
    if value.device.type != "cpu":
        return Violation(f"{rule}_device", f"{name} should be on the CPU; got device {value.device}")
    if value.dtype not in REWARD_DTYPES:
        return Violation(f"{rule}_dtype", f"{name} should have dtype float16, float32 or float64; "
                         f"got {value.dtype}")
    if tuple(value.shape) not in ((batch_size,), (batch_size, 1)):
        return Violation(f"{rule}_shape", f"{name} should have shape [B] or [B, 1] with B = "
                         f"{batch_size}; got {list(value.shape)}")
    values = value.detach().reshape(-1).numpy()  # NumPy: no thread pool for a scan
    finite = np.isfinite(values)
    if not finite.all():
        row = int(np.argmin(finite))
        n_bad = int(finite.size - np.count_nonzero(finite))
        return Violation(f"{rule}_not_finite", f"{name} should be finite; got {float(values[row])} at "
                         f"batch row {row} ({n_bad} non-finite value{'s' if n_bad > 1 else ''} in the "
                         "batch)", row)
    return None


def check_done_form(done, batch_size: int) -> Violation | None:
    """Check that ``data["next", "done"]`` is still a CPU bool tensor of shape ``[B]`` (every contract).

    Returns
    -------
    Violation or None
        Rules ``done_missing``, ``done_type``, ``done_device``, ``done_dtype``,
        ``done_shape``.

    Examples
    --------
    >>> check_done_form(torch.zeros(3, dtype=torch.bool), 3) is None
    True
    >>> check_done_form(torch.zeros(3), 3).rule
    'done_dtype'
    """
    name = _DONE_TEXT
    if done is None:
        return Violation("done_missing", f"{name} was removed; it is an IN-OUT field: leave it, or "
                         "set it to a bool tensor of shape [B]")
    bad_type = tensor_type_problem(name, done)
    if bad_type is not None:
        return Violation("done_type", bad_type)
    if done.device.type != "cpu":
        return Violation("done_device", f"{name} should be on the CPU; got device {done.device}")
    if done.dtype != torch.bool:
        return Violation("done_dtype", f"{name} should have dtype torch.bool; got {done.dtype}")
    if tuple(done.shape) != (batch_size,):
        return Violation("done_shape", f"{name} should have shape [B] with B = {batch_size}; got "
                         f"{list(done.shape)}")
    return None


def check_done(done, end_of_game: np.ndarray, end_of_round: np.ndarray) -> Violation | None:
    """Check ``data["next", "done"]`` after a call.

    Parameters
    ----------
    done : torch.Tensor or None
        The value the plug-in left under ``("next", "done")``.
    end_of_game, end_of_round : bool arrays of shape ``[B]``
        The batch's unmodified flags.

    Returns
    -------
    Violation or None
        Rules ``done_missing``, ``done_type``, ``done_device``,
        ``done_dtype``, ``done_shape``, ``done_last_step`` (an episode's last
        step is not done; the message names the ``done = end_of_round`` trap
        when that is what the plug-in did).

    Examples
    --------
    >>> eog = np.array([False, False, True]); eor = np.array([False, True, False])
    >>> check_done(torch.from_numpy(eog.copy()), eog, eor) is None
    True
    >>> "end_of_round" in check_done(torch.from_numpy(eor.copy()), eog, eor).message
    True
    """
    name = _DONE_TEXT
    bad_form = check_done_form(done, int(end_of_game.shape[0]))
    if bad_form is not None:
        return bad_form
    flags = done.detach().numpy()
    missed = end_of_game & ~flags
    if not missed.any():
        return None
    row = int(np.argmax(missed))
    n_missed = int(np.count_nonzero(missed))
    trap = np.array_equal(flags, end_of_round) or (
        bool(end_of_round.any()) and bool(flags[end_of_round].all()))
    msg = (f"{name} is False on the last step of an episode (batch row {row}, where end_of_game "
           f"is True; {n_missed} such row{'s' if n_missed > 1 else ''} in the batch), so the "
           "episode's last trajectory never ends: kanachan never checks done, and its CQL target "
           "r + gamma * Q(next) bootstraps wherever done is False, so at that game end it would "
           "bootstrap from the padding state that stands for the next state")
    if trap:
        msg += ('. This is the `done = end_of_round` trap: in offline data end_of_round is False '
                "on a game's last step (kanachan's simulator sets it there, the annotation files "
                'do not), so OR in end_of_game: `data["next", "done"] = data["next", '
                '"end_of_round"] | data["next", "end_of_game"]`')
    return Violation("done_last_step", msg, row)


def check_in_fields(handed: dict, after: dict) -> Violation | None:
    """Check that the IN fields a plug-in received are still there, as the same values.

    Catches fields removed or replaced by tensors of other values, shapes or
    dtypes (in-place changes to the handed tensors are the runner's business:
    see :func:`changed_in_place`).

    Parameters
    ----------
    handed : dict
        ``{key: tensor}`` of the IN fields as handed to the plug-in.
    after : dict
        ``{key: value}`` of the leaves after the call.

    Returns
    -------
    Violation or None
        Rule ``in_changed``.

    Examples
    --------
    >>> t = torch.zeros(2, 3, dtype=torch.int32)
    >>> check_in_fields({"sparse": t}, {"sparse": t}) is None
    True
    >>> check_in_fields({"sparse": t}, {}).message
    'removed the IN field data["sparse"]; IN fields must not be changed'
    """
    for key, old in handed.items():
        new = after.get(key)
        if new is old:
            continue
        name = key_text(key)
        if new is None:
            return Violation("in_changed", f"removed the IN field {name}; IN fields must not be changed")
        if not isinstance(new, torch.Tensor):
            return Violation("in_changed", f"replaced the IN field {name} with a "
                             f"{type(new).__name__}; IN fields must not be changed")
        if new.shape != old.shape or new.dtype != old.dtype or new.device != old.device:
            return Violation("in_changed", f"replaced the IN field {name} ({old.dtype}, shape "
                             f"{list(old.shape)}) with a {new.dtype} tensor of shape "
                             f"{list(new.shape)} on {new.device}; IN fields must not be changed")
        change = first_change(old, new)
        if change is not None:
            row, inner, was, now = change
            return Violation("in_changed", f"changed the IN field {name} (replaced it with other "
                             f"values): at {_where(row, inner)} {was!r} became {now!r}; IN fields "
                             "must not be changed", row)
    return None


def changed_in_place(key, before: torch.Tensor, after: torch.Tensor) -> Violation | None:
    """Compare an IN field with its pristine copy; a :class:`Violation` at the first change.

    Examples
    --------
    >>> changed_in_place("action", torch.tensor([1, 2]), torch.tensor([1, 5])).row
    1
    """
    change = first_change(before, after)
    if change is None:
        return None
    row, inner, was, now = change
    return Violation("in_changed", f"changed the IN field {key_text(key)} in place: at "
                     f"{_where(row, inner)} {was!r} became {now!r}; IN fields must not be changed",
                     row)


# --------------------------------------------------------------------------
# Whole-run measures
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class RewardScale:
    """Mean and standard deviation of a plug-in's rewards over a whole run.

    kanachan's contract asks for rewards near mean 0 / std 1 (its wiki's
    advice; :func:`rewardlab.contracts.advice.scale_advice` says whether a
    contract asks, :attr:`far` whether a scale is far from it).  Rewards that arrive
    only at the end of a round or game are zero on most transitions, so the
    scale is measured over the transitions that *carry* a reward: those with a
    nonzero reward or that end a trajectory (``done``).  The plain mean and
    std over every transition are kept too.

    Attributes
    ----------
    mean, std : float
        Over the ``count`` transitions with a nonzero reward or ``done``
        (population std; NaN when ``count`` is 0).
    count : int
    mean_all, std_all : float
        Over all ``count_all`` finite rewards.
    count_all : int

    Examples
    --------
    >>> s = reward_scale(np.array([0.0, 0.0, 2.0, 0.0, -2.0]), np.array([0, 0, 1, 0, 1], bool))
    >>> s.mean, s.std, s.count
    (0.0, 2.0, 2)
    >>> s.far
    False
    """

    mean: float
    std: float
    count: int
    mean_all: float
    std_all: float
    count_all: int

    @property
    def far(self) -> bool:
        """True when ``|mean| > SCALE_MEAN_LIMIT`` or ``std`` is outside ``SCALE_STD_LIMITS``."""
        if not self.count or not math.isfinite(self.mean) or not math.isfinite(self.std):
            return True
        low, high = SCALE_STD_LIMITS
        return abs(self.mean) > SCALE_MEAN_LIMIT or not low <= self.std <= high

    def __str__(self) -> str:
        return (f"mean {_num(self.mean)}, std {_num(self.std)} over the {self.count:,} transitions "
                f"with a nonzero reward or done (over all {self.count_all:,} transitions: mean "
                f"{_num(self.mean_all)}, std {_num(self.std_all)})")


def _num(x: float) -> str:
    if not math.isfinite(x):
        return str(x)
    if abs(x) < 5e-10:
        return "0"
    return f"{x:.4g}" if abs(x) < 1e4 else f"{x:,.0f}"


def scale_masks(rewards: np.ndarray, dones: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rewards a :class:`RewardScale` describes: ``(carried, finite)`` masks ``[N]``, the finite rewards
    that carry a signal (nonzero, or on a done step) and every finite reward.

    Examples
    --------
    >>> [m.tolist() for m in scale_masks(np.array([0.0, 0.0, np.nan, 2.0]), np.array([True, False, False, False]))]
    [[True, False, False, True], [True, True, False, True]]
    """
    finite = np.isfinite(rewards)
    return finite & ((rewards != 0) | dones), finite


def reward_scale(rewards: np.ndarray, dones: np.ndarray) -> RewardScale:
    """Measure a run's reward scale (see :class:`RewardScale`).

    Parameters
    ----------
    rewards : float array of shape ``[N]``
        Non-finite values are ignored.
    dones : bool array of shape ``[N]``

    Returns
    -------
    RewardScale

    Examples
    --------
    >>> reward_scale(np.array([0.5, 1.5]), np.array([False, True])).mean_all
    1.0
    """
    rewards = np.asarray(rewards, dtype=np.float64)
    carried, finite = scale_masks(rewards, np.asarray(dones, dtype=bool))

    def stats(mask):
        count = int(mask.sum())
        if not count:
            return math.nan, math.nan, 0
        values = rewards[mask]
        mean = float(values.mean())
        return mean, float(np.sqrt(np.mean((values - mean) ** 2))), count

    mean, std, count = stats(carried)
    mean_all, std_all, count_all = stats(finite)
    return RewardScale(mean, std, count, mean_all, std_all, count_all)


#: float16 rounding larger than this fraction of the rewards' spread is worth a warning.
PRECISION_TOLERANCE = 1e-3


def float16_precision(rewards: np.ndarray, *, tolerance: float = PRECISION_TOLERANCE) -> str | None:
    """Whether float16 rewards (as the trainer receives them) lost precision that matters.

    float16 keeps 11 significant bits: a value ``v`` with ``2**e <= |v| <
    2**(e+1)`` is rounded by up to ``2**(e-11)``.  The rounding at the largest
    reward is compared with the spread of the nonzero rewards (their standard
    deviation; their magnitude when they are all equal): above ``tolerance``
    of it, normalized rewards are off by more than that fraction of a standard
    deviation, and distinct values nearer than the rounding collapse.  From
    ``|v| >= 2048`` on, float16 cannot even hold every integer.

    Parameters
    ----------
    rewards : float array of shape ``[N]``
        The rewards as the plug-in returned them (float16 values; NaN ignored).
    tolerance : float
        The largest acceptable rounding, as a fraction of the spread.

    Returns
    -------
    str or None
        What was lost, or None.

    Examples
    --------
    >>> float16_precision(np.array([0.0, 1.0, -1.0, 0.5])) is None
    True
    >>> float16_precision(np.array([3000.0, 3002.0, 3004.0])).startswith("float16 rounds rewards near |r| = 3004")
    True
    """
    values = np.asarray(rewards, dtype=np.float64)
    values = values[np.isfinite(values) & (values != 0)]
    if not values.size:
        return None
    top = float(np.abs(values).max())
    exponent = max(math.floor(math.log2(top)), -14)  # below 2**-14 float16 is subnormal
    rounding = 2.0 ** (exponent - 11)
    spread = float(values.std()) or top
    problems = []
    if rounding > tolerance * spread:
        problems.append(f"float16 rounds rewards near |r| = {top:.6g} by up to {rounding:.3g} "
                        f"(it keeps 11 significant bits), {rounding / spread:.2%} of their spread "
                        f"{spread:.4g} (tolerance {tolerance:.2%}): distinct rewards closer than "
                        "that collapse and normalized values are off by that much")
    elif top >= 2048:
        problems.append(f"float16 rewards reach |r| = {top:.6g}, where float16 cannot hold every "
                        f"integer (steps of {2 * rounding:g})")
    if not problems:
        return None
    return "; ".join(problems) + (". Return float32 or float64 rewards, or scale them down before "
                                  "casting to float16")


def compare_outputs(rewards_a: np.ndarray, dones_a: np.ndarray, rewards_b: np.ndarray,
                    dones_b: np.ndarray, *, rtol: float = 1e-7, atol: float = 1e-9) -> dict:
    """Where two runs' rewards and dones disagree.

    Parameters
    ----------
    rewards_a, rewards_b : float arrays of shape ``[N]``
        NaN equals NaN.
    dones_a, dones_b : bool arrays of shape ``[N]``
    rtol, atol : float
        Rewards agree when ``|a - b| <= atol + rtol * |b|``.

    Returns
    -------
    dict
        ``rewards`` and ``dones`` (counts of differing rows), ``max_abs``
        (largest ``|a - b|`` over finite pairs, 0.0 if none), ``first_row``
        (the first row where either differs, or None).

    Examples
    --------
    >>> compare_outputs(np.array([0.0, 1.0]), np.array([0, 1], bool),
    ...                 np.array([0.0, 1.5]), np.array([0, 1], bool))
    {'rewards': 1, 'dones': 0, 'max_abs': 0.5, 'first_row': 1}
    """
    ra = np.asarray(rewards_a, dtype=np.float64)
    rb = np.asarray(rewards_b, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        reward_diff = ~np.isclose(ra, rb, rtol=rtol, atol=atol, equal_nan=True)
        absdiff = np.abs(ra - rb)
    done_diff = np.asarray(dones_a, bool) != np.asarray(dones_b, bool)
    either = reward_diff | done_diff
    finite = np.isfinite(absdiff)
    max_abs = float(absdiff[reward_diff & finite].max()) if (reward_diff & finite).any() else 0.0
    first = int(np.argmax(either)) if either.any() else None
    return {"rewards": int(reward_diff.sum()), "dones": int(done_diff.sum()), "max_abs": max_abs,
            "first_row": first}
