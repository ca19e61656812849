"""A reward family + its constants -> one stand-alone kanachan reward plug-in file.

The file defines ``get_reward(data, contiguous)`` following kanachan's
contract (float64 ``("next", "reward")`` of shape ``[B]``, ``("next",
"done")`` bool ``[B]``), vectorized in torch, and imports only torch, never
rewardlab.  It reproduces :meth:`RewardFamily.get_reward` and
:meth:`RewardFamily.evaluate` bit for bit: the same integer gathers, then
``(raw - mean) / std`` in float64, with every parameter written as a literal
(``repr`` of a float reads back as the same float).

Safety: the generated code holds only fixed text and numbers.  Every value
written as code is checked to be a finite ``int`` or ``float`` (or a tuple of
them) before anything is written; user text (dataset paths, the ``source``
note) appears only in ``#`` comments, escaped to printable ASCII with no line
breaks, so it cannot end the comment.  The file has no module docstring and
defines only ``get_reward`` and names starting with ``_RL_``, because kanachan
runs it with ``exec(text, globals())`` inside its own module: it must not
rely on, or replace, names already there (``torch`` included: it imports
``torch as _RL_torch``).

The file is written atomically and an existing file is replaced only with
``overwrite=True``.

Examples
--------
>>> import rewardlab
>>> from rewardlab.domains.mahjong.families import Ranking
>>> fam = Ranking.from_preset("tenhou_houou_7dan").with_constants_from("data/sample.tsv.gz")  # doctest: +SKIP
>>> rewardlab.export_plugin(fam, "houou.py")  # doctest: +SKIP
PosixPath('houou.py')
"""

from __future__ import annotations

import datetime as _dt
import os
from pathlib import Path

from rewardlab.core.files import atomic_open, check_output
from rewardlab.core.errors import ExportWriteError, FileAccessError, OutputExistsError, ParameterError, RewardlabError
from rewardlab.domains.mahjong.families.presets import FAMILIES
from rewardlab.families.base import RewardFamily
from rewardlab.families.export import check_constants_fit, constants_fit, render_family
from rewardlab.families.rendering import sanitize_comment
from rewardlab.plugins.loading import plugin_name

__all__ = ["export_plugin", "render_plugin", "sanitize_comment", "as_family", "constants_fit",
           "check_constants_fit", "export_target", "plugin_target", "write_text"]

def as_family(family_or_params) -> RewardFamily:
    """A family object from a family or a parameter dataclass instance.

    Examples
    --------
    >>> from rewardlab.domains.mahjong.families import RankingParams
    >>> as_family(RankingParams(vector=(1, 0, 0, -1))).name
    'ranking'
    """
    if isinstance(family_or_params, RewardFamily):
        return family_or_params
    for cls in FAMILIES.values():
        if type(family_or_params) is cls.params_type:
            return cls(family_or_params)
    raise ParameterError("family_or_params", "should be a reward family (e.g. Ranking) or its "
                         "parameters (e.g. RankingParams)", type(family_or_params).__name__)


def render_plugin(family_or_params, *, source: str | None = None,
                  created: _dt.datetime | None = None, keep_constants: bool = False,
                  state: str | None = None) -> str:
    """The text of the plug-in file for a family (see :func:`export_plugin`).

    The family core renders it (:func:`rewardlab.families.export.render_family`:
    the family supplies its formula lines, literals, helpers and body), and
    checks everything before any file is touched: every literal is a finite
    number, the raw and normalized rewards stay within ``±REWARD_LIMIT`` for
    every input the file can receive
    (:func:`rewardlab.families.rendering.check_reward_range`), and constants
    fitted for other parameters are refused unless ``keep_constants``
    (:func:`check_constants_fit`, re-exported from the core with
    :func:`constants_fit`).

    Parameters
    ----------
    family_or_params : RewardFamily or its parameter dataclass
    source : str, optional
        A note for the header (e.g. the notebook or command that made it);
        sanitized into a comment.
    created : datetime, optional
        The time written in the header (default: now, UTC).
    keep_constants : bool, default False
        Export constants fitted (on data or by the wiki's recipe) for other
        parameters as they are; the header says so.
    state : str, optional
        The tuner state file (:meth:`rewardlab.sessions.Session.save_state`)
        the parameters come from; the header names it (sanitized).  Without
        it the header has no ``state:`` line.

    Returns
    -------
    str

    Raises
    ------
    ParameterError
        A value that is not a finite number, a reward out of range (naming
        the parameter), or stale constants.

    Examples
    --------
    >>> from rewardlab.domains.mahjong.families import Ranking
    >>> text = render_plugin(Ranking.from_preset("top"))
    >>> "def get_reward(data, contiguous):" in text, "import rewardlab" in text
    (True, False)
    """
    return render_family(as_family(family_or_params), source=source, created=created,
                         keep_constants=keep_constants, state=state)


