"""How the simulator's reservations are put to YARN (no Java needed): on whole plan steps, in whole MB, `h` only
when YARN can say it."""

from __future__ import annotations

from datetime import timedelta

from rdl import parse_cluster, parse_text
from tests.peers.yarn.rows import yarn_form

CLUSTER = parse_cluster("start: 2026-11-23T00:00:00Z\nstep: 1m\nhorizon: 1d\ncapacity: {memory: 100GiB, vcores: 100}\n",
                        "c.yaml")
JOB = """reservation job user=alice queue=production arrival=2026-11-23T00:01:10Z deadline=2026-11-23T00:40:50Z {
  atom(b={memory: 1171.875, vcores: 1}, g=4, h=4, l=10m, w=40m)
}"""


def test_the_window_is_narrowed_to_whole_steps_and_the_bundle_rounded_up():
    shaped, changes = yarn_form(parse_text(JOB, "j.rdl")[0], CLUSTER)
    assert shaped.arrival.instant == CLUSTER.start + timedelta(minutes=2)
    assert shaped.deadline.instant == CLUSTER.start + timedelta(minutes=40)
    assert dict(shaped.body.bundle.items()) == {"memory": 1172, "vcores": 1} and shaped.queue == "dedicated"
    assert shaped.body.parallelism == 4 and changes == {"window", "bundle"}  # h equal to the gang: YARN says it


def test_a_parallelism_cap_below_the_containers_is_dropped():
    capped = JOB.replace("w=40m", "w=80m")  # eight containers, two gangs, never more than four at once
    shaped, changes = yarn_form(parse_text(capped, "j.rdl")[0], CLUSTER)
    assert shaped.body.parallelism is None and "h" in changes
