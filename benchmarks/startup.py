"""Start-up time of the `rayon` command: the median wall time of a few commands, each a fresh process.

    python benchmarks/startup.py [--runs 7]

Prints one line per command: its median and fastest wall time over the runs. `rayon --help` and
`rayon check` should stay well under 0.3 s (the group imports a command's module only when it runs);
to see where the time goes, run `python -X importtime -m follower.cli check examples/etl_nightly.rdl`.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = (
    ("--help",),
    ("check", "examples/etl_nightly.rdl"),
    ("plan", "--cluster", "examples/cluster.yaml", "examples/"),
)


def rayon() -> list[str]:
    """The `rayon` script of this interpreter's environment (what a user runs), else `python -m follower.cli`."""
    script = Path(sys.executable).with_name("rayon")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "follower.cli"]


def wall_time(args: tuple[str, ...]) -> float:
    """Seconds one `rayon ARGS` process takes, from start to exit (its output discarded)."""
    begin = time.perf_counter()
    subprocess.run([*rayon(), *args], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - begin


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    options = parser.parse_args()
    for args in COMMANDS:
        wall_time(args)  # warm the file cache and the bytecode, so the runs measure start-up alone
        times = [wall_time(args) for _ in range(options.runs)]
        print(f"rayon {' '.join(args):<50} median {statistics.median(times):.3f} s  "
              f"fastest {min(times):.3f} s")


if __name__ == "__main__":
    main()
