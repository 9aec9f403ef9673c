"""YARN's own reservation agents and ours on the same seeded streams, in one run.

    python benchmarks/peers/yarn_agents.py [--streams mixed,yarn,tight,gangs,mixed@10s,yarn@1m,...] [--mixed-count 2500]
                                           [--count 300] [--seed 7] [--warmup 1] [--repeat 3] [--no-explain]
                                           [--calculator dominant|default] [--ours gree,gree-l,gree-s,gree@early,...]
                                           [--yarn greedy,greedy-right,aligned|none] [--by-shape]

YARN's agents (GreedyReservationAgent as YARN configures it, allocating left; the same allocating right;
AlignedPlannerWithGreedy, the ReservationSystem's default) run in a JVM through tests/peers/yarn (built with
Maven the first time: needs java and mvn; `--yarn none` runs none of them); ours (gree, gree-l by default) run
in this process. Streams:

- `mixed`: benchmarks/admission.py's week at one-minute steps (single atoms, orders, `any`, gangs; demand about
  1.3x), `--mixed-count` reservations on a cluster scaled to keep that demand, each atom's parallelism cap `h`
  dropped (YARN cannot say it);
- `yarn`: YARN-shaped (one to four requests under R_ANY/R_ALL/R_ORDER/R_ORDER_NO_GAP, durations in seconds,
  one-second steps); `tight`: windows at most 1.5x the least time needed; `gangs`: gangs of 8-64 containers.
- `STREAM@STEP` (`mixed@10s`, `yarn@1m`, `gangs@1s`): the same reservations on a plan of that step, rounded to
  it as our planner reads them (windows inward, durations up: a 45-second container holds a whole minute at `@1m`)
  before either side sees them: the resolution sweep, beside YARN's agents.

Per stream and agent: accepted count, accepted value and bundle-hours (as allocated), violations (our checker on
the whole plan, plus anything YARN answered that is no lease of whole gangs), decision latency p50/p99 over all
decisions and over accepted ones (YARN's: the agent's createReservation inside the JVM, after --warmup passes of
the stream; ours: Planner.submit in this process, which on rejection also searches the earliest deadline unless
--no-explain; on both sides each decision's least time over --repeat passes; on both sides the request is
validated before the timed decision, as each server does, and our validation's time is printed below), and a few
reservations one side accepts and the other rejects (how many, their bundle-hours, and how many of YARN's had no
room left in our plan at their turn). Then the goals. Each stream's header also says how many of its reservations
gree-s refuses whatever the plan holds (more than a tenth of the cluster over their window).

`--ours` names our agents (gree, gree-l, gree-s: GREE-L with size-aware admission); `AGENT@early` is that
agent with every reservation of the stream asking `placement=early` (the same trees with the header attribute
set: each piece as early as it fits, as YARN's greedy).

`--by-shape` adds, per stream, each agent's accepted count by the reservation's shape: its body's kind (`atom`,
`all`, `any`, `order`, `order gap`: an order with a gap, YARN's R_ORDER_NO_GAP) and how many children it has;
where one side accepts more, this says which reservations it is.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import admission  # noqa: E402  (benchmarks/admission.py: the mixed week)

from planner.agents.sized import DEFAULT_SHARE, window_share  # noqa: E402
from planner.core.check import check_plan  # noqa: E402
from planner.core.compile import compile_reservation  # noqa: E402
from planner.core.plan import Plan  # noqa: E402
from rdl import RDLErrors, parse_cluster, units  # noqa: E402
from rdl.cluster import Cluster  # noqa: E402
from rdl.tree import Atom, Order, Reservation, Window  # noqa: E402
from tests.peers.yarn import agent_harness as harness  # noqa: E402
from tests.peers.yarn import streams  # noqa: E402

OURS = ("gree", "gree-l")  # the default: our online agents that admit whatever fits
GREEDY = (*OURS, "gree-s")  # the names --ours takes (gree-s: GREE-L with size-aware admission, planner/agents/sized.py)
PLACED = ("early", "late")  # the placements `AGENT@PLACEMENT` can ask for (rdl.tree.PLACEMENTS)
FULL_WEEK = 10_000  # the admission benchmark's count, for which its cluster is sized


@dataclass
class Outcome:
    """One agent on one stream."""

    agent: str
    records: list[dict]
    seconds: list[float]
    violations: list[str]

    def accepted(self) -> list[bool]:
        return [bool(r["accepted"]) for r in self.records]

    def value(self, stream: harness.Stream) -> float:
        return sum(v for v, ok in zip(stream.values, self.accepted(), strict=True) if ok)

    def bundle_hours(self, step: int) -> float:
        held = sum(a["bundles"] * _steps(a, step) for r in self.records if r["accepted"] for a in r["allocations"])
        return held * step / 3600

    def latency(self, q: float, accepted_only: bool = False) -> str:
        chosen = [s for s, ok in zip(self.seconds, self.accepted(), strict=True) if ok or not accepted_only]
        return f"{np.percentile(chosen, q) * 1000:.2f}" if chosen else "-"


def _steps(allocation: dict, step: int) -> int:
    begin, end = units.parse_instant(allocation["start"]), units.parse_instant(allocation["end"])
    return round((end - begin).total_seconds() / step)


def mixed(count: int, seed: int, step: str = "1m") -> tuple[Cluster, harness.Stream]:
    """The admission benchmark's week, `count` reservations, on its cluster scaled by count/10000, at `step`."""
    vcores = max(1, round(2048 * count / FULL_WEEK))
    cluster = parse_cluster(f"start: 2026-11-23T00:00:00Z\nstep: {step}\nhorizon: 7d\n"
                            f"capacity: {{memory: {vcores * 2048}, vcores: {vcores}}}\n", "mixed-week.yaml")
    reservations = [streams.yarn_shaped_copy(r) for r in admission.workload(count, seed)]
    return cluster, harness.Stream.of(reservations)


