"""`rayon follow`: the stored plan's queue capacities per round, as a table, JSON or YuniKorn configuration."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from follower.cli.follow import COMMANDS, follow_command
from planner.store.facade import Store
from rdl.syntax.parser import parse_text
from tests.follower.follow.kubefake import FakeAPIServer, Serving

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
CLUSTER = "start: 2026-11-23T00:00:00Z\nstep: 1m\nhorizon: 1d\ncapacity: {memory: 400GiB, vcores: 100}\n"
# a: 20 bundles over [00:15, 00:25) inside [00:10, 00:40); b: 30 over [00:20, 00:50) inside [00:20, 01:00).
RESERVATIONS = """
reservation a arrival=2026-11-23T00:10:00Z deadline=2026-11-23T00:40:00Z {
  window(s=2026-11-23T00:15:00Z, e=2026-11-23T00:25:00Z, atom(b={memory: 4GiB, vcores: 1}, g=20, h=20, l=10m, w=200m))
}
reservation b arrival=2026-11-23T00:20:00Z deadline=2026-11-23T01:00:00Z {
  window(s=2026-11-23T00:20:00Z, e=2026-11-23T00:50:00Z, atom(b={memory: 4GiB, vcores: 1}, g=30, h=30, l=30m, w=900m))
}
"""


@pytest.fixture
def state(tmp_path: Path) -> str:
    path = str(tmp_path / "plan.db")
    with Store.open(path) as store:
        store.init(CLUSTER)
        for reservation in parse_text(RESERVATIONS, "<test>"):
            assert store.submit(reservation).accepted
    return path


def follow(state: str, *args: str) -> Result:
    return CliRunner().invoke(follow_command, [*args, "--state", state], prog_name="rayon follow")


def test_table_shows_each_queue_per_round_and_the_windows_that_ended(state: str) -> None:
    result = follow(state, "--from", "2026-11-23T00:10:00Z", "--to", "2026-11-23T00:45:00Z", "--every", "5")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["TIME", "QUEUE", "MEMORY", "VCORES", "MAX", "NOTE"]
    rows = [line.split() for line in lines[2:]]
    assert ["2026-11-23T00:10:00Z", "root.plan.a", "0", "0", "=", "guaranteed"] in rows
    assert ["2026-11-23T00:20:00Z", "root.plan.a", "80GiB", "20", "=", "guaranteed"] in rows
    assert ["2026-11-23T00:20:00Z", "root.plan.b", "120GiB", "30", "=", "guaranteed"] in rows
    assert ["2026-11-23T00:20:00Z", "root.plan.default", "200GiB", "50", "=", "guaranteed"] in rows
    assert ["2026-11-23T00:40:00Z", "root.plan.a", "-", "-", "-", "window", "ended"] in rows
    assert {row[0] for row in rows} == {f"2026-11-23T00:{m:02d}:00Z" for m in range(10, 45, 5)}


def test_json_lists_every_round_in_plan_units(state: str) -> None:
    result = follow(state, "--json", "--from", "2026-11-23T00:00:00Z", "--to", "2026-11-23T01:00:00Z")
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert (document["plan_queue"], document["max_policy"], len(document["rounds"])) == ("root.plan", "strict", 60)
    at_20 = {q["queue"]: q["guaranteed"] for q in document["rounds"][20]["queues"]}
    assert at_20 == {"root.plan": {"memory": 409600, "vcores": 100}, "root.plan.default": {"memory": 204800,
                     "vcores": 50}, "root.plan.a": {"memory": 81920, "vcores": 20},
                     "root.plan.b": {"memory": 122880, "vcores": 30}}
    assert [r["step"] for r in document["rounds"] if r["ended"]] == [40]


def test_changes_keep_only_rounds_that_differ(state: str) -> None:
    result = follow(state, "--json", "--changes", "--from", "2026-11-23T00:00:00Z", "--max-policy", "plan")
    steps = [r["step"] for r in json.loads(result.stdout)["rounds"]]
    assert steps == [0, 10, 15, 20, 25, 40, 50]  # by default up to the last window's end, 01:00


def test_yunikorn_format_prints_one_configuration_per_change_point(state: str, tmp_path: Path) -> None:
    base = tmp_path / "queues.yaml"
    base.write_text("partitions:\n- name: default\n  queues:\n  - name: root\n    queues:\n    - name: besteffort\n")
    result = follow(state, "--format", "yunikorn", "--from", "2026-11-23T00:00:00Z", "--base", str(base),
                    "--sort-policy", "fair", "--resource-name", "vcores=cpu")
    assert result.exit_code == 0, result.stderr
    documents = list(yaml.safe_load_all(result.stdout))
    assert len(documents) == 7 and result.stdout.count("# rayon follow: root.plan from ") == 7
    root = documents[3]["partitions"][0]["queues"][0]
    assert [q["name"] for q in root["queues"]] == ["besteffort", "plan"]
    leaves = {q["name"]: q for q in root["queues"][1]["queues"]}
    assert leaves["b"]["resources"]["guaranteed"] == {"memory": 30 * 4 * 1024**3, "cpu": 30}
    assert leaves["a"]["properties"] == {"application.sort.policy": "fair"}


def test_stateaware_for_a_yunikorn_without_it_is_written_as_fifo_with_a_warning(state: str) -> None:
    old = follow(state, "--format", "yunikorn", "--sort-policy", "stateaware", "--yunikorn-version", "1.4")
    assert old.exit_code == 0 and "application.sort.policy: stateaware" in old.stdout and old.stderr == ""
    new = follow(state, "--format", "yunikorn", "--sort-policy", "stateaware")
    assert new.exit_code == 0 and "stateaware" not in new.stdout and "application.sort.policy: fifo" in new.stdout
    assert "warning: YuniKorn 1.9 has no stateaware sort policy" in new.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["--json", "--format", "yunikorn"], "--json and --format yunikorn ask for two outputs"),
    (["--max-policy", "stric"], "did you mean `strict`?"),
    (["--from", "2026-11-25T00:00:00Z"], "outside the plan's horizon"),
    (["--from", "2026-11-23T02:00:00Z", "--to", "2026-11-23T01:00:00Z"], "is not after --from"),
    (["--default-queue", "a.b"], "must be one queue name"),
    (["--resource-name", "gpu"], "is not PLAN=YUNIKORN"),
    (["--format", "yunikorn", "--sort-policy", "drf"], "'drf' is not one of 'fifo', 'fair', 'stateaware'"),
    (["--format", "yunikorn", "--yunikorn-version", "2.1"], "`2.1` is not a YuniKorn release"),
])
def test_bad_input_exits_2_and_prints_nothing(state: str, args: list[str], message: str) -> None:
    result = follow(state, *args)
    assert result.exit_code == 2 and result.stdout == ""
    assert message in result.stderr


def test_a_base_without_the_partition_exits_2(state: str, tmp_path: Path) -> None:
    base = tmp_path / "queues.yaml"
    base.write_text("partitions:\n- name: default\n  queues:\n  - name: root\n")
    result = follow(state, "--format", "yunikorn", "--base", str(base), "--partition", "gpu")
    assert result.exit_code == 2 and result.stdout == ""
    assert "the base configuration has no partition `gpu`" in result.stderr


def test_an_uninitialised_store_exits_2(tmp_path: Path) -> None:
    result = follow(str(tmp_path / "empty.db"))
    assert result.exit_code == 2 and "rayon init" in result.stderr


def test_the_examples_follow_from_their_store(tmp_path: Path) -> None:
    state = str(tmp_path / "plan.db")
    with Store.open(state) as store:
        store.init((EXAMPLES / "cluster.yaml").read_text(), "cluster.yaml")
        for path in sorted(EXAMPLES.glob("*.rdl")):
            for reservation in parse_text(path.read_text(), str(path)):
                store.submit(reservation)
    result = follow(state, "--changes", "--every", "60", "--to", "2026-11-24T00:00:00Z")
    assert result.exit_code == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines()[2:]]
    assert ["root.plan.mpi_solver", "512GiB", "256", "=", "guaranteed"] in [row[1:] for row in rows]  # its gang
    assert [follow_command] == COMMANDS


def test_from_and_to_may_be_relative_to_the_plan_clock(state: str) -> None:
    relative = follow(state, "--json", "--from", "+10m", "--to", "+40m")
    absolute = follow(state, "--json", "--from", "2026-11-23T00:10:00Z", "--to", "2026-11-23T00:40:00Z")
    assert relative.exit_code == 0, relative.stderr
    assert json.loads(relative.stdout) == json.loads(absolute.stdout)


@pytest.fixture
def kube(tmp_path: Path) -> Iterator[tuple[FakeAPIServer, str]]:
    """A fake Kubernetes API server holding YuniKorn's namespace, and a kubeconfig that points at it."""
    fake = FakeAPIServer()
    serving = Serving(fake)
    yield fake, str(serving.kubeconfig(tmp_path))
    serving.close()


