"""benchmarks/peers/yarn_agents.py's own Python: `AGENT@early` names, the stream it asks early, and streams at
another step (`STREAM@STEP`; no Java needed)."""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from planner.core.check import check_plan
from rdl import parse_cluster, units
from rdl.cluster import Cluster
from rdl.forms.yarn_body import EPOCH
from tests.peers.yarn import agent_harness as harness
from tests.peers.yarn import streams
from tests.planner.support import parse

SCRIPT = Path(__file__).resolve().parents[3] / "benchmarks" / "peers" / "yarn_agents.py"
spec = importlib.util.spec_from_file_location("yarn_agents", SCRIPT)
assert spec is not None and spec.loader is not None
yarn_agents = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = yarn_agents  # its dataclasses look their module up there
spec.loader.exec_module(yarn_agents)


def test_agent_names_carry_a_placement():
    assert yarn_agents.ours_agent("gree") == ("gree", None)
    assert yarn_agents.ours_agent("gree-l@early") == ("gree-l", "early")
    assert yarn_agents.ours_agent("gree@late") == ("gree", "late")


@pytest.mark.parametrize("name", ["gree@first", "milp@early", "yarn-greedy"])
def test_unknown_agent_names_stop_the_run_naming_them(name):
    with pytest.raises(SystemExit, match=f"`{name}`"):
        yarn_agents.ours_agent(name)


def test_placed_stream_asks_early_and_changes_nothing_else():
    _, stream = streams.yarn_shaped(12, 11)
    early = yarn_agents.placed(stream, "early")
    assert all(r.placement == "early" for r in early.reservations)
    assert tuple(replace(r, placement="late") for r in early.reservations) == stream.reservations
    assert early.bodies == stream.bodies and early.users == stream.users and early.values == stream.values


def test_early_stream_starts_the_first_reservation_no_later_and_passes_the_checker():
    cluster, stream = streams.yarn_shaped(12, 11)
    early = yarn_agents.placed(stream, "early")
    late_run = harness.run_ours(cluster, stream, "gree", explain=False)
    early_run = harness.run_ours(cluster, early, "gree", explain=False)
    assert check_plan(cluster, early.reservations, early_run.records) == []
    first_late, first_early = late_run.records[0], early_run.records[0]
    assert first_late["accepted"] and first_early["accepted"]  # an empty plan has room for it

    def begin(record: dict) -> float:
        return min(units.parse_instant(a["start"]).timestamp() for a in record["allocations"])

    assert begin(first_early) < begin(first_late)


def _record(name: str, accepted: bool, start: str = "", end: str = "", vcores: float = 0.0) -> dict:
    allocations = [{"atom": "a", "start": start, "end": end, "bundles": int(vcores),
                    "resources": {"memory": vcores * 1024, "vcores": vcores}}] if accepted else []
    return {"reservation": name, "accepted": accepted, "allocations": allocations}


def test_no_room_counts_only_yarn_accepts_that_go_over_what_our_plan_left_free():
    cluster = parse_cluster("start: 2026-11-23T00:00:00Z\nstep: 1m\nhorizon: 1h\n"
                            "capacity: {memory: 10GiB, vcores: 10}\n", "c.yaml")
    at = "2026-11-23T00:{:02d}:00Z".format
    ours = yarn_agents.Outcome("gree", [
        _record("big", True, at(0), at(10), 8),
        _record("blocked", False), _record("roomy", False), _record("both", True, at(40), at(45), 2)], [], [])
    yarn = yarn_agents.Outcome("yarn-greedy", [
        _record("big", False),
        _record("blocked", True, at(5), at(8), 4),  # 8 + 4 > 10 vcores where ours holds `big`
        _record("roomy", True, at(20), at(25), 4),  # fits what ours left free
        _record("both", True, at(40), at(45), 2)], [], [])
    assert yarn_agents._no_room(cluster, ours, yarn) == 1
    assert yarn_agents._bundle_hours(ours.records[0], 60) == pytest.approx(8 * 10 / 60)


def test_gree_s_is_one_of_ours_by_name():
    assert yarn_agents.ours_agent("gree-s") == ("gree-s", None)


def test_wide_counts_what_gree_s_refuses_on_an_empty_plan():
    cluster, stream = streams.tight(40, 12)
    refused = 0
    for reservation in stream.reservations:  # each alone, on a plan of its own: what it refuses whatever is held
        record = harness.run_ours(cluster, replace(stream, reservations=(reservation,)), "gree-s",
                                  explain=False).records[0]
        refused += not record["accepted"] and record["reason"]["code"] == "policy"
    assert yarn_agents.wide(cluster, stream) == refused > 0


def test_without_yarn_the_stream_runs_ours_alone(capsys):
    cluster, stream = streams.tight(12, 12)
    outcomes = yarn_agents.run_stream("tight", cluster, stream, 0, False, ours=("gree-l", "gree-s"), yarn_agents=())
    assert [o.agent for o in outcomes] == ["gree-l", "gree-s"] and not any(o.violations for o in outcomes)
    yarn_agents.goals({"tight": (cluster, outcomes)})  # nothing to compare with: no goal lines, no failure
    assert "vs best YARN" not in capsys.readouterr().out


