"""Reward plug-ins: load them as kanachan does, apply them to a frame, check the contract.

A reward plug-in is a Python file defining ``get_reward(data, contiguous)``
(kanachan's trainer interface; README.md, "The plug-in contract, and its
traps").  A plug-in is code: it runs only when the user names its file;
rewardlab never scans a folder and executes what it finds.

* :func:`load_plugin` reads the file, compiles it under its real file name
  (tracebacks show the plug-in's own lines) and executes it in a fresh
  namespace holding the names kanachan's trainer has in scope
  (:mod:`rewardlab.contracts.kanachan.trainer_scope`), as kanachan ``exec``-s the text into its
  training module.
* Plug-ins run in a child process by default (:mod:`rewardlab.plugins.isolation`):
  a plug-in that exits, hangs past ``timeout`` or kills its process is
  reported as failing, with what it was doing, never as a pass.
* :func:`apply_plugins` calls each plug-in on the frame's transitions in a
  batch mode (:mod:`rewardlab.plugins.batch_modes`), checks the contract after every
  call (:mod:`rewardlab.contracts.checks`) and adds ``reward_<name>`` (Float64) and
  ``done_<name>`` (Boolean) columns.
* :func:`check_plugin` runs the contract checks in every batch mode with two
  batch sizes and reports whether the rewards depend on how the data was cut.
* A file defining a ``RewardManager`` class (PRLT's reward managers, seed 003)
  is recognised by that class and run the PRLT way over a joint frame
  (:mod:`rewardlab.plugins.managers`: ``reset()`` per trial, then
  ``get_reward(agent, state, joint_action)`` once per agent in agent order
  after every joint step); :func:`apply_plugins` and :func:`check_plugin`
  dispatch to it (:mod:`rewardlab.plugins.manager_check`).

Examples
--------
>>> import rewardlab
>>> frame = rewardlab.load_kanachan("data/sample.tsv.gz", progress=False)  # doctest: +SKIP
>>> frame = rewardlab.apply_plugins(frame, "data/plugins/rank_top.py")  # doctest: +SKIP
>>> print(rewardlab.check_plugin(frame, "data/plugins/rank_top.py"))  # doctest: +SKIP
"""

from rewardlab.core.lazy import install

#: Where each public name lives: ``{module: names}``.  Imported on first use (PEP 562), so
#: ``rewardlab.plugins.batch_modes`` (what the CLI's parser reads) loads without torch.
_EXPORTS = {
    "rewardlab.plugins.apply": ("REWARD_DTYPES", "apply_plugins"),
    "rewardlab.plugins.check": ("CHECK_BATCH_SIZES", "CheckReport", "Difference", "RunSummary", "check_plugin"),
    "rewardlab.plugins.loading": ("Plugin", "load_plugin", "read_plugin", "safe_repr"),
    "rewardlab.plugins.shards": ("split_shards", "run_shards", "stream_shards", "merge_outcomes"),
    "rewardlab.plugins.managers": ("apply_managers", "load_manager"),
    "rewardlab.plugins.manager_check": ("ManagerCheckReport", "check_manager"),
}

install(globals(), _EXPORTS)
