"""The native endpoints (`/v1/...`) through a real server: every endpoint's success and failure paths.

Answers are decision records; bad input answers 400/422 with the command line's own positioned
message and changes nothing; a user sees and changes only their own reservations.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from planner.api.models import Limits, RecordOut, RecordPage, SubmitAnswer
from planner.cli.store import submit_command
from planner.store.facade import Store
from rdl.forms.jsonform import dumps
from rdl.syntax.parser import parse_text
from rdl.syntax.printer import format_reservation
from tests.planner.api.support import (
    CLUSTER,
    EXAMPLES,
    Server,
    pinned,
    snapshot,
    stored_violations,
    submit,
    yarn_body,
)
from tests.planner.support import at

# -- submit --------------------------------------------------------------------------------------------------


def test_submitted_rdl_text_is_decided_committed_and_answered_with_its_decision_record(api: Server) -> None:
    with api.client("alice") as alice:
        answer = submit(alice, pinned("first", 10, 30, 4))
        assert answer.status_code == 201
        decision = answer.json()
        assert decision["reservation"] == "first" and decision["accepted"] and not decision["dry_run"]
        assert decision["allocations"] == [{"atom": "0.0", "start": at(10), "end": at(40), "bundles": 4,
                                            "resources": {"vcores": 4}}]
        stored = alice.get("/v1/reservations/first").json()
        assert stored["state"] == "accepted" and stored["user"] == "alice"
        assert stored["allocations"] == decision["allocations"]
        assert "reservation first user=alice" in stored["rdl"]
    assert stored_violations(api.state) == []


def test_rdl_json_and_yarn_json_bodies_are_read_by_their_content(api: Server) -> None:
    (reservation,) = parse_text(pinned("as_json", 0, 10, 2), "x.rdl")
    with api.client("alice") as alice:
        answer = alice.post("/v1/reservations", content=dumps([reservation]),
                            headers={"Content-Type": "application/json"})
        assert answer.status_code == 201 and answer.json()["reservation"] == "as_json"
        answer = alice.post("/v1/reservations", json=yarn_body(None, 0, 60, name="as_yarn"))
        assert answer.status_code == 201 and answer.json()["reservation"] == "as_yarn"
        answer = alice.post("/v1/reservations", params={"format": "rdl"}, content=pinned("as_rdl", 0, 10, 2))
        assert answer.status_code == 201
        listed = alice.get("/v1/reservations").json()
    assert [r["reservation"] for r in listed["items"]] == ["as_json", "as_yarn", "as_rdl"]


def test_rejection_is_an_answer_with_its_reason_and_leaves_the_plan_unchanged(api: Server) -> None:
    with api.client("alice") as alice:
        assert submit(alice, pinned("full", 0, 60, 16)).status_code == 201
        before = snapshot(api.state)[2]
        answer = submit(alice, pinned("extra", 30, 10, 1))
        assert answer.status_code == 200
        decision = answer.json()
        assert not decision["accepted"] and decision["reason"]["code"] == "capacity"
        assert "allocations" not in decision
        assert alice.get("/v1/reservations/extra").json()["state"] == "rejected"
    assert snapshot(api.state)[2] == before


def test_dry_run_answers_without_committing_anything(api: Server) -> None:
    with api.client("alice") as alice:
        answer = submit(alice, pinned("trial", 0, 10, 4), dry_run="true")
        assert answer.status_code == 200 and answer.json()["accepted"] and answer.json()["dry_run"]
        assert alice.get("/v1/reservations").json()["total"] == 0
    records, log, _ = snapshot(api.state)
    assert records == [] and log == []


def cli_stderr(state: Path, text: str, tmp_path: Path) -> str:
    """What `rayon submit FILE` prints to standard error for the same text, FILE named `<request>`."""
    path = tmp_path / "body.rdl"
    path.write_text(text)
    result = CliRunner().invoke(submit_command, [str(path), "--state", str(state)])
    assert result.exit_code == 2
    return result.stderr.replace(str(path), "<request>")


@pytest.mark.parametrize(("status", "text"), [
    (400, "reservation bad {\n  atom(b={vcores: 1}, w=30)\n}\n"),  # a duration without a unit
    (400, "reservation bad {\n  atom(b={vcores: 1} w=30m)\n}\n"),  # a missing comma
    (422, "reservation bad {\n  atom(b={vcores: 1, gpu: 2}, w=30m)\n}\n"),  # a resource the cluster lacks
    (422, "reservation bad {\n  atom(b={vcores: 32}, w=1h)\n}\n"),  # a bundle larger than the cluster
])
def test_bad_rdl_answers_the_command_lines_positioned_message_and_changes_nothing(
        api: Server, tmp_path: Path, status: int, text: str) -> None:
    before = snapshot(api.state)
    with api.client("alice") as alice:
        answer = submit(alice, text)
    assert answer.status_code == status
    error = answer.json()["error"]
    assert error["message"] + "\n" == cli_stderr(api.state, text, tmp_path)
    assert error["errors"] and all(e["file"] == "<request>" for e in error["errors"])
    assert answer.json()["changed"] is False
    assert snapshot(api.state) == before


def test_malformed_json_names_line_and_column_and_a_bad_field_its_json_path_and_place(api: Server) -> None:
    with api.client("alice") as alice:
        broken = alice.post("/v1/reservations", content='{"name": "j",\n "expr": {"atom": }}',
                            headers={"Content-Type": "application/json"})
        wrong = alice.post("/v1/reservations", json={"name": "j", "expr": {"atom": {"b": {"vcores": 1}, "w": "1h",
                                                                                      "q": 1}}})
    assert broken.status_code == 400
    assert broken.json()["error"]["errors"][0]["line"] == 2 and broken.json()["error"]["message"].startswith(
        "<request>:2:")
    assert wrong.status_code == 400 and wrong.json()["error"]["errors"][0]["json_path"] == "$.expr.atom.q"
    placed = wrong.json()["error"]["errors"][0]  # the body's text is known: its line and column too
    assert placed["line"] == 1 and wrong.json()["error"]["message"].startswith(f"<request>:1:{placed['col']}: ")
    assert snapshot(api.state)[0] == []


def test_a_body_holding_several_reservations_is_refused_whole(api: Server) -> None:
    with api.client("alice") as alice:
        answer = submit(alice, pinned("one", 0, 10, 1) + "\n" + pinned("two", 20, 10, 1))
    assert answer.status_code == 422 and "`one`, `two`" in answer.json()["error"]["message"]
    assert snapshot(api.state)[0] == []


def test_oversized_bodies_are_413_whether_declared_or_streamed(api: Server) -> None:
    big = b"#" * (1024 * 1024 + 1)
    with api.client("alice") as alice:
        declared = alice.post("/v1/reservations", content=big, headers={"Content-Type": "text/plain"})
        streamed = alice.post("/v1/reservations", content=iter([big[:600_000], big[600_000:]]),
                              headers={"Content-Type": "text/plain"})
        yarn = alice.post("/ws/v1/cluster/reservation/submit", content=big)
    assert declared.status_code == streamed.status_code == yarn.status_code == 413
    assert declared.json()["error"]["code"] == "too_large"
    assert yarn.json()["RemoteException"]["exception"] == "BadRequestException"
    assert snapshot(api.state)[0] == []


def test_bodies_that_are_not_text_or_of_unknown_type_are_refused(api: Server) -> None:
    with api.client("alice") as alice:
        assert alice.post("/v1/reservations", content=b"\xff\xfe",
                          headers={"Content-Type": "text/plain"}).status_code == 400
        assert alice.post("/v1/reservations", content=b"<xml/>",
                          headers={"Content-Type": "application/xml"}).status_code == 415
        assert alice.post("/v1/reservations", content=b"   ",
                          headers={"Content-Type": "text/plain"}).status_code == 400
        unknown = alice.post("/v1/reservations", params={"format": "rdll"}, content=pinned("x", 0, 10, 1))
    assert unknown.status_code == 422 and "did you mean `rdl`" in unknown.json()["error"]["hint"]


def test_a_file_sent_as_curl_sends_it_is_read_by_its_content(api: Server) -> None:
    """`curl --data-binary @file.rdl` labels the raw file a form; it is read as what it holds, RDL or JSON."""
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    with api.client("alice") as alice:
        rdl = alice.post("/v1/reservations", content=pinned("curl_rdl", 0, 10, 1), headers=form)
        xml = alice.post("/v1/reservations", content=b"<xml/>", headers={"Content-Type": "application/xml"})
    assert rdl.status_code == 201, rdl.text
    assert "Content-Type: text/plain" in xml.json()["error"]["hint"]


def test_agents_are_chosen_by_name_and_only_online_ones_on_the_request_path(api: Server) -> None:
    with api.client("alice") as alice:
        assert submit(alice, pinned("by_gree", 0, 10, 1), agent="gree").json()["agent"] == "gree"
        unknown = submit(alice, pinned("x", 20, 10, 1), agent="gree-ll")
        offline = submit(alice, pinned("y", 20, 10, 1), agent="milp")
    assert unknown.status_code == 422 and "did you mean `gree-l`" in unknown.json()["error"]["message"]
    assert offline.status_code == 422 and "offline" in offline.json()["error"]["message"]
    assert [r.name for r in snapshot(api.state)[0]] == ["by_gree"]


# -- ownership --------------------------------------------------------------------------------------------------


def test_a_user_cannot_see_update_or_cancel_another_users_reservation(api: Server) -> None:
    with api.client("alice") as alice, api.client("bob") as bob, api.client("ops") as ops:
        assert submit(alice, pinned("alices", 0, 30, 4)).status_code == 201
        before = snapshot(api.state)
        assert bob.get("/v1/reservations/alices").status_code == 403
        assert bob.put("/v1/reservations/alices", content=pinned("alices", 0, 30, 2)).status_code == 403
        assert bob.delete("/v1/reservations/alices").status_code == 403
        assert bob.get("/v1/reservations").json()["items"] == []
        assert bob.get("/v1/reservations", params={"user": "alice"}).status_code == 403
        assert snapshot(api.state) == before
        assert ops.get("/v1/reservations/alices").status_code == 200  # an admin sees and changes everyone's
        assert [r["reservation"] for r in ops.get("/v1/reservations", params={"user": "alice"}).json()["items"]] == [
            "alices"]
        assert ops.delete("/v1/reservations/alices").json()["state"] == "cancelled"


def test_a_name_held_by_another_user_cannot_be_taken_even_after_a_rejection(api: Server) -> None:
    with api.client("alice") as alice, api.client("bob") as bob:
        submit(alice, pinned("full", 0, 30, 16))
        assert submit(alice, pinned("wide", 0, 30, 1)).json()["accepted"] is False  # rejected, but alice's
        taken = submit(bob, pinned("wide", 0, 30, 1))
        assert taken.status_code == 403
        assert alice.get("/v1/reservations/wide").json()["user"] == "alice"


def test_submitting_for_another_user_needs_an_admin(api: Server) -> None:
    with api.client("alice") as alice, api.client("ops") as ops, api.client("bob") as bob:
        assert submit(alice, pinned("for_bob", 0, 10, 1, user="bob")).status_code == 403
        assert submit(ops, pinned("for_bob", 0, 10, 1, user="bob")).status_code == 201
        assert bob.get("/v1/reservations/for_bob").json()["user"] == "bob"
        assert submit(alice, pinned("mine", 20, 10, 1, user="alice")).status_code == 201


def test_unknown_names_are_404_suggesting_only_the_callers_own(api: Server) -> None:
    with api.client("alice") as alice, api.client("bob") as bob:
        submit(alice, pinned("nightly_alice", 0, 10, 1))
        submit(bob, pinned("nightly_bob", 20, 10, 1))
        near_own = alice.get("/v1/reservations/nightly_alise")
        near_other = alice.get("/v1/reservations/nightly_bobb")
    assert near_own.status_code == 404 and "nightly_alice" in near_own.json()["error"]["hint"]
    assert near_other.status_code == 404 and "`nightly_bob`" not in json.dumps(near_other.json())


# -- list, update, cancel --------------------------------------------------------------------------------------


def test_list_filters_by_state_and_time_and_pages_in_decision_order(api: Server) -> None:
    with api.client("alice") as alice:
        for index in range(5):
            submit(alice, pinned(f"r{index}", index * 100, 30, 4))
        submit(alice, pinned("too_big", 0, 30, 16))  # beside r0: over capacity
        rejected = alice.get("/v1/reservations", params={"state": "rejected"}).json()
        assert [r["reservation"] for r in rejected["items"]] == ["too_big"]
        during = alice.get("/v1/reservations", params={"from": at(100), "to": at(230)}).json()
        assert [r["reservation"] for r in during["items"]] == ["r1", "r2"]
        names, url = [], "/v1/reservations?limit=2"
        while url:
            page = alice.get(url).json()
            assert page["total"] == 6 and len(page["items"]) <= 2
            names += [r["reservation"] for r in page["items"]]
            url = page["next"]
        assert names == ["r0", "r1", "r2", "r3", "r4", "too_big"]
        typo = alice.get("/v1/reservations", params={"state": "acepted"})
        bad_time = alice.get("/v1/reservations", params={"from": "tomorrow"})
        too_many = alice.get("/v1/reservations", params={"limit": 5000})
    assert typo.status_code == 422 and "did you mean `accepted`" in typo.json()["error"]["hint"]
    assert bad_time.status_code == 422 and "`from`" in bad_time.json()["error"]["message"]
    assert too_many.status_code == 422


def test_lists_sum_allocations_up_unless_asked_for_them_and_answers_fit_the_models(api: Server) -> None:
    with api.client("alice") as alice:
        created = submit(alice, "reservation wide { window(s=" + at(0) + ", e=" + at(120) + ", "
                         "atom(b={vcores: 1}, h=4, l=10m, w=160m)) }")
        assert SubmitAnswer.model_validate(created.json()).accepted
        submit(alice, pinned("gang", 200, 30, 8))
        summed = alice.get("/v1/reservations").json()
        full = alice.get("/v1/reservations", params={"allocations": "true"}).json()
        one = alice.get("/v1/reservations/wide").json()
    page, detailed = RecordPage.model_validate(summed), RecordPage.model_validate(full)
    assert RecordOut.model_validate(one).rdl is not None
    allocations = one["allocations"]
    assert summed["items"][0]["holds"] == {"start": min(a["start"] for a in allocations),
                                           "end": max(a["end"] for a in allocations), "allocations": len(allocations)}
    assert all(item.allocations is None for item in page.items)
    assert detailed.items[0].model_dump(exclude_unset=True)["allocations"] == allocations
    assert "holds" not in full["items"][0]


def test_update_swaps_in_a_version_that_fits_and_keeps_the_old_one_otherwise(api: Server) -> None:
    with api.client("alice") as alice:
        submit(alice, pinned("job", 0, 30, 8))
        submit(alice, pinned("other", 0, 30, 8))
        smaller = alice.put("/v1/reservations/job", content=pinned("job", 0, 30, 4))
        assert smaller.status_code == 200
        assert smaller.json()["accepted"] and smaller.json()["previous"] == "replaced"
        before = snapshot(api.state)[2]
        larger = alice.put("/v1/reservations/job", content=pinned("job", 0, 30, 12))
        assert larger.status_code == 200 and not larger.json()["accepted"] and larger.json()["previous"] == "kept"
        assert snapshot(api.state)[2] == before
        assert alice.get("/v1/reservations/job").json()["allocations"][0]["bundles"] == 4
        trial = alice.put("/v1/reservations/job", content=pinned("job", 0, 30, 6), params={"dry_run": "true"})
        assert trial.json()["accepted"] and trial.json()["dry_run"]
        assert alice.get("/v1/reservations/job").json()["allocations"][0]["bundles"] == 4


def test_update_of_another_name_an_unknown_one_or_a_cancelled_one_is_refused(api: Server) -> None:
    with api.client("alice") as alice:
        submit(alice, pinned("job", 0, 30, 8))
        renamed = alice.put("/v1/reservations/job", content=pinned("jobb", 0, 30, 4))
        unknown = alice.put("/v1/reservations/nothing", content=pinned("nothing", 0, 30, 4))
        alice.delete("/v1/reservations/job")
        cancelled = alice.put("/v1/reservations/job", content=pinned("job", 0, 30, 4))
    assert renamed.status_code == 422 and "keeps the reservation's name" in renamed.json()["error"]["message"]
    assert unknown.status_code == 404
    assert cancelled.status_code == 409 and cancelled.json()["error"]["code"] == "state"


def test_cancel_frees_capacity_and_a_second_cancel_is_a_conflict(api: Server) -> None:
    with api.client("alice") as alice:
        submit(alice, pinned("big", 0, 30, 16))
        assert not submit(alice, pinned("next", 0, 30, 16)).json()["accepted"]
        cancelled = alice.delete("/v1/reservations/big")
        assert cancelled.status_code == 200 and cancelled.json()["state"] == "cancelled"
        assert not cancelled.json()["accepted"]
        assert alice.delete("/v1/reservations/big").status_code == 409
        assert alice.delete("/v1/reservations/never").status_code == 404
        assert submit(alice, pinned("next", 0, 30, 16)).json()["accepted"]
    assert stored_violations(api.state) == []



def test_a_series_is_cancelled_from_a_time_on_and_a_one_off_cannot_be(api: Server) -> None:
    series = "reservation daily every=2h deadline=+30m { atom(b={vcores: 1}, g=2, h=2, l=10m, w=20m) }"
    with api.client("alice") as alice:
        assert submit(alice, series).json()["accepted"]
        cut = alice.delete("/v1/reservations/daily", params={"from": at(5 * 60)})
        assert cut.status_code == 200 and cut.json()["state"] == "accepted"
        kept = {a.get("instance", 0) for a in cut.json()["allocations"]}
        assert kept == {0, 1, 2}  # the instances arriving at 0, 2h and 4h stay; from 6h on they are gone
        submit(alice, pinned("once", 0, 30, 1))
        refused = alice.delete("/v1/reservations/once", params={"from": at(10)})
        assert refused.status_code == 422 and "not recurring" in refused.json()["error"]["message"]
        assert alice.delete("/v1/reservations/daily", params={"from": "soon"}).status_code == 422
    assert stored_violations(api.state) == []

# -- the plan, the log, health ----------------------------------------------------------------------------------


def test_plan_use_reports_capacity_and_use_over_a_range_in_buckets(api: Server) -> None:
    with api.client("alice") as alice:
        submit(alice, pinned("a", 60, 60, 4))
        use = alice.get("/v1/plan/use", params={"from": at(0), "to": at(180), "step": "1h"}).json()
        assert use["times"] == [at(0), at(60), at(120)] and use["step"] == 3600
        assert use["capacity"]["vcores"] == [16, 16, 16] and use["used"]["vcores"] == [0, 4, 0]
        assert use["capacity"]["memory"] == [65536] * 3
        whole = alice.get("/v1/plan/use").json()
        assert len(whole["times"]) == 24 * 60 and whole["end"] == at(24 * 60)
        assert alice.get("/v1/plan/use", params={"step": "1"}).status_code == 422
        assert alice.get("/v1/plan/use", params={"to": "noon"}).status_code == 422


def test_the_log_shows_users_what_they_did_and_admins_everything(api: Server) -> None:
    with api.client("alice") as alice, api.client("bob") as bob, api.client("ops") as ops:
        submit(alice, pinned("a1", 0, 10, 1))
        submit(bob, pinned("b1", 20, 10, 1))
        ops.delete("/v1/reservations/a1")
        mine = alice.get("/v1/log").json()["entries"]
        assert [(e["action"], e["reservation"], e["actor"]) for e in mine] == [
            ("submit", "a1", "alice"), ("cancel", "a1", "ops")]
        everything = ops.get("/v1/log").json()["entries"]
        assert [e["reservation"] for e in everything] == ["a1", "b1", "a1"]
        first = ops.get("/v1/log", params={"limit": 2}).json()
        assert [e["reservation"] for e in first["entries"]] == ["b1", "a1"]
        older = ops.get(first["next"]).json()
        assert [e["reservation"] for e in older["entries"]] == ["a1"] and older["next"] is None
        assert mine[0]["decision"]["accepted"] is True


def test_health_and_readiness_answer_without_a_token(api: Server) -> None:
    with api.client() as anonymous:
        assert anonymous.get("/v1/health").json() == {"status": "ok"}
        ready = anonymous.get("/v1/ready").json()
        assert ready == {"status": "ready", "now": at(0), "plan_version": 0}
        unknown = anonymous.get("/v1/nothing")
        assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "http"
        assert anonymous.delete("/v1/health").status_code == 405


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/v1/whoami"), ("POST", "/v1/reservations"), ("GET", "/v1/reservations"), ("GET", "/v1/reservations/x"),
    ("PUT", "/v1/reservations/x"), ("DELETE", "/v1/reservations/x"), ("GET", "/v1/plan/use"), ("GET", "/v1/log"),
    ("POST", "/v1/admin/replan"), ("GET", "/v1/jobs/x"),
    ("POST", "/ws/v1/cluster/reservation/new-reservation"), ("POST", "/ws/v1/cluster/reservation/submit"),
    ("POST", "/ws/v1/cluster/reservation/update"), ("POST", "/ws/v1/cluster/reservation/delete"),
    ("GET", "/ws/v1/cluster/reservation/list"),
])
def test_every_other_endpoint_needs_a_known_bearer_token(server: Server, method: str, path: str) -> None:
    with server.client() as anonymous:
        missing = anonymous.request(method, path, content=b"{}")
        wrong = anonymous.request(method, path, content=b"{}", headers={"Authorization": "Bearer rayon_nope"})
        basic = anonymous.request(method, path, content=b"{}", headers={"Authorization": "Basic YWxpY2U6eA=="})
    for answer in (missing, wrong, basic):
        assert answer.status_code == 401 and answer.headers["www-authenticate"].startswith("Bearer")
        body = answer.json()
        assert body["error"]["code"] == "unauthenticated"
        assert ("RemoteException" in body) == path.startswith("/ws/")


def test_whoami_names_the_tokens_user_and_role(server: Server) -> None:
    with server.client("ops") as ops, server.client("bob") as bob:
        assert ops.get("/v1/whoami").json() == {"user": "ops", "role": "admin"}
        assert bob.get("/v1/whoami").json() == {"user": "bob", "role": "user"}


def test_openapi_schema_describes_the_endpoints_and_the_request_models(server: Server) -> None:
    with server.client() as anonymous:
        schema = anonymous.get("/openapi.json").json()
    assert {"/v1/reservations", "/v1/reservations/{name}", "/v1/plan/use", "/v1/log", "/v1/admin/replan",
            "/ws/v1/cluster/reservation/submit", "/ws/v1/cluster/reservation/list"} <= set(schema["paths"])
    components = schema["components"]["schemas"]
    assert {"ReservationJSON", "AtomExpr", "YarnSubmission", "SubmitAnswer", "RecordOut"} <= set(components)
    assert "reservation-definition" in components["YarnSubmission"]["properties"]
    assert schema["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"


def test_examples_submitted_over_http_get_the_decisions_the_store_gives(api: Server, tmp_path: Path) -> None:
    """Every example reservation, through the API and straight into a store of its own, is decided alike."""
    cluster = (EXAMPLES / "cluster.yaml").read_text()
    api.reset(cluster)
    reservations = [r for path in sorted(EXAMPLES.glob("*.rdl")) for r in parse_text(path.read_text(), str(path))]
    with api.client("ops") as ops:
        answers = [submit(ops, format_reservation(r)).json() for r in reservations]
    with Store.open(tmp_path / "copy.db") as store:
        store.init(cluster, "cluster.yaml")
        clock = store.clock()
        expected = [store.submit(replace(r, user=r.user or "ops")).to_json(clock) for r in reservations]
    assert [{key: answer.get(key) for key in wanted} for answer, wanted in zip(answers, expected, strict=True)] == \
        expected
    assert any(not answer["accepted"] for answer in answers) and stored_violations(api.state) == []


def test_numbers_beyond_their_range_are_refused_not_overflowed(api: Server) -> None:
    with api.client("alice") as alice:
        answers = [alice.get("/v1/reservations", params={"offset": 10**29}),
                   alice.get("/v1/log", params={"before": 10**29}),
                   alice.get("/v1/plan/use", params={"step": "1e308s"}),
                   alice.get("/v1/plan/use", params={"step": "8d"})]
    assert [answer.status_code for answer in answers] == [422, 422, 422, 422]
    assert "longer than 100 years" in answers[2].json()["error"]["message"]


def test_the_sharing_limits_of_a_user_are_theirs_to_read(api: Server) -> None:
    with api.client("alice") as alice:
        assert alice.get("/v1/plan/limits").json() == {"user": "alice", "instantaneous": None, "average": None,
                                                      "window": None}  # no policy: no limit
    api.reset(CLUSTER + "policies:\n  user_limits:\n    instantaneous: 50%\n    average: 25%\n    window: 2h\n"
                        "    users:\n      alice: {instantaneous: 80%}\n")
    with api.client("alice") as alice, api.client("ops") as ops:
        mine = alice.get("/v1/plan/limits")
        Limits.model_validate(mine.json())
        assert mine.json() == {"user": "alice", "instantaneous": 0.8, "average": 0.25, "window": 7200}
        assert alice.get("/v1/plan/limits", params={"user": "bob"}).status_code == 403
        assert ops.get("/v1/plan/limits", params={"user": "bob"}).json()["instantaneous"] == 0.5
