"""The optional extras: the exact command that installs one, and the one message for a missing package.

``make lab`` installs rewardlab with the ``lab`` extra only (JupyterLab and
the widgets); the optional sources and engines need packages of their own,
listed as extras in ``pyproject.toml`` (:data:`EXTRAS`).  Every place that
finds such a package missing raises :func:`missing_extra`'s error, whose
message names the extra and the command to type, for the Python running now:

- in a repository checkout (``make`` or ``pip install -e .``: a
  ``pyproject.toml`` beside the ``rewardlab`` package), the editable install
  of that checkout with the extra, ``cd REPO && .venv/bin/pip install -e
  '.[gym]'`` (the venv's own ``pip``, written relative to the checkout when
  the venv is inside it);
- otherwise (rewardlab installed from a wheel), the extra's pinned packages
  as this install's metadata lists them (``pip install 'gymnasium==1.4.0'``),
  so the command never fetches a different ``rewardlab``.

Examples
--------
>>> cmd = install_command("gym", root=Path("/src/rewardlab"), pip=Path("/src/rewardlab/.venv/bin/pip"))
>>> cmd
"cd /src/rewardlab && .venv/bin/pip install -e '.[gym]'"
>>> print(missing_extra("rewardlab.record", "Gymnasium", "gym", command=cmd))
rewardlab.record needs Gymnasium. Install rewardlab's optional 'gym' extra into this Python: cd /src/rewardlab && .venv/bin/pip install -e '.[gym]' (then restart Python; in a notebook, restart the kernel).
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

from rewardlab.core.errors import ParameterError, check_choice

__all__ = ["EXTRAS", "source_root", "pip_command", "install_command", "extra_requirements", "extra_hint",
           "missing_extra", "import_extra"]

#: The extras ``pyproject.toml`` declares (``tests/test_setup_paths.py`` checks they agree).
EXTRAS = ("lab", "gym", "test", "ray", "rllib", "minari", "retro", "pettingzoo", "rllib-data")

#: The package folder (``.../rewardlab``); its parent is a checkout when it holds ``pyproject.toml``.
_PACKAGE = Path(__file__).resolve().parents[1]


def source_root() -> Path | None:
    """The repository checkout this rewardlab runs from (editable install), or None for an installed wheel.

    Examples
    --------
    >>> root = source_root()
    >>> root is None or (root / "pyproject.toml").is_file()
    True
    """
    root = _PACKAGE.parent
    return root if (root / "pyproject.toml").is_file() else None


def pip_command(*, root: Path | None = None) -> str:
    """How to run pip for the Python running now: its venv's ``pip``, else ``PYTHON -m pip``.

    A venv inside ``root`` is written relative to it (``.venv/bin/pip``), for
    a command that starts with ``cd ROOT``.

    Examples
    --------
    >>> pip_command().endswith(("pip", "-m pip"))
    True
    """
    pip = Path(sys.prefix) / "bin" / "pip"
    if sys.prefix == sys.base_prefix or not pip.is_file():  # no venv of its own: the interpreter's pip module
        return f"{shlex.quote(sys.executable)} -m pip"
    return _shown(pip, root)


def _shown(path: Path, root: Path | None) -> str:
    if root is not None and path.is_relative_to(root):
        return shlex.quote(str(path.relative_to(root)))
    return shlex.quote(str(path))


def install_command(extra: str | None, *, root: Path | None = ..., pip: Path | str | None = None) -> str:
    """The command that installs rewardlab's optional ``extra`` into the Python running now.

    Parameters
    ----------
    extra : str or None
        One of :data:`EXTRAS`; None: rewardlab and its own dependencies only.
    root : Path or None, optional
        The checkout to install from (default: :func:`source_root`); None:
        an installed wheel, whose extra is installed as its pinned packages.
    pip : Path or str, optional
        The pip to run (default: :func:`pip_command`); a path inside
        ``root`` is written relative to it.

    Returns
    -------
    str
        One shell command line.

    Raises
    ------
    ParameterError
        ``extra`` is not one of :data:`EXTRAS`.

    Examples
    --------
    >>> install_command("minari", root=Path("/src/rl lab"), pip="python3.11 -m pip")
    "cd '/src/rl lab' && python3.11 -m pip install -e '.[minari]'"
    >>> install_command(None, root=Path("/src/rl"), pip=Path("/venvs/rl/bin/pip"))
    'cd /src/rl && /venvs/rl/bin/pip install -e .'
    """
    if extra is not None:
        check_choice("extra", extra, EXTRAS)
    if root is ...:
        root = source_root()
    if pip is None:
        shown_pip = pip_command(root=root)
    else:
        shown_pip = _shown(pip, root) if isinstance(pip, Path) else pip
    if root is not None:
        target = "." if extra is None else f"'.[{extra}]'"
        return f"cd {shlex.quote(str(root))} && {shown_pip} install -e {target}"
    packages = ["rewardlab"] if extra is None else extra_requirements(extra)
    return f"{shown_pip} install " + " ".join(shlex.quote(p) for p in packages)


def extra_requirements(extra: str) -> list[str]:
    """The requirements ``extra`` adds, as this install's metadata lists them (pins included).

    Examples
    --------
    >>> extra_requirements("gym")  # doctest: +SKIP
    ['gymnasium==1.4.0']
    """
    import importlib.metadata  # only when a message needs it: the CLI's parser imports this module

    check_choice("extra", extra, EXTRAS)
    try:
        requires = importlib.metadata.requires("rewardlab") or []
    except importlib.metadata.PackageNotFoundError:
        return [f"rewardlab[{extra}]"]
    marker = re.compile(r"""\s*;\s*extra\s*==\s*["']""" + re.escape(extra) + r"""["']\s*$""")
    found = [marker.split(r)[0].strip() for r in requires if marker.search(r)]
    return found or [f"rewardlab[{extra}]"]