def placed(stream: harness.Stream, placement: str) -> harness.Stream:
    """The same stream with every reservation asking `placement=` (the trees otherwise unchanged)."""
    return replace(stream, reservations=tuple(replace(r, placement=placement) for r in stream.reservations))


def ours_agent(name: str) -> tuple[str, str | None]:
    """`gree` or `gree@early`: our agent's name and the placement every reservation asks for (None: as written)."""
    agent, _, placement = name.partition("@")
    if agent not in GREEDY or (placement and placement not in PLACED):
        raise SystemExit(f"--ours: `{name}` is not one of {', '.join(GREEDY)}, optionally @{' or @'.join(PLACED)}")
    return agent, placement or None


def wide(cluster: Cluster, stream: harness.Stream) -> int:
    """How many of the stream's reservations gree-s refuses whatever the plan holds (planner/agents/sized.py)."""
    plan = Plan(cluster)
    return sum(any(window_share(i.task, plan)[0] > DEFAULT_SHARE
                   for i in compile_reservation(r, plan.clock.origin, plan.clock, 0, plan.resources))
               for r in stream.reservations)


def shape(reservation: Reservation) -> str:
    """The reservation's shape for --by-shape: its body's kind under any windows, and how many children it has."""
    body = reservation.body
    while isinstance(body, Window):
        body = body.child
    if isinstance(body, Atom):
        return "atom"
    kind = "order gap" if isinstance(body, Order) and body.gap is not None else type(body).__name__.lower()
    return f"{kind} of {len(body.children)}"


def by_shape(stream: harness.Stream, outcomes: list[Outcome]) -> None:
    """Each agent's accepted count per shape, the shapes in the order of their names."""
    shapes = [shape(r) for r in stream.reservations]
    print(f"  accepted by shape\n  {'shape':<16}{'count':>7}" + "".join(f"{o.agent:>19}" for o in outcomes))
    for kind in sorted(set(shapes)):
        chosen = [i for i, found in enumerate(shapes) if found == kind]
        print(f"  {kind:<16}{len(chosen):>7}" + "".join(f"{sum(o.accepted()[i] for i in chosen):>19}"
                                                          for o in outcomes))


