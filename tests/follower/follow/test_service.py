"""The follower inside `rayon serve` (follower/follow/service.py): the round now, its next change, the file kept."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any as AnyType

import httpx
import pytest
import yaml
from click.testing import CliRunner

from follower.cli import main
from follower.follow.configmap import connect
from follower.follow.follower import Follower, FollowerError, PlanView
from follower.follow.service import MARKER, FollowTo, QueuePublisher, check_target
from planner.api.app import create_app
from planner.api.auth import Principal, TokenRegistry, hash_token
from planner.store.facade import Store
from rdl.load import load
from tests.follower.follow.kubefake import FakeAPIServer, Serving
from tests.planner.api.support import RAYON, make_tokens, running
from tests.planner.api.support import pinned as owned
from tests.planner.support import START, at, cluster_text, instant, one, pinned


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(tmp_path / "plan.db") as opened:
        opened.init(cluster_text({"vcores": 8, "memory": "16GiB"}, steps=60), "cluster.yaml")
        yield opened


def leaves(text: str) -> dict[str, dict]:
    """The leaf queues under root.plan of a queues.yaml, by name."""
    (partition,) = yaml.safe_load(text)["partitions"]
    (root,) = partition["queues"]
    (plan,) = [q for q in root["queues"] if q["name"] == "plan"]
    return {q["name"]: q for q in plan["queues"]}


def test_the_round_now_and_when_it_next_changes(store: Store) -> None:
    store.submit(one(pinned("a", 10, 20, 4)))  # its window opens at step 10, its lease runs [10, 30)
    answer = QueuePublisher(store).answer()
    assert answer["time"] == at(0) and answer["next_change"] == at(10)
    store.advance(instant(12))
    answer = QueuePublisher(store).answer()
    assert answer["time"] == at(12) and answer["next_change"] == at(30)
    (queue,) = [q for q in answer["queues"] if q["queue"] == "root.plan.a"]
    assert queue["guaranteed"]["vcores"] == 4


def test_a_new_round_compiles_only_the_reservations_new_since_the_last(store: Store,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import follower.follow.follower as follower_module

    compiled: list[str] = []
    real = follower_module._windows_of
    monkeypatch.setattr(follower_module, "_windows_of",
                        lambda plan, accepted: compiled.append(accepted.reservation.name) or real(plan, accepted))
    publisher = QueuePublisher(store, FollowTo.parse(f"yunikorn:{store.where}.queues.yaml"))
    store.submit(one(pinned("a", 10, 20, 4)))
    publisher.tick()
    store.submit(one(pinned("b", 12, 20, 2)))
    publisher.tick()
    assert compiled == ["a", "b"]  # `a` once, not again for the round after `b` came
    assert publisher.answer()["next_change"] == at(10)


def test_without_a_target_the_round_is_worked_out_only_when_asked(store: Store) -> None:
    store.submit(one(pinned("a", 10, 20, 4)))
    publisher = QueuePublisher(store)
    publisher.tick()  # nothing to publish: no work
    assert publisher._current is None
    assert publisher.answer()["next_change"] == at(10) and publisher._current is not None


def test_the_file_is_written_when_the_round_changes_and_only_then(store: Store, tmp_path: Path) -> None:
    target = tmp_path / "yunikorn" / "queues.yaml"
    publisher = QueuePublisher(store, FollowTo.parse(f"yunikorn:{target}"))
    publisher.tick()
    first = target.stat()
    assert set(leaves(target.read_text())) == {"default"}
    publisher.tick()  # nothing changed: the file is left alone
    assert target.stat().st_mtime_ns == first.st_mtime_ns and target.stat().st_ino == first.st_ino
    store.submit(one(pinned("a", 0, 20, 4)))
    publisher.tick()
    assert set(leaves(target.read_text())) == {"default", "a"}
    assert target.stat().st_ino != first.st_ino  # replaced by a rename, never rewritten in place
    assert [p.name for p in target.parent.iterdir()] == ["queues.yaml"]  # no temporary file left
    store.advance(instant(25))  # `a` has ended
    publisher.tick()
    assert set(leaves(target.read_text())) == {"default"}


@pytest.mark.parametrize("text", ["yunikorn", "yunikorn:", "kueue:queues.yaml", "queues.yaml"])
def test_a_target_that_is_not_one_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="give `yunikorn:FILE`"):
        FollowTo.parse(text)


def test_rayon_serve_serves_the_queues_and_keeps_the_file(store: Store, tmp_path: Path) -> None:
    store.submit(one(pinned("a", 0, 20, 4).replace("reservation a ", "reservation a user=alice ")))
    store.submit(one(pinned("b", 0, 10, 2).replace("reservation b ", "reservation b user=bob ")))
    target = tmp_path / "queues.yaml"
    tokens = make_tokens(tmp_path / "tokens.yaml")
    with running(store.where, tmp_path / "tokens.yaml", tokens, "--follow-to", f"yunikorn:{target}") as server, \
            server.client("alice") as alice, server.client("ops") as ops:
        answer = alice.get("/v1/queues")
        everything = ops.get("/v1/queues").json()
        assert server.client().get("/v1/queues").status_code == 401
    assert answer.status_code == 200 and answer.json()["time"] == at(0) and answer.json()["next_change"] == at(10)
    assert set(leaves(target.read_text())) == {"default", "a", "b"}  # written at start, with no request about it
    # alice sees her own queue; bob's counts only in the totals (anonymous load), which are the admin's too
    assert {q["reservation"] for q in answer.json()["queues"]} == {None, "a"}
    assert {q["reservation"] for q in everything["queues"]} == {None, "a", "b"}
    assert answer.json()["reserved"] == everything["reserved"] == {"vcores": 6, "memory": 0}


def test_the_next_change_is_the_first_step_whose_settings_differ(tmp_path: Path) -> None:
    """Against trying every step: the examples' plan, at a few clocks (capacity changes on Thursday included)."""
    root = Path(__file__).resolve().parents[3]
    with Store.open(tmp_path / "plan.db") as store:
        store.init((root / "examples" / "cluster.yaml").read_text(), "cluster.yaml")
        cluster = store.cluster()
        for loaded in load([str(root / "examples")], None, cluster, None):
            for reservation in loaded.reservations:
                store.submit(reservation)
        publisher = QueuePublisher(store)
        for minutes in (0, 61, 300, 3 * 24 * 60 - 5):
            store.advance(START + timedelta(minutes=minutes))
            view = PlanView(store.load_plan())
            clock = view.plan.clock
            (now,) = publisher.follower.rounds(view, store.now(), clock.at(view.step_of(store.now()) + 1))
            tried = (publisher.follower.rounds(view, clock.at(s), clock.at(s + 1))[0]
                     for s in range(now.step + 1, clock.steps))
            expected = next((r.time for r in tried if r.settings() != now.settings()), None)
            assert publisher.current().next_change == expected, minutes


