"""Client mode: the store commands through a real `rayon serve` (started here), printing what a local store prints."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any as AnyType

import pytest
from click.testing import CliRunner, Result

from follower.cli import main
from planner.store.facade import Store
from tests.planner.api.support import Server, make_tokens, running

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
CLUSTER = (EXAMPLES / "cluster.yaml").read_text()
Run = Callable[..., Result]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """`rayon serve` over the example cluster, its clock moved by nobody (tokens: alice, bob, ops the admin)."""
    root = tmp_path_factory.mktemp("client")
    state = root / "plan.db"
    with Store.open(state, create=True) as store:
        store.init(CLUSTER, "cluster.yaml")
    tokens_file = root / "tokens.yaml"
    with running(state, tokens_file, make_tokens(tokens_file)) as started:
        yield started


def runner(env: dict[str, str], *extra: str) -> Run:
    def run(*args: str) -> Result:
        return CliRunner(env=env).invoke(main, [*args, *extra], prog_name="rayon")
    return run


@pytest.fixture
def remote(server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Run:
    """`rayon` in client mode (RAYON_SERVER, RAYON_TOKEN of the admin), over an empty plan."""
    server.reset(CLUSTER)
    monkeypatch.setenv("RAYON_CONFIG", str(tmp_path / "no-config.yaml"))
    monkeypatch.delenv("RAYON_STATE", raising=False)
    return runner({"RAYON_SERVER": server.url, "RAYON_TOKEN": server.tokens["ops"]})


@pytest.fixture
def local(tmp_path: Path) -> Run:
    """`rayon` on a local store over the same cluster."""
    run = runner({}, "--state", str(tmp_path / "local.db"))
    assert run("init", "--cluster", str(EXAMPLES / "cluster.yaml")).exit_code == 0
    return run


def without(data: AnyType, *keys: str) -> AnyType:
    """JSON with the keys that differ by mode (who asked, the wall-clock time of a decision, the log's ids) left
    out, at every depth."""
    if isinstance(data, dict):
        return {k: without(v, *keys) for k, v in data.items() if k not in keys}
    if isinstance(data, list):
        return [without(v, *keys) for v in data]
    return data


def told(text: str) -> list[str]:
    """Printed lines, but `rayon show`'s history (when and by whom, which differ by mode)."""
    return [line for line in text.splitlines() if not line.startswith("  20")]


FILES = [str(EXAMPLES / name) for name in ("etl_nightly.rdl", "urgent_retrain.rdl", "mpi_solver.rdl")]


def test_the_same_commands_print_the_same_in_both_modes(local: Run, remote: Run) -> None:
    for run in (local, remote):
        submitted = run("submit", *FILES)
        assert submitted.exit_code == 0, submitted.stderr
    for command in (["submit", FILES[0]],  # already in the plan: rejected as `invalid`, as locally
                    ["list"], ["list", "--json"], ["list", "-o", "wide"], ["list", "--status", "rejected"],
                    ["show", "etl_nightly"],
                    ["show", "mpi_solver", "--json"], ["cancel", "mpi_solver"], ["list", "--from", "+1d"],
                    ["free", "--to", "+1d"], ["log", "-o", "name"],
                    ["free", "--step", "6h", "--for", "{vcores: 512}", "--lasting", "3h", "--json"]):
        mine, theirs = local(*command), remote(*command)
        assert (mine.exit_code, theirs.exit_code) == (0, 0), (command, mine.stderr, theirs.stderr)
        if "--json" in command:
            assert without(json.loads(theirs.stdout), "actor", "updated", "decided", "time") == without(
                json.loads(mine.stdout), "actor", "updated", "decided", "time"), command
        else:
            assert told(theirs.stdout) == told(mine.stdout), command
    logs = [without(json.loads(run("log", "--json").stdout)["items"], "actor", "id", "time") for run in (local, remote)]
    assert logs[0] == logs[1] and [e["action"] for e in logs[0]] == ["submit"] * 4 + ["cancel"]
    answers = [line.split()[-1] for line in remote("log").stdout.splitlines()[2:]]
    assert answers == ["accepted", "(capacity)", "accepted", "(invalid)", "cancelled"]  # a cancel is not "accepted"


def test_no_explain_rejects_for_capacity_without_a_deadline_in_both_modes(local: Run, remote: Run) -> None:
    """`rayon submit --no-explain`, as `rayon plan --no-explain`: the rejection keeps its reason, not the earliest
    deadline (the server is asked with `explain=false`)."""
    for run in (local, remote):
        reasons = []
        for flags in ((), ("--no-explain",)):
            answered = run("submit", "--json", "--dry-run", *flags, FILES[1])
            assert answered.exit_code == 0, answered.stderr
            reasons.append(json.loads(answered.stdout)["decisions"][0]["reason"])
        explained, bare = reasons
        assert explained["code"] == bare["code"] == "capacity" and explained["message"] == bare["message"]
        assert "earliest_deadline" in explained and "earliest_deadline" not in bare


def test_a_dry_run_commits_nothing_on_the_server(remote: Run) -> None:
    answered = remote("submit", "--dry-run", "--json", FILES[2])
    assert answered.exit_code == 0, answered.stderr
    assert json.loads(answered.stdout)["decisions"][0]["accepted"]
    assert json.loads(remote("list", "--json").stdout)["items"] == []


def test_bad_input_exits_2_naming_the_file_and_submits_nothing(remote: Run, tmp_path: Path) -> None:
    bad = tmp_path / "bad.rdl"
    bad.write_text("reservation r { atom(b={memory: 1GiB, vcores: 1}, w=30) }\n")
    result = remote("submit", str(bad))
    assert result.exit_code == 2 and f"{bad}:1:" in result.stderr and "nothing was submitted" in result.stderr
    unknown = remote("show", "nope")
    assert unknown.exit_code == 2 and "nope" in unknown.stderr
    assert remote("cancel", "nope").exit_code == 2
    assert json.loads(remote("log", "--json").stdout)["items"] == []


def test_a_rejection_fails_the_command_only_with_fail_on_reject(remote: Run) -> None:
    assert remote("submit", FILES[1]).exit_code == 0
    assert remote("submit", "--fail-on-reject", "--dry-run", FILES[1]).exit_code == 3


def test_skip_existing_submits_only_the_rest(remote: Run) -> None:
    assert remote("submit", FILES[0]).exit_code == 0
    again = remote("submit", "--skip-existing", "--json", *FILES[:2])
    assert again.exit_code == 0, again.stderr
    assert [d["reservation"] for d in json.loads(again.stdout)["decisions"]] == ["urgent_retrain"]
    assert "skipped 1 the server holds already: etl_nightly" in again.stderr


def test_files_go_as_one_request_and_one_the_server_refuses_submits_none_of_them(remote: Run,
                                                                                  tmp_path: Path) -> None:
    bad = tmp_path / "bad.rdl"  # well-formed: only the server, knowing the cluster, finds the resource it lacks
    bad.write_text("reservation fine { atom(b={vcores: 1}, w=30m) }\n"
                   "reservation bad {\n  atom(b={vcores: 1, gpus: 2}, w=30m)\n}\n")
    result = remote("submit", FILES[0], str(bad))
    assert result.exit_code == 2 and f"{bad}:3:" in result.stderr
    assert result.stderr.count("nothing was submitted") == 1
    assert json.loads(remote("list", "--json").stdout)["items"] == []  # etl_nightly, first and fine, was not committed


def test_skip_existing_sends_a_file_that_lost_one_in_canonical_rdl(remote: Run, tmp_path: Path) -> None:
    both = tmp_path / "both.rdl"
    both.write_text(Path(FILES[0]).read_text() + "\n" + Path(FILES[1]).read_text())
    assert remote("submit", FILES[0]).exit_code == 0
    again = remote("submit", "--skip-existing", "--json", str(both))
    assert again.exit_code == 0, again.stderr
    assert [d["reservation"] for d in json.loads(again.stdout)["decisions"]] == ["urgent_retrain"]
    assert sorted(r["reservation"] for r in json.loads(remote("list", "--json").stdout)["items"]) == [
        "etl_nightly", "urgent_retrain"]


def test_a_user_token_sees_its_own_and_no_token_is_told_how_to_get_one(server: Server, remote: Run) -> None:
    assert remote("submit", *FILES).exit_code == 0
    bob = runner({"RAYON_SERVER": server.url, "RAYON_TOKEN": server.tokens["bob"]})
    assert [r["reservation"] for r in json.loads(bob("list", "--json").stdout)["items"]] == ["mpi_solver"]
    refused = bob("cancel", "etl_nightly")
    assert refused.exit_code == 2
    nobody = runner({"RAYON_SERVER": server.url})("list")
    assert nobody.exit_code == 2 and "RAYON_TOKEN" in nobody.stderr


def test_commands_that_need_the_store_say_so(remote: Run) -> None:
    for command in (["advance", "--to", "+1h"], ["capacity", "--at", "+1h", "--set", "{vcores: 1}"],
                    ["init", "--cluster", str(EXAMPLES / "cluster.yaml")], ["retention"]):
        result = remote(*command)
        assert result.exit_code == 2, command
        assert f"`rayon {command[0]}` works on a local plan store" in result.stderr
        assert "--state" in result.stderr


def test_state_on_the_command_line_wins_over_the_server(remote: Run, tmp_path: Path) -> None:
    result = remote("list", "--state", str(tmp_path / "missing.db"))
    assert result.exit_code == 2 and "no plan store at" in result.stderr


def test_a_server_that_does_not_answer_exits_1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAYON_CONFIG", str(tmp_path / "none.yaml"))
    result = CliRunner().invoke(main, ["--server", "http://127.0.0.1:9", "list"])
    assert result.exit_code == 1 and "cannot reach the rayon server at http://127.0.0.1:9" in result.stderr


def test_a_context_file_names_the_server_and_its_token(server: Server, remote: Run, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    assert remote("submit", FILES[2]).exit_code == 0
    (tmp_path / "bob.token").write_text(server.tokens["bob"] + "\n")
    config = tmp_path / "config.yaml"
    config.write_text(f"current-context: lab\ncontexts:\n  lab: {{server: '{server.url}', token-file: bob.token}}\n"
                      f"  other: {{server: 'http://127.0.0.1:9'}}\n")
    monkeypatch.setenv("RAYON_CONFIG", str(config))
    shown = CliRunner().invoke(main, ["list", "--json"])
    assert shown.exit_code == 0, shown.stderr
    assert [r["reservation"] for r in json.loads(shown.stdout)["items"]] == ["mpi_solver"]
    elsewhere = CliRunner().invoke(main, ["--context", "other", "list"])
    assert elsewhere.exit_code == 1 and "http://127.0.0.1:9" in elsewhere.stderr
    typo = CliRunner().invoke(main, ["--context", "lib", "list"])
    assert typo.exit_code == 2 and "no context `lib`" in typo.stderr and "lab" in typo.stderr


def test_free_asked_a_chunk_at_a_time_adds_up_to_the_local_answer(local: Run, remote: Run,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from planner.cli import free

    for run in (local, remote):
        assert run("submit", *FILES).exit_code == 0
    monkeypatch.setattr(free, "CHUNK", 97)  # the API's answers cap the points; a week of minutes in 104 requests
    mine, theirs = local("free", "--json"), remote("free", "--json")
    assert theirs.exit_code == 0, theirs.stderr
    assert json.loads(theirs.stdout) == json.loads(mine.stdout) and len(json.loads(mine.stdout)["items"]) > 3


def test_replan_runs_as_the_server_s_job_and_answers_as_locally(remote: Run, local: Run) -> None:
    for run in (local, remote):
        assert run("submit", *FILES).exit_code == 0
    answers = [json.loads(run("replan", "--time-limit", "5", "--json").stdout) for run in (local, remote)]
    assert set(answers[1]) == set(answers[0]) and answers[1]["solver"] == "highs"
    assert answers[1]["admitted"] == answers[0]["admitted"]
    told_ = remote("replan", "--time-limit", "5")
    assert told_.exit_code == 0 and told_.stdout.startswith("solver highs: "), told_.stderr
