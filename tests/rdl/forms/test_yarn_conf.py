"""A YARN reservable queue's capacity-scheduler.xml settings as a cluster file (`rayon init --from-yarn`)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from follower.cli import main
from planner.store.facade import Store
from rdl.cluster import parse_cluster
from rdl.forms.yarn_conf import YarnConfError, cluster_yaml, read_properties

XML = """<?xml version="1.0"?>
<configuration>
  <property><name>yarn.scheduler.capacity.root.queues</name><value>default,prod</value></property>
  <property><name>yarn.scheduler.capacity.root.prod.capacity</name><value>80</value></property>
  <property><name>yarn.scheduler.capacity.root.prod.queues</name><value>dedicated</value></property>
  <property><name>yarn.scheduler.capacity.root.prod.dedicated.capacity</name><value>50</value></property>
  <property><name>yarn.scheduler.capacity.root.prod.dedicated.reservable</name><value>true</value></property>
  <property><name>yarn.scheduler.capacity.root.prod.dedicated.instantaneous-max-capacity</name><value>50</value></property>
  <property><name>yarn.scheduler.capacity.root.prod.dedicated.average-capacity</name><value>25</value></property>
  <property><name>yarn.scheduler.capacity.root.prod.dedicated.reservation-window</name><value>3600000</value></property>
</configuration>
"""
START = datetime(2026, 11, 23, tzinfo=UTC)


def test_the_queue_s_share_limits_and_window_become_the_cluster_file() -> None:
    text = cluster_yaml(read_properties(XML, "cs.xml"), "root.prod.dedicated", {"memory": 1024 * 1024, "vcores": 500},
                        START, 60, 7 * 86400, "cs.xml")
    assert "GreedyReservationAgent (the nearest here: --agent gree)" in text
    cluster = parse_cluster(text, "from-yarn.yaml")
    assert dict(cluster.capacity.items()) == {"memory": 419430, "vcores": 200}  # 40%: whole MiB, rounded down
    assert cluster.queues == ("dedicated",) and cluster.step == 60
    limits = cluster.policies["user_limits"]
    assert "instantaneous: 50%" in text and "average: 25%" in text and "window: 1h" in text and limits


@pytest.mark.parametrize(("xml", "queue", "message"), [
    (XML, "root.default", "queue `root.default` is not reservable .* reservable queues there: root.prod.dedicated"),
    (XML, "dedicated", "give the queue's full path"),
    (XML.replace(">50<", ">150<", 1), "root.prod.dedicated", "above 100"),
    (XML.replace(">80<", ">lots<"), "root.prod.dedicated", "is `lots`, not a number"),
    ("<configuration><property>", "root.a", r"cs.xml:1:\d+: not well-formed XML"),
])
def test_bad_files_say_why(xml: str, queue: str, message: str) -> None:
    with pytest.raises(YarnConfError, match=message):
        cluster_yaml(read_properties(xml, "cs.xml"), queue, {"vcores": 8}, START, 1, 86400, "cs.xml")


def test_rayon_init_from_yarn_prints_the_cluster_file_and_initialises_the_plan(tmp_path: Path) -> None:
    (tmp_path / "cs.xml").write_text(XML)
    state = str(tmp_path / "plan.db")
    runner = CliRunner()
    result = runner.invoke(main, ["init", "--from-yarn", str(tmp_path / "cs.xml"), "--queue", "root.prod.dedicated",
                                  "--capacity", "{memory: 1TiB, vcores: 500}", "--step", "1m", "--state", state])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("# From ") and "initialised" in result.output
    with Store.open(state) as store:
        assert store.cluster().queues == ("dedicated",) and store.cluster().capacity["vcores"] == 200
    both = runner.invoke(main, ["init", "--cluster", str(tmp_path / "cs.xml"), "--from-yarn", str(tmp_path / "cs.xml"),
                                "--state", str(tmp_path / "other.db")])
    assert both.exit_code == 2 and "either --cluster FILE or --from-yarn" in both.output
    missing = runner.invoke(main, ["init", "--from-yarn", str(tmp_path / "cs.xml"), "--state", str(tmp_path / "o.db")])
    assert missing.exit_code == 2 and "needs --queue" in missing.output and not (tmp_path / "o.db").exists()


def test_a_share_of_the_cluster_is_whole_mib_and_whole_vcores() -> None:
    """40% of {memory: 4TiB, vcores: 2048}: not `1677721.6MiB` and `819.2` vcores (issue #30)."""
    text = cluster_yaml(read_properties(XML, "cs.xml"), "root.prod.dedicated",
                        {"memory": 4 * 1024 * 1024, "vcores": 2048}, START, 60, 7 * 86400, "cs.xml")
    capacity = dict(parse_cluster(text, "from-yarn.yaml").capacity.items())
    assert capacity == {"memory": 1677721, "vcores": 819}
