"""Loading plug-in files: names, errors with file and line, the plug-in's own traceback."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from rewardlab.core.errors import ParameterError, PluginLoadError
from rewardlab.plugins import Plugin, load_plugin

GOOD = """\
import torch


def get_reward(data, contiguous):
    data["next", "reward"] = torch.zeros(data.batch_size, dtype=torch.float64)
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_load_good_plugin(tmp_path):
    path = write(tmp_path, "zero.py", GOOD)
    plugin = load_plugin(path)
    assert isinstance(plugin, Plugin)
    assert plugin.name == "zero"
    assert plugin.path == path
    assert plugin.source == GOOD
    assert plugin.line == 4
    assert plugin.reads_contiguous is False
    assert callable(plugin.get_reward)
    assert "source" not in repr(plugin) and "zero" in repr(plugin)
    with pytest.raises(AttributeError):
        plugin.name = "other"  # frozen


def test_each_load_gets_a_fresh_namespace(tmp_path):
    path = write(tmp_path, "count.py", GOOD + "CALLS = []\n")
    a, b = load_plugin(path), load_plugin(path)
    a.get_reward.__globals__["CALLS"].append(1)
    assert b.get_reward.__globals__["CALLS"] == []
    assert a.get_reward.__globals__["__file__"] == str(path)


@pytest.mark.parametrize("stem, name", [("my-reward", "my_reward"), ("rank.top", "rank_top"),
                                        ("with space", "with_space"), ("_x1", "_x1")])
def test_name_from_file_stem(tmp_path, stem, name):
    assert load_plugin(write(tmp_path, stem + ".py", GOOD)).name == name


def test_invalid_stem_is_rejected_with_a_hint(tmp_path):
    path = write(tmp_path, "2nd-try.py", GOOD)
    with pytest.raises(ParameterError) as info:
        load_plugin(path)
    assert str(info.value) == (
        "`name` should match [A-Za-z_][A-Za-z0-9_]* (it comes from the file name '2nd-try.py', with "
        "'-', '.' and spaces turned into '_'). Received '2nd_try'. Rename the file or pass name=... "
        "to load_plugin().")
    assert load_plugin(path, name="second_try").name == "second_try"


def test_explicit_name_is_validated(tmp_path):
    with pytest.raises(ParameterError, match=r"`name` should match .* Received 'a-b'"):
        load_plugin(write(tmp_path, "ok.py", GOOD), name="a-b")


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(PluginLoadError) as info:
        load_plugin(tmp_path / "absent.py")
    assert str(info.value) == f"plug-in 'absent' ({tmp_path / 'absent.py'}): no such file"
    with pytest.raises(ParameterError) as info:
        load_plugin(tmp_path)
    assert "`path` should name a plug-in file, not a folder (plug-ins are code and run only when " \
           "named one by one)" in str(info.value)
    with pytest.raises(ParameterError, match="`path` should be a str or path-like"):
        load_plugin(3)


def test_syntax_error_names_file_and_line(tmp_path):
    path = write(tmp_path, "broken.py", """\
        import torch

        def get_reward(data, contiguous)
            pass
        """)
    with pytest.raises(PluginLoadError) as info:
        load_plugin(path)
    err = info.value
    assert err.line == 3
    assert str(err).startswith(f"plug-in 'broken' ({path}, line 3): does not parse: expected ':'")
    assert f'File "{path}", line 3' in err.plugin_traceback
    assert "def get_reward(data, contiguous)" in err.plugin_traceback
    assert "^" in err.plugin_traceback


def test_not_utf8(tmp_path):
    path = tmp_path / "latin.py"
    path.write_bytes(b"x = 1\n# caf\xe9\n")
    with pytest.raises(PluginLoadError) as info:
        load_plugin(path)
    assert "is not UTF-8 text" in str(info.value) and info.value.line == 2


def test_exception_on_import_keeps_the_plugins_traceback(tmp_path):
    path = write(tmp_path, "raises.py", """\
        import torch

        def _table():
            return {"a": 1}["missing"]

        TABLE = _table()

        def get_reward(data, contiguous):
            pass
        """)
    with pytest.raises(PluginLoadError) as info:
        load_plugin(path)
    err = info.value
    assert str(err).startswith(f"plug-in 'raises' ({path}, line 4): raised KeyError while loading: "
                               "'missing'")
    tb = err.plugin_traceback
    assert tb.startswith("Traceback (most recent call last):")
    assert f'File "{path}", line 6, in <module>' in tb
    assert f'File "{path}", line 4, in _table' in tb
    assert "rewardlab" not in tb.replace(str(tmp_path), "")  # rewardlab's own frames are dropped
    assert "KeyError: 'missing'" in tb


