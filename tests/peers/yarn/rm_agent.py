"""A real ResourceManager whose reservable queue uses a reservation agent of our choosing, beside `rayon serve`.

`build_agent()` runs `mvn package` on yarn-agent/ (our RayonReservationAgent, and in its test sources the driver,
rayon.yarn.RmDriver: a MiniYARNCluster with the CapacityScheduler); `driven_rm(...)` runs the driver, which
speaks JSON lines (submit through YARN's Java YarnClient, list, run an application inside a reservation), and with
`node_manager` a real NodeManager (rayon.yarn.NmDriver) in a second JVM;
`placement_server()` runs `rayon serve` with a token for the agent. Each raises `Unavailable`, saying why, when
this machine cannot run it (no java or mvn, Maven cannot resolve, the RM does not start).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import re
import shutil
import socket
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any as AnyType

from tests.peers.yarn.oracle import OPENS, Unavailable, end_rm, ready_line
from tests.planner.api.support import RAYON, Server, launch, make_tokens, stop

ROOT = Path(__file__).resolve().parents[3]
PROJECT = ROOT / "yarn-agent"
TARGET = PROJECT / "target"
JAR = TARGET / "rayon-yarn-agent.jar"
MAVEN_TIMEOUT = 1800.0
COMMAND_TIMEOUT = 300.0
OURS = "rayon.yarn.RayonReservationAgent"
PLANNING = "org.apache.hadoop.yarn.server.resourcemanager.reservation.planning."
YARN_AGENTS = {"yarn-greedy": PLANNING + "GreedyReservationAgent",
               "yarn-aligned": PLANNING + "AlignedPlannerWithGreedy"}
AGENT_USER = "yarn-rm"  # the token our agent presents
TRACKER = re.compile(r"RM tracker=(\S+)")  # where the RM waits for a NodeManager (RmDriver --node-manager external)
NODE = re.compile(r"NM node=(\S+)")  # a registered NodeManager's node id (NmDriver)


def _digest() -> str:
    digest = hashlib.sha256()
    for path in sorted([PROJECT / "pom.xml", *(PROJECT / "src").rglob("*")]):
        if path.is_file():
            digest.update(str(path.relative_to(PROJECT)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def build_agent() -> str:
    """The driver's class path (our jar first), `mvn package` (with the agent's JUnit tests) run once per change of
    the sources; Unavailable when Maven cannot build here, RuntimeError when the JUnit tests fail."""
    absent = [tool for tool in ("java", "mvn") if shutil.which(tool) is None]
    if absent:
        raise Unavailable(f"{' and '.join(absent)} not found on PATH: the agent needs a JDK (11 or later) and Maven")
    TARGET.mkdir(exist_ok=True)
    stamp = TARGET / "sources.sha256"
    with open(TARGET / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        digest = _digest()
        if not (stamp.exists() and stamp.read_text() == digest and JAR.exists()):
            _package()
            stamp.write_text(digest)
    classpath = (TARGET / "test-classpath.txt").read_text().strip()
    return f"{JAR}:{TARGET / 'test-classes'}:{classpath}"


def _package() -> None:
    failures = []
    for offline in (True, False):  # offline first: once ~/.m2 holds Hadoop, no network is needed
        command = ["nice", "-n", "10", "mvn", "-B", "-q", *(["-o"] if offline else []), "-f",
                   str(PROJECT / "pom.xml"), "package"]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=MAVEN_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise Unavailable(f"Maven did not build {PROJECT} within {MAVEN_TIMEOUT:.0f} s") from None
        if done.returncode == 0:
            return
        if "There are test failures" in done.stdout + done.stderr:  # the agent is wrong: fail, never skip
            raise RuntimeError(f"yarn-agent's JUnit tests failed:\n{(done.stdout + done.stderr)[-3000:]}")
        failures.append(f"$ {' '.join(command)}\n{(done.stdout + done.stderr)[-2000:]}")
    raise Unavailable("Maven could not build yarn-agent (no network, or Maven Central unreachable?):\n"
                      + "\n".join(failures))


@dataclass
class DrivenRm:
    """The driver's process: where its RM's web app listens, and its log so far."""

    process: subprocess.Popen[str]
    url: str
    queue: str
    memory: int
    vcores: int
    step_ms: int
    log_path: Path
    node: str | None = None  # the real NodeManager's node id, when there is one
    lock: threading.Lock = field(default_factory=threading.Lock)

    def ask(self, command: dict[str, AnyType]) -> dict[str, AnyType]:
        """One command's answer (see RmDriver.java)."""
        assert self.process.stdin is not None and self.process.stdout is not None
        with self.lock:
            self.process.stdin.write(json.dumps(command) + "\n")
            self.process.stdin.flush()
            line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the RM driver ended:\n{self.log()[-3000:]}")
        answer: dict[str, AnyType] = json.loads(line)
        return answer

    def submit(self, body: dict[str, AnyType]) -> dict[str, AnyType]:
        return self.ask({"op": "submit", "body": body})

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@contextmanager
def driven_rm(agent_class: str = OURS, settings: dict[str, str] | None = None, memory_mb: int = 8192,
              vcores: int = 8, user: str = "alice", node_manager: bool = False,
              policy: dict[str, str] | None = None) -> Iterator[DrivenRm]:
    """The RM with `agent_class` as the reservable queue's agent and `settings` (rayon.reservation-agent.*) in its
    configuration, until the block ends. With `node_manager`, a real NodeManager in a JVM of its own (NmDriver)
    offers the capacity and runs containers; without, a node with no NodeManager offers it (reservations only).
    `policy`: the reservable queue's CapacityOverTimePolicy numbers (`average-capacity`, `instantaneous-max-capacity`
    in percent, `reservation-window` in ms), YARN's defaults where left out."""
    classpath = build_agent()
    with tempfile.TemporaryDirectory(prefix="rayon-rm-agent-") as work:
        options = ["--agent-class", agent_class, "--memory-mb", str(memory_mb), "--vcores", str(vcores),
                   "--user", user, "--work-dir", work, "--node-manager", "external" if node_manager else "none"]
        for key, value in {**(settings or {}), **{f"policy.{k}": v for k, v in (policy or {}).items()}}.items():
            options += [f"--{key}", value]
        log_path = Path(work) / "rm.log"
        with log_path.open("w") as errors:
            process = subprocess.Popen(["java", "-Xmx768m", *OPENS, f"-Dtest.build.data={work}", "-cp", classpath,
                                        "rayon.yarn.RmDriver", *options], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, stderr=errors, text=True)
            try:
                if not node_manager:
                    yield _ready(process, log_path)
                    return
                (tracker,) = ready_line(process, log_path, "the YARN RM with our agent", TRACKER)
                with node_manager_beside(classpath, tracker, memory_mb, vcores, Path(work) / "nm") as node:
                    rm = _ready(process, log_path)
                    rm.node = node
                    yield rm
            finally:
                end_rm(process, grace=60.0)