@pytest.fixture
def kube(tmp_path: Path) -> Iterator[tuple[FakeAPIServer, Path]]:
    """A fake Kubernetes API server holding YuniKorn's namespace, and a kubeconfig that points at it."""
    fake = FakeAPIServer()
    serving = Serving(fake)
    yield fake, serving.kubeconfig(tmp_path)
    serving.close()


def test_the_configmap_is_written_when_the_round_changes_and_only_then(store: Store,
                                                                       kube: tuple[FakeAPIServer, Path]) -> None:
    fake, kubeconfig = kube
    fake.put("yunikorn", "yunikorn-configs", {"log.level": "INFO"})
    target = FollowTo.parse("yunikorn-configmap")
    publisher = QueuePublisher(store, target, applier=connect(target.configmap, str(kubeconfig)))
    publisher.tick()
    assert set(leaves(fake.data()["queues.yaml"])) == {"default"} and fake.data()["log.level"] == "INFO"
    publisher.tick()  # the same round: nothing asked of the API server
    assert [r.method for r in fake.requests] == ["GET", "PATCH"]
    store.submit(one(pinned("a", 0, 20, 4)))
    publisher.tick()
    assert set(leaves(fake.data()["queues.yaml"])) == {"default", "a"}
    assert [r.method for r in fake.requests] == ["GET", "PATCH", "GET", "PATCH"]


def test_a_refused_write_is_logged_and_tried_again_at_the_next_tick(store: Store, kube: tuple[FakeAPIServer, Path],
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    fake, kubeconfig = kube
    target = FollowTo.parse("yunikorn-configmap:yunikorn/yunikorn-configs")
    publisher = QueuePublisher(store, target, applier=connect(target.configmap, str(kubeconfig)))
    fake.forbidden.add("create")
    publisher.tick()
    assert fake.configmaps == {}
    assert "forbidden to create ConfigMap yunikorn/yunikorn-configs" in caplog.text
    assert "trying again at the next step" in caplog.text
    fake.forbidden.clear()  # the operator grants the Role
    publisher.tick()
    assert set(leaves(fake.data()["queues.yaml"])) == {"default"}


@pytest.mark.parametrize("text", ["yunikorn-configmap:", "yunikorn-configmap:yunikorn", "yunikorn-configmap:A/b"])
def test_a_configmap_target_that_is_not_one_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="NAMESPACE/NAME"):
        FollowTo.parse(text)


