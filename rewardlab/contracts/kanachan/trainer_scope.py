"""The names kanachan's trainer puts in a reward plug-in's scope, and which ones a file relies on.

kanachan's ``cql/train.py`` loads a plug-in with ``exec(text, globals())``:
the file runs inside the training module, so every name that module defines
or imports at its top (``torch``, ``Tensor``, ``TensorDict``, ``math``, ...)
is already in scope.  A file that uses ``torch`` without ``import torch``
therefore runs in the trainer (the wiki's raw-points example does this) and
fails anywhere else with ``NameError``.

:func:`trainer_globals` gives the names rewardlab can provide, with the same
values; :data:`UNAVAILABLE` lists the trainer's names that need packages
rewardlab does not install (Hydra, OmegaConf, TensorBoard, kanachan itself).
:func:`names_from_trainer` reads a file's symbol tables (no execution) and
says which names it reads from that scope without binding them itself: such
a file works in the trainer but is not self-contained.

Examples
--------
>>> from rewardlab.contracts.kanachan.trainer_scope import names_from_trainer
>>> names_from_trainer("def get_reward(data, contiguous):\\n    data['next', 'reward'] = torch.zeros(1)\\n")
('torch',)
>>> names_from_trainer("import torch\\ndef get_reward(data, contiguous):\\n    torch.zeros(1)\\n")
()
"""

from __future__ import annotations

import builtins
import datetime
import logging
import math
import os
import re
import symtable
import sys
import warnings
from pathlib import Path
from typing import Callable

import torch
import torch.distributed as dist
import torch.optim.lr_scheduler as lr_scheduler
from tensordict import TensorDict
from tensordict.nn import TensorDictModule, TensorDictSequential
from torch import Tensor, nn
from torch.nn.parallel import DistributedDataParallel
from torch.optim import Optimizer

from rewardlab.sources.kanachan import schema as S
__all__ = ["TRAINER_NAMES", "UNAVAILABLE", "trainer_globals", "names_from_trainer"]

#: Top-level names of kanachan's ``kanachan/training/cql/train.py`` (branch v2) that
#: rewardlab provides, with the statement that binds them there.
TRAINER_NAMES = {
    "re": "import re",
    "datetime": "import datetime",
    "math": "import math",
    "Path": "from pathlib import Path",
    "os": "import os",
    "logging": "import logging",
    "sys": "import sys",
    "Callable": "from typing import Callable",
    "torch": "import torch",
    "Tensor": "from torch import Tensor",
    "nn": "from torch import nn",
    "DistributedDataParallel": "from torch.nn.parallel import DistributedDataParallel",
    "Optimizer": "from torch.optim import Optimizer",
    "lr_scheduler": "import torch.optim.lr_scheduler as lr_scheduler",
    "GradScaler": "from torch.cuda.amp import GradScaler",
    "init_process_group": "from torch.distributed import init_process_group",
    "ReduceOp": "from torch.distributed import ReduceOp",
    "all_reduce": "from torch.distributed import all_reduce",
    "TensorDict": "from tensordict import TensorDict",
    "TensorDictModule": "from tensordict.nn import TensorDictModule",
    "TensorDictSequential": "from tensordict.nn import TensorDictSequential",
    "MAX_NUM_ACTIVE_SPARSE_FEATURES": "from kanachan.constants import MAX_NUM_ACTIVE_SPARSE_FEATURES",
    "MAX_NUM_ACTION_CANDIDATES": "from kanachan.constants import MAX_NUM_ACTION_CANDIDATES",
    "SnapshotWriter": "SnapshotWriter = Callable[[int | None], None]",
}