def test_apply_writes_the_round_at_from_into_the_configmap_once(state: str, kube: tuple[FakeAPIServer, str]) -> None:
    fake, kubeconfig = kube
    fake.put("yunikorn", "yunikorn-configs", {"queues.yaml": "partitions:\n- name: default\n  queues:\n  - name: root\n"
                                             "    queues:\n    - name: besteffort\n", "log.level": "INFO"})
    args = ["--apply", "yunikorn-configmap", "--kubeconfig", kubeconfig, "--from", "2026-11-23T00:20:00Z"]
    result = follow(state, *args)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ("ConfigMap yunikorn/yunikorn-configs queues.yaml updated (resourceVersion 1001): "
                             "root.plan at 2026-11-23T00:20:00Z\n")
    document = yaml.safe_load(fake.data()["queues.yaml"])
    (root,) = document["partitions"][0]["queues"]
    assert [q["name"] for q in root["queues"]] == ["besteffort", "plan"]  # what was there is kept
    (plan,) = [q for q in root["queues"] if q["name"] == "plan"]
    assert [q["name"] for q in plan["queues"]] == ["default", "a", "b"]
    assert fake.data()["log.level"] == "INFO"
    again = follow(state, *args)
    assert again.exit_code == 0 and "queues.yaml unchanged" in again.stdout
    assert [r.method for r in fake.requests] == ["GET", "PATCH", "GET"]


