"""The local Kubernetes control plane (`cluster.sh`: etcd, kube-apiserver, KWOK, YuniKorn on 127.0.0.1) from Python.

`unavailable()` says why it cannot run here (None: it can): the four binaries are built once by `build.sh`
(Go and the module proxy) and cached outside the work tree; a test tier without Go, or without the binaries,
skips saying so. `ControlPlane.up` starts one in a directory of its own and answers a Kubernetes client on it;
`down` stops the four in the reverse order by pid and removes the directory.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BUILD, CLUSTER = HERE / "build.sh", HERE / "cluster.sh"
COMPONENTS = ("etcd", "kube-apiserver", "kwok", "yunikorn")  # the start order; down is the reverse
TOOLS = ("bash", "curl", "openssl")
NAMESPACE = "yunikorn"  # where YuniKorn's ConfigMaps are (the follower's default target)
NODES = 4
NODE_CAPACITY = {"cpu": "32", "memory": "64Gi"}  # examples/cluster.yaml's node


def binary(component: str) -> Path:
    """Where build.sh keeps `component`'s binary (built or not): keyed by its pinned version."""
    out = subprocess.run(["bash", str(BUILD), "--path", component], capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


def unavailable() -> str | None:
    """Why the control plane cannot run here, or None. Binaries that are not cached are built first when Go is
    there (minutes each: build.sh); RAYON_K8S_BUILD=0 forbids building (then only cached binaries count)."""
    for tool in TOOLS:
        if shutil.which(tool) is None:
            return f"{tool} not found on PATH"
    try:
        import kubernetes  # noqa: F401
    except ImportError:
        return "the Kubernetes client is not installed (pip install 'rayon-planner[kubernetes]')"
    absent = [c for c in COMPONENTS if not binary(c).is_file()]
    if not absent:
        return None
    if shutil.which("go") is None:
        return f"go not found on PATH, and {', '.join(absent)} not built (tests/peers/k8s/build.sh)"
    if os.environ.get("RAYON_K8S_BUILD", "1") == "0":
        return f"{', '.join(absent)} not built and RAYON_K8S_BUILD=0 (tests/peers/k8s/build.sh builds them)"
    built = subprocess.run(["bash", str(BUILD), *absent], capture_output=True, text=True)
    if built.returncode != 0:
        tail = (built.stderr or built.stdout).strip().splitlines()[-3:]
        return f"build.sh could not build {', '.join(absent)}: {' / '.join(tail)}"
    return None


def free_port_run(count: int = 3) -> int:
    """A port P with P, P+1 and P+2 free on 127.0.0.1 now (the API server's and etcd's two)."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            base = probe.getsockname()[1]
        if base + count < 65535 and all(_free(base + i) for i in range(count)):
            return base
    raise RuntimeError("no three consecutive free ports on 127.0.0.1")


def _free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@dataclass
class ControlPlane:
    """One running control plane: its directory, API server port, the admin's kubeconfig, and how long `up` took."""

    dir: Path
    port: int
    started: float = 0.0  # seconds `cluster.sh up` took
    timings: dict[str, float] = field(default_factory=dict)  # component -> seconds to ready, from its log line

    @property
    def kubeconfig(self) -> Path:
        return self.dir / "kubeconfig"

    def env(self) -> dict[str, str]:
        return {**os.environ, "RAYON_K8S_DIR": str(self.dir), "RAYON_K8S_PORT": str(self.port),
                "RAYON_K8S_NODES": str(NODES)}

    @classmethod
    def up(cls, dir: Path) -> ControlPlane:
        """Start one in `dir` (which it owns: emptied first); RuntimeError with the script's words if it fails."""
        plane = cls(dir, free_port_run())
        begun = time.monotonic()
        done = subprocess.run(["bash", str(CLUSTER), "up"], env=plane.env(), capture_output=True, text=True)
        plane.started = time.monotonic() - begun
        if done.returncode != 0:
            raise RuntimeError(f"cluster.sh up failed:\n{done.stderr[-4000:]}")
        for line in done.stderr.splitlines():  # "cluster.sh: etcd ready in 1.2 s"
            words = line.split()
            if len(words) >= 5 and words[2] == "ready" and words[3] == "in":
                plane.timings[words[1]] = float(words[4])
        return plane

    def pids(self) -> dict[str, int]:
        """The running components' pids, from their pid files."""
        found = {}
        for name in COMPONENTS:
            path = self.dir / f"{name}.pid"
            if path.is_file():
                found[name] = int(path.read_text().strip())
        return found

    def down(self) -> str:
        """Stop every component (reverse order, by pid) and remove the directory; the script's account of it."""
        done = subprocess.run(["bash", str(CLUSTER), "down"], env=self.env(), capture_output=True, text=True,
                              check=True)
        return done.stderr

    def client(self) -> Any:
        """A `CoreV1Api` on this control plane, as the admin."""
        import kubernetes

        configuration = kubernetes.client.Configuration()
        kubernetes.config.load_kube_config(config_file=str(self.kubeconfig), client_configuration=configuration)
        return kubernetes.client.CoreV1Api(kubernetes.client.ApiClient(configuration))


def running(pid: int) -> bool:
    """Whether `pid` is a live process (not a zombie)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def listening(pid: int) -> list[tuple[str, int]]:
    """The (address, port) pairs process `pid` listens on over TCP, from /proc (IPv4 and IPv6)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table, width in (("tcp", 8), ("tcp6", 32)):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            cells = line.split()
            if cells[3] == "0A" and cells[9] in inodes:  # 0A: LISTEN
                address, port = cells[1].split(":")
                found.append((_address(address, width), int(port, 16)))
    return found


def _address(hexed: str, width: int) -> str:
    """/proc/net/tcp's address (little-endian words) as text: 127.0.0.1, ::1, 0.0.0.0, ::."""
    raw = bytes.fromhex(hexed)
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    return socket.inet_ntop(socket.AF_INET if width == 8 else socket.AF_INET6, words)


def loopback(address: str) -> bool:
    return address.startswith("127.") or address in ("::1", "::ffff:127.0.0.1")


def pod(name: str, namespace: str, cpu: str, memory: str, labels: Mapping[str, str],
        annotations: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A bare pod for YuniKorn (no controller-manager here: nothing makes pods from Jobs), on KWOK's fake nodes."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": dict(labels),
                         "annotations": dict(annotations or {})},
            "spec": {"schedulerName": "yunikorn", "restartPolicy": "Never", "automountServiceAccountToken": False,
                     "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}],
                     "containers": [{"name": "work", "image": "registry.example/work:1",
                                     "resources": {"requests": {"cpu": cpu, "memory": memory},
                                                   "limits": {"memory": memory}}}]}}


def wait(condition: Any, limit: float, every: float = 0.5, what: str = "the condition") -> Any:
    """Poll `condition()` until it answers something true (returned), or raise after `limit` seconds. A safety net
    for a stuck control plane, not a bound any test asserts."""
    deadline = time.monotonic() + limit
    while True:
        answer = condition()
        if answer:
            return answer
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} did not happen within {limit} s")
        time.sleep(every)


def pods_of(api: Any, namespace: str, selector: str) -> Iterator[Any]:
    yield from api.list_namespaced_pod(namespace, label_selector=selector).items
