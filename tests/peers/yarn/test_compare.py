"""The conformance script's comparison itself (no server needed): YARN's JSON decoded, differences found, explained."""

from __future__ import annotations

from tests.peers.yarn.conformance import Step, compare, decode_jersey

LIST = Step("list the queue", "GET", "/ws/v1/cluster/reservation/list")


def test_jersey_json_is_decoded_to_numbers_and_lists() -> None:
    yarn = {"reservations": {"reservation-id": "<id:a>", "user": "7", "acceptance-time": "17",
                             "resource-allocations": {"resource": {"memory": "1024", "vCores": "1"},
                                                      "startTime": "0", "endTime": "1000"}}}
    plain, changed = decode_jersey(yarn)
    assert changed
    assert plain == {"reservations": [{"reservation-id": "<id:a>", "user": "7", "acceptance-time": 17,
                                       "resource-allocations": [{"resource": {"memory": 1024, "vCores": 1},
                                                                 "startTime": 0, "endTime": 1000}]}]}


def test_lists_already_lists_stay_as_they_are() -> None:
    plain, changed = decode_jersey({"reservation-request": [{"num-containers": 2}, {"num-containers": 3}]})
    assert plain == {"reservation-request": [{"num-containers": 2}, {"num-containers": 3}]} and not changed


def test_an_empty_list_left_out_is_an_encoding_difference_only() -> None:
    found = compare((200, {}), (200, {"reservations": []}), LIST)
    assert [(d.kind, bool(d.reason)) for d in found] == [("encoding", True)]


def test_reservations_are_matched_by_id_whatever_their_order() -> None:
    a, b, c = ({"reservation-id": f"<id:{case}>", "user": "u"} for case in "abc")
    yarn, ours = (200, {"reservations": [a, b]}), (200, {"reservations": [b, c]})
    found = {(d.kind, d.path) for d in compare(yarn, ours, LIST)}
    assert found == {("missing", "$.reservations[<id:a>]"), ("extra", "$.reservations[<id:c>]")}


def test_a_status_difference_is_unexplained_unless_listed() -> None:
    found = compare((200, {}), (404, {}), Step("cluster", "GET", "/ws/v1/cluster"))
    assert [(d.kind, d.reason) for d in found] == [("status", None)]
    refused = compare((503, {}), (400, {}), Step("list a start-time that is no number", "GET", LIST.path))
    assert [d.kind for d in refused] == ["status"] and refused[0].reason
