"""`rayon serve --config FILE`: the options as YAML keys; flags win; every mistake is a positioned error."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from click.testing import CliRunner

from planner.api.clockwork import ClockMode
from planner.cli.serve import Options, options, serve
from planner.store.facade import Store
from tests.planner.api.support import CLUSTER, launch, make_tokens, pinned, submit


@pytest.fixture(autouse=True)
def no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RAYON_STATE", "RAYON_TOKENS", "RAYON_TOKENS_FILE"):
        monkeypatch.delenv(name, raising=False)


def given(config: Path, *flags: str) -> Options:
    """The options `rayon serve --config CONFIG FLAGS` would run with."""
    ctx = serve.make_context("serve", ["--config", str(config), *flags])
    return options(ctx, str(config))


def test_the_file_sets_what_no_flag_gives_and_relative_paths_count_from_its_folder(tmp_path: Path) -> None:
    config = tmp_path / "etc" / "serve.yaml"
    config.parent.mkdir()
    config.write_text("state: ../var/plan.db\ntokens: /srv/tokens.yaml\nport: 9090\nmax-body: 65536\n"
                      "access-log: false\nlog-format: json\n")
    found = given(config, "--port", "9191", "--log-format", "text")
    assert found == Options(state_path=str(config.parent / "../var/plan.db"), host="127.0.0.1", port=9191,
                            tokens_path="/srv/tokens.yaml", max_body=65536, log_level="info", access_log=False,
                            log_format="text", clock=ClockMode("wall"), replan_every=None,
                            replan_time_limit=60.0)


def test_an_environment_variable_wins_over_the_file_as_its_flag_would(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "serve.yaml"
    config.write_text("state: postgresql+psycopg://rayon@db/plan\n")
    assert given(config).state_path == "postgresql+psycopg://rayon@db/plan"  # a URL is no relative path
    monkeypatch.setenv("RAYON_STATE", "/elsewhere/plan.db")
    assert given(config).state_path == "/elsewhere/plan.db"


def test_unknown_keys_and_bad_values_are_refused_at_their_place_all_at_once(tmp_path: Path) -> None:
    config = tmp_path / "serve.yaml"
    config.write_text("prot: 8080\nport: 99999\nmax_body: 5\naccess-log: maybe\nlog-format: jsn\nhost: [a, b]\n"
                      "tokens:\n")
    result = CliRunner().invoke(serve, ["--config", str(config)])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.startswith(str(config))]
    assert lines == [
        f"{config}:1:1: unknown key `prot` in the configuration of `rayon serve`; expected one of state, host, port, "
        "tokens, max-body, max-connections, max-header-bytes, header-timeout, log-level, access-log, log-format, "
        "clock, replan-every, replan-time-limit, workers, decider (did you mean `port`?)",
        f"{config}:2:7: `port`: 99999 is not in the range 0<=x<=65535.",
        f"{config}:3:1: unknown key `max_body` in the configuration of `rayon serve`; expected one of state, host, "
        "port, tokens, max-body, max-connections, max-header-bytes, header-timeout, log-level, access-log, "
        "log-format, clock, replan-every, replan-time-limit, workers, decider (did you mean `max-body`?)",
        f"{config}:4:13: `access-log`: `maybe` is not a boolean; give true or false",
        f"{config}:5:13: `log-format`: 'jsn' is not one of 'text', 'json'.",
        f"{config}:6:7: `host` must be a single value",
        f"{config}:7:8: `tokens` needs a value"]
    assert "Traceback" not in result.output


@pytest.mark.parametrize(("text", "expected"), [
    ("- port: 8080\n", ":1:1: the configuration of `rayon serve` must be a mapping"),
    ("port: [\n", ":2:1: not valid YAML"),
    ("", ":1:1: the configuration of `rayon serve` is empty"),
    ("port: 1\nport: 2\n", ":2:1: `port` is given twice"),
])
def test_a_file_that_is_no_configuration_is_refused_at_its_place(tmp_path: Path, text: str, expected: str) -> None:
    config = tmp_path / "serve.yaml"
    config.write_text(text)
    result = CliRunner().invoke(serve, ["--config", str(config)])
    assert result.exit_code == 2 and f"{config}{expected}" in result.output


def test_a_missing_file_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(serve, ["--config", str(tmp_path / "none.yaml")])
    assert result.exit_code == 2 and f"{tmp_path / 'none.yaml'}: cannot read" in result.output


def test_a_server_runs_on_its_file_s_settings_with_flags_over_them(tmp_path: Path) -> None:
    folder = tmp_path / "etc"
    folder.mkdir()
    with Store.open(folder / "plan.db") as store:
        store.init(CLUSTER, "cluster.yaml")
    tokens = make_tokens(folder / "tokens.yaml")
    config = folder / "serve.yaml"
    config.write_text("# rayon serve --config serve.yaml\nstate: plan.db\ntokens: tokens.yaml\nport: 0\n"
                      "max-body: 400\nlog-level: info\nlog-format: json\naccess-log: true\nclock: manual\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    server = launch(folder / "plan.db", tokens, "--config", str(config), "--no-access-log", cwd=elsewhere)
    try:
        with server.client("alice") as alice:
            assert submit(alice, pinned("small", 0, 10, 1)).status_code == 201
            assert submit(alice, pinned("large", 0, 10, 1) + " " * 400).status_code == 413
    finally:  # a failing assertion must not leave the server running
        server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(30) == 0
    lines = [json.loads(line) for line in server.output()]  # JSON, as the file says
    assert lines and not [line for line in lines if line["logger"] == "rayon.access"]  # the flag wins
    with Store.open(folder / "plan.db") as store:
        assert store.get("small").state == "accepted"
    assert not (elsewhere / "plan.db").exists()
