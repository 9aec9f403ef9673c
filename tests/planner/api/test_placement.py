"""`POST /v1/placement`: a reservation placed on a free-capacity profile the caller gives (YARN's plan, as our
reservation agent inside the ResourceManager sends it), with nothing stored."""

from __future__ import annotations

from typing import Any as AnyType

import httpx
import numpy as np
import pytest

from planner.admission import Planner
from planner.core.check import check_plan
from rdl import parse_cluster
from rdl.forms.yarn import from_yarn
from tests.planner.api.support import Server, post_json, snapshot

T0 = 1_795_392_000_000  # 2026-11-23T00:00:00Z in epoch ms, on a whole step
MIN = 60_000
HOUR = 60 * MIN


def run(start: int, end: int, memory: float, vcores: float) -> dict[str, AnyType]:
    return {"start": T0 + start, "end": T0 + end, "resources": {"memory": memory, "vcores": vcores}}


def yarn_request(arrival: int, deadline: int, containers: int = 4, minutes: int = 10, gang: int = 1,
                 memory: int = 1024, interpreter: int = 1) -> dict[str, AnyType]:
    """YARN's submission body, times in ms from T0."""
    return {"queue": "dedicated", "reservation-id": "reservation_1_0001", "reservation-definition": {
        "arrival": T0 + arrival, "deadline": T0 + deadline, "reservation-name": "job", "priority": 0,
        "reservation-requests": {"reservation-request-interpreter": interpreter, "reservation-request": [
            {"capability": {"memory": memory, "vCores": 1}, "num-containers": containers, "min-concurrency": gang,
             "duration": minutes * MIN}]}}}


def place(client: httpx.Client, **fields: AnyType) -> httpx.Response:
    body = {"reservation": yarn_request(0, HOUR), "free": [run(0, 2 * HOUR, 8192, 8)], "step": MIN, **fields}
    return post_json(client, "/v1/placement", body)


@pytest.mark.parametrize("agent", ["gree", "gree-l", "milp"])
def test_places_inside_what_is_free_with_each_agent(api: Server, agent: str) -> None:
    # Only 2 vcores free in the first half hour, 8 after: four one-vcore 10-minute containers in a gang of 4
    # cannot start before 30 minutes.
    free = [run(0, 30 * MIN, 8192, 2), run(30 * MIN, 2 * HOUR, 8192, 8)]
    with api.client("alice") as client:
        answer = place(client, reservation=yarn_request(0, HOUR, gang=4), free=free, agent=agent).json()
    assert answer["accepted"] is True and answer["agent"] == agent
    [allocation] = answer["allocations"]
    assert allocation["bundles"] == 4 and allocation["resources"] == {"memory": 4096, "vcores": 4}
    assert allocation["start_ms"] >= T0 + 30 * MIN and allocation["end_ms"] <= T0 + HOUR
    assert allocation["end_ms"] - allocation["start_ms"] == 10 * MIN
    assert allocation["start"].startswith("2026-11-23T")


def test_the_answer_is_what_the_planner_decides_on_that_capacity(api: Server) -> None:
    body = yarn_request(0, HOUR, containers=6, minutes=20, gang=2)
    with api.client("alice") as client:
        answer = place(client, reservation=body, free=[run(0, 2 * HOUR, 8192, 4)], agent="gree").json()
    cluster = parse_cluster("start: 2026-11-23T00:00:00Z\nstep: 1m\nhorizon: 2h\n"
                            "capacity: {memory: 8192, vcores: 4}\n")
    expected = Planner(cluster).submit(from_yarn(body), "gree").to_json(Planner(cluster).plan.clock)
    assert [(a["start"], a["end"], a["bundles"]) for a in answer["allocations"]] == \
        [(a["start"], a["end"], a["bundles"]) for a in expected["allocations"]]
    assert check_plan(cluster, [from_yarn(body)], [answer]) == []