def run_stream(label: str, cluster: Cluster, stream: harness.Stream, warmup: int, explain: bool,
               calculator: str = "dominant", repeat: int = 1, ours: tuple[str, ...] = OURS,
               yarn_agents: tuple[str, ...] = harness.YARN_AGENTS, shapes: bool = False) -> list[Outcome]:
    """Every agent on the stream, YARN's first, each checked by our checker."""
    outcomes = []
    rejections = {}
    answered = harness.run_yarn(cluster, stream, yarn_agents, warmup=warmup, repeat=repeat,
                                calculator=calculator) if yarn_agents else {}
    for agent, answers in answered.items():
        rejections[f"yarn-{agent}"] = answers
        records, problems = harness.decision_records(answers, stream, cluster)
        crashed = [f"{a.name}: YARN crashed: {a.exception}: {a.message}" for a in answers if a.crashed]
        crashed += [f"{a.name}: YARN decided it differently on another pass" for a in answers if not a.deterministic]
        violations = problems + crashed + check_plan(cluster, stream.reservations, records)
        outcomes.append(Outcome(f"yarn-{agent}", records, [a.seconds for a in answers], violations))
    validating: list[float] = []
    for name in ours:
        agent, placement = ours_agent(name)
        asked = placed(stream, placement) if placement else stream
        run = harness.run_ours(cluster, asked, agent, explain=explain, repeat=repeat)
        outcomes.append(Outcome(name, run.records, run.seconds, check_plan(cluster, asked.reservations, run.records)))
        validating += run.validating
    print(f"\n== {label}: {len(stream.reservations)} reservations; cluster {cluster.capacity['vcores']:g} vcores, "
          f"{cluster.capacity['memory'] / 1024:g} GiB, {cluster.step} s steps, {cluster.horizon / 3600:g} h; "
          f"{wide(cluster, stream)} need more than {DEFAULT_SHARE:.0%} of the cluster over their window (gree-s "
          "refuses those)")
    print(f"  {'agent':<18}{'accepted':>9}{'value':>9}{'bundle-h':>11}{'violations':>11}"
          f"{'p50 ms':>9}{'p99 ms':>9}{'p50 acc':>9}{'p99 acc':>9}")
    for o in outcomes:
        print(f"  {o.agent:<18}{sum(o.accepted()):>9}{o.value(stream):>9,.0f}{o.bundle_hours(cluster.step):>11,.0f}"
              f"{len(o.violations):>11}{o.latency(50):>9}{o.latency(99):>9}{o.latency(50, True):>9}"
              f"{o.latency(99, True):>9}")
    if validating:
        print(f"  ours validate each reservation before deciding it, outside the times above (as `rayon serve` does "
              f"before its write lock; YARN's ResourceManager validates before its agent, untimed): p50 "
              f"{np.percentile(validating, 50) * 1000:.2f} ms, p99 {np.percentile(validating, 99) * 1000:.2f} ms")
    for agent, answers in rejections.items():
        counts = Counter(a.exception.rsplit(".", 1)[-1] or "false" for a in answers if not a.accepted)
        print(f"  {agent} rejections: " + ", ".join(f"{name} {n}" for name, n in counts.most_common())
              + ("" if "ResourceOverCommitException" not in counts else
                 " (ResourceOverCommitException: the agent's allocation went over capacity; YARN's plan refused it)"))
    for o in outcomes:
        for violation in o.violations[:3]:
            print(f"  ! {o.agent}: {violation}")
    if shapes:
        by_shape(stream, outcomes)
    if yarn_agents:
        _differences(cluster, outcomes)
    return outcomes


def _differences(cluster: Cluster, outcomes: list[Outcome], shown: int = 3) -> None:
    """A few reservations each of ours accepts and the best YARN agent rejects, and the reverse; how big they are,
    and how many of YARN's would not fit in what our plan had left free when it was their turn."""
    yarn = max((o for o in outcomes if o.agent.startswith("yarn-")), key=lambda o: sum(o.accepted()))
    for ours in (o for o in outcomes if not o.agent.startswith("yarn-")):
        pairs = list(zip(ours.records, yarn.records, strict=True))
        only_ours = [(m, y) for m, y in pairs if m["accepted"] and not y["accepted"]]
        only_yarn = [(m, y) for m, y in pairs if y["accepted"] and not m["accepted"]]
        hours = [sum(_bundle_hours(r, cluster.step) for r in side) for side in
                 ([m for m, _ in only_ours], [y for _, y in only_yarn])]
        print(f"  {ours.agent} only: {len(only_ours)} holding {hours[0]:,.0f} bundle-h; {yarn.agent} only: "
              f"{len(only_yarn)} holding {hours[1]:,.0f} bundle-h, {_no_room(cluster, ours, yarn)} of them "
              f"with no room left in {ours.agent}'s plan at their turn")
        print(f"  {ours.agent} accepts {len(only_ours)} that {yarn.agent} rejects"
              + "".join(f"; {y['reservation']} ({y['reason']['message']})" for _, y in only_ours[:shown]))
        print(f"  {yarn.agent} accepts {len(only_yarn)} that {ours.agent} rejects"
              + "".join(f"; {m['reservation']} ({m['reason']['code']}: {m['reason']['message'][:90]})"
                        for m, _ in only_yarn[:shown]))