@contextmanager
def node_manager_beside(classpath: str, tracker: str, memory_mb: int, vcores: int, work: Path) -> Iterator[str]:
    """A real NodeManager (NmDriver: DefaultContainerExecutor, loopback ports) registered with the RM at `tracker`,
    in a JVM of its own so that its web app does not take over the RM's; its node id, until the block ends."""
    work.mkdir()
    log_path = work / "nm.log"
    with log_path.open("w") as errors:
        process = subprocess.Popen(["java", "-Xmx384m", *OPENS, "-cp", classpath, "rayon.yarn.NmDriver", "--tracker",
                                    tracker, "--memory-mb", str(memory_mb), "--vcores", str(vcores), "--work-dir",
                                    str(work)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors,
                                   text=True)
        try:
            (node,) = ready_line(process, log_path, "the YARN NodeManager", NODE)
            yield node
        finally:
            end_rm(process, grace=60.0)


def _ready(process: subprocess.Popen[str], log_path: Path) -> DrivenRm:
    url, queue, memory, vcores, step = ready_line(process, log_path, "the YARN RM with our agent")
    return DrivenRm(process, url, queue, int(memory), int(vcores), int(step), log_path)


@contextmanager
def placement_server() -> Iterator[tuple[Server, dict[str, str]]]:
    """`rayon serve` for the agent to call, and the agent's settings that name it (URL, token file, agent)."""
    with tempfile.TemporaryDirectory(prefix="rayon-for-yarn-") as work:
        folder = Path(work)
        (folder / "cluster.yaml").write_text("start: 2026-11-23T00:00:00Z\nstep: 1s\nhorizon: 1d\n"
                                             "capacity: {memory: 8GiB, vcores: 8}\n")
        state = folder / "plan.db"
        subprocess.run([str(RAYON), "init", "--cluster", str(folder / "cluster.yaml"), "--state", str(state)],
                       check=True, capture_output=True)
        tokens = make_tokens(folder / "tokens.txt", {AGENT_USER: "user"})
        (folder / "agent.token").write_text(tokens[AGENT_USER] + "\n")
        server = launch(state, tokens, "--state", str(state), "--port", "0", "--tokens", str(folder / "tokens.txt"),
                        "--no-access-log", "--log-level", "warning", "--clock", "wall")
        try:
            yield server, {"rayon.reservation-agent.url": server.url,
                           "rayon.reservation-agent.token-file": str(folder / "agent.token")}
        finally:
            stop(server)


def closed_port_url() -> str:
    """A loopback URL nothing listens on (a port just bound and let go)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"
