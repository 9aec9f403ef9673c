"""The two servers the conformance script compares: YARN's real ResourceManager (tests/peers/yarn/rm) and `rayon serve`.

`real_rm()` builds the Java program with Maven (once per process; `~/.m2` caches the download) and runs it until
the block ends; `rayon()` starts `rayon serve` on a fresh SQLite store whose cluster file matches the RM's
reservable queue: the same capacity, YARN's one-second plan step, its queue. Both raise `Unavailable`, with the
reason, when this machine cannot run them (no java or mvn, Maven cannot resolve, the RM does not start).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from tests.planner.api.support import RAYON, launch, make_tokens, stop

HERE = Path(__file__).resolve().parent
RM_PROJECT = HERE / "rm"
MAVEN_TIMEOUT = 900.0  # the first build downloads Hadoop's jars (a few hundred MB) into ~/.m2
START_TIMEOUT = 180.0
READY = re.compile(r"RM web=(\S+) queue=(\S+) memory=(\d+) vcores=(\d+) step=(\d+)")
# Guice (in the RM's web app) reflects into the JDK, which Java 17 refuses unless these packages are opened.
OPENS = [f"--add-opens=java.base/{package}=ALL-UNNAMED"
         for package in ("java.lang", "java.lang.reflect", "java.util", "java.net", "java.io")]
USER = "alice"  # the one user both servers see: the RM's static web user, and a token of ours


class Unavailable(RuntimeError):
    """This machine cannot run the real RM (the message says why)."""


@dataclass(frozen=True)
class Target:
    """A server speaking YARN's reservation REST API: where, with which headers, and its reservable queue."""

    name: str
    url: str
    headers: dict[str, str]
    queue: str
    memory: int  # MB in the reservable queue
    vcores: int
    step_ms: int


_built: dict[str, str] = {}
_lock = threading.Lock()


def build_rm() -> str:
    """The Java class path of the RM program, built by Maven on first use; Unavailable when it cannot be."""
    with _lock:
        if "classpath" not in _built:
            _built["classpath"] = _build()
        return _built["classpath"]


def _build() -> str:
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            raise Unavailable(f"`{tool}` is not on PATH: the real YARN RM needs a JDK 17 and Maven")
    try:  # offline first: once ~/.m2 holds Hadoop, no network is needed
        done = subprocess.run(["mvn", "-B", "-q", "-o", "package"], cwd=RM_PROJECT, capture_output=True, text=True,
                              timeout=MAVEN_TIMEOUT)
        if done.returncode != 0:
            done = subprocess.run(["mvn", "-B", "-q", "package"], cwd=RM_PROJECT, capture_output=True, text=True,
                                  timeout=MAVEN_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise Unavailable(f"Maven did not build {RM_PROJECT} within {MAVEN_TIMEOUT:.0f} s") from None
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise Unavailable(f"Maven could not build {RM_PROJECT} (no network, or Maven Central unreachable?):\n{tail}")
    target = RM_PROJECT / "target"
    return f"{target / 'classes'}:{(target / 'classpath.txt').read_text().strip()}"


@contextmanager
def real_rm(memory_mb: int = 8192, vcores: int = 8) -> Iterator[Target]:
    """YARN's ResourceManager on loopback with one reservable queue of that capacity, until the block ends."""
    classpath = build_rm()
    with tempfile.TemporaryDirectory(prefix="rayon-rm-") as work:
        command = ["java", "-Xmx768m", *OPENS, f"-Dtest.build.data={work}", "-cp", classpath,
                   "rayon.peers.yarn.rm.RmOracle", "--memory-mb", str(memory_mb), "--vcores", str(vcores),
                   "--user", USER, "--work-dir", work]
        log = Path(work) / "rm.log"
        with log.open("w") as errors:
            process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors,
                                       text=True)
            try:
                yield _ready(process, log)
            finally:
                end_rm(process)


def _ready(process: subprocess.Popen[str], log: Path) -> Target:
    """The RM's target once it prints where it listens; Unavailable if it exits or stays silent."""
    url, queue, memory, vcores, step = ready_line(process, log, "the YARN RM")
    return Target("yarn", url, {"Accept": "application/json"}, queue, int(memory), int(vcores), int(step))


def ready_line(process: subprocess.Popen[str], log: Path, what: str,
               pattern: re.Pattern[str] = READY) -> tuple[str, ...]:
    """What a started RM driver prints once it listens (READY's groups: web URL, queue, memory, vcores, step; or
    `pattern`'s for another line); Unavailable, with the log's tail, if it exits or stays silent for START_TIMEOUT."""
    assert process.stdout is not None
    found: list[str] = []
    reader = threading.Thread(target=lambda: found.append(process.stdout.readline() if process.stdout else ""),
                              daemon=True)
    reader.start()
    reader.join(START_TIMEOUT)
    match = pattern.search(found[0]) if found else None
    if match is None:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-20:])
        raise Unavailable(f"{what} did not start within {START_TIMEOUT:.0f} s:\n{tail}")
    return match.groups()


def end_rm(process: subprocess.Popen[str], grace: float = 30.0) -> None:
    """Close the RM's standard input (it stops itself), or kill it after `grace` seconds."""
    if process.stdin is not None:
        process.stdin.close()
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def cluster_file(like: Target, start: datetime) -> str:
    """A cluster file for `rayon` matching an RM's reservable queue: its capacity, step and queue (the only one:
    YARN's `default` is not reservable there)."""
    if like.step_ms % 1000:
        raise ValueError(f"our plan steps are whole seconds; the RM's is {like.step_ms} ms")
    return (f"start: {start.strftime('%Y-%m-%dT%H:%M:%SZ')}\nstep: {like.step_ms // 1000}s\nhorizon: 1d\n"
            f"capacity: {{memory: {like.memory}MiB, vcores: {like.vcores}}}\nqueues: [{like.queue}]\n")


@contextmanager
def rayon(like: Target) -> Iterator[Target]:
    """`rayon serve` (wall clock) on a fresh SQLite store matching `like`, until the block ends."""
    with tempfile.TemporaryDirectory(prefix="rayon-conformance-") as work:
        folder = Path(work)
        start = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
        (folder / "cluster.yaml").write_text(cluster_file(like, start))
        state = folder / "plan.db"
        subprocess.run([str(RAYON), "init", "--cluster", str(folder / "cluster.yaml"), "--state", str(state)],
                       check=True, capture_output=True)
        tokens_file = folder / "tokens.txt"
        tokens = make_tokens(tokens_file, {USER: "user"})
        server = launch(state, tokens, "--state", str(state), "--port", "0", "--tokens", str(tokens_file),
                        "--no-access-log", "--log-level", "warning", "--clock", "wall")
        try:
            yield Target("rayon", server.url, {"Accept": "application/json",
                                               "Authorization": f"Bearer {tokens[USER]}"},
                         like.queue, like.memory, like.vcores, like.step_ms)
        finally:
            stop(server)
