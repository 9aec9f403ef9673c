"""Queue scheduler speed: scheduling cycles per second and allocations per second, per sorting policy.

    python benchmarks/scheduler.py [--nodes 1000] [--queues 50] [--apps 10000] [--cycles 200] [--seed 7]
                                   [--policies fifo,fair,stateaware,drf,uwfq] [--node-policy fair] [--json]
    python benchmarks/scheduler.py --preemption [--nodes 1000] [--share 0.02] [--size 1] [--seed 7] [--json]

A cluster of `--nodes` nodes (64 GiB, 32 vcores each) under `--queues` leaf queues (five parents,
guarantees splitting the cluster evenly), and `--apps` applications submitted up front, spread over
the queues and ten users, each with a driver ask (2 GiB, 1 vcore) and 1-8 executors (4 GiB,
2 vcores), about three times what the cluster holds. The first cycle fills the cluster; each of the
next `--cycles` cycles follows the release of a random 2% of the running containers (seeded), as a
simulator would between events. Times count `schedule()` only. Prints, per policy: the first
(filling) cycle's allocations and seconds, then the steady cycles' cycles/s and allocations/s, the
total allocations/s over every cycle (wall clock), and the same per CPU-second of this process
(steadier on a shared machine).

`--preemption` measures preemption planning instead: the nodes are filled with best-effort executors
(4 GiB, 2 vcores) in ten waves a second apart (so victims differ in age), then a reservation queue
guaranteed `--share` of the cluster asks for that much in containers of `--size` executors each;
once the delay has passed, one `preempt()` call plans every claim. Prints the claims, the victims,
and the seconds of that call.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from typing import Any

from follower.scheduler import Resources, Scheduler

NODE = {"memory": 64 * 1024.0, "vcores": 32.0}
DRIVER = {"memory": 2048.0, "vcores": 1.0}
EXECUTOR = {"memory": 4096.0, "vcores": 2.0}


def build(policy: str, node_policy: str, nodes: int, queues: int, apps: int, seed: int) -> Scheduler:
    """A scheduler with the cluster, the queues and every application submitted with its asks."""
    parents = 5
    per_parent = max(1, queues // parents)
    share = {name: amount * nodes / (parents * per_parent) for name, amount in NODE.items()}
    tree = {f"p{p}": {"queues": {f"q{p}_{q}": {"policy": policy, "guaranteed": share}
                                 for q in range(per_parent)}} for p in range(parents)}
    rules = [{"rule": "specified"}, {"rule": "reject"}]
    scheduler = Scheduler({"queues": tree, "node_policy": node_policy, "placement": rules})
    for index in range(nodes):
        scheduler.add_node(f"node{index:05d}", NODE, 0.0)
    rng = random.Random(seed)
    leaves = [f"root.p{p}.q{p}_{q}" for p in range(parents) for q in range(per_parent)]
    for index in range(apps):
        app = f"app{index:06d}"
        scheduler.submit(app, f"user{rng.randrange(10)}", index * 1e-3, queue=rng.choice(leaves),
                         estimated_work=rng.choice([600.0, 3600.0, 36000.0]))
        scheduler.add_ask(app, "driver", DRIVER, index * 1e-3, priority=1)
        scheduler.add_ask(app, "executors", EXECUTOR, index * 1e-3, count=rng.randint(1, 8))
    return scheduler


def run(policy: str, node_policy: str, nodes: int, queues: int, apps: int, cycles: int, seed: int) -> dict[str, Any]:
    """Measure one policy; returns the numbers printed."""
    scheduler = build(policy, node_policy, nodes, queues, apps, seed)
    rng = random.Random(seed + 1)
    now = float(apps) * 1e-3 + 1.0
    started, cpu_started = time.perf_counter(), time.process_time()
    first = len(scheduler.schedule(now))
    fill_seconds = time.perf_counter() - started
    cpu_seconds = time.process_time() - cpu_started
    steady_seconds, steady_allocations = 0.0, 0
    for _ in range(cycles):
        now += 1.0
        running = sorted(scheduler.containers)
        for container in rng.sample(running, k=max(1, len(running) // 50)):
            scheduler.release(container, now)
        started, cpu_started = time.perf_counter(), time.process_time()
        steady_allocations += len(scheduler.schedule(now))
        steady_seconds += time.perf_counter() - started
        cpu_seconds += time.process_time() - cpu_started
    total_seconds = fill_seconds + steady_seconds
    return {
        "policy": policy, "fill_allocations": first, "fill_seconds": round(fill_seconds, 3),
        "steady_cycles_per_second": round(cycles / steady_seconds, 1) if steady_seconds else None,
        "steady_allocations_per_second": round(steady_allocations / steady_seconds) if steady_seconds else None,
        "allocations_per_second": round((first + steady_allocations) / total_seconds),
        "allocations": first + steady_allocations,
        "allocations_per_cpu_second": round((first + steady_allocations) / cpu_seconds),
    }


def preemption_run(nodes: int, share: float, seed: int, size: int = 1) -> dict[str, Any]:
    """Fill the cluster with best effort, starve a reservation queue of `share` of it (in containers of `size`
    executors each), time one preempt()."""
    rules = [{"rule": "specified", "create": False}, {"rule": "reject"}]
    scheduler = Scheduler({"queues": {"plan": {"parent": True}, "besteffort": {}}, "placement": rules,
                           "preemption": {"delay": "30s"}})
    for index in range(nodes):
        scheduler.add_node(f"node{index:05d}", NODE, 0.0)
    rng = random.Random(seed)
    per_node = int(NODE["vcores"] // EXECUTOR["vcores"])
    waves = 10
    for wave in range(waves):
        for index in range(nodes * per_node // waves // 16):
            app = f"be{wave}_{index:05d}"
            scheduler.submit(app, f"user{rng.randrange(10)}", float(wave), queue="besteffort")
            scheduler.add_ask(app, "executors", EXECUTOR, float(wave), count=16)
        scheduler.schedule(float(wave))
    executors = round(share * nodes * per_node / size)
    wanted = Resources({name: amount * executors * size for name, amount in EXECUTOR.items()})
    scheduler.ensure_queue("root.plan.nightly", wanted)
    scheduler.submit("prod", "ops", 10.0, reservation="nightly")
    scheduler.add_ask("prod", "executors", {name: amount * size for name, amount in EXECUTOR.items()}, 10.0,
                      count=executors)
    scheduler.schedule(10.0)
    started, cpu_started = time.perf_counter(), time.process_time()
    taken = scheduler.preempt(40.0)
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    served = len(scheduler.schedule(40.0))
    return {"nodes": nodes, "containers": len(scheduler.containers), "asked": executors, "victims": len(taken),
            "served": served, "preempt_seconds": round(seconds, 3), "preempt_cpu_seconds": round(cpu_seconds, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--queues", type=int, default=50)
    parser.add_argument("--apps", type=int, default=10000)
    parser.add_argument("--cycles", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--policies", default="fifo,fair,stateaware,drf,uwfq")
    parser.add_argument("--node-policy", default="fair")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--preemption", action="store_true", help="measure preemption planning instead")
    parser.add_argument("--share", type=float, default=0.02, help="with --preemption: the starved queue's share")
    parser.add_argument("--size", type=int, default=1, help="with --preemption: executors per container asked")
    args = parser.parse_args()
    if args.preemption:
        found = preemption_run(args.nodes, args.share, args.seed, args.size)
        print(json.dumps(found, indent=2) if args.json else
              f"{found['nodes']} nodes full of best effort; a reservation queue asks {found['asked']} executors: "
              f"{found['victims']} victims planned in {found['preempt_seconds']} s "
              f"({found['preempt_cpu_seconds']} CPU s), {found['served']} served next cycle")
        return
    results = [run(policy, args.node_policy, args.nodes, args.queues, args.apps, args.cycles, args.seed)
               for policy in args.policies.split(",")]
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"{args.nodes} nodes, {args.queues} queues, {args.apps} applications, node policy {args.node_policy}")
    print(f"{'policy':<11} {'fill allocs':>11} {'fill s':>7} {'cycles/s':>9} "
          f"{'allocs/s steady':>16} {'allocs/s all':>13} {'allocs/cpu-s':>13}")
    for r in results:
        print(f"{r['policy']:<11} {r['fill_allocations']:>11} {r['fill_seconds']:>7} "
              f"{r['steady_cycles_per_second']!s:>9} {r['steady_allocations_per_second']!s:>16} "
              f"{r['allocations_per_second']:>13} {r['allocations_per_cpu_second']:>13}")


if __name__ == "__main__":
    main()
