"""What the queue log (planner/store/queuelog.py) costs on disk per queue and per day of plan time, on SQLite.

    python benchmarks/queue_log.py [--queues 50] [--days 2] [--step 60]

Records `--days` of steps of `--step` seconds for `--queues` reservation queues, as `rayon serve` does at each
tick (the follower's round: guaranteed, max and planned of two resources), in two cases: every queue's figures
change at every step (the worst case: one row per queue per step) and never change (one row per queue in all),
then the same again as a scheduler's allocations (YuniKorn, polled at every step). Prints the store's growth in
bytes (SQLite pages in use, after VACUUM) per queue per day, and per row.
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
from datetime import timedelta
from pathlib import Path

from planner.store.facade import Store
from planner.store.queuelog import FOLLOWER, QueueFigures, QueueLog
from tests.planner.support import START, cluster_text


def used_bytes(path: Path) -> int:
    """The bytes of the database's pages in use once vacuumed (free pages dropped, the WAL folded in)."""
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        connection.execute("VACUUM")
        pages, size = (connection.execute(f"PRAGMA {p}").fetchone()[0] for p in ("page_count", "page_size"))
    return int(pages * size)


def run(queues: int, days: int, step: int, changing: bool, source: str) -> tuple[float, int]:
    """Bytes per queue per day, and the rows written, for one case."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "plan.db"
        with Store.open(path) as store:
            store.init(cluster_text({"vcores": 2048, "memory": "4TiB"}, steps=60), "cluster.yaml")
            log = QueueLog(store.engine, keep=None)
        empty = used_bytes(path)
        with Store.open(path) as store:
            log = QueueLog(store.engine, keep=None)
            rows = 0
            for n in range(days * 86400 // step):
                start = START + timedelta(seconds=n * step)
                amount = (n % 7 + 1) if changing else 4
                figures = ({"guaranteed": {"memory": 8192 * amount, "vcores": 4 * amount},
                            "max": {"memory": 8192 * amount, "vcores": 4 * amount},
                            "planned": {"memory": 8192 * amount, "vcores": 4 * amount}} if source == FOLLOWER
                           else {"allocated": {"memory": 8192 * amount, "vcores": 4 * amount}})
                rows += log.record(source, start, start + timedelta(seconds=step), [
                    QueueFigures(f"root.plan.reservation_{q:05d}", figures, "reservation" if source == FOLLOWER
                                 else None, f"reservation_{q:05d}" if source == FOLLOWER else None,
                                 f"user{q % 10}" if source == FOLLOWER else None) for q in range(queues)])
        return (used_bytes(path) - empty) / queues / days, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queues", type=int, default=50)
    parser.add_argument("--days", type=int, default=2)
    parser.add_argument("--step", type=int, default=60, help="seconds per plan step")
    args = parser.parse_args()
    print(f"{args.queues} queues, {args.days} days of {args.step}-second steps ({86400 // args.step} steps a day)")
    for source in (FOLLOWER, "yunikorn"):
        for changing in (True, False):
            per_day, rows = run(args.queues, args.days, args.step, changing, source)
            case = "changing at every step" if changing else "never changing"
            print(f"{source:9s} {case:23s}: {per_day / 1024:8.1f} KiB per queue per day "
                  f"({rows} rows, {per_day * args.queues * args.days / max(rows, 1):.0f} bytes per row)")


if __name__ == "__main__":
    main()