def missing_extra(what: str, package: str, extra: str | None, *, command: str | None = None) -> ImportError:
    """The error for ``what`` needing ``package``, which ``extra`` installs: names the extra and the command.

    Parameters
    ----------
    what : str
        What needs the package, as the user met it ("rewardlab.record",
        "Reading a Minari dataset's HDF5 storage").
    package : str
        The package, as people know it ("Gymnasium", "h5py").
    extra : str or None
        The extra that installs it; None: a dependency of rewardlab itself
        (a broken install).
    command : str, optional
        Default: :func:`install_command` for ``extra``.

    Returns
    -------
    ImportError
        To raise (``from None``); its ``name`` is ``package``.

    Examples
    --------
    >>> err = missing_extra("Reading Arrow storage", "pyarrow", None, command="pip install -e .")
    >>> print(err)
    Reading Arrow storage needs pyarrow, which rewardlab itself depends on. Reinstall rewardlab into this Python: pip install -e . (then restart Python; in a notebook, restart the kernel).
    """
    if not isinstance(what, str) or not what:
        raise ParameterError("what", "should be a non-empty string", what)
    if extra is None:
        return ImportError(f"{what} needs {package}, which rewardlab itself depends on. "
                           f"{extra_hint(None, command=command)}.", name=package)
    return ImportError(f"{what} needs {package}. {extra_hint(extra, command=command)}.", name=package)


def extra_hint(extra: str | None, *, command: str | None = None) -> str:
    """What to do when ``extra`` is missing: the command, for a message (no final period).

    Parameters
    ----------
    extra : str or None
        One of :data:`EXTRAS`; None: reinstall rewardlab itself.
    command : str, optional
        Default: :func:`install_command` for ``extra``.

    Examples
    --------
    >>> extra_hint("ray", command="pip install -e '.[ray]'")
    "Install rewardlab's optional 'ray' extra into this Python: pip install -e '.[ray]' (then restart Python; in a notebook, restart the kernel)"
    """
    if extra is not None:
        check_choice("extra", extra, EXTRAS)
    command = install_command(extra) if command is None else command
    what = "Reinstall rewardlab" if extra is None else f"Install rewardlab's optional {extra!r} extra"
    return f"{what} into this Python: {command} (then restart Python; in a notebook, restart the kernel)"


def import_extra(module: str, *, extra: str | None, what: str, package: str | None = None):
    """Import ``module`` (e.g. ``"lz4.frame"``), or raise :func:`missing_extra`'s error.

    Parameters
    ----------
    module : str
        The module to import.
    extra : str or None
        The extra that installs it (None: a dependency of rewardlab itself).
    what : str
        What needs it, for the message.
    package : str, optional
        The package's name in the message (default: ``module``'s top level).

    Returns
    -------
    module

    Examples
    --------
    >>> import_extra("json", extra="rllib", what="Reading RLlib's JSON lines").__name__
    'json'
    """
    try:  # through ``__import__``, as an ``import`` statement would (an import hook sees it)
        __import__(module)
    except ImportError:
        raise missing_extra(what, package or module.split(".")[0], extra) from None
    return sys.modules[module]