def test_a_reservation_that_does_not_fit_is_a_capacity_rejection_with_the_earliest_deadline(api: Server) -> None:
    # 4 vcores free for the first hour, 8 after: a gang of 8 for 10 minutes cannot finish by 1h, can by 1h10.
    free = [run(0, HOUR, 8192, 4), run(HOUR, 3 * HOUR, 8192, 8)]
    with api.client("alice") as client:
        answer = place(client, reservation=yarn_request(0, HOUR, containers=8, gang=8), free=free,
                       capacity={"memory": 8192, "vcores": 8}).json()
    assert answer["accepted"] is False
    assert answer["reason"]["code"] == "capacity" and answer["reason"]["atom"] == "stage0"
    assert answer["reason"]["earliest_deadline_ms"] == T0 + HOUR + 10 * MIN
    assert answer["reason"]["earliest_deadline"] == "2026-11-23T01:10:00Z"


def test_nothing_is_placed_before_now(api: Server) -> None:
    with api.client("alice") as client:
        answer = place(client, now=T0 + 40 * MIN).json()
    assert answer["accepted"] and min(a["start_ms"] for a in answer["allocations"]) >= T0 + 40 * MIN


def test_a_window_already_past_is_a_window_rejection(api: Server) -> None:
    with api.client("alice") as client:
        response = place(client, reservation=yarn_request(0, 30 * MIN, containers=1), now=T0 + HOUR)
    assert response.status_code == 200, response.text
    assert response.json()["reason"]["code"] == "window"


def test_rdl_json_is_read_too(api: Server) -> None:
    rdl = {"name": "etl", "arrival": "2026-11-23T00:00:00Z", "deadline": "2026-11-23T01:00:00Z",
           "expr": {"atom": {"b": {"memory": 1024, "vcores": 1}, "g": 1, "l": "10m", "w": "20m"}}}
    with api.client("alice") as client:
        answer = place(client, reservation=rdl).json()
    assert answer["reservation"] == "etl" and answer["accepted"]
    assert sum(a["bundles"] for a in answer["allocations"]) == 2


def test_nothing_is_stored(api: Server) -> None:
    before = snapshot(api.state)
    with api.client("alice") as client:
        assert place(client).json()["accepted"]
    assert snapshot(api.state) == before


def test_needs_a_token(api: Server) -> None:
    with api.client() as client:
        assert place(client).status_code == 401


@pytest.mark.parametrize(("fields", "says"), [
    ({"agent": "greedy"}, "agent: "),
    ({"agent": "gree", "time_limit": 2}, "time_limit: agent `gree` is greedy"),
    ({"step": 1500}, "step: 1500 ms is not whole seconds"),
    ({"free": [run(30_000, HOUR, 8192, 8)]}, "free[0].start"),
    ({"free": [run(0, HOUR, 8192, 8), run(HOUR + MIN, 2 * HOUR, 8192, 8)]}, "free[1].start"),
    ({"free": [run(0, HOUR + 30_000, 8192, 8)]}, "free[0]: "),
    ({"free": [run(0, HOUR, 8192, 8), {"start": T0 + HOUR, "end": T0 + 2 * HOUR, "resources": {"memory": 1}}]},
     "free[1].resources: names memory"),
    ({"free": [run(0, HOUR, 8192, -1)]}, "free[0].resources.vcores: -1"),
    ({"free": [run(0, HOUR, 8192, 8)], "capacity": {"memory": 8192, "vcores": 4}}, "free: more vcores free"),
    ({"now": T0 + 5 * HOUR}, "now: "),
    ({"free": [run(0, 10**9 * MIN, 8192, 8)]}, "plan steps is more than"),
    ({"reservation": {"reservation-definition": {"arrival": "soon"}}}, "reservation"),
    ({"reservation": yarn_request(0, HOUR, memory=10**6)}, "reservation"),
    ({"free": []}, "free: "),
    ({"now": -1}, "now: "),
    ({"colour": "blue"}, "colour"),
    ({"limits": {"average": 0.5, "window": HOUR}}, "user_use: missing"),
    ({"limits": {"average": 0.5}, "user_use": []}, "limits.window: missing"),
    ({"limits": {"average": 1.5, "window": HOUR}, "user_use": []}, "limits.average"),
    ({"limits": {"average": 0.5, "window": 10**9 * MIN}, "user_use": []}, "limits.window: "),
    ({"limits": {"instantaneous": 0.5}, "user_use": [run(30_000, HOUR, 0, 0)]}, "user_use[0]: "),
    ({"limits": {"instantaneous": 0.5}, "user_use": [run(-HOUR, 0, 0, 0), run(MIN, HOUR, 0, 0)]}, "user_use[1].start"),
])
def test_bad_input_is_422_naming_the_field_and_changes_nothing(api: Server, fields: dict[str, AnyType],
                                                               says: str) -> None:
    before = snapshot(api.state)
    with api.client("alice") as client:
        response = place(client, **fields)
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "input" and says in error["message"], error["message"]
    assert snapshot(api.state) == before


