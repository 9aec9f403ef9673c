"""Run one fuzz input through `rayon check`, `rayon plan` or `rayon simulate` in-process and judge it.

Shared by the fuzz tests (generated inputs) and `test_corpus.py` (the crashers kept in `corpus/`). An input is a
file's bytes and its kind (`rdl`, `json`, `yarn`, `cluster`, `scenario`); `examine` returns every broken invariant
as a line of text, an empty list when the product behaved:

- every command ends with exit status 0 or 2 (a product error rendered as a message), never 1, never an exception
  escaping the command, never a traceback on standard error, and within a time limit (`TIME_LIMIT` seconds of
  CPU time, by SIGPROF: the measure of the work, whatever else the machine runs; and `WALL_LIMIT` times that of
  wall time, by SIGALRM, for a command that waits on nothing) and a memory bound (`MEMORY_LIMIT` bytes more
  address space, by RLIMIT_AS);
- `check` and `plan` agree: a file `check` calls valid (and holding a reservation) is planned with exit 0; a file
  it calls invalid is refused by `plan` with exit 2; for a cluster file, an invalid one is refused by `plan` and a
  valid one plans a known-good reservation (or refuses it for the reservation's sake, never the cluster's);
- every plan `plan --json` prints passes the independent checker, `planner.core.check.check_plan`;
- `rayon serve --config FILE` or `--tokens FILE` over a store that does not exist exits 2 (it never serves), and a
  token file that does not load (TokenError, never another exception) leaves the tokens read before in force.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import resource
import signal
import tempfile
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from click.testing import CliRunner, Result

from follower.cli import main
from planner.api.auth import ENV_TOKEN_FILE, ENV_TOKENS, TokenError, TokenRegistry, append_token
from planner.core.check import check_plan
from rdl.cluster import parse_cluster
from rdl.load import load

TIME_LIMIT = 20  # seconds of CPU time per command
WALL_LIMIT = 15  # times TIME_LIMIT of wall time per command (a shared machine under load is slow, not stuck)
MEMORY_LIMIT = 3 * 1024**3  # bytes of address space beyond what the process already maps
SUFFIX = {"rdl": ".rdl", "json": ".json", "yarn": ".json", "cluster": ".yaml", "scenario": ".yaml",
          "config": ".yaml", "tokens": ".yaml"}
SERVE_ENV: dict[str, str | None] = {ENV_TOKENS: None, ENV_TOKEN_FILE: None, "RAYON_STATE": None}
KINDS = tuple(SUFFIX)

# The cluster every reservation input is checked and planned against: small and short, so plans are quick;
# three resources so bundles may name `gpu`.
CLUSTER = """\
start: 2026-11-23T00:00:00Z
step: 1m
horizon: 2d
capacity: {memory: 256GiB, vcores: 128, gpu: 8}
"""
# A reservation every sane cluster file (memory and vcores, a plan of an hour or more) plans with exit 0.
GOOD_RDL = "reservation good user=u deadline=+1h {\n  atom(b={memory: 1MiB, vcores: 1}, l=1m, w=1m)\n}\n"

COUNTS: dict[str, int] = {}  # inputs examined per kind, for the session summary


class Timeout(Exception):
    """A command ran past the time limit."""


def make_runner() -> CliRunner:
    if "mix_stderr" in inspect.signature(CliRunner).parameters:
        return CliRunner(mix_stderr=False)  # type: ignore[call-arg]
    return CliRunner()


@contextlib.contextmanager
def limits(seconds: int = TIME_LIMIT, memory: int = MEMORY_LIMIT) -> Iterator[None]:
    """Raise Timeout after `seconds` of CPU time (or WALL_LIMIT times that of wall time), MemoryError beyond
    `memory` more bytes of address space."""
    def expire(signum: int, frame: FrameType | None) -> None:
        if signum == signal.SIGPROF:
            raise Timeout(f"ran longer than {seconds} s of CPU time")
        raise Timeout(f"waited longer than {seconds * WALL_LIMIT} s")

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    mapped = _mapped_bytes()
    bounded = mapped is not None and hard == resource.RLIM_INFINITY
    previous = {number: signal.signal(number, expire) for number in (signal.SIGPROF, signal.SIGALRM)}
    # Every second after the limit too: a Timeout raised where Python swallows it (a gc callback) comes again.
    signal.setitimer(signal.ITIMER_PROF, seconds, 1.0)
    signal.setitimer(signal.ITIMER_REAL, seconds * WALL_LIMIT, 1.0)
    if bounded:
        assert mapped is not None
        resource.setrlimit(resource.RLIMIT_AS, (mapped + memory, hard))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        for number, handler in previous.items():
            signal.signal(number, handler)
        if bounded:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _mapped_bytes() -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


@dataclass
class Run:
    """One command's outcome: its result, or the exception that escaped it."""

    args: list[str]
    result: Result | None = None
    error: str | None = None

    @property
    def code(self) -> int | None:
        return None if self.result is None else self.result.exit_code

    @property
    def stderr(self) -> str:
        return "" if self.result is None else self.result.stderr