def test_rayon_serve_keeps_the_configmap(store: Store, tmp_path: Path, kube: tuple[FakeAPIServer, Path],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    fake, kubeconfig = kube
    store.submit(one(pinned("a", 0, 20, 4)))
    tokens = make_tokens(tmp_path / "tokens.yaml")
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    with running(store.where, tmp_path / "tokens.yaml", tokens, "--follow-to", "yunikorn-configmap") as server:
        deadline = time.monotonic() + 20
        while ("yunikorn", "yunikorn-configs") not in fake.configmaps and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.client().get("/v1/health").status_code == 200
    assert set(leaves(fake.data()["queues.yaml"])) == {"default", "a"}  # written at start, with no request about it
    assert [r.method for r in fake.requests] == ["GET", "POST"]


def test_rayon_serve_without_kubernetes_credentials_does_not_start(store: Store, tmp_path: Path) -> None:
    make_tokens(tmp_path / "tokens.yaml")
    done = subprocess.run([str(RAYON), "serve", "--state", str(store.where), "--tokens", str(tmp_path / "tokens.yaml"),
                           "--port", "0", "--follow-to", "yunikorn-configmap"], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "KUBECONFIG": str(tmp_path / "none"),
                                           "KUBERNETES_SERVICE_HOST": ""})
    assert done.returncode == 2
    assert "no Kubernetes credentials: no kubeconfig at" in done.stderr and "not running in a pod" in done.stderr


def test_a_user_sees_their_own_queues_and_the_others_only_as_anonymous_load(tmp_path: Path) -> None:
    """Issue #29: `/v1/queues` showed every user's reservation names (`root.plan.alice_secret_1`) to anyone."""
    state = tmp_path / "plan.db"
    with Store.open(state) as store:
        store.init(cluster_text({"vcores": 8, "memory": "16GiB"}, steps=60), "cluster.yaml")
        store.submit(one(owned("alice_secret_1", 0, 20, 2, user="alice")))
        store.submit(one(owned("alice_secret_2", 0, 20, 1, user="alice")))
        store.submit(one(owned("bobs", 0, 20, 3, user="bob")))
        tokens = {"alice-t": Principal("alice", "user"), "bob-t": Principal("bob", "user"),
                  "ops-t": Principal("ops", "admin")}
        app = create_app(state, TokenRegistry({hash_token(t): p for t, p in tokens.items()}), store=store,
                         extensions=[QueuePublisher(store)])

        async def ask(token: str) -> AnyType:
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://rayon") as client:
                answer = await client.get("/v1/queues", headers={"Authorization": f"Bearer {token}"})
                assert answer.status_code == 200
                return answer.json()

        bob, admin = asyncio.run(ask("bob-t")), asyncio.run(ask("ops-t"))
    assert "alice" not in json.dumps(bob)
    by_kind = {q["kind"]: q for q in bob["queues"]}
    assert [q["queue"] for q in bob["queues"] if q["kind"] == "reservation"] == ["root.plan.bobs"]
    assert by_kind["others"]["count"] == 2 and by_kind["others"]["guaranteed"]["vcores"] == 3
    assert by_kind["others"]["queue"] is None and by_kind["others"]["reservation"] is None
    assert {q["queue"] for q in admin["queues"]} >= {"root.plan.alice_secret_1", "root.plan.alice_secret_2",
                                                      "root.plan.bobs"}


def test_serve_refuses_to_replace_a_file_that_is_not_a_queues_document(store: Store, tmp_path: Path) -> None:
    """Issue #29: pointed at a system file by mistake, `--follow-to yunikorn:FILE` replaced it (mode 0600)."""
    victim = tmp_path / "passwd"
    victim.write_text("root:x:0:0:root:/root:/bin/bash\n")
    victim.chmod(0o644)
    refused = CliRunner().invoke(main, ["serve", "--state", str(store.where), "--follow-to", f"yunikorn:{victim}"])
    assert refused.exit_code == 2 and "refusing to replace it" in refused.output and "--follow-replace" in \
        refused.output, refused.output
    with pytest.raises(FollowerError):  # and the publisher itself never replaces it either
        QueuePublisher(store, FollowTo.parse(f"yunikorn:{victim}")).publish("partitions: []\n")
    assert victim.read_text() == "root:x:0:0:root:/root:/bin/bash\n"
    forced = replace(FollowTo.parse(f"yunikorn:{victim}"), replace=True)
    assert QueuePublisher(store, forced).publish("partitions: []\n")
    assert victim.read_text().startswith(MARKER) and stat.S_IMODE(victim.stat().st_mode) == 0o644