def _bundle_hours(record: dict, step: int) -> float:
    return sum(a["bundles"] * _steps(a, step) for a in record["allocations"]) * step / 3600


def _no_room(cluster: Cluster, ours: Outcome, yarn: Outcome) -> int:
    """Reservations `yarn` accepts and `ours` rejects whose YARN allocation goes over the capacity `ours` had left
    free at their turn (so no placement of ours could have taken them: its plan was fuller, not its search worse)."""
    plan = Plan(cluster)
    used = np.zeros_like(plan.capacity)
    blocked = 0
    for mine, theirs in zip(ours.records, yarn.records, strict=True):
        if theirs["accepted"] and not mine["accepted"]:
            trial = used.copy()
            _book(trial, theirs, plan)
            blocked += bool((trial > plan.capacity + 1e-9).any())
        if mine["accepted"]:
            _book(used, mine, plan)
    return blocked


def _book(used: np.ndarray, record: dict, plan: Plan) -> None:
    for allocation in record["allocations"]:
        lo = round((units.parse_instant(allocation["start"]) - plan.clock.origin).total_seconds() / plan.clock.step)
        for row, name in enumerate(plan.resources):
            used[row, lo:lo + _steps(allocation, plan.clock.step)] += allocation["resources"].get(name, 0.0)


def goals(results: dict[str, tuple[Cluster, list[Outcome]]]) -> None:
    """The issue's goals, each met or not, with the figures."""
    print("\n== goals")
    for label, (cluster, outcomes) in results.items():
        yarn = [o for o in outcomes if o.agent.startswith("yarn-")]
        ours = [o for o in outcomes if not o.agent.startswith("yarn-")]
        if not yarn:
            continue
        best_yarn = max(yarn, key=lambda o: sum(o.accepted()))
        for o in ours:
            met = sum(o.accepted()) >= sum(best_yarn.accepted())
            print(f"  {label}: {o.agent} accepts {sum(o.accepted())} vs best YARN ({best_yarn.agent}) "
                  f"{sum(best_yarn.accepted())}: {'met' if met else 'NOT met'}")
        if label.startswith("mixed"):
            top = max(y.bundle_hours(cluster.step) for y in yarn)
            for o in ours:
                gain = o.bundle_hours(cluster.step) / top - 1 if top else 0.0
                print(f"  {label}: {o.agent} bundle-hours {gain:+.1%} vs best YARN (goal +5%): "
                      f"{'met' if gain >= 0.05 else 'NOT met'}")
        for o in ours:
            rescued = sum(1 for m, *ys in zip(o.records, *(y.records for y in yarn), strict=True)
                          if m["accepted"] and not all(y["accepted"] for y in ys))
            print(f"  {label}: {o.agent} accepts {rescued} that some YARN agent rejects; violations in its plan: "
                  f"{len(o.violations)}: {'met' if not o.violations else 'NOT met'}")
        for o in ours:  # issue #31: at or below the p99 of the YARN agent that accepts most, over all and accepted
            met = _p99_all(o) <= _p99_all(best_yarn) and _p99_accepted(o) <= _p99_accepted(best_yarn)
            print(f"  {label}: {o.agent} p99 all / accepted {_p99_all(o) * 1000:.2f} / {_p99_accepted(o) * 1000:.2f} "
                  f"ms vs {best_yarn.agent} {_p99_all(best_yarn) * 1000:.2f} / {_p99_accepted(best_yarn) * 1000:.2f}: "
                  f"{'met' if met else 'NOT met'}")
        for o in ours:
            mine = _p99_accepted(o)
            ratios = ", ".join(f"{y.agent} {mine / _p99_accepted(y):.1f}x" for y in yarn if _p99_accepted(y))
            fastest = min(_p99_accepted(y) for y in yarn)
            print(f"  {label}: {o.agent} p99 accepted {mine * 1000:.2f} ms = {ratios} "
                  f"(within 2x of the fastest: {'met' if mine <= 2 * fastest else 'NOT met'})")


