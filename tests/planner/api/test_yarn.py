"""YARN's reservation REST dialect (`/ws/v1/cluster/reservation/...`) through a real server.

YARN's field names, status codes (202 submit, 200 update/delete/list, 400 with a RemoteException for
every failure), ids `reservation_<clusterTimestamp>_<seq>`, and its idempotent submit; our decision
record and structured error ride beside YARN's bare answers.
"""

from __future__ import annotations

import itertools
import re
from datetime import datetime, timedelta
from typing import Any as AnyType

import httpx
import pytest

from planner.store.facade import Store
from rdl.forms.yarn import to_yarn
from tests.planner.api.support import (
    CLUSTER,
    Server,
    epoch_ms,
    pinned,
    post_json,
    snapshot,
    stored_violations,
    submit,
    yarn_body,
)

BASE = "/ws/v1/cluster/reservation"
PROD = {"queue": "prod"}  # YARN lists one queue: `default` unless named


def instant_of(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def new_id(client: httpx.Client) -> str:
    answer = client.post(f"{BASE}/new-reservation")
    assert answer.status_code == 200
    return str(answer.json()["reservation-id"])


def remote(answer: httpx.Response) -> dict[str, str]:
    """YARN's RemoteException of an error answer."""
    exception: dict[str, str] = answer.json()["RemoteException"]
    assert set(exception) == {"exception", "message", "javaClassName"}
    assert exception["javaClassName"].endswith("." + exception["exception"])
    return exception


def test_new_reservation_ids_have_yarns_form_and_never_repeat(api: Server) -> None:
    with api.client("alice") as alice:
        ids = [new_id(alice) for _ in range(3)]
    matches = [re.fullmatch(r"reservation_(\d{13})_(\d{4,})", rid) for rid in ids]
    assert all(matches) and len(set(ids)) == 3
    assert len({m.group(1) for m in matches if m}) == 1  # one cluster timestamp, rising sequence numbers
    assert [int(m.group(2)) for m in matches if m] == sorted(int(m.group(2)) for m in matches if m)


def test_submit_is_202_and_list_speaks_yarns_field_names(api: Server) -> None:
    with api.client("alice") as alice:
        rid = new_id(alice)
        body = yarn_body(rid, 60, 180, containers=8, minutes=20, memory=2048, vcores=2, gang=4)
        answer = post_json(alice, f"{BASE}/submit", body)
        assert answer.status_code == 202
        assert answer.json()["reservation-id"] == rid and answer.json()["decision"]["accepted"]
        listed = alice.get(f"{BASE}/list", params={"queue": "prod", "include-resource-allocations": "true"}).json()
    (info,) = listed["reservations"]
    assert info["reservation-id"] == rid and info["user"] == "alice" and info["acceptance-time"] > 0
    definition = info["reservation-definition"]
    assert (definition["arrival"], definition["deadline"]) == (epoch_ms(60), epoch_ms(180))
    requests = definition["reservation-requests"]
    assert requests["reservation-request-interpreter"] == 1
    assert requests["reservation-request"] == [{"capability": {"memory": 2048, "vCores": 2}, "num-containers": 8,
                                                "min-concurrency": 4, "duration": 20 * 60_000}]
    allocations = info["resource-allocations"]
    assert {"resource", "startTime", "endTime"} == set(allocations[0])
    assert sum(a["resource"]["vCores"] * (a["endTime"] - a["startTime"]) for a in allocations) == \
        8 * 2 * 20 * 60_000  # every container's vcores for its duration
    assert all(epoch_ms(60) <= a["startTime"] < a["endTime"] <= epoch_ms(180) for a in allocations)
    without = api.client("alice").get(f"{BASE}/list", params=PROD).json()["reservations"][0]
    assert "resource-allocations" not in without or without["resource-allocations"] == []


def test_submitting_the_same_id_and_definition_again_succeeds_without_replanning(api: Server) -> None:
    with api.client("alice") as alice:
        rid = new_id(alice)
        body = yarn_body(rid, 0, 120)
        first = post_json(alice, f"{BASE}/submit", body)
        again = post_json(alice, f"{BASE}/submit", body)
    assert first.status_code == again.status_code == 202
    assert again.json()["decision"]["allocations"] == first.json()["decision"]["allocations"]
    log = snapshot(api.state)[1]
    assert [entry for entry in log if entry[2] == rid] == [log[0]] and len(log) == 1  # decided and logged once


def test_the_same_id_with_another_definition_is_an_error_that_changes_nothing(api: Server) -> None:
    with api.client("alice") as alice:
        rid = new_id(alice)
        post_json(alice, f"{BASE}/submit", yarn_body(rid, 0, 120))
        before = snapshot(api.state)
        answer = post_json(alice, f"{BASE}/submit", yarn_body(rid, 0, 120, containers=6))
    assert answer.status_code == 400
    assert "different definition" in remote(answer)["message"]
    assert snapshot(api.state) == before


def test_the_same_id_under_another_reservation_name_is_another_definition(api: Server) -> None:
    with api.client("alice") as alice:
        rid = new_id(alice)
        post_json(alice, f"{BASE}/submit", yarn_body(rid, 0, 120, name="nightly etl (v2)"))
        again = post_json(alice, f"{BASE}/submit", yarn_body(rid, 0, 120, name="nightly etl (v2)"))
        renamed = post_json(alice, f"{BASE}/submit", yarn_body(rid, 0, 120, name="nightly etl (v3)"))
        (info,) = alice.get(f"{BASE}/list", params=PROD).json()["reservations"]
    assert again.status_code == 202
    assert renamed.status_code == 400 and "different definition" in remote(renamed)["message"]
    assert info["reservation-definition"]["reservation-name"] == "nightly etl (v2)"  # exactly as sent


def test_an_update_naming_another_queue_keeps_the_reservations_own(api: Server) -> None:
    with api.client("alice") as alice:
        rid = new_id(alice)
        post_json(alice, f"{BASE}/submit", yarn_body(rid, 0, 120, containers=4))
        moved = post_json(alice, f"{BASE}/update", yarn_body(rid, 0, 120, containers=2, queue="elsewhere"))
    assert moved.status_code == 200
    with Store.open(api.state) as store:
        assert store.get(rid).queue == "prod"  # YARN's update has no queue: a `queue` in the body is ignored


def test_a_rejected_submission_is_400_with_our_reason_beside_yarns_message(api: Server) -> None:
    with api.client("alice") as alice:
        submit(alice, pinned("full", 0, 120, 16))
        rid = new_id(alice)
        answer = post_json(alice, f"{BASE}/submit", yarn_body(rid, 0, 120))
        listed = alice.get(f"{BASE}/list").json()["reservations"]  # `full` has no queue: it is in `default`
    assert answer.status_code == 400
    assert remote(answer)["exception"] == "BadRequestException"
    decision = answer.json()["decision"]
    assert not decision["accepted"] and decision["reason"]["code"] == "capacity"
    assert decision["reason"]["message"] in remote(answer)["message"]
    assert [r["reservation-id"] for r in listed] == ["full"]  # list shows active reservations only


def test_malformed_submissions_are_400_naming_the_json_path(api: Server) -> None:
    with api.client("alice") as alice:
        rid = new_id(alice)
        body = yarn_body(rid, 0, 120)
        body["reservation-definition"]["reservation-requests"]["reservation-request"][0]["num-containers"] = -2
        bad_field = post_json(alice, f"{BASE}/submit", body)
        no_id = post_json(alice, f"{BASE}/submit", yarn_body(None, 0, 120))
        bad_id = post_json(alice, f"{BASE}/submit", {**yarn_body(None, 0, 120), "reservation-id": "res-1"})
        not_json = alice.post(f"{BASE}/submit", content=b'{"queue": "prod",')
        not_object = post_json(alice, f"{BASE}/submit", [1, 2])
    path = "$.reservation-definition.reservation-requests.reservation-request[0].num-containers"
    assert bad_field.status_code == 400 and path in remote(bad_field)["message"]
    assert bad_field.json()["error"]["errors"][0]["json_path"] == path
    assert no_id.status_code == 400 and "reservation-id" in remote(no_id)["message"]
    assert "new-reservation" in no_id.json()["error"]["errors"][0]["hint"]
    assert bad_id.status_code == 400 and "reservation_<clusterTimestamp>_<sequence>" in remote(bad_id)["message"]
    assert not_json.status_code == 400 and "<request>:1:" in remote(not_json)["message"]
    assert not_object.status_code == 400
    assert snapshot(api.state)[0] == []


def test_update_replaces_a_definition_that_fits_and_keeps_the_old_one_otherwise(api: Server) -> None:
    with api.client("alice") as alice:
        rid = new_id(alice)
        post_json(alice, f"{BASE}/submit", yarn_body(rid, 0, 120, containers=4))
        submit(alice, pinned("beside", 0, 120, 8))
        update = {key: value for key, value in yarn_body(rid, 0, 120, containers=8).items() if key != "queue"}
        grown = post_json(alice, f"{BASE}/update", update)
        assert grown.status_code == 200 and grown.json()["decision"]["previous"] == "replaced"
        before = snapshot(api.state)[2]
        too_big = {**update, "reservation-definition": yarn_body(rid, 0, 120, containers=40,
                                                                 vcores=4)["reservation-definition"]}
        refused = post_json(alice, f"{BASE}/update", too_big)
        listed = alice.get(f"{BASE}/list", params={**PROD, "reservation-id": rid}).json()["reservations"]
    assert refused.status_code == 400 and refused.json()["decision"]["previous"] == "kept"
    assert snapshot(api.state)[2] == before
    definition = listed[0]["reservation-definition"]
    assert definition["reservation-requests"]["reservation-request"][0]["num-containers"] == 8
    with Store.open(api.state) as store:
        assert store.get(rid).queue == "prod"  # the update body has no queue: the reservation kept its own


def test_delete_frees_the_reservation_and_a_second_or_unknown_delete_is_400(api: Server) -> None:
    with api.client("alice") as alice:
        rid = new_id(alice)
        post_json(alice, f"{BASE}/submit", yarn_body(rid, 0, 120))
        deleted = post_json(alice, f"{BASE}/delete", {"reservation-id": rid})
        again = post_json(alice, f"{BASE}/delete", {"reservation-id": rid})
        unknown = post_json(alice, f"{BASE}/delete", {"reservation-id": "reservation_1_0001"})
        listed = alice.get(f"{BASE}/list", params=PROD).json()["reservations"]
    assert deleted.status_code == 200 and deleted.json()["decision"]["state"] == "cancelled"
    assert again.status_code == 400 and remote(again)["exception"] == "BadRequestException"
    assert unknown.status_code == 400
    assert listed == []
    assert stored_violations(api.state) == []


def test_a_user_cannot_update_delete_or_list_another_users_reservation(api: Server) -> None:
    with api.client("alice") as alice, api.client("bob") as bob, api.client("ops") as ops:
        rid = new_id(alice)
        post_json(alice, f"{BASE}/submit", yarn_body(rid, 0, 120))
        before = snapshot(api.state)
        update = post_json(bob, f"{BASE}/update", {"reservation-id": rid, **{
            k: v for k, v in yarn_body(rid, 0, 120, containers=2).items() if k == "reservation-definition"}})
        delete = post_json(bob, f"{BASE}/delete", {"reservation-id": rid})
        resubmit = post_json(bob, f"{BASE}/submit", yarn_body(rid, 0, 120))
        named = bob.get(f"{BASE}/list", params={**PROD, "reservation-id": rid})
        assert bob.get(f"{BASE}/list", params=PROD).json()["reservations"] == []
        assert snapshot(api.state) == before
        for answer in (update, delete, resubmit, named):
            assert answer.status_code == 403 and remote(answer)["exception"] == "ForbiddenException"
        assert [r["reservation-id"] for r in ops.get(f"{BASE}/list", params=PROD).json()["reservations"]] == [rid]
        assert post_json(ops, f"{BASE}/delete", {"reservation-id": rid}).status_code == 200


def test_list_keeps_reservations_whose_window_meets_the_time_range_as_yarn_does(api: Server) -> None:
    with api.client("alice") as alice:
        early, late = new_id(alice), new_id(alice)
        post_json(alice, f"{BASE}/submit", yarn_body(early, 0, 60, containers=4, minutes=30, gang=4))
        post_json(alice, f"{BASE}/submit", yarn_body(late, 600, 660, containers=4, minutes=30, gang=4))

        def listed(**params: AnyType) -> list[str]:
            found = alice.get(f"{BASE}/list", params={**PROD, **params}).json()["reservations"]
            return [r["reservation-id"] for r in found]

        assert listed() == [early, late]
        assert listed(**{"start-time": epoch_ms(300)}) == [late]
        assert listed(**{"start-time": 0, "end-time": epoch_ms(300)}) == [early]
        # the reservation's window counts, not when it holds capacity; start == end is a moment, not an error
        assert listed(**{"start-time": epoch_ms(1), "end-time": epoch_ms(1)}) == [early]
        assert listed(**{"start-time": epoch_ms(60), "end-time": epoch_ms(60)}) == []  # the deadline is not in it
        # by id the times are not looked at; an unknown id lists nothing
        assert listed(**{"reservation-id": early, "start-time": epoch_ms(300)}) == [early]
        assert listed(**{"reservation-id": "reservation_1_9999"}) == []
        assert alice.get(f"{BASE}/list", params={"queue": "other"}).json()["reservations"] == []
        assert alice.get(f"{BASE}/list").json()["reservations"] == []  # no queue: YARN's `default`
        backwards = alice.get(f"{BASE}/list", params={**PROD, "start-time": epoch_ms(300), "end-time": epoch_ms(100)})
    assert backwards.status_code == 400 and remote(backwards)


def test_list_adds_allocations_only_for_true_as_yarn_reads_the_flag(api: Server) -> None:
    with api.client("alice") as alice:
        rid = new_id(alice)
        post_json(alice, f"{BASE}/submit", yarn_body(rid, 0, 60, containers=4, minutes=30, gang=4))
        flags = {flag: alice.get(f"{BASE}/list", params={**PROD, "include-resource-allocations": flag}).json()
                 for flag in ("TRUE", "maybe", "false")}
    assert "resource-allocations" in flags["TRUE"]["reservations"][0]
    assert all("resource-allocations" not in flags[flag]["reservations"][0] for flag in ("maybe", "false"))


def test_listed_allocations_are_the_total_held_per_stretch_of_time(api: Server) -> None:
    with api.client("alice") as alice:
        rid = new_id(alice)
        body = yarn_body(rid, 0, 60, containers=2, minutes=10, memory=1024, vcores=1, gang=1)
        body["reservation-definition"]["reservation-requests"]["reservation-request"].append(
            {"capability": {"memory": 2048, "vCores": 2}, "num-containers": 1, "min-concurrency": 1,
             "duration": 10 * 60_000})
        assert post_json(alice, f"{BASE}/submit", body).status_code == 202
        info = alice.get(f"{BASE}/list", params={**PROD, "include-resource-allocations": "true"}).json()
    stretches = info["reservations"][0]["resource-allocations"]
    # R_ALL: three containers (two leases of one atom, one of the other) however they are placed; no two
    # neighbouring stretches hold the same, and none holds nothing
    assert sum(s["resource"]["memory"] * (s["endTime"] - s["startTime"]) for s in stretches) == \
        (2 * 1024 + 2048) * 10 * 60_000
    assert all(s["resource"]["memory"] > 0 for s in stretches)
    assert all(a["endTime"] <= b["startTime"] for a, b in itertools.pairwise(stretches))
    assert all(a["resource"] != b["resource"] or a["endTime"] != b["startTime"]
               for a, b in itertools.pairwise(stretches))


def test_queues_outside_the_reservable_ones_are_refused_as_yarn_does(api: Server) -> None:
    api.reset(CLUSTER + "queues: [prod]\n")
    with api.client("alice") as alice:
        rid = new_id(alice)
        elsewhere = post_json(alice, f"{BASE}/submit", yarn_body(rid, 0, 60, queue="dev"))
        accepted = post_json(alice, f"{BASE}/submit", yarn_body(rid, 0, 60, queue="prod"))
        unknown = alice.get(f"{BASE}/list", params={"queue": "prd"})
        default = alice.get(f"{BASE}/list")
        listed = alice.get(f"{BASE}/list", params=PROD).json()["reservations"]
    assert elsewhere.status_code == 400 and "reservable `queues`" in remote(elsewhere)["message"]
    assert accepted.status_code == 202 and [r["reservation-id"] for r in listed] == [rid]
    assert unknown.status_code == default.status_code == 400
    assert unknown.json()["error"]["hint"] == "did you mean `prod`?"
    assert "looks in `default`" in remote(default)["message"]


def test_a_duration_off_the_plans_steps_is_answered_with_what_was_booked(api: Server) -> None:
    with api.client("alice") as alice:  # one-minute steps: 90 s containers hold two steps
        rid = new_id(alice)
        body = yarn_body(rid, 0, 60, containers=2)
        body["reservation-definition"]["reservation-requests"]["reservation-request"][0]["duration"] = 90_000
        submitted = post_json(alice, f"{BASE}/submit", body)
        exact = yarn_body(new_id(alice), 0, 60, containers=2, minutes=2)
        whole = post_json(alice, f"{BASE}/submit", exact)
        updated = post_json(alice, f"{BASE}/update", {"reservation-id": rid,
                                                      "reservation-definition": body["reservation-definition"]})
    assert submitted.status_code == 202 and whole.status_code == 202 and updated.status_code == 200
    assert submitted.json()["booked"] == updated.json()["booked"] == [{
        "reservation-request": "$.reservation-definition.reservation-requests.reservation-request[0]",
        "duration": 90_000, "booked-duration": 120_000, "step": 60_000}]
    assert "booked" not in whole.json()
    allocation = submitted.json()["decision"]["allocations"][0]
    assert instant_of(allocation["end"]) - instant_of(allocation["start"]) == timedelta(minutes=2)


def test_the_cluster_info_answers_as_yarns_without_a_token(api: Server) -> None:
    with api.client() as anyone:
        answers = [anyone.get(path) for path in ("/ws/v1/cluster", "/ws/v1/cluster/info")]
    assert [a.status_code for a in answers] == [200, 200]
    info = answers[0].json()["clusterInfo"]
    assert answers[1].json() == answers[0].json()
    assert info["state"] == "STARTED" and info["haState"] == "ACTIVE"
    assert {"id", "startedOn", "resourceManagerVersion", "hadoopVersion", "rmStateStoreName"} <= set(info)


def test_the_web_ui_address_answers_for_clients_probing_for_the_active_rm(api: Server) -> None:
    with api.client() as anyone:
        page = anyone.get("/cluster")  # yarn-api-client's check_is_active_rm wants a 200 here
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "/ws/v1/cluster" in page.text


def test_list_shows_a_reservation_yarn_cannot_express_with_its_rdl(api: Server) -> None:
    with api.client("alice") as alice:
        submit(alice, pinned("native", 30, 60, 2))
        (info,) = alice.get(f"{BASE}/list").json()["reservations"]  # no queue: listed in `default`
    assert info["reservation-id"] == "native" and "reservation native" in info["rdl"]
    # its window is its body's: from the submission (the plan's clock) to the window's end
    assert (info["reservation-definition"]["arrival"], info["reservation-definition"]["deadline"]) == (
        epoch_ms(0), epoch_ms(90))


def test_the_example_yarn_submission_round_trips_through_submit_and_list(api: Server) -> None:
    with api.client("alice") as alice:
        rid = new_id(alice)
        body = yarn_body(rid, 0, 240, containers=20, minutes=15, gang=5, interpreter=2)
        body["reservation-definition"]["reservation-requests"]["reservation-request"].append(
            {"capability": {"memory": 4096, "vCores": 2}, "num-containers": 4, "min-concurrency": 4,
             "duration": 30 * 60_000})
        assert post_json(alice, f"{BASE}/submit", body).status_code == 202
        (info,) = alice.get(f"{BASE}/list", params=PROD).json()["reservations"]
    sent = body["reservation-definition"]
    got = info["reservation-definition"]
    assert got["reservation-requests"] == sent["reservation-requests"]
    assert (got["arrival"], got["deadline"], got["priority"]) == (sent["arrival"], sent["deadline"], 0)
    assert got["reservation-name"] == sent["reservation-name"] == "job"  # kept (on the stored body), as YARN does
    with Store.open(api.state) as store:
        stored = to_yarn(store.get(rid).reservation(), rid)["reservation-definition"]
    assert stored == {**got, "reservation-name": rid}


@pytest.mark.parametrize("path", ["submit", "update", "delete"])
def test_empty_or_non_json_bodies_are_400_in_yarns_style(api: Server, path: str) -> None:
    with api.client("alice") as alice:
        empty = alice.post(f"{BASE}/{path}", content=b"")
        text = alice.post(f"{BASE}/{path}", content=b"reservation x {}")
    assert empty.status_code == text.status_code == 400
    assert remote(empty)["exception"] == remote(text)["exception"] == "BadRequestException"


def test_the_list_comes_in_pages_and_refuses_times_beyond_the_calendar(api: Server) -> None:
    with api.client("alice") as alice:
        for index in range(3):
            assert submit(alice, pinned(f"paged{index}", 10 * index, 10, 1)).status_code == 201
        first = alice.get(f"{BASE}/list", params={"limit": 2}).json()
        rest = alice.get(f"{BASE}/list", params={"limit": 2, "offset": first["next-offset"]}).json()
        beyond = [alice.get(f"{BASE}/list", params={"start-time": value}).status_code
                  for value in (10**20, 253402300800000)]
    assert [len(first["reservations"]), first["total"], first["next-offset"]] == [2, 3, 2]
    assert len(rest["reservations"]) == 1 and "next-offset" not in rest
    names = {r["reservation-id"] for r in first["reservations"] + rest["reservations"]}
    assert names == {"paged0", "paged1", "paged2"}
    assert beyond == [400, 400]
