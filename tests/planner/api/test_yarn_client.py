"""A YARN client, unchanged: the PyPI `yarn-api-client` drives a reservation's whole life against `rayon serve`, with
nothing changed in it but an `auth=` object that adds the bearer token; the store agrees with what it was told."""

from __future__ import annotations

from typing import Any as AnyType

import pytest
import requests

from planner.store.facade import Store
from tests.planner.api.support import Server, stored_violations, yarn_body

resource_manager = pytest.importorskip("yarn_api_client.resource_manager", reason="yarn-api-client is not installed")
YarnClientError = pytest.importorskip("yarn_api_client.errors").APIError


class Bearer(requests.auth.AuthBase):
    """The one thing a YARN client needs here: our bearer token instead of Kerberos."""

    def __init__(self, token: str):
        self.token = token

    def __call__(self, request: AnyType) -> AnyType:
        request.headers["Authorization"] = f"Bearer {self.token}"
        return request


def client(api: Server, user: str) -> AnyType:
    return resource_manager.ResourceManager(service_endpoints=[api.url], auth=Bearer(api.tokens[user]), timeout=60)


@pytest.mark.parametrize("interpreter", [0, 1, 2, 3])
def test_the_whole_life_of_a_reservation_through_yarn_api_client(api: Server, interpreter: int) -> None:
    rm = client(api, "alice")  # its start-up probe (GET /cluster) finds an active RM
    rid = rm.cluster_new_reservation().data["reservation-id"]
    body = yarn_body(rid, 60, 300, containers=4, minutes=20, name="nightly", interpreter=interpreter)
    requests_ = body["reservation-definition"]["reservation-requests"]
    requests_["reservation-request"] = [requests_["reservation-request"][0]] * 2  # two stages
    assert rm.cluster_submit_reservation(body).data["reservation-id"] == rid
    listed = rm.cluster_reservations(queue="prod", reservation_id=rid, include_resource_allocations=True).data
    (found,) = listed["reservations"]
    assert found["reservation-id"] == rid and found["reservation-definition"]["reservation-name"] == "nightly"
    assert found["resource-allocations"]
    with Store.open(api.state) as store:
        assert store.get(rid).state == "accepted" and store.get(rid).user == "alice"

    changed = yarn_body(rid, 60, 300, containers=2, minutes=20, name="nightly", interpreter=interpreter)
    changed.pop("queue")
    rm.cluster_update_reservation(changed)
    with Store.open(api.state) as store:
        assert sum(a.bundles * (a.end - a.start) for a in store.get(rid).allocations) == 2 * 20

    rm.cluster_delete_reservation(rid)
    with Store.open(api.state) as store:
        assert store.get(rid).state == "cancelled"
    assert stored_violations(api.state) == []


def test_the_error_paths_reach_a_yarn_client_as_yarn_errors(api: Server) -> None:
    rm = client(api, "alice")
    rid = rm.cluster_new_reservation().data["reservation-id"]
    too_big = yarn_body(rid, 0, 20, containers=10_000, minutes=15)
    with pytest.raises(YarnClientError):
        rm.cluster_submit_reservation(too_big)
    with pytest.raises(YarnClientError):
        rm.cluster_delete_reservation("reservation_0_0001")  # unknown id
    with pytest.raises(YarnClientError):
        rm.cluster_reservations(queue="prod", start_time="soon")
    anonymous = resource_manager.ResourceManager(service_endpoints=[api.url], timeout=60)
    with pytest.raises(YarnClientError):
        anonymous.cluster_new_reservation()  # no token: 401
    with Store.open(api.state) as store:
        assert store.list(state="accepted") == []
