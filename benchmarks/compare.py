"""Two commits' admission times side by side, their runs alternating, and whether they decide the same.

    python benchmarks/compare.py BASE [--head REV] [--agents gree] [--streams yarn,tight,gangs] [--rounds 4]
                                 [--repeat 3] [--warmup 1] [--count 300] [--mixed-count 1000] [--week-count 2000]
                                 [--no-explain]

On a machine whose speed swings from minute to minute, one run of each commit decides a close comparison by
noise. Here BASE and HEAD (default: this checkout as it is when the comparison starts, uncommitted changes and new
files included, copied so that later edits change neither side) are checked out side by side (git worktrees and
the copy in a temporary folder, removed at the end) and run in turn, `--rounds` times each (BASE first in odd
rounds, HEAD first in even ones: on some machines the second of two runs is the slower), every run a fresh process
submitting every stream `--warmup` times untimed (numba compiles its kernels on first use, and a fresh worktree has
none cached), then `--repeat` times timed, each pass to a fresh `Planner`. Each decision keeps
its least CPU time (`time.process_time`) over all of its side's passes, so a pause that hits one pass of one side
drops out.

Streams: `yarn`, `tight`, `gangs` (tests/peers/yarn/streams.py, `--count` reservations), `mixed`
(benchmarks/peers/yarn_agents.py's week, `--mixed-count`), `week` (benchmarks/admission.py's week, `--week-count`,
submitted as validated, as that benchmark does), each at its own step or, as `NAME@STEP`, at another. Per
stream and agent it prints each side's accepted count and p50/p99 in ms over all decisions and over accepted ones,
the ratio of HEAD's p99 to BASE's, and whether the decisions are the same: `same records` (every decision's JSON,
leases, reasons and earliest deadlines included, hashes the same), `same accept/reject` or `DIFFERENT`.

The runs read each side's own code: a commit without a stream's module (or with another `Planner.submit`) fails
its run, and the error is printed.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve()
SIDES = ("base", "head")


def _streams(root: Path, names: list[str], counts: dict[str, int]) -> Iterator[tuple[str, Any, list[Any], bool]]:
    """(name, cluster, reservations, validated) per stream, built by the checkout at `root`."""
    sys.path[:0] = [str(root), str(root / "benchmarks"), str(root / "benchmarks" / "peers")]
    from tests.peers.yarn import streams

    seed = 7
    for name in names:
        kind, _, step = name.partition("@")
        if kind == "week":
            import admission

            from rdl import parse_cluster

            text = admission.CLUSTER.replace("step: 1m", f"step: {step or '1m'}")
            cluster = parse_cluster(text, "benchmark-cluster.yaml")
            yield name, cluster, admission.workload(counts["week"], seed), True
        elif kind == "mixed":
            import yarn_agents

            cluster, stream = yarn_agents.mixed(counts["mixed"], seed, step or "1m")
            yield name, cluster, list(stream.reservations), False
        else:
            made = {"yarn": streams.yarn_shaped, "tight": streams.tight, "gangs": streams.gangs}[kind]
            cluster, stream = made(counts["count"], seed + {"yarn": 4, "tight": 5, "gangs": 6}[kind])
            if step:  # the same reservations on a plan of that step, which our planner rounds them to itself
                from rdl import parse_cluster  # (streams.at_step rounds them for YARN; older checkouts lack it)

                cluster = parse_cluster(f"start: {cluster.start.isoformat()}\nstep: {step}\n"
                                        f"horizon: {cluster.horizon}s\ncapacity: {dict(cluster.capacity)}\n",
                                        "compare-cluster.yaml")
            yield name, cluster, list(stream.reservations), False


def work(root: Path, agents: list[str], names: list[str], counts: dict[str, int], repeat: int, warmup: int,
         explain: bool) -> dict[str, Any]:
    """One run of one side: per stream and agent, each decision's least CPU time, acceptances and records' hash."""
    out: dict[str, Any] = {}
    for name, cluster, reservations, validated in _streams(root, names, counts):
        from planner.admission import Planner
        from planner.agents.registry import get_agent

        for agent in agents:
            least: list[float] | None = None
            for done in range(warmup + repeat):
                planner, chosen = Planner(cluster), get_agent(agent)
                spent, accepted, records = [], [], hashlib.sha256()
                for reservation in reservations:
                    began = time.process_time()
                    decision = planner.submit(reservation, chosen, explain=explain, validated=validated)
                    spent.append(time.process_time() - began)
                    accepted.append(bool(decision.accepted))
                    records.update(json.dumps(decision.to_json(planner.plan.clock), sort_keys=True,
                                              default=str).encode())
                if done < warmup:
                    continue
                least = spent if least is None else [min(a, b) for a, b in zip(least, spent, strict=True)]
            out[f"{name} {agent}"] = {"seconds": least, "accepted": accepted, "records": records.hexdigest()}
    import planner as package

    out["_planner"] = str(Path(package.__file__ or "").resolve())
    return out


@contextlib.contextmanager
def checkouts(base: str, head: str | None) -> Iterator[dict[str, Path]]:
    """Each side's checkout: a git worktree of the commit, or (HEAD left out) a copy of this checkout as it is now,
    so that editing it while the comparison runs changes neither side."""
    repo = HERE.parents[1]
    with tempfile.TemporaryDirectory(prefix="rayon-compare-") as folder:
        roots, added = {}, []
        try:
            for side, rev in (("base", base), ("head", head)):
                root = Path(folder) / side
                if rev is None:
                    roots[side] = snapshot(repo, root)
                    continue
                subprocess.run(["git", "-C", str(repo), "worktree", "add", "--detach", "-q", str(root), rev],
                               check=True)
                added.append(root)
                roots[side] = root
            yield roots
        finally:
            for root in added:
                subprocess.run(["git", "-C", str(repo), "worktree", "remove", "--force", str(root)], check=False)


def snapshot(repo: Path, root: Path) -> Path:
    """A copy at `root` of the checkout's files as they are now: tracked ones with their changes, and new ones that
    git does not ignore."""
    listed = subprocess.run(["git", "-C", str(repo), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            check=True, capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = repo / name
        if source.is_file():  # a tracked file deleted in the checkout is left out, as it is there
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, root / name)
    return root


def run_side(root: Path, args: argparse.Namespace) -> dict[str, Any]:
    """One run of one side in a fresh process reading that side's code."""
    command = [sys.executable, str(HERE), "--worker", str(root), "--agents", args.agents, "--streams", args.streams,
               "--repeat", str(args.repeat), "--warmup", str(args.warmup), "--count", str(args.count),
               "--mixed-count", str(args.mixed_count), "--week-count", str(args.week_count)]
    command += ["--no-explain"] if args.no_explain else []
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the run at {root} failed:\n{done.stderr.strip()}")
    result: dict[str, Any] = json.loads(done.stdout)
    if not result.pop("_planner").startswith(str(root.resolve())):
        raise SystemExit(f"the run at {root} read another checkout's code")
    return result


