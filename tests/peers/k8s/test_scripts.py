"""The control plane's scripts and recipe, without Go: what they pin agrees, the base YuniKorn is started with is the
one docs/yunikorn.md gives, and the scripts refuse what they do not know."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.peers.k8s.controlplane import BUILD, CLUSTER, COMPONENTS, HERE

ROOT = HERE.parents[2]
PINNED = {  # component -> (the module its go.mod requires, the version build.sh keys the cache with)
    "etcd": ("go.etcd.io/etcd/server/v3", "3.6.16"),
    "kube-apiserver": ("k8s.io/kubernetes", "1.36.3"),
    "kwok": ("sigs.k8s.io/kwok", "0.8.0"),
    "yunikorn": ("github.com/apache/yunikorn-k8shim", "1.9.0"),
}


def build(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(BUILD), *args], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", **env})


@pytest.mark.parametrize("component", COMPONENTS)
def test_the_cache_is_keyed_by_the_version_go_mod_pins(component: str, tmp_path: Path) -> None:
    module, version = PINNED[component]
    required = re.search(rf"^\s*(?:require\s+)?{re.escape(module)} v(\S+)(?: // indirect)?$",
                         (HERE / "modules" / component / "go.mod").read_text(), re.M)
    assert required is not None and required.group(1) == version
    assert (HERE / "modules" / component / "go.sum").read_text().strip()  # every byte pinned
    out = build("--path", component, RAYON_K8S_CACHE=str(tmp_path))
    assert out.stdout.strip() == f"{tmp_path}/{component}-{version}/{component}"


def test_the_api_servers_staging_modules_are_its_own_release() -> None:
    text = (HERE / "modules" / "kube-apiserver" / "go.mod").read_text()
    replaced = re.findall(r"^\s*(k8s\.io/[\w-]+) => (k8s\.io/[\w-]+) (v\S+)$", text, re.M)
    assert len(replaced) > 25
    assert all(a == b and v == "v0.36.3" for a, b, v in replaced)


def test_build_refuses_an_unknown_component_and_a_missing_go(tmp_path: Path) -> None:
    done = build("kubelet", RAYON_K8S_CACHE=str(tmp_path))
    assert done.returncode == 2 and "go is not on PATH" in done.stderr  # no Go on this PATH: said first
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "go").write_text("#!/bin/sh\nexit 1\n")
    (fake / "go").chmod(0o755)
    done = build("kubelet", PATH=f"{fake}:/usr/bin:/bin", RAYON_K8S_CACHE=str(tmp_path))
    assert done.returncode == 2 and "unknown component 'kubelet'" in done.stderr
    assert not any(tmp_path.glob("kubelet*"))


def test_a_cached_binary_is_not_built_again(tmp_path: Path) -> None:
    made = tmp_path / "etcd-3.6.16" / "etcd"
    made.parent.mkdir()
    made.write_text("#!/bin/sh\n")
    made.chmod(0o755)
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "go").write_text("#!/bin/sh\necho go was run >&2\nexit 1\n")
    (fake / "go").chmod(0o755)
    done = build("etcd", PATH=f"{fake}:/usr/bin:/bin", RAYON_K8S_CACHE=str(tmp_path))
    assert done.returncode == 0 and "cached at" in done.stdout and "go was run" not in done.stderr


def test_cluster_sh_refuses_an_unknown_verb() -> None:
    done = subprocess.run(["bash", str(CLUSTER), "restart"], capture_output=True, text=True)
    assert done.returncode == 2 and "usage" in done.stderr


def test_yunikorn_starts_on_the_base_docs_yunikorn_md_gives() -> None:
    docs = (ROOT / "docs" / "yunikorn.md").read_text()
    block = re.search(r"```text\n(partitions:.*?)```", docs, re.S)
    assert block is not None
    assert (HERE / "queues-base.yaml").read_text() == block.group(1)
    base = yaml.safe_load(block.group(1))
    assert base["partitions"][0]["preemption"] == {"enabled": True}


def test_kwok_is_given_its_options_and_only_our_stages() -> None:
    documents = list(yaml.safe_load_all((HERE / "kwok.yaml").read_text()))
    options = documents[0]["options"]
    for name in ("podPlayStageParallelism", "nodePlayStageParallelism", "nodeLeaseParallelism",
                 "podsOnNodeSyncParallelism"):
        assert options[name] > 0
    assert sorted(d["metadata"]["name"] for d in documents[1:]) == ["node-ready", "pod-delete", "pod-run",
                                                                    "pod-succeed"]


def test_a_budget_builds_only_what_fits_and_says_what_it_left(tmp_path: Path) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "go").write_text("#!/bin/sh\necho go was run >&2\nexit 1\n")
    (fake / "go").chmod(0o755)
    done = build("--budget", "100", "etcd", "kube-apiserver", PATH=f"{fake}:/usr/bin:/bin",
                 RAYON_K8S_CACHE=str(tmp_path))
    assert done.returncode == 0 and "go was run" not in done.stderr
    assert "etcd 3.6.16: not built: about 200 s" in done.stdout
    assert "kube-apiserver 1.36.3: not built: about 960 s" in done.stdout
