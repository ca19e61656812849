"""How a file that is not a sound dataset is refused: the hints and errors the storage modules share.

Every refusal is a :class:`~rewardlab.core.errors.DataFormatError` naming the
file and a rule (``damaged_file``, ``null_values``, ...) with a hint saying
what to do; the layout, inspection, reading and verification modules build
them here so that one failure reads the same whichever path met it.

Examples
--------
>>> from pathlib import Path
>>> damaged_error(Path("d.parquet"), ValueError("bad\\npage")).message
'the file is damaged or truncated (bad page); no data was loaded'
"""

from __future__ import annotations

from pathlib import Path

from rewardlab.core.errors import DataFormatError
from rewardlab.sources.registry import looks_like

__all__ = ["DATASET_HINT", "DAMAGED_HINT", "EMPTY_HINT", "one_line", "is_empty", "damaged_error", "refuse_nulls",
           "looks_hint"]

#: The hint of a file that is not the dataset it should be: how datasets are made.
DATASET_HINT = "Create datasets with `rewardlab convert` (or rewardlab.dataset.write_dataset)."
#: The hint of a damaged file: convert it again.
DAMAGED_HINT = ("Its bytes are not what was written: convert the source files again (or restore "
                "the file from a copy) and remove the damaged one.")
#: The hint of an empty file: a write that did not finish.
EMPTY_HINT = ("The file is empty (a write that did not finish?): convert the source files again "
              "and remove it.")


def is_empty(path: Path) -> bool:
    """True when ``path`` is a file of 0 bytes (False when it cannot be read).

    Examples
    --------
    >>> is_empty(Path("no such file"))
    False
    """
    try:
        return path.stat().st_size == 0
    except OSError:
        return False


def one_line(exc: BaseException) -> str:
    """An exception's text on one line (pyarrow and Polars messages can span several).

    Examples
    --------
    >>> one_line(ValueError("a\\n  b")), one_line(ValueError())
    ('a b', 'ValueError')
    """
    return " ".join(str(exc).split()) or type(exc).__name__


def damaged_error(path: Path, exc: BaseException, *, hint: str = DAMAGED_HINT) -> DataFormatError:
    """The error (rule ``damaged_file``) of a file whose bytes do not decode: ``exc`` is what the reader raised.

    Examples
    --------
    >>> damaged_error(Path("d.arrow"), OSError("truncated")).rule
    'damaged_file'
    """
    return DataFormatError(path, None, None, "damaged_file",
                           f"the file is damaged or truncated ({one_line(exc)}); no data was loaded",
                           hint=hint)


def refuse_nulls(path: Path, name: str, outer: int, inner: int) -> None:
    """Refuse ``outer`` null values of column ``name``, or ``inner`` ones inside its arrays (rule ``null_values``).

    Examples
    --------
    >>> refuse_nulls(Path("d.parquet"), "seat", 0, 0)  # none: nothing to refuse
    >>> try:
    ...     refuse_nulls(Path("d.parquet"), "sparse", 0, 2)
    ... except DataFormatError as exc:
    ...     print(exc.message)
    column 'sparse' has 2 null values inside its arrays
    """
    if outer or inner:
        raise DataFormatError(path, None, None, "null_values",
                              f"column {name!r} has {outer or inner} null values"
                              + ("" if outer else " inside its arrays"), hint=DATASET_HINT)


def looks_hint(path: Path) -> str | None:
    """What the file looks like when another format claims it, and what to pass (for the dataset reader's errors).

    Examples
    --------
    >>> looks_hint(Path("no such file")) is None
    True
    """
    looks = looks_like(path, besides=("dataset",)) if path.is_file() else None
    return None if looks is None else looks[0].upper() + looks[1:] + "."
