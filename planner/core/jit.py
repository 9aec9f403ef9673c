"""The one way our numeric kernels are compiled: numba, cached on disk in a folder named after the source of every
module that holds kernels.

numba's own disk cache is keyed by the file of the function it compiled: a kernel that calls a kernel of another
file keeps the callee's old machine code after that file changes (found in issue #31: a broken `treekernels.py`
passed every test through `ontree.py`'s stale cache). Naming the folder after all of them together makes any change
to any kernel compile everything afresh once.
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numba
from numba.core import config

F = TypeVar("F", bound=Callable[..., object])

ROOT = Path(__file__).resolve().parents[2]  # the folder holding the `planner` package
KERNEL_MODULES = (  # every module with a @kernel (tests/planner/core/test_jit.py keeps this list whole)
    "planner/core/laying.py",
    "planner/core/treekernels.py",
    "planner/agents/greedy/compiled.py",
    "planner/agents/greedy/ontree.py",
    "planner/agents/greedy/treecost.py",
)


@functools.cache
def cache_folder() -> Path:
    """Where compiled kernels are kept: under NUMBA_CACHE_DIR if set, else the user's cache folder, in a folder
    named after a hash of every kernel module's source (and numba's version)."""
    digest = hashlib.sha256(numba.__version__.encode())
    for module in KERNEL_MODULES:
        digest.update(module.encode() + b"\0" + (ROOT / module).read_bytes())
    base = os.environ.get("NUMBA_CACHE_DIR") or os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "rayon-kernels" / digest.hexdigest()[:16]


def kernel(function: F) -> F:
    """numba.njit(cache=True, nogil=True) with its disk cache in `cache_folder()` (numba reads the folder when the
    function is decorated, so it is set for that moment only and other users of numba in the process keep theirs)."""
    return _compiled(function, inline=False)


def inline_kernel(function: F) -> F:
    """`kernel`, compiled into each kernel that calls it (numba's inline="always") rather than called: for a small
    helper in a hot loop, where a call costs more than its body."""
    return _compiled(function, inline=True)


def _compiled(function: F, inline: bool) -> F:
    """numba.njit of `function` with the kernels' disk cache."""
    settings = vars(config)  # numba's configuration module, its names set at run time
    previous = settings["CACHE_DIR"]
    settings["CACHE_DIR"] = str(cache_folder())
    try:
        return numba.njit(cache=True, nogil=True, inline="always" if inline else "never")(  # type: ignore[return-value]
            function)
    finally:
        settings["CACHE_DIR"] = previous
