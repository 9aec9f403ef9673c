"""Which files a folder given to `rayon check` / `rayon plan` contributes."""

from __future__ import annotations

from pathlib import Path

from rdl.load import expand


def test_a_folder_gives_reservations_and_cluster_files_but_not_other_yaml(tmp_path: Path) -> None:
    (tmp_path / "job.rdl").write_text("reservation a deadline=+1h { atom(b={vcores: 1}, w=1h) }\n")
    (tmp_path / "cluster.yaml").write_text("capacity: {vcores: 8}\n")
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    (scenarios / "tiny.yaml").write_text("cluster: {nodes: []}\nworkload: {jobs: []}\n")
    assert [p.relative_to(tmp_path).as_posix() for p in expand([tmp_path])] == ["cluster.yaml", "job.rdl"]


def test_a_yaml_file_named_explicitly_is_always_taken(tmp_path: Path) -> None:
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text("cluster: {nodes: []}\nworkload: {jobs: []}\n")
    assert expand([scenario]) == [scenario]
