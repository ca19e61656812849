"""core.rows (windows and joins of per-row arrays) and core.lazy (PEP 562 re-exports): results and messages."""

from __future__ import annotations

import numpy as np
import pytest

from rewardlab.core.errors import ParameterError
from rewardlab.core.lazy import install
from rewardlab.core.rows import RowArrays


class Rows(RowArrays):
    row_fields = ("x", "cols")

    def __init__(self, x):
        self.n = len(x)
        self.x = np.asarray(x)
        self.cols = {"sq": np.asarray(x) ** 2}
        self.note = "kept"  # not a row field: carried as it is


def test_window_and_concat_slice_every_row_field_and_keep_the_rest():
    a, b = Rows([1, 2, 3, 4]), Rows([9])
    w = a.window(1, 3)
    assert (w.n, w.x.tolist(), w.cols["sq"].tolist(), w.note) == (2, [2, 3], [4, 9], "kept")
    assert np.shares_memory(w.x, a.x)  # a view, no copy
    both = Rows.concat([w, b])
    assert (both.n, both.x.tolist(), both.cols["sq"].tolist()) == (3, [2, 3, 9], [4, 9, 81])
    assert Rows.concat([a]) is a


def test_window_and_concat_messages():
    with pytest.raises(ParameterError, match=r"`start, stop` should satisfy 0 <= start <= stop <= 4\. "
                                             r"Received \(3, 1\)\."):
        Rows([1, 2, 3, 4]).window(3, 1)
    with pytest.raises(ParameterError, match=r"`parts` should hold at least one arrays object\. Received \[\]\."):
        Rows.concat([])


def test_lazy_exports_import_on_first_use_and_name_what_is_missing():
    namespace = {"__name__": "demo"}
    install(namespace, {"rewardlab.core.columns": ("reward_column",)},
            submodules={"spec": "rewardlab.core.spec"})
    assert namespace["__all__"] == ["spec", "reward_column"]
    assert namespace["__getattr__"]("reward_column")("a") == "reward_a"
    assert "reward_column" in namespace  # kept after the first read
    assert namespace["__getattr__"]("spec").__name__ == "rewardlab.core.spec"
    assert "spec" in namespace["__dir__"]()
    with pytest.raises(AttributeError, match=r"^module 'demo' has no attribute 'nope'$"):
        namespace["__getattr__"]("nope")
