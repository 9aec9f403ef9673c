"""`rayon free`: what the plan leaves free when, and the earliest a request fits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from follower.cli import main
from tests.planner.support import at, cluster_text

# A day at one-minute steps: 16 vcores, 64GiB, less capacity (8 vcores) over [20:00, 24:00).
CLUSTER = cluster_text({"vcores": 16, "memory": "64GiB"}, steps=24 * 60, changes=[(20 * 60, {"vcores": 8})])
# All 16 vcores over [01:00, 02:00), exactly (the window is the lease).
BUSY = (f"reservation busy {{ window(s={at(60)}, e={at(120)}, atom(b={{vcores: 1, memory: 1GiB}}, g=16, h=16, "
        "l=60m, w=960m)) }\n")


@pytest.fixture
def rayon(tmp_path: Path):  # type: ignore[no-untyped-def]
    state = str(tmp_path / "plan.db")
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "busy.rdl").write_text(BUSY)

    def run(*args: str) -> Result:
        return CliRunner().invoke(main, [*args, "--state", state], prog_name="rayon")

    assert run("init", "--cluster", str(tmp_path / "cluster.yaml")).exit_code == 0
    submitted = run("submit", "--json", str(tmp_path / "busy.rdl"))
    assert json.loads(submitted.stdout)["decisions"][0]["accepted"], submitted.output
    return run


def test_each_row_is_a_stretch_where_nothing_changes(rayon) -> None:  # type: ignore[no-untyped-def]
    data = json.loads(rayon("free", "--json").stdout)
    assert [(i["start"], i["end"], i["free"]["vcores"], i["capacity"]["vcores"]) for i in data["items"]] == [
        (at(0), at(60), 16, 16), (at(60), at(120), 0, 16), (at(120), at(1200), 16, 16), (at(1200), at(1440), 8, 8)]
    assert data["items"][1]["free"]["memory"] == 48 * 1024
    table = rayon("free", "--to", "+3h").stdout.splitlines()
    assert table[0].split() == ["START", "END", "FREE", "MEMORY", "FREE", "VCORES"]
    assert table[3].split()[2:] == ["48GiB", "of", "64GiB", "0", "of", "16"]
    assert len(table) == 2 + 3  # the range ends at 03:00


def test_steps_give_the_least_free_in_each(rayon) -> None:  # type: ignore[no-untyped-def]
    data = json.loads(rayon("free", "--step", "6h", "--json").stdout)
    assert [(i["start"], i["free"]["vcores"]) for i in data["items"]] == [
        (at(0), 0), (at(360), 16), (at(720), 16), (at(1080), 8)]


def test_the_earliest_a_request_fits(rayon) -> None:  # type: ignore[no-untyped-def]
    short = json.loads(rayon("free", "--for", "{vcores: 8}", "--lasting", "30m", "--json").stdout)
    assert short["earliest"] == {"start": at(0), "free_until": at(60)}
    assert [i["fits"] for i in short["items"]] == [2, 0, 2, 1]
    long = rayon("free", "--for", "{vcores: 8, memory: 8GiB}", "--lasting", "2h")
    assert long.exit_code == 0
    assert (f"{{memory: 8GiB, vcores: 8}} for 2h fits at the earliest from {at(120)} (and stays free until "
            f"{at(1440)}") in long.stdout
    whole = json.loads(rayon("free", "--for", "{vcores: 16}", "--lasting", "19h", "--json").stdout)
    assert whole["earliest"] is None
    late = rayon("free", "--from", "+3h", "--for", "{vcores: 9}")
    assert f"fits at the earliest from {at(180)}" in late.stdout
    never = rayon("free", "--for", "{vcores: 17}")
    assert never.exit_code == 0 and "{vcores: 17} for 1m does not fit anywhere in" in never.stdout


@pytest.mark.parametrize(("args", "said"), [
    (["--for", "{gpus: 1}"], "the plan has no resource `gpus`"),
    (["--for", "{vcores: 1"], "--for:1:"),
    (["--lasting", "1h"], "--lasting goes with --for"),
    (["--from", "+2h", "--to", "+1h"], "is not after --from"),
    (["--from", "+2d"], "--from +0h"),
    (["--step", "0s"], "must be longer than zero"),
])
def test_bad_input_exits_2_naming_it(rayon, args: list[str], said: str) -> None:  # type: ignore[no-untyped-def]
    result = rayon("free", *args)
    assert result.exit_code == 2 and said in result.stderr, result.output