def test_the_endpoint_and_its_schemas_are_in_the_openapi(api: Server) -> None:
    with api.client() as client:
        schema = client.get("/openapi.json").json()
    operation = schema["paths"]["/v1/placement"]["post"]
    assert operation["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("PlacementRequest")
    assert {"PlacementRequest", "PlacementAnswer", "Run"} <= set(schema["components"]["schemas"])
    assert set(operation["responses"]) >= {"200", "401", "422"}


def test_an_arrival_before_the_profile_is_placed_from_its_start(api: Server) -> None:
    # YARN's arrival may be past by the time its RM asks: the profile starts at the plan's clock, not at the arrival.
    free = [run(30 * MIN, 2 * HOUR, 8192, 8)]
    with api.client("alice") as client:
        answer = place(client, free=free, now=T0 + 35 * MIN).json()
    assert answer["accepted"], answer
    assert min(a["start_ms"] for a in answer["allocations"]) >= T0 + 35 * MIN


AVERAGE_HALF = {"instantaneous": 1.0, "average": 0.5, "window": HOUR}  # YARN's CapacityOverTimePolicy numbers
HELD_BEFORE = [run(-HOUR, 0, 4096, 4)]  # the user held half the plan for the hour before the profile


def test_the_users_average_limit_counts_its_use_before_the_profile(api: Server) -> None:
    # A gang of 8 vcores for 10 minutes, placed latest (gree): by 15 minutes it starts at 5, and the hour from -45
    # holds 4 x 45 + 8 x 10 = 260 vcore-minutes, over half of 8 x 60; by 30 minutes it starts at 20 (240: within).
    # Without the earlier use, the first fits.
    with api.client("alice") as client:
        late = place(client, reservation=yarn_request(0, 15 * MIN, containers=8, gang=8), agent="gree",
                     limits=AVERAGE_HALF, user_use=HELD_BEFORE, capacity={"memory": 8192, "vcores": 8}).json()
        later = place(client, reservation=yarn_request(0, 30 * MIN, containers=8, gang=8), agent="gree",
                      limits=AVERAGE_HALF, user_use=HELD_BEFORE, capacity={"memory": 8192, "vcores": 8}).json()
        fresh = place(client, reservation=yarn_request(0, 15 * MIN, containers=8, gang=8), agent="gree",
                      limits=AVERAGE_HALF, user_use=[], capacity={"memory": 8192, "vcores": 8}).json()
    assert late["accepted"] is False and late["reason"]["code"] == "policy", late
    assert "average limit is 50%" in late["reason"]["message"], late
    assert later["accepted"] is True, later
    assert [a["start_ms"] for a in later["allocations"]] == [T0 + 20 * MIN]
    assert fresh["accepted"] is True and [a["start_ms"] for a in fresh["allocations"]] == [T0 + 5 * MIN], fresh


def test_the_users_instantaneous_limit_shapes_the_placement(api: Server) -> None:
    # At most half the plan at once: eight one-vcore containers of 10 minutes run four at a time, in 40 minutes.
    limits = {"instantaneous": 0.5}
    with api.client("alice") as client:
        answer = place(client, reservation=yarn_request(0, HOUR, containers=8), agent="gree-l", limits=limits,
                       user_use=[], capacity={"memory": 8192, "vcores": 8}).json()
        gang = place(client, reservation=yarn_request(0, HOUR, containers=8, gang=8), agent="gree-l", limits=limits,
                     user_use=[], capacity={"memory": 8192, "vcores": 8}).json()
    assert answer["accepted"] is True, answer
    held = np.zeros(60)
    for allocation in answer["allocations"]:
        first, last = (allocation["start_ms"] - T0) // MIN, (allocation["end_ms"] - T0) // MIN
        held[first:last] += allocation["resources"]["vcores"]
    assert held.max() <= 4 and held.sum() == 80
    assert gang["accepted"] is False and gang["reason"]["code"] == "policy", gang