def test_apply_dry_run_prints_the_document_and_writes_nothing(state: str, kube: tuple[FakeAPIServer, str]) -> None:
    fake, kubeconfig = kube
    result = follow(state, "--apply", "yunikorn-configmap:yunikorn/rayon-queues", "--kubeconfig", kubeconfig,
                    "--dry-run", "--from", "2026-11-23T00:20:00Z")
    assert result.exit_code == 0, result.stderr
    first, rest = result.stdout.split("\n", 1)
    assert first == "ConfigMap yunikorn/rayon-queues queues.yaml would create: root.plan at 2026-11-23T00:20:00Z"
    assert yaml.safe_load(rest)["partitions"][0]["name"] == "default"
    assert fake.writes() == [] and fake.configmaps == {}


def test_apply_that_is_forbidden_exits_2_and_names_it(state: str, kube: tuple[FakeAPIServer, str]) -> None:
    fake, kubeconfig = kube
    fake.forbidden.add("get")
    result = follow(state, "--apply", "yunikorn-configmap", "--kubeconfig", kubeconfig)
    assert result.exit_code == 2 and result.stdout == ""
    assert "forbidden to read ConfigMap yunikorn/yunikorn-configs" in result.stderr
    assert "nothing was changed" in result.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["--apply", "yunikorn-configmap", "--json"], "--json is for printing rounds"),
    (["--apply", "yunikorn-configmap", "--to", "+1h"], "--to is for printing rounds"),
    (["--apply", "yunikorn-configmap", "--format", "table"], "--format table is for printing rounds"),
    (["--dry-run"], "--dry-run goes with --apply"),
    (["--apply", "yunikorn-configmap:yunikorn"], "is not NAMESPACE/NAME"),
    (["--apply", "configmap"], "is not a ConfigMap target"),
])
def test_apply_with_options_that_do_not_go_with_it_exits_2(state: str, args: list[str], message: str) -> None:
    result = follow(state, *args)
    assert result.exit_code == 2 and result.stdout == ""
    assert message in result.stderr


def test_a_time_the_clock_has_left_behind_says_so_and_suggests_a_relative_one(state: str) -> None:
    """As after `rayon serve` moved the clock to the wall clock (issue #30): the README's fixed `--from` then lies
    behind the clock; the error says so and suggests a time relative to the clock, which works on any day."""
    with Store.open(state) as store:
        store.advance(store.now() + timedelta(days=5))
    result = follow(state, "--from", "2026-11-23T00:00:00Z", "--to", "2026-11-23T06:00:00Z")
    assert result.exit_code == 2
    assert "(behind the plan's clock)" in result.stderr and "`--from +0h --to +6h`" in result.stderr
    assert follow(state, "--from", "+0h", "--to", "+6h").exit_code == 0