def test_import_error_of_a_missing_module(tmp_path):
    path = write(tmp_path, "needs.py", "import no_such_module_xyz\n" + GOOD)
    with pytest.raises(PluginLoadError) as info:
        load_plugin(path)
    assert "raised ModuleNotFoundError while loading: No module named 'no_such_module_xyz'" in str(info.value)
    assert info.value.line == 1


def test_missing_get_reward_suggests_a_close_name(tmp_path):
    path = write(tmp_path, "typo.py", """\
        import torch


        def get_rewards(data, contiguous):
            pass
        """)
    with pytest.raises(PluginLoadError) as info:
        load_plugin(path)
    assert str(info.value) == (
        f"plug-in 'typo' ({path}): defines no `get_reward`; a reward plug-in must define "
        "`def get_reward(data, contiguous)`; did you mean `get_rewards` (line 4)?")
    path = write(tmp_path, "empty.py", "x = 1\n")
    with pytest.raises(PluginLoadError) as info:
        load_plugin(path)
    assert str(info.value).endswith("must define `def get_reward(data, contiguous)`")


def test_get_reward_not_callable(tmp_path):
    path = write(tmp_path, "value.py", "import torch\n\nget_reward = 3\n")
    with pytest.raises(PluginLoadError) as info:
        load_plugin(path)
    assert str(info.value) == (f"plug-in 'value' ({path}, line 3): `get_reward` should be a "
                               "function; it is a int (3)")


@pytest.mark.parametrize("params, shown", [
    ("data", "(data)"),
    ("data, contiguous, extra", "(data, contiguous, extra)"),
    ("", "()"),
    ("data, *, contiguous", "(data, *, contiguous)"),
])
def test_get_reward_with_wrong_parameters(tmp_path, params, shown):
    path = write(tmp_path, "params.py", f"import torch\n\n\ndef get_reward({params}):\n    pass\n")
    with pytest.raises(PluginLoadError) as info:
        load_plugin(path)
    assert str(info.value) == (
        f"plug-in 'params' ({path}, line 4): `get_reward` should accept exactly two parameters, "
        "(data, contiguous), as kanachan calls get_reward(data, contiguous); it is defined as "
        f"get_reward{shown}")


@pytest.mark.parametrize("params", ["data, contiguous", "td, flag", "data, contiguous=False",
                                    "*args", "data, contiguous, extra=None"])
def test_accepted_signatures(tmp_path, params):
    path = write(tmp_path, "sig.py", f"def get_reward({params}):\n    pass\n")
    assert load_plugin(path).line == 1


@pytest.mark.parametrize("body, reads", [
    ("    return None", False),
    ("    if contiguous:\n        pass", True),
    ("    _helper(data, contiguous)", True),
    ("    f = lambda: contiguous\n    f()", True),
    ("    [x for x in range(2) if contiguous]", True),
    ("    contiguous = True", False),
    ("    data['contiguous'] = 1", False),
])
def test_reads_contiguous_from_the_code(tmp_path, body, reads):
    text = f"def _helper(d, c):\n    return c\n\n\ndef get_reward(data, contiguous):\n{body}\n"
    assert load_plugin(write(tmp_path, "c.py", text)).reads_contiguous is reads


def test_reads_contiguous_with_other_parameter_names_and_decorators(tmp_path):
    text = """\
        import functools

        def logged(f):
            @functools.wraps(f)
            def wrapper(*args):
                return f(*args)
            return wrapper

        @logged
        def get_reward(td, is_episode):
            return td
        """
    plugin = load_plugin(write(tmp_path, "d.py", text))
    assert plugin.reads_contiguous is False  # unwrapped to the real function
    assert plugin.line == 10
    text = "class R:\n    def __call__(self, data, contiguous):\n        return contiguous\n\nget_reward = R()\n"
    assert load_plugin(write(tmp_path, "e.py", text)).reads_contiguous is True
    text = "def get_reward(*args):\n    return None\n"
    assert load_plugin(write(tmp_path, "f.py", text)).reads_contiguous is True  # cannot tell


def test_plugin_may_define_dataclasses_and_annotations(tmp_path):
    text = """\
        from __future__ import annotations
        import dataclasses
        import torch
        from tensordict import TensorDict

        @dataclasses.dataclass
        class Config:
            scale: float = 2.0

        def get_reward(data: TensorDict, contiguous: bool) -> None:
            data["next", "reward"] = torch.zeros(data.batch_size) * Config().scale
        """
    assert load_plugin(write(tmp_path, "dc.py", text)).name == "dc"
