"""Compiled kernels are cached in a folder named after every kernel module's source, so that changing a kernel in
one file cannot leave another file's cached machine code calling its old version (planner/core/jit.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from numba.core import config

from planner.core import jit


def test_every_module_with_a_kernel_is_in_the_hash() -> None:
    using = {str(path.relative_to(jit.ROOT)) for path in (jit.ROOT / "planner").rglob("*.py")
             if any(mark in path.read_text(encoding="utf-8") for mark in ("@kernel", "@inline_kernel"))
             and path.name != "jit.py"}
    assert using == set(jit.KERNEL_MODULES)


def test_a_change_to_any_kernel_module_names_another_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for module in jit.KERNEL_MODULES:
        (tmp_path / module).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(jit.ROOT / module, tmp_path / module)
    monkeypatch.setattr(jit, "ROOT", tmp_path)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    folders = []
    for module in (None, *jit.KERNEL_MODULES):
        if module is not None:
            (tmp_path / module).write_text((tmp_path / module).read_text(encoding="utf-8") + "\n# changed\n")
        jit.cache_folder.cache_clear()
        folders.append(jit.cache_folder())
    jit.cache_folder.cache_clear()
    assert len(set(folders)) == len(folders)
    assert all(folder.parent == tmp_path / "cache" / "rayon-kernels" for folder in folders)


def test_a_kernel_caches_in_that_folder_and_leaves_numba_setting_as_it_was(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    jit.cache_folder.cache_clear()
    before = config.CACHE_DIR
    try:
        @jit.kernel
        def doubled(values: np.ndarray) -> np.ndarray:
            return values * 2

        assert before == config.CACHE_DIR
        assert doubled(np.arange(3)).tolist() == [0, 2, 4]
        assert list(jit.cache_folder().rglob("*doubled*.nbi"))  # its index, in the folder named by the kernels
    finally:
        jit.cache_folder.cache_clear()


def test_an_inline_kernel_is_compiled_into_its_callers_and_caches_in_the_same_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    jit.cache_folder.cache_clear()
    before = config.CACHE_DIR
    try:
        @jit.inline_kernel
        def tripled(value: float) -> float:
            return value * 3

        @jit.kernel
        def summed(values: np.ndarray) -> float:
            total = 0.0
            for value in values:
                total += tripled(value)
            return total

        assert before == config.CACHE_DIR
        assert tripled.targetoptions["inline"] == "always" and summed.targetoptions["inline"] == "never"
        assert summed(np.arange(4.0)) == 18.0
        assert list(jit.cache_folder().rglob("*summed*.nbi"))
    finally:
        jit.cache_folder.cache_clear()