def rayon(*args: str | Path, seconds: int = TIME_LIMIT, env: dict[str, str | None] | None = None) -> Run:
    """`rayon ARGS` in-process under the limits; an escaping exception is recorded, not raised."""
    run = Run([str(a) for a in args])
    try:
        with limits(seconds):
            run.result = make_runner().invoke(main, run.args, catch_exceptions=False, prog_name="rayon", env=env)
    except Exception as error:
        frames = traceback.extract_tb(error.__traceback__)
        where = next((f"{Path(f.filename).name}:{f.lineno}" for f in reversed(frames)
                      if "/site-packages/" not in f.filename), "?")
        run.error = f"{type(error).__name__} at {where}: {str(error)[:200]}"
    return run


def _basic(run: Run) -> list[str]:
    """Exit 0 or 2, no escaping exception, no traceback."""
    name = " ".join(a if "/" not in a else Path(a).name for a in run.args)
    if run.error is not None:
        return [f"`rayon {name}` raised {run.error}"]
    problems = []
    if run.code not in (0, 2):
        problems.append(f"`rayon {name}` exited {run.code}: {run.stderr.strip()[-300:]}")
    if "Traceback" in run.stderr:
        problems.append(f"`rayon {name}` printed a traceback")
    return problems


@dataclass
class Verdict:
    """Everything broken for one input, and what was run."""

    problems: list[str] = field(default_factory=list)
    runs: list[Run] = field(default_factory=list)


def examine(kind: str, data: bytes, seconds: int = TIME_LIMIT) -> Verdict:
    """Run one input of this kind through the commands that read it (each within `seconds`); every broken
    invariant."""
    COUNTS[kind] = COUNTS.get(kind, 0) + 1
    with tempfile.TemporaryDirectory(prefix="rayon-fuzz-") as folder:
        tmp = Path(folder)
        path = tmp / f"input{SUFFIX[kind]}"
        path.write_bytes(data)
        if kind == "scenario":
            return _scenario(path, seconds)
        if kind == "config":
            append_token(tmp / "tokens.yaml", "alice", "user")  # for a configuration naming `tokens: tokens.yaml`
            return _serve(path, "--config", tmp)
        if kind == "tokens":
            return _tokens(path, tmp)
        cluster = tmp / "cluster.yaml"
        if kind == "cluster":
            good = tmp / "good.rdl"
            good.write_text(GOOD_RDL)
            return _cluster(path, good)
        cluster.write_text(CLUSTER)
        return _reservations(path, cluster)


def _reservations(path: Path, cluster: Path) -> Verdict:
    verdict = Verdict()
    check = rayon("check", "--json", "--cluster", cluster, path)
    plan = rayon("plan", "--json", "--cluster", cluster, path)
    verdict.runs += [check, plan]
    verdict.problems += _basic(check) + _basic(plan)
    if verdict.problems:
        return verdict
    assert check.result is not None and plan.result is not None
    valid, count = _check_document(check.result.stdout)
    if valid and count and plan.code != 0:
        verdict.problems.append(f"check calls it valid ({count} reservation(s)) but plan exited {plan.code}: "
                                f"{plan.stderr.strip()[-300:]}")
    if not valid and plan.code != 2:
        verdict.problems.append(f"check calls it invalid but plan exited {plan.code}")
    if plan.code == 0:
        verdict.problems += _checked(plan.result.stdout, path, cluster)
    return verdict


