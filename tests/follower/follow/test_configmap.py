"""Writing YuniKorn's ConfigMap (follower/follow/configmap.py), against a fake Kubernetes API server on loopback.

The real client library makes the requests (through a kubeconfig that points at the fake); the tests check the
requests themselves (verb, path, content type, body) and what the ConfigMap holds afterwards. No live cluster is
used: none is available where these tests run.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from follower.follow import configmap
from follower.follow.configmap import ConfigMapRef, KubernetesError, connect
from follower.follow.follower import FollowerError
from rdl.errors import EXIT_BAD_INPUT, EXIT_INTERNAL
from tests.follower.follow.kubefake import TOKEN, FakeAPIServer, Serving

THEIRS = """partitions:
- name: default
  placementrules:
  - {name: tag, value: namespace, create: true}
  queues:
  - name: root
    submitacl: '*'
    queues:
    - name: besteffort
"""


@pytest.fixture
def fake() -> FakeAPIServer:
    return FakeAPIServer()


@pytest.fixture
def serving(fake: FakeAPIServer) -> Iterator[Serving]:
    running = Serving(fake)
    yield running
    running.close()


@pytest.fixture
def applier(serving: Serving, tmp_path: Path) -> configmap.ConfigMapApplier:
    return connect(ConfigMapRef(), str(serving.kubeconfig(tmp_path)))


def with_plan(base: dict | None) -> str:
    """A render function: the base (or a bare root) with a `plan` queue added, as YAML."""
    document = base or {"partitions": [{"name": "default", "queues": [{"name": "root", "queues": []}]}]}
    root = document["partitions"][0]["queues"][0]
    root["queues"] = [q for q in root.get("queues") or [] if q["name"] != "plan"] + [{"name": "plan"}]
    return yaml.safe_dump(document, sort_keys=False)


def test_the_key_is_patched_and_every_other_key_kept(fake: FakeAPIServer, applier: configmap.ConfigMapApplier) -> None:
    fake.put("yunikorn", "yunikorn-configs", {"queues.yaml": THEIRS, "log.level": "DEBUG"}, labels={"team": "ops"})
    applied = applier.apply(with_plan)
    assert applied.outcome == "updated"
    get, patch = fake.requests
    assert (get.method, get.path) == ("GET", "/api/v1/namespaces/yunikorn/configmaps/yunikorn-configs")
    assert patch.method == "PATCH" and patch.path.startswith("/api/v1/namespaces/yunikorn/configmaps/yunikorn-configs?")
    assert "fieldManager=rayon" in patch.path
    assert patch.content_type == "application/merge-patch+json"
    assert patch.body == {"metadata": {"resourceVersion": "1000"}, "data": {"queues.yaml": applied.text}}
    assert patch.authorization == f"Bearer {TOKEN}"
    stored = fake.configmaps["yunikorn", "yunikorn-configs"]
    assert stored["data"]["log.level"] == "DEBUG" and stored["metadata"]["labels"] == {"team": "ops"}
    queues = yaml.safe_load(stored["data"]["queues.yaml"])
    assert queues["partitions"][0]["placementrules"] == [{"name": "tag", "value": "namespace", "create": True}]
    assert [q["name"] for q in queues["partitions"][0]["queues"][0]["queues"]] == ["besteffort", "plan"]


def test_nothing_is_written_when_the_document_is_already_there(fake: FakeAPIServer,
                                                               applier: configmap.ConfigMapApplier) -> None:
    fake.put("yunikorn", "yunikorn-configs", {"queues.yaml": THEIRS})
    assert applier.apply(with_plan).outcome == "updated"
    fake.requests.clear()
    assert applier.apply(with_plan).outcome == "unchanged"  # the plan queue replaced by itself: the same text
    assert [r.method for r in fake.requests] == ["GET"]


def test_a_missing_configmap_is_created_in_its_namespace(fake: FakeAPIServer,
                                                         applier: configmap.ConfigMapApplier) -> None:
    applied = applier.apply(with_plan)
    assert applied.outcome == "created" and applied.resource_version == "1000"
    _, create = fake.requests
    assert (create.method, create.path) == ("POST", "/api/v1/namespaces/yunikorn/configmaps?fieldManager=rayon")
    assert create.body == {"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "yunikorn-configs", "namespace": "yunikorn"},
                           "data": {"queues.yaml": applied.text}}
    assert fake.data() == {"queues.yaml": applied.text}


def test_an_empty_queues_yaml_there_is_no_base(fake: FakeAPIServer, applier: configmap.ConfigMapApplier) -> None:
    fake.put("yunikorn", "yunikorn-configs", {"queues.yaml": "", "log.level": "INFO"})
    assert applier.apply(with_plan).outcome == "updated"
    assert fake.data()["queues.yaml"] == with_plan(None) and fake.data()["log.level"] == "INFO"


def test_a_dry_run_says_what_it_would_do_and_writes_nothing(fake: FakeAPIServer,
                                                            applier: configmap.ConfigMapApplier) -> None:
    assert applier.apply(with_plan, dry_run=True).outcome == "would create"
    fake.put("yunikorn", "yunikorn-configs", {"queues.yaml": THEIRS})
    assert applier.apply(with_plan, dry_run=True).outcome == "would update"
    assert fake.writes() == [] and fake.data() == {"queues.yaml": THEIRS}


def test_an_edit_made_between_the_read_and_the_write_is_not_overwritten(fake: FakeAPIServer,
                                                                         applier: configmap.ConfigMapApplier) -> None:
    fake.put("yunikorn", "yunikorn-configs", {"queues.yaml": THEIRS})
    edited = THEIRS + "    - name: adhoc\n"

    def someone_edits() -> None:
        fake.before_patch = None
        fake.put("yunikorn", "yunikorn-configs", {"queues.yaml": edited})

    fake.before_patch = someone_edits
    assert applier.apply(with_plan).outcome == "updated"
    assert [r.method for r in fake.requests] == ["GET", "PATCH", "GET", "PATCH"]  # refused (409), read again
    names = [q["name"] for q in yaml.safe_load(fake.data()["queues.yaml"])["partitions"][0]["queues"][0]["queues"]]
    assert names == ["besteffort", "adhoc", "plan"]


def test_forbidden_names_the_verb_the_account_and_the_fix(fake: FakeAPIServer,
                                                          applier: configmap.ConfigMapApplier) -> None:
    fake.put("yunikorn", "yunikorn-configs", {"queues.yaml": THEIRS})
    fake.forbidden.add("patch")
    with pytest.raises(KubernetesError) as raised:
        applier.apply(with_plan)
    message = raised.value.render()
    assert "forbidden to patch ConfigMap yunikorn/yunikorn-configs" in message
    assert 'cannot patch resource "configmaps"' in message and "nothing was changed" in message
    assert "get, create and patch on configmaps" in message and raised.value.exit_code == EXIT_BAD_INPUT
    assert fake.data() == {"queues.yaml": THEIRS}


def test_forbidden_to_read_changes_nothing(fake: FakeAPIServer, applier: configmap.ConfigMapApplier) -> None:
    fake.forbidden.add("get")
    with pytest.raises(KubernetesError, match="forbidden to read ConfigMap yunikorn/yunikorn-configs"):
        applier.apply(with_plan)
    assert fake.writes() == []


def test_a_missing_namespace_is_an_error_not_created(fake: FakeAPIServer, serving: Serving, tmp_path: Path) -> None:
    applier = connect(ConfigMapRef.parse("yk/yunikorn-configs"), str(serving.kubeconfig(tmp_path)))
    with pytest.raises(KubernetesError, match=r"namespace `yk` not found on http://127.0.0.1:"):
        applier.apply(with_plan)
    assert fake.configmaps == {} and "yk" not in fake.namespaces


def test_refused_credentials_are_named(fake: FakeAPIServer, serving: Serving, tmp_path: Path) -> None:
    applier = connect(ConfigMapRef(), str(serving.kubeconfig(tmp_path, token="expired")))
    with pytest.raises(KubernetesError, match="refused the credentials \\(401 Unauthorized"):
        applier.apply(with_plan)


def test_an_unreachable_server_is_an_internal_failure(serving: Serving, tmp_path: Path) -> None:
    kubeconfig = serving.kubeconfig(tmp_path)
    serving.close()  # nothing listens there any more
    with pytest.raises(KubernetesError, match=r"cannot reach the Kubernetes API server at http://127.0.0.1:") as error:
        connect(ConfigMapRef(), str(kubeconfig)).apply(with_plan)
    assert error.value.exit_code == EXIT_INTERNAL


def test_a_malformed_queues_yaml_there_is_an_error_and_left_alone(fake: FakeAPIServer,
                                                                  applier: configmap.ConfigMapApplier) -> None:
    fake.put("yunikorn", "yunikorn-configs", {"queues.yaml": "partitions: ["})
    with pytest.raises(FollowerError, match=r"ConfigMap yunikorn/yunikorn-configs queues.yaml: not valid"):
        applier.apply(with_plan)
    assert fake.writes() == []


def test_no_kubeconfig_and_no_pod_is_an_error_naming_both(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    with pytest.raises(KubernetesError, match=f"no Kubernetes credentials: no kubeconfig at {missing}, and not "
                       "running in a pod"):
        connect(ConfigMapRef(), environ={"KUBECONFIG": str(missing)})
    with pytest.raises(KubernetesError, match=r"--kubeconfig .*: no such file"):
        connect(ConfigMapRef(), str(missing))


def test_the_kubeconfig_comes_from_the_environment_and_its_context_may_be_named(serving: Serving,
                                                                                tmp_path: Path) -> None:
    kubeconfig = serving.kubeconfig(tmp_path)
    assert connect(ConfigMapRef(), environ={"KUBECONFIG": str(kubeconfig)}).server == serving.url
    assert connect(ConfigMapRef(), str(kubeconfig), context="other").server == serving.url
    with pytest.raises(KubernetesError, match=r"cannot use the Kubernetes credentials of .*kubeconfig: .*nope"):
        connect(ConfigMapRef(), str(kubeconfig), context="nope")


def test_in_a_pod_the_service_account_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kubernetes.config import incluster_config

    (tmp_path / "token").write_text("pod-token")
    (tmp_path / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\n")
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(tmp_path / "token"))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", str(tmp_path / "ca.crt"))
    pod = {"KUBECONFIG": str(tmp_path / "none"), "KUBERNETES_SERVICE_HOST": "10.96.0.1",
           "KUBERNETES_SERVICE_PORT": "443"}
    applier = connect(ConfigMapRef(), environ=pod)
    assert applier.server == "https://10.96.0.1:443"
    assert applier.api.api_client.configuration.api_key["BearerToken"] == "bearer pod-token"


@pytest.mark.parametrize("text", ["yunikorn", "Yunikorn/configs", "yunikorn/", "/configs", "a/b/c", "a_b/c"])
def test_a_configmap_that_is_not_namespace_slash_name_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="is not NAMESPACE/NAME"):
        ConfigMapRef.parse(text)


def test_the_default_configmap_is_yunikorns() -> None:
    assert str(ConfigMapRef.parse("")) == "yunikorn/yunikorn-configs"
    assert ConfigMapRef.parse("sched/yk.configs") == ConfigMapRef("sched", "yk.configs")
