"""The processes of one `rayon serve` that runs several (its workers, its deciding process, their replan workers):
which they are and how much memory they hold together, read from Linux's /proc at each scrape.

prometheus-client's standard `process_*` metrics describe the one process answering a scrape. With several
processes that is the whole server only in part, so `/metrics` adds the sums over all of them (`ServerProcesses`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

ENV_SERVER = "RAYON_SERVER_PID"  # the server process that started the workers and the decider
ENV_WORKERS = "RAYON_SERVER_WORKERS"  # how many worker processes serve HTTP beside it
PROC = Path("/proc")


def parents(proc: Path = PROC) -> dict[int, int]:
    """Every process's parent, by process id (empty without a /proc)."""
    found = {}
    for entry in proc.glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            # `pid (name) state ppid ...`: the name may hold spaces and parentheses, so read after its last `)`
            found[int(entry.parent.name)] = int(entry.read_text().rsplit(")", 1)[1].split()[1])
    return found


def tree(root: int, proc: Path = PROC) -> list[int]:
    """`root` and all its descendants that are still there (empty when `root` is not)."""
    parent = parents(proc)
    if root not in parent:
        return []
    children: dict[int, list[int]] = {}
    for pid, ppid in parent.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, ()))
    return found


def resident_bytes(pid: int, proc: Path = PROC) -> int:
    """The resident memory of one process, in bytes (0 once it has gone)."""
    try:
        return int((proc / str(pid) / "statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


class ServerProcesses(Collector):
    """Gauges of all the processes of the server started as process `root`: how many, and their resident memory
    together (the plan is held in each worker and in the deciding process, so one process's figure is a part)."""

    def __init__(self, root: int, proc: Path = PROC):
        self.root, self.proc = root, proc

    def collect(self) -> Iterator[Metric]:
        pids = tree(self.root, self.proc)
        if not pids:  # no /proc (not Linux), or the server has gone: nothing to say
            return
        yield GaugeMetricFamily("rayon_server_processes", "Processes of this server: the one started as `rayon "
                                "serve`, its worker processes, its deciding process and their replan workers.",
                                value=len(pids))
        yield GaugeMetricFamily("rayon_server_resident_memory_bytes", "Resident memory of all this server's "
                                "processes together, in bytes (process_resident_memory_bytes is the answering "
                                "process's alone).", value=sum(resident_bytes(pid, self.proc) for pid in pids))


def server_pid() -> int | None:
    """The server process that started this one as a worker or decider (None: this process is the server)."""
    found = os.environ.get(ENV_SERVER)
    return int(found) if found and found.isdigit() else None


def lone_worker() -> bool:
    """Whether this process is the only worker serving HTTP (its own figures then describe every scrape's answerer:
    a counter such as its CPU seconds does not jump between processes from one scrape to the next)."""
    return os.environ.get(ENV_WORKERS) == "1"