def test_shapes_name_the_body_under_its_windows_and_count_its_children():
    atom, gapped, window_all, one_any = parse(
        "reservation a { atom(b={vcores: 1}, w=1h) }\n"
        "reservation b { order(atom(b={vcores: 1}, w=1h), atom(b={vcores: 1}, w=1h), gap=0s) }\n"
        "reservation c { window(s=2026-11-23T00:00:00Z, e=2026-11-23T06:00:00Z, all(atom(b={vcores: 1}, w=1h), "
        "atom(b={vcores: 1}, w=1h), atom(b={vcores: 1}, w=1h))) }\n"
        "reservation d { any(atom(b={vcores: 1}, w=1h)) }\n")
    assert [yarn_agents.shape(r) for r in (atom, gapped, window_all, one_any)] == [
        "atom", "order gap of 2", "all of 3", "any of 1"]


def test_accepted_by_shape_adds_up_to_each_agents_accepted(capsys):
    _, stream = streams.yarn_shaped(40, 11)
    outcomes = [yarn_agents.Outcome(name, [{"accepted": (i * k) % 3 == 0} for i in range(40)], [0.0] * 40, [])
                for k, name in ((1, "one"), (2, "two"))]
    yarn_agents.by_shape(stream, outcomes)
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[2:]]
    counts = [[int(cell) for cell in row[-3:]] for row in rows]  # count, then each agent's accepted
    assert sum(row[0] for row in counts) == 40
    assert [sum(row[1 + k] for row in counts) for k in range(2)] == [sum(o.accepted()) for o in outcomes]


def test_a_stream_at_another_step_is_the_same_reservations_on_that_plan():
    cluster, stream = streams.yarn_shaped(30, 11)
    coarse, rounded = streams.at_step(cluster, stream, "1m")
    assert (coarse.step, coarse.start, coarse.horizon, coarse.capacity) == (60, cluster.start, cluster.horizon,
                                                                             cluster.capacity)
    run = harness.run_ours(coarse, rounded, "gree", explain=False)
    assert check_plan(coarse, rounded.reservations, run.records) == []
    leases = [units.parse_instant(a["end"]) - units.parse_instant(a["start"])
              for record in run.records for a in record.get("allocations", ())]
    assert leases and all(lease.total_seconds() % 60 == 0 for lease in leases)  # seconds rounded up to minutes


def _on_minutes(ms: int, cluster: Cluster) -> bool:
    return (ms - round((cluster.start - EPOCH).total_seconds() * 1000)) % 60_000 == 0


def test_a_stream_at_another_step_is_rounded_for_yarn_as_our_planner_reads_it():
    cluster, stream = streams.yarn_shaped(60, 11)
    coarse, rounded = streams.at_step(cluster, stream, "1m")
    drawn = {body["reservation-definition"]["reservation-name"]: body for body in stream.bodies}
    assert 0 < len(rounded.bodies) < len(drawn)  # a few windows hold their requests on no whole minutes
    for body in rounded.bodies:
        new = body["reservation-definition"]
        old = drawn[new["reservation-name"]]["reservation-definition"]
        assert _on_minutes(new["arrival"], coarse) and _on_minutes(new["deadline"], coarse)
        assert old["arrival"] <= new["arrival"] < old["arrival"] + 60_000  # inward: up, and
        assert old["deadline"] - 60_000 < new["deadline"] <= old["deadline"]  # down, by less than a step
        durations = [(r["duration"], q["duration"]) for r, q in zip(new["reservation-requests"]["reservation-request"],
                                                                   old["reservation-requests"]["reservation-request"],
                                                                   strict=True)]
        assert all(d % 60_000 == 0 and o <= d < o + 60_000 for d, o in durations)
    as_drawn = {record["reservation"]: record for record in harness.run_ours(coarse, stream, "gree",
                                                                           explain=False).records}
    as_rounded = harness.run_ours(coarse, rounded, "gree", explain=False).records
    left_out = set(drawn) - {record["reservation"] for record in as_rounded}
    assert not any(as_drawn[name]["accepted"] for name in left_out)  # on our planner too, no placement holds them
    for record in as_rounded:  # our planner reads both alike: the same decisions, the same leases
        assert (record["accepted"], record.get("allocations")) == (as_drawn[record["reservation"]]["accepted"],
                                                                   as_drawn[record["reservation"]].get("allocations"))
    assert streams.at_step(cluster, stream, "1s") == (cluster, stream)  # its own step: nothing to round


def test_at_step_moves_only_the_streams_own_clusters():
    other = parse_cluster("start: 2026-11-23T00:00:00Z\nstep: 1m\nhorizon: 1d\ncapacity: {memory: 1GiB, vcores: 8}\n",
                          "c.yaml")
    with pytest.raises(ValueError, match="at_step"):
        streams.at_step(other, streams.tight(3)[1], "10s")


@pytest.mark.parametrize(("streams_arg", "named"), [("yarn@7x", "`yarn@7x`"), ("queue@1m", "`queue`")])
def test_a_bad_stream_or_step_stops_the_run_naming_it(monkeypatch, capsys, streams_arg, named):
    monkeypatch.setattr(sys, "argv", ["yarn_agents.py", "--streams", f"tight,{streams_arg}", "--yarn", "none"])
    with pytest.raises(SystemExit, match=named):
        yarn_agents.main()
    assert "== tight" not in capsys.readouterr().out  # nothing ran before the bad name was found