def _check_document(stdout: str) -> tuple[bool, int]:
    document = json.loads(stdout)
    count = sum(len(f.get("reservations", [])) for f in document["files"])
    return bool(document["valid"]), count


def _checked(stdout: str, path: Path, cluster_path: Path) -> list[str]:
    """The independent checker's complaints about the plan printed for these files."""
    try:
        document = json.loads(stdout)
        cluster = parse_cluster(cluster_path.read_text(encoding="utf-8-sig"), str(cluster_path))
        files = [f for f in load([path], None, cluster, None) if f.cluster is None]
        reservations = [r for f in files for r in f.reservations]
        names = [d["reservation"] for d in document["decisions"]]
        if names != [r.name for r in reservations]:
            return [f"plan decided {names}, the file holds {[r.name for r in reservations]}"]
        with limits():
            broken = check_plan(cluster, reservations, document["decisions"], submitted=None, now=None)
    except Exception as error:
        return [f"checking the plan raised {type(error).__name__}: {str(error)[:200]}"]
    return [f"checker: {b}" for b in broken]


def _cluster(path: Path, good: Path) -> Verdict:
    verdict = Verdict()
    check = rayon("check", path)
    plan = rayon("plan", "--json", "--cluster", path, good)
    verdict.runs += [check, plan]
    verdict.problems += _basic(check) + _basic(plan)
    if verdict.problems:
        return verdict
    assert plan.result is not None
    if check.code == 2 and plan.code != 2:
        verdict.problems.append(f"check calls the cluster file invalid but plan exited {plan.code}")
    if check.code == 0 and plan.code == 2 and plan.stderr.startswith(str(path)):
        verdict.problems.append(f"check calls the cluster file valid but plan refuses it: {plan.stderr[:300]}")
    if plan.code == 0:
        verdict.problems += _checked(plan.result.stdout, good, path)
    return verdict


def _scenario(path: Path, seconds: int) -> Verdict:
    verdict = Verdict()
    run = rayon("simulate", path, seconds=seconds)
    verdict.runs.append(run)
    verdict.problems += _basic(run)
    return verdict


def _serve(path: Path, flag: str, tmp: Path) -> Verdict:
    """`rayon serve FLAG FILE` over a store that does not exist: refused with exit 2, whatever the file says."""
    verdict = Verdict()
    run = rayon("serve", flag, path, "--state", tmp / "missing.db", env=SERVE_ENV)
    verdict.runs.append(run)
    verdict.problems += _basic(run)
    if not verdict.problems and run.code != 2:
        verdict.problems.append(f"`rayon serve {flag}` exited {run.code} without a plan store")
    return verdict


def _tokens(path: Path, tmp: Path) -> Verdict:
    """The token file at start (`rayon serve --tokens`), and as a reload over a good one: one that does not load is
    a TokenError and leaves the tokens read before in force."""
    verdict = _serve(path, "--tokens", tmp)
    good = tmp / "reloaded.yaml"
    token = append_token(good, "alice", "user")
    registry = TokenRegistry.load(good, {})
    good.write_bytes(path.read_bytes())
    try:
        with limits():
            TokenRegistry.load(good, {})
        loads = True
    except TokenError:
        loads = False
    except Exception as error:
        verdict.problems.append(f"loading the token file raised {type(error).__name__}: {str(error)[:200]}")
        return verdict
    with limits():
        registry.refresh(force=True)
    if not loads and registry.authenticate(token) is None:
        verdict.problems.append("a token file that does not load dropped the tokens read before")
    return verdict


def describe(kind: str, data: bytes, verdict: Verdict) -> str:
    """A failure message: the problems and the input."""
    shown = data.decode("utf-8", errors="backslashreplace")
    return f"{kind} input broke {len(verdict.problems)} invariant(s):\n" + "\n".join(
        f"  - {p}" for p in verdict.problems) + f"\n--- input ({len(data)} bytes) ---\n{shown[:3000]}"


def signature(verdict: Verdict) -> str:
    """What kind of failure this is, to keep one input per kind of failure."""
    first = verdict.problems[0]
    for marker in (" at ", "exited", "checker:", "check calls"):
        if marker in first:
            head, _, tail = first.partition(marker)
            return (head + marker + tail.split(":")[0])[:160]
    return first[:160]

