"""`POST /v1/reservations/batch`: several reservations in one request, each decided in order, all committed in one
write; bad input anywhere in the batch refuses it whole, naming the file, line and column, and changes nothing."""

from __future__ import annotations

import json

from planner.api.models import BatchAnswer
from rdl.forms.jsonform import dumps
from rdl.syntax.parser import parse_text
from tests.planner.api.support import Server, pinned, snapshot, stored_violations

BATCH = "/v1/reservations/batch"


def test_a_file_of_several_is_decided_in_order_and_committed_together(api: Server) -> None:
    text = "\n".join([pinned("a", 0, 30, 10), pinned("b", 0, 30, 10), pinned("c", 0, 30, 6)])  # 16 vcores
    with api.client("alice") as alice:
        answer = alice.post(BATCH, content=text, headers={"Content-Type": "text/plain"})
        assert answer.status_code == 200, answer.text
        body = BatchAnswer.model_validate(answer.json())
        assert not body.dry_run and body.agent == "gree-l"
        assert [(d.reservation, d.accepted) for d in body.decisions] == [("a", True), ("b", False), ("c", True)]
        assert answer.json()["decisions"][1]["reason"]["code"] == "capacity"
        listed = alice.get("/v1/reservations").json()["items"]
    assert [(r["reservation"], r["state"], r["user"]) for r in listed] == [
        ("a", "accepted", "alice"), ("b", "rejected", "alice"), ("c", "accepted", "alice")]
    assert stored_violations(api.state) == []


def test_a_dry_run_decides_them_as_a_batch_and_commits_nothing(api: Server) -> None:
    text = "\n".join([pinned("a", 0, 30, 10), pinned("b", 0, 30, 10)])
    before = snapshot(api.state)
    with api.client("alice") as alice:
        answer = alice.post(BATCH, content=text, params={"dry_run": "true"})
    assert answer.status_code == 200 and answer.json()["dry_run"]
    assert [d["accepted"] for d in answer.json()["decisions"]] == [True, False]  # b sees a's leases
    assert snapshot(api.state) == before


def test_named_files_are_one_batch_and_their_errors_name_each_file_line_and_column(api: Server) -> None:
    good = pinned("good", 0, 10, 1)
    bad = pinned("fine", 0, 10, 1) + "\nreservation bad {\n  atom(b={vcores: 1, gpu: 2}, w=30m)\n}\n"
    (as_json,) = parse_text(pinned("j", 20, 10, 1), "j.rdl")
    before = snapshot(api.state)
    with api.client("alice") as alice:
        refused = alice.post(BATCH, json={"files": [{"name": "a.rdl", "text": good},
                                                    {"name": "dir/b.rdl", "text": bad}]})
        unparsed = alice.post(BATCH, json={"files": [{"name": "a.rdl", "text": good},
                                                     {"name": "c.rdl", "text": "reservation x {\n  atom(\n"}]})
        assert snapshot(api.state) == before
        accepted = alice.post(BATCH, json={"files": [{"name": "a.rdl", "text": good},
                                                     {"name": "j.json", "text": dumps([as_json])}]})
    assert refused.status_code == 422
    error = refused.json()["error"]
    assert error["message"].startswith("dir/b.rdl:3:") and "nothing was submitted" in error["message"]
    assert [(e["file"], e["line"]) for e in error["errors"]] == [("dir/b.rdl", 3)]
    assert unparsed.status_code == 400 and unparsed.json()["error"]["message"].startswith("c.rdl:")
    assert accepted.status_code == 200
    assert [d["reservation"] for d in accepted.json()["decisions"]] == ["good", "j"]


def test_a_name_twice_in_a_batch_is_bad_input(api: Server) -> None:
    with api.client("alice") as alice:
        answer = alice.post(BATCH, json={"files": [{"name": "a.rdl", "text": pinned("same", 0, 10, 1)},
                                                   {"name": "b.rdl", "text": pinned("same", 20, 10, 1)}]})
    assert answer.status_code == 422
    assert "`same` is defined twice (first at a.rdl:1:1)" in answer.json()["error"]["message"]
    assert snapshot(api.state)[0] == []


def test_another_user_s_name_in_a_batch_refuses_it_whole(api: Server) -> None:
    with api.client("bob") as bob:
        assert bob.post("/v1/reservations", content=pinned("taken", 40, 10, 1)).status_code == 201
    before = snapshot(api.state)
    text = "\n".join([pinned("mine", 0, 10, 1), pinned("taken", 0, 10, 1)])
    with api.client("alice") as alice:
        committed = alice.post(BATCH, content=text)
        dry = alice.post(BATCH, content=text, params={"dry_run": "true"})
    for answer in (committed, dry):
        assert answer.status_code == 403, answer.text
        assert "`taken` belongs to another user's reservation" in answer.json()["error"]["message"]
    assert snapshot(api.state) == before


def test_bodies_that_hold_nothing_or_only_other_json_are_refused(api: Server) -> None:
    with api.client("alice") as alice:
        empty = alice.post(BATCH, content="   ")
        no_files = alice.post(BATCH, json={"files": []})
        unnamed = alice.post(BATCH, json={"files": [{"name": "a", "text": "x"}, {"name": "a", "text": "y"}]})
        as_json = dumps(parse_text(pinned("l", 0, 10, 1) + "\n" + pinned("m", 20, 10, 1)))
        listed = alice.post(BATCH, content=as_json, headers={"Content-Type": "application/json"})
    assert empty.status_code == 400 and no_files.status_code == 400 and unnamed.status_code == 400
    assert "each file needs a name of its own" in unnamed.json()["error"]["message"]
    assert isinstance(json.loads(as_json), list)  # RDL JSON's list of reservations, as a file of several holds
    assert listed.status_code == 200 and [d["reservation"] for d in listed.json()["decisions"]] == ["l", "m"]