#: Top-level names of the trainer that need packages rewardlab does not install; a
#: plug-in that reads one fails in rewardlab (and should not rely on them anyway).
UNAVAILABLE = {
    "DictConfig": "from omegaconf import DictConfig",
    "hydra": "import hydra",
    "HydraConfig": "from hydra.core.hydra_config import HydraConfig",
    "SummaryWriter": "from torch.utils.tensorboard.writer import SummaryWriter",
    "get_distributed_environment": "from kanachan.training.common import get_distributed_environment",
    "get_gradient": "from kanachan.training.common import get_gradient",
    "is_gradient_nan": "from kanachan.training.common import is_gradient_nan",
    "kanachan": "import kanachan.training.cql.config",
    "DataLoader": "from kanachan.training.core.offline_rl import DataLoader",
    "EpisodeReplayBuffer": "from kanachan.training.core.offline_rl import EpisodeReplayBuffer",
    "Encoder": "from kanachan.nn import Encoder",
    "QRDecoder": "from kanachan.nn import QRDecoder",
    "QDecoder": "from kanachan.nn import QDecoder",
    "DecodeConverter": "from kanachan.nn import DecodeConverter",
    "compute_td_error": "from kanachan.nn.qr_decoder import compute_td_error",
    "dump_object": "from kanachan.model_loader import dump_object",
    "dump_model": "from kanachan.model_loader import dump_model",
}

_CACHE: dict | None = None


def _build() -> dict:
    with warnings.catch_warnings():  # torch.cuda.amp.GradScaler is deprecated in favour of torch.amp
        warnings.simplefilter("ignore")
        from torch.cuda.amp import GradScaler
    scope = {
        "re": re, "datetime": datetime, "math": math, "Path": Path, "os": os, "logging": logging,
        "sys": sys, "Callable": Callable, "torch": torch, "Tensor": Tensor, "nn": nn,
        "DistributedDataParallel": DistributedDataParallel, "Optimizer": Optimizer,
        "lr_scheduler": lr_scheduler, "GradScaler": GradScaler,
        "TensorDict": TensorDict, "TensorDictModule": TensorDictModule,
        "TensorDictSequential": TensorDictSequential,
        "MAX_NUM_ACTIVE_SPARSE_FEATURES": S.MAX_NUM_ACTIVE_SPARSE_FEATURES,
        "MAX_NUM_ACTION_CANDIDATES": S.MAX_NUM_ACTION_CANDIDATES,
        "SnapshotWriter": Callable[[int | None], None],
    }
    if dist.is_available():
        scope.update(init_process_group=dist.init_process_group, ReduceOp=dist.ReduceOp,
                     all_reduce=dist.all_reduce)
    return scope


def trainer_globals() -> dict:
    """A fresh dict of the names kanachan's trainer has in scope that rewardlab can provide.

    Returns
    -------
    dict
        ``{name: value}`` for the names of :data:`TRAINER_NAMES` (the
        ``torch.distributed`` ones only where this torch build has it).

    Examples
    --------
    >>> scope = trainer_globals()
    >>> scope["torch"].__name__, scope["MAX_NUM_ACTION_CANDIDATES"]
    ('torch', 32)
    """
    global _CACHE
    if _CACHE is None:
        _CACHE = _build()
    return dict(_CACHE)


def _tables(table):
    yield table
    for child in table.get_children():
        yield from _tables(child)


def names_from_trainer(source: str, filename: str = "<plug-in>") -> tuple[str, ...]:
    """Names ``source`` reads from kanachan's trainer scope without binding them itself.

    Reads the file's symbol tables (nothing runs): a name counts when some
    scope reads it as a global, the file never binds it at its top level
    (import, def, class, assignment, or ``global`` then assignment in a
    function), it is not a builtin, and it is one of the trainer's names
    (:data:`TRAINER_NAMES` or :data:`UNAVAILABLE`).

    Parameters
    ----------
    source : str
        The plug-in file's text (it must compile).
    filename : str
        For the compiler's messages.

    Returns
    -------
    tuple of str
        Sorted names.

    Examples
    --------
    >>> names_from_trainer("Tensor = None\\ndef get_reward(data, contiguous):\\n    return Tensor\\n")
    ()
    """
    top = symtable.symtable(source, filename, "exec")
    bound: set[str] = set()
    read: set[str] = set()
    for table in _tables(top):
        for sym in table.get_symbols():
            name = sym.get_name()
            if table is top:
                if sym.is_assigned() or sym.is_imported() or sym.is_namespace():
                    bound.add(name)
                elif sym.is_referenced():
                    read.add(name)
            elif sym.is_global():
                if sym.is_declared_global() and sym.is_assigned():
                    bound.add(name)
                if sym.is_referenced():
                    read.add(name)
    known = TRAINER_NAMES.keys() | UNAVAILABLE.keys()
    return tuple(sorted(n for n in read - bound if n in known and not hasattr(builtins, n)))