def export_plugin(family_or_params, path, *, overwrite: bool = False, source: str | None = None,
                  keep_constants: bool = False) -> Path:
    """Write a family as one stand-alone plug-in file for kanachan (atomic write).

    Parameters
    ----------
    family_or_params : RewardFamily or its parameter dataclass
        E.g. ``Ranking.from_preset("top").with_constants_from(data)`` or
        ``RankingParams(vector=(1, 0, 0, -1))``.
    path : str or Path
        The ``.py`` file to write.
    overwrite : bool, default False
        Replace an existing file (otherwise
        :class:`~rewardlab.core.errors.OutputExistsError`, before anything is
        written).
    source : str, optional
        A note for the header (sanitized into a comment).
    keep_constants : bool, default False
        Export constants fitted for other parameters as they are (see
        :func:`render_plugin`); otherwise they are refused.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    ParameterError
        See :func:`render_plugin`, and a file name the plug-in loader would
        refuse (:func:`plugin_target`); raised before anything is written.
    OutputExistsError
        ``path`` exists and ``overwrite`` is False.
    ExportWriteError
        The operating system refused the write (see :func:`write_text`).

    Examples
    --------
    >>> from rewardlab.domains.mahjong.families import RankingPoints
    >>> export_plugin(RankingPoints.from_preset("mleague"), "/tmp/mleague.py", overwrite=True)  # doctest: +SKIP
    PosixPath('/tmp/mleague.py')
    """
    if not isinstance(overwrite, bool):
        raise ParameterError("overwrite", "should be True or False", overwrite)
    target = plugin_target(path, overwrite=overwrite)
    text = render_plugin(family_or_params, source=source,  # validate everything before touching disk
                         keep_constants=keep_constants)
    write_text(target, text, overwrite=overwrite, shown=path)
    return target


def export_target(path, *, overwrite: bool) -> Path:
    """Validate a file path typed by the user, before any work: the :class:`Path` to write.

    Refused, with messages that echo the text as typed: an empty path, a
    folder (or a name ending in ``/``), and whatever
    :func:`rewardlab.core.files.check_output` refuses (not a regular file, a path
    inside a file, a folder that does not exist or is not writable, an
    existing file without ``overwrite``).  ``~`` stands for the home folder.

    Raises
    ------
    ParameterError, OutputExistsError

    Examples
    --------
    >>> export_target("   ", overwrite=False)
    Traceback (most recent call last):
    rewardlab.core.errors.ParameterError: `path` should name the file to write; it is empty. Received '   '. Type a file name such as 'my_reward.py'.
    """
    if not isinstance(path, (str, Path)):
        raise ParameterError("path", "should be a str or Path", path)
    text = str(path).strip()
    if not text:
        raise ParameterError("path", "should name the file to write; it is empty", str(path),
                             hint="Type a file name such as 'my_reward.py'.")
    target = Path(os.path.expanduser(text))
    if text.endswith(("/", os.sep)) or target.is_dir():
        raise ParameterError("path", "should name a file, not a folder", str(path),
                             hint=f"Add a file name, e.g. {os.path.join(text, 'my_reward.py')!r}.")
    try:  # the rules every output follows: a regular file, in an existing, writable folder
        check_output(target, overwrite=overwrite)
    except OutputExistsError:
        raise OutputExistsError(str(path)) from None
    except FileAccessError as exc:
        raise ParameterError("path", f"cannot be written: {exc.message}", str(path),
                             hint=exc.hint and exc.hint.rstrip(".") + ".") from None
    return target


def plugin_target(path, *, overwrite: bool) -> Path:
    """Validate the path of a plug-in file to write, before any work: :func:`export_target`, and its name.

    A plug-in is named after its file (``reward_<name>`` columns,
    :func:`rewardlab.plugins.loading.plugin_name`), and ``rewardlab apply``,
    ``check-plugin`` and :func:`rewardlab.load_plugin` refuse a file whose
    name is not ``[A-Za-z_][A-Za-z0-9_]*`` once ``-``, ``.`` and spaces are
    turned into ``_`` (``é.py``, ``1abc.py``, ``x'y.py``).  An exporter refuses
    such a path with that same rule, so it never writes a file the loader
    then refuses.

    Raises
    ------
    ParameterError, OutputExistsError

    Examples
    --------
    >>> plugin_target("1abc.py", overwrite=False)
    Traceback (most recent call last):
    rewardlab.core.errors.ParameterError: `path` should name a file the plug-in loader accepts: its name '1abc' (from '1abc.py', with '-', '.' and spaces turned into '_') should match [A-Za-z_][A-Za-z0-9_]*. Received '1abc.py'. Rename it, e.g. 'my_reward.py'.
    """
    target = export_target(path, overwrite=overwrite)
    try:
        plugin_name(target)
    except ParameterError as exc:
        raise ParameterError(
            "path", f"should name a file the plug-in loader accepts: its name {exc.value!r} (from "
            f"{target.name!r}, with '-', '.' and spaces turned into '_') should match [A-Za-z_][A-Za-z0-9_]*",
            str(path), hint="Rename it, e.g. 'my_reward.py'.") from None
    return target


def write_text(target: Path, text: str, *, overwrite: bool, shown=None) -> None:
    """Write ``text`` atomically; an OS error becomes :class:`~rewardlab.core.errors.ExportWriteError`.

    ``shown`` is the path as the user typed it, for the messages (default: ``target``).

    Examples
    --------
    >>> write_text(Path("/tmp/x.py"), "text", overwrite=True)  # doctest: +SKIP
    """
    shown = str(target) if shown is None else str(shown)
    try:
        with atomic_open(target, "w", overwrite=overwrite, compress=None) as f:
            f.write(text)
    except OutputExistsError:
        raise OutputExistsError(shown) from None
    except RewardlabError:
        raise
    except OSError as exc:
        raise ExportWriteError(shown, exc.strerror or str(exc)) from None