def _p99_all(outcome: Outcome) -> float:
    return float(np.percentile(outcome.seconds, 99)) if outcome.seconds else 0.0


def _p99_accepted(outcome: Outcome) -> float:
    chosen = [s for s, ok in zip(outcome.seconds, outcome.accepted(), strict=True) if ok]
    return float(np.percentile(chosen, 99)) if chosen else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", default="mixed,yarn,tight,gangs",
                        help="STREAM@STEP: that stream planned at another step (the resolution sweep: "
                             "mixed@10s,yarn@1m,tight@1s,...)")
    parser.add_argument("--mixed-count", type=int, default=2500, help="reservations in the mixed week")
    parser.add_argument("--count", type=int, default=300, help="reservations in each of the other streams")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--warmup", type=int, default=1, help="passes through YARN before the timed ones")
    parser.add_argument("--repeat", type=int, default=3,
                        help="timed passes on both sides; each decision's time is its least over them")
    parser.add_argument("--no-explain", action="store_true", help="ours: skip the earliest-deadline search")
    parser.add_argument("--calculator", choices=("dominant", "default"), default="dominant",
                        help="YARN's resource calculator: dominant (memory and vcores) or default (memory only)")
    parser.add_argument("--ours", default=",".join(OURS),
                        help="our agents; AGENT@early: every reservation asks placement=early "
                             "(e.g. gree,gree-l,gree@early,gree-l@early)")
    parser.add_argument("--yarn", default=",".join(harness.YARN_AGENTS),
                        help="YARN's agents to run (greedy, greedy-right, aligned), or none: ours alone, no Java")
    parser.add_argument("--by-shape", action="store_true",
                        help="each agent's accepted count per reservation shape (kind and children)")
    args = parser.parse_args()
    yarn_agents = () if args.yarn == "none" else tuple(name.strip() for name in args.yarn.split(","))
    for name in yarn_agents:
        if name not in harness.YARN_AGENTS:
            raise SystemExit(f"--yarn: `{name}` is not one of {', '.join(harness.YARN_AGENTS)}, or none")
    ours = tuple(name.strip() for name in args.ours.split(","))
    for name in ours:
        ours_agent(name)  # a bad name stops the run before anything runs
    makers = {  # each stream of `count` reservations, with its cluster
        "mixed": lambda count: mixed(count, args.seed),
        "yarn": lambda count: streams.yarn_shaped(count, args.seed + 4),
        "tight": lambda count: streams.tight(count, args.seed + 5),
        "gangs": lambda count: streams.gangs(count, args.seed + 6),
    }
    labels = [name.strip() for name in args.streams.split(",")]
    for label in labels:  # a bad name or step stops the run before anything runs
        kind, _, step = label.partition("@")
        if kind not in makers:
            raise SystemExit(f"--streams: `{kind}` is not one of {', '.join(makers)} (optionally @STEP)")
        if step:
            try:
                streams.at_step(*makers[kind](0), step)
            except RDLErrors as error:
                raise SystemExit(f"--streams: `{label}`: {error}") from None
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"
          + ("; java: YARN 3.4.1 agents" if yarn_agents else "; YARN's agents not run"))
    results = {}
    for label in labels:
        kind, _, step = label.partition("@")
        cluster, stream = makers[kind](args.mixed_count if kind == "mixed" else args.count)
        if step:  # the same reservations on a plan of another step
            drawn = len(stream.reservations)
            cluster, stream = streams.at_step(cluster, stream, step)
            if len(stream.reservations) < drawn:
                print(f"\n{label}: {drawn - len(stream.reservations)} of the {drawn} reservations left out: rounded "
                      f"to whole steps of {step}, their windows are shorter than they need")
        results[label] = (cluster, run_stream(label, cluster, stream, args.warmup, not args.no_explain,
                                                args.calculator, args.repeat, ours, yarn_agents, args.by_shape))
    goals(results)


if __name__ == "__main__":
    main()