def merge(kept: dict[str, Any] | None, run: dict[str, Any]) -> dict[str, Any]:
    """Each decision's least time over the runs so far; the decisions must not change from run to run."""
    if kept is None:
        return run
    for key, result in run.items():
        if result["records"] != kept[key]["records"]:
            raise SystemExit(f"{key}: two runs of one commit decided differently: the stream is not deterministic")
        kept[key]["seconds"] = [min(a, b) for a, b in zip(kept[key]["seconds"], result["seconds"], strict=True)]
    return kept


def _figures(result: dict[str, Any]) -> tuple[int, float, float, float, float]:
    seconds, accepted = np.array(result["seconds"]) * 1e3, np.array(result["accepted"])
    chosen = seconds[accepted] if accepted.any() else np.zeros(1)
    return (int(accepted.sum()), float(np.percentile(seconds, 50)), float(np.percentile(seconds, 99)),
            float(np.percentile(chosen, 50)), float(np.percentile(chosen, 99)))


def report(results: dict[str, dict[str, Any]], labels: dict[str, str]) -> None:
    print(f"{'stream':10} {'agent':8} {'side':22} {'accepted':>8} {'p50':>7} {'p99':>7} {'acc p50':>8} "
          f"{'acc p99':>8}   (ms, each decision's least CPU time)")
    for key in results["base"]:
        stream, agent = key.split(" ")
        base, head = results["base"][key], results["head"][key]
        rows = {side: _figures(results[side][key]) for side in SIDES}
        for side in SIDES:
            accepted, p50, p99, acc50, acc99 = rows[side]
            print(f"{stream if side == 'base' else '':10} {agent if side == 'base' else '':8} {labels[side]:22} "
                  f"{accepted:8} {p50:7.3f} {p99:7.3f} {acc50:8.3f} {acc99:8.3f}")
        if base["records"] == head["records"]:
            same = "same records"
        elif base["accepted"] == head["accepted"]:
            same = "same accept/reject, other records"
        else:
            changed = sum(a != b for a, b in zip(base["accepted"], head["accepted"], strict=True))
            same = f"DIFFERENT ({changed} decisions)"
        ratio = rows["head"][2] / rows["base"][2] if rows["base"][2] else float("nan")
        print(f"{'':10} {'':8} {'head/base p99':22} {ratio:8.2f}x  decisions: {same}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", nargs="?", help="the commit to compare with (any git revision)")
    parser.add_argument("--head", default=None, help="the other commit (default: a copy of this checkout as it is)")
    parser.add_argument("--agents", default="gree", help="our agents, comma-separated")
    parser.add_argument("--streams", default="yarn,tight,gangs", help="yarn, tight, gangs, mixed, week, each [@STEP]")
    parser.add_argument("--rounds", type=int, default=4, help="runs of each side, alternating")
    parser.add_argument("--repeat", type=int, default=3, help="passes over each stream per run")
    parser.add_argument("--warmup", type=int, default=1, help="untimed passes over each stream first, per run")
    parser.add_argument("--count", type=int, default=300, help="reservations of yarn, tight and gangs")
    parser.add_argument("--mixed-count", type=int, default=1000)
    parser.add_argument("--week-count", type=int, default=2000)
    parser.add_argument("--no-explain", action="store_true", help="skip the earliest-deadline search")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    names = [name.strip() for name in args.streams.split(",")]
    for name in names:
        if name.partition("@")[0] not in ("yarn", "tight", "gangs", "mixed", "week"):
            parser.error(f"--streams: `{name}` is not yarn, tight, gangs, mixed or week, each [@STEP]")
    agents = [agent.strip() for agent in args.agents.split(",")]
    counts = {"count": args.count, "mixed": args.mixed_count, "week": args.week_count}
    if args.worker is not None:
        sys.path.pop(0)  # this file's folder: the side's own benchmarks/ go first instead
        json.dump(work(args.worker, agents, names, counts, args.repeat, args.warmup, not args.no_explain), sys.stdout)
        return
    if args.base is None:
        parser.error("BASE is required")
    labels = {"base": args.base[:22], "head": (args.head or "this checkout")[:22]}
    results: dict[str, dict[str, Any]] = {}
    with checkouts(args.base, args.head) as roots:
        for round_ in range(args.rounds):
            for side in SIDES if round_ % 2 == 0 else SIDES[::-1]:  # ABBA: neither side always runs second
                began = time.monotonic()
                results[side] = merge(results.get(side), run_side(roots[side], args))
                print(f"round {round_ + 1}/{args.rounds} {labels[side]}: {time.monotonic() - began:.0f} s",
                      file=sys.stderr, flush=True)
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; {args.rounds} runs x {args.repeat} "
          f"passes per side, alternating{'; no earliest-deadline search' if args.no_explain else ''}")
    report(results, labels)


if __name__ == "__main__":
    main()
