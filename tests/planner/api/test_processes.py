"""The server's processes as /metrics counts them: a process and its descendants, read from a /proc."""

from __future__ import annotations

import os
from pathlib import Path

from planner.api.processes import ServerProcesses, parents, resident_bytes, tree


def fake_proc(root: Path, processes: dict[int, tuple[int, str, int]]) -> Path:
    """A /proc holding these processes: pid → (parent, name, resident pages)."""
    for pid, (ppid, name, pages) in processes.items():
        folder = root / str(pid)
        folder.mkdir()
        (folder / "stat").write_text(f"{pid} ({name}) S {ppid} {pid} {pid} 0 -1 4194560 100 0 0 0\n")
        (folder / "statm").write_text(f"{pages * 4} {pages} 10 1 0 {pages} 0\n")
    (root / "self").mkdir()  # not a process id: left alone
    return root


def test_the_server_s_processes_are_it_and_its_descendants_and_no_other(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, {1: (0, "init", 1), 100: (1, "rayon", 10), 101: (100, "python) x (y", 20),
                                102: (100, "python", 30), 103: (101, "cbc", 40), 200: (1, "other", 99)})
    assert parents(proc)[101] == 100  # the name's parentheses and spaces do not shift the fields
    assert sorted(tree(100, proc)) == [100, 101, 102, 103]
    assert tree(999, proc) == []
    page = os.sysconf("SC_PAGE_SIZE")
    assert resident_bytes(102, proc) == 30 * page and resident_bytes(999, proc) == 0
    figures = {family.name: family.samples[0].value for family in ServerProcesses(100, proc).collect()}
    assert figures == {"rayon_server_processes": 4, "rayon_server_resident_memory_bytes": 100 * page}


def test_a_server_that_has_gone_gives_no_figures(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, {1: (0, "init", 1)})
    assert list(ServerProcesses(100, proc).collect()) == []