def test_a_queues_document_written_before_the_marker_is_still_replaced(store: Store, tmp_path: Path) -> None:
    target = tmp_path / "queues.yaml"
    target.write_text("partitions:\n  - name: default\n    queues: [{name: root}]\n")
    check_target(FollowTo.parse(f"yunikorn:{target}"))
    assert QueuePublisher(store, FollowTo.parse(f"yunikorn:{target}")).publish("partitions: []\n")


def test_under_kill_an_ended_queue_stays_closed_for_a_step_then_leaves(store: Store,
                                                                       kube: tuple[FakeAPIServer, Path]) -> None:
    fake, kubeconfig = kube
    store.submit(one(pinned("a", 0, 5, 4)))  # its window and lease: [0, 5) one-minute steps
    target = FollowTo.parse("yunikorn-configmap")
    publisher = QueuePublisher(store, target, Follower(on_expiry="kill"), applier=connect(target.configmap,
                                                                                          str(kubeconfig)))
    seen = []
    for step in (4, 5, 6):
        store.advance(instant(step))
        publisher.tick()
        a = leaves(fake.data()["queues.yaml"]).get("a")
        seen.append(None if a is None else (a["resources"]["max"], a["properties"].get("quota.preemption.delay")))
    assert seen == [({"memory": 0, "vcore": 4, "rayon.io/expiry": 1}, None),
                    ({"memory": 0, "vcore": 0, "pods": 0, "rayon.io/expiry": 1}, "1s"), None]
    assert yaml.safe_load(fake.data()["queues.yaml"])["partitions"][0]["preemption"] == {
        "quotapreemptionenabled": True}


def test_under_move_an_ended_queue_leaves_at_once(store: Store, kube: tuple[FakeAPIServer, Path]) -> None:
    fake, kubeconfig = kube
    store.submit(one(pinned("a", 0, 5, 4)))
    target = FollowTo.parse("yunikorn-configmap")
    publisher = QueuePublisher(store, target, applier=connect(target.configmap, str(kubeconfig)))
    store.advance(instant(5))
    publisher.tick()
    assert set(leaves(fake.data()["queues.yaml"])) == {"default"} and "rayon.io" not in fake.data()["queues.yaml"]


def test_an_ended_queue_is_kept_for_keep_ended_of_plan_time_in_whole_steps(tmp_path: Path) -> None:
    with Store.open(tmp_path / "plan.db") as store:
        store.init(f"start: {at(0)}\nstep: 10s\nhorizon: 60m\ncapacity: {{vcores: 8, memory: 16GiB}}\n",
                   "cluster.yaml")
        store.submit(one(pinned("a", 0, 5, 4)))  # its window closes at 300 s: step 30 of 10 s
        publisher = QueuePublisher(store, follower=Follower(on_expiry="kill"))
        kept = {}
        for step in (29, 30, 32, 33):
            store.advance(START + timedelta(seconds=10 * step))
            kept[step] = publisher.ended(publisher.current())
        assert kept == {29: (), 30: ("a",), 32: ("a",), 33: ()}  # KEEP_ENDED, 30 s: steps 30, 31 and 32
        assert QueuePublisher(store).ended(publisher.current()) is None  # move: none kept


def test_serve_names_a_bad_on_expiry_with_a_near_miss(store: Store, tmp_path: Path) -> None:
    refused = CliRunner().invoke(main, ["serve", "--state", str(store.where), "--follow-to",
                                        f"yunikorn:{tmp_path / 'q.yaml'}", "--on-expiry", "kil"])
    assert refused.exit_code == 2 and "--on-expiry" in refused.output and "did you mean `kill`" in refused.output, \
        refused.output
    config = tmp_path / "serve.yaml"
    config.write_text("on-expiry: moved\n")
    refused = CliRunner().invoke(main, ["serve", "--state", str(store.where), "--config", str(config)])
    assert refused.exit_code == 2 and "`on-expiry`" in refused.output and "did you mean `move`" in refused.output, \
        refused.output
    alone = CliRunner().invoke(main, ["serve", "--state", str(store.where), "--on-expiry", "kill"])
    assert alone.exit_code == 2 and "--on-expiry kill needs --follow-to" in alone.output, alone.output


def test_under_kill_the_file_target_keeps_the_ended_queue_closed_too(store: Store, tmp_path: Path) -> None:
    store.submit(one(pinned("a", 0, 5, 4)))
    target = FollowTo.parse(f"yunikorn:{tmp_path / 'queues.yaml'}")
    publisher = QueuePublisher(store, target, Follower(on_expiry="kill"))
    publisher.tick()
    store.advance(instant(5))
    publisher.tick()
    a = leaves((tmp_path / "queues.yaml").read_text())["a"]
    assert a["resources"]["max"] == {"memory": 0, "vcore": 0, "pods": 0, "rayon.io/expiry": 1}
