"""`GET /v1/history`: what left the live plan, a page at a time, each user their own."""

from __future__ import annotations

from datetime import timedelta

from planner.api.history import HistoryPage
from planner.store.facade import Store
from tests.planner.api.support import Server, submit
from tests.planner.support import at, pinned


def test_the_history_lists_what_left_the_live_plan_to_its_owner(api: Server) -> None:
    with api.client("alice") as alice, api.client("bob") as bob, api.client("ops") as ops:
        assert submit(alice, pinned("done", 0, 10, 2)).status_code == 201
        assert submit(alice, pinned("huge", 0, 10, 15)).json()["accepted"] is False
        assert submit(bob, pinned("bobs", 0, 10, 2)).status_code == 201
        with Store.open(api.state) as store:
            store.advance(store.now() + timedelta(days=2))  # a one-day horizon: all three have left the live plan
        page = alice.get("/v1/history").json()
        HistoryPage.model_validate(page)
        assert [item["reservation"] for item in page["items"]] == ["huge", "done"] and page["total"] == 2
        done = page["items"][1]
        assert done["state"] == "expired" and done["allocations"][0]["start"] == at(0) and "rdl" in done
        assert alice.get("/v1/history", params={"state": "rejected"}).json()["total"] == 1
        first = alice.get("/v1/history", params={"limit": 1}).json()
        assert first["next"] and alice.get(first["next"]).json()["items"][0]["reservation"] == "done"
        assert alice.get("/v1/history", params={"user": "bob"}).status_code == 403
        assert alice.get("/v1/history", params={"state": "expird"}).status_code == 422
        assert ops.get("/v1/history").json()["total"] == 3
        assert ops.get("/v1/history", params={"name": "bobs"}).json()["items"][0]["user"] == "bob"
        assert alice.get("/v1/reservations").json()["total"] == 0  # the live tables are empty
