"""Pictures of the plan: `plot_plan`, the numbers behind it (`plot_data`) and `rayon plot`."""

from __future__ import annotations

import struct
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from planner.core.plan import Accepted, Allocation, Plan
from planner.plot import MAX_NAMED, MAX_POINTS, PlotError, plot_command, plot_data, plot_plan, window_steps
from planner.store.facade import Store
from rdl.cluster import Cluster
from rdl.tree import Resources
from tests.planner.support import START, at, cluster_text, instant, make_cluster, one, pinned

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
BUNDLE = Resources.of({"memory": 1024, "vcores": 1})  # 1GiB and one vcore


def accepted(name: str, *leases: tuple[int, int, int]) -> Accepted:
    """An accepted reservation holding `bundles` of BUNDLE over each (start, end, bundles)."""
    allocations = [Allocation(f"a{i}", start, end, bundles, BUNDLE) for i, (start, end, bundles) in enumerate(leases)]
    return Accepted(one(pinned(name, 0, 1, 1)), START, allocations)


def plan_of(cluster: Cluster, *reservations: Accepted) -> Plan:
    plan = Plan(cluster)
    for reservation in reservations:
        plan.add(reservation)
    return plan


@pytest.fixture
def small() -> Plan:
    cluster = make_cluster({"memory": "16GiB", "vcores": 16}, steps=60, changes=[(40, {"memory": "8GiB", "vcores": 8})])
    return plan_of(cluster, accepted("etl", (0, 20, 4)), accepted("train", (10, 30, 6), (45, 50, 2)),
                   accepted("late", (50, 60, 1)))


def png_size(path: Path) -> tuple[int, int]:
    """Width and height of a PNG written by matplotlib, checked on the way."""
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE and data[12:16] == b"IHDR"
    assert b"Software\x00Matplotlib" in data  # matplotlib wrote it
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_a_small_plan_plots_to_png(small: Plan, tmp_path: Path) -> None:
    written = plot_plan(small, tmp_path / "plan.png")
    assert written == tmp_path / "plan.png"
    width, height = png_size(written)
    assert width > 500 and height > 300 and written.stat().st_size > 10_000

    data = plot_data(small)
    assert [p.resource for p in data.panels] == ["memory", "vcores"]
    assert [p.label for p in data.panels] == ["memory (GiB)", "vcores"]
    assert data.bucket == 1 and len(data.times) == 61
    assert data.times[0] == np.datetime64("2026-11-23T00:00:00") and data.times[-1] == np.datetime64(at(60)[:-1])
    assert data.series == ["etl", "train", "late"]  # in order of first use, from the bottom
    memory, vcores = data.panels
    assert memory.capacity[0] == 16 and memory.capacity[-1] == 8  # GiB, after the change at step 40
    assert vcores.stacks.shape == (3, 60)
    np.testing.assert_array_equal(vcores.stacks.sum(axis=0), small.used[1])  # every step, exactly
    np.testing.assert_array_equal(memory.stacks[0, :20], 4.0)  # etl: 4 bundles of 1GiB
    assert "2026-11-23 00:00 – 2026-11-23 01:00 UTC" in data.title and "3 accepted reservations" in data.title


def test_resource_filter(small: Plan, tmp_path: Path) -> None:
    assert [p.resource for p in plot_data(small, resources=["vcores"]).panels] == ["vcores"]
    assert [p.resource for p in plot_data(small, resources=["vcores", "memory"]).panels] == ["vcores", "memory"]
    one_panel = png_size(plot_plan(small, tmp_path / "vcores.png", resources=["vcores"]))
    two_panels = png_size(plot_plan(small, tmp_path / "both.png"))
    assert one_panel[0] == two_panels[0] and one_panel[1] < two_panels[1]
    with pytest.raises(PlotError, match=r"unknown resource `vcore`.*vcores"):
        plot_data(small, resources=["vcore"])


def test_time_range_filter(small: Plan, tmp_path: Path) -> None:
    data = plot_data(small, 25, 48)
    assert (data.start_step, data.end_step) == (25, 48)
    assert data.times[0] == np.datetime64(at(25)[:-1]) and data.times[-1] == np.datetime64(at(48)[:-1])
    assert data.series == ["train"]  # etl ended at step 20 and late starts at 50
    np.testing.assert_array_equal(data.panels[1].stacks[0], small.used[1, 25:48])
    assert "showing 2026-11-23 00:25 – 2026-11-23 00:48, 1 reservation in view" in data.title
    png_size(plot_plan(small, tmp_path / "window.png", 25, 48))
    assert (plot_data(small, -10, 1000).start_step, plot_data(small, -10, 1000).end_step) == (0, 60)  # clipped
    with pytest.raises(PlotError, match=r"starts at 2026-11-23 01:00, when the plan has ended \(2026-11-23 01:00\)"):
        plot_data(small, 60, 80)
    with pytest.raises(PlotError, match=r"ends at 2026-11-22 23:50, before the plan starts"):
        plot_data(small, None, -10)
    with pytest.raises(PlotError, match="the window 2026-11-23 00:30 – 2026-11-23 00:20 is empty"):
        plot_data(small, 30, 20)


def test_an_empty_plan_still_plots_capacity(tmp_path: Path) -> None:
    changes = [(10, {"memory": "2GiB", "vcores": 2}), (20, {"memory": "4GiB", "vcores": 4})]
    plan = Plan(make_cluster({"memory": "4GiB", "vcores": 4}, steps=30, changes=changes))
    data = plot_data(plan)
    assert data.series == [] and data.others == 0
    assert data.panels[1].stacks.shape == (0, 30)
    np.testing.assert_array_equal(data.panels[1].capacity, [4] * 10 + [2] * 10 + [4] * 10)
    assert "0 accepted reservations" in data.title
    png_size(plot_plan(plan, tmp_path / "empty.png"))


def test_other_formats_follow_the_suffix(small: Plan, tmp_path: Path) -> None:
    assert plot_plan(small, tmp_path / "plan.svg").read_text().lstrip().startswith("<?xml")
    assert png_size(plot_plan(small, tmp_path / "plan"))  # no suffix: PNG
    with pytest.raises(PlotError, match="unknown picture format `bmpx`"):
        plot_plan(small, tmp_path / "plan.bmpx")


def week_plan(reservations: int = 40, leases: int = 30, seed: int = 1) -> Plan:
    """A 7-day plan at one-minute steps (10,080 steps), capacity halved for a day, with many reservations."""
    changes = [(4320, {"memory": "2TiB", "vcores": 1024}), (5760, {"memory": "4TiB", "vcores": 2048})]
    cluster = make_cluster({"memory": "4TiB", "vcores": 2048}, steps=10_080, changes=changes)
    rng = np.random.default_rng(seed)
    plan = Plan(cluster)
    for r in range(reservations):
        allocations = []
        for k in range(leases):
            start = int(rng.integers(0, 10_000))
            end, bundles = min(10_080, start + int(rng.integers(10, 600))), int(rng.integers(1, 20))
            if (plan.free()[:, start:end] >= plan.demand(BUNDLE)[:, None] * bundles).all():
                allocation = Allocation(f"a{k}", start, end, bundles, BUNDLE)
                plan.used += plan.use_of([allocation])  # hold it while drawing the rest, so the plan stays feasible
                allocations.append(allocation)
        plan.used -= plan.use_of(allocations)
        plan.add(Accepted(one(pinned(f"job_{r:02d}", 0, 1, 1)), START, allocations))
    return plan


def test_long_horizons_are_downsampled_keeping_peaks() -> None:
    plan = week_plan(reservations=3, leases=5)
    plan.add(accepted("spike", (7001, 7002, 1500)))  # one minute, far above the rest
    data = plot_data(plan)
    assert data.bucket == 6 and len(data.times) == 10_080 // 6 + 1 <= MAX_POINTS + 1
    vcores = data.panels[1]
    totals = vcores.stacks.sum(axis=0)
    assert totals.max() == plan.used[1].max() >= 1500  # the one-step peak survives
    buckets = plan.used[1].reshape(-1, 6).max(axis=1)
    np.testing.assert_array_equal(totals, buckets)  # each point: the bucket's peak total, exactly
    assert "peak use and least capacity over 6m" in data.title

    dip = make_cluster({"vcores": 10}, steps=10_080, changes=[(5000, {"vcores": 3}), (5001, {"vcores": 10})])
    capacity = plot_data(Plan(dip)).panels[0].capacity
    assert capacity.min() == 3 and (capacity == 3).sum() == 1  # a one-step capacity dip survives too


def test_many_reservations_fold_into_others() -> None:
    cluster = make_cluster({"memory": "64GiB", "vcores": 64}, steps=30)
    plan = plan_of(cluster, *(accepted(f"r{i:02d}", (i, i + 1, 1 + i % 3)) for i in range(30)))
    data = plot_data(plan)
    assert len(data.series) == MAX_NAMED + 1 and data.series[-1] == "others (10)" and data.others == 10
    assert data.series[:-1] == [f"r{i:02d}" for i in range(30) if i % 3]  # the largest, in order of first use
    np.testing.assert_array_equal(data.panels[1].stacks.sum(axis=0), plan.used[1])  # nothing lost
    exactly = plan_of(cluster, *(accepted(f"r{i:02d}", (i, i + 1, 1)) for i in range(MAX_NAMED + 1)))
    assert plot_data(exactly).others == 0 and len(plot_data(exactly).series) == MAX_NAMED + 1  # no "others (1)"


def test_a_week_plan_plots_quickly(tmp_path: Path) -> None:
    """What makes it quick: a week of minutes is drawn as at most `MAX_POINTS` points per line (the seconds it takes
    depend on the machine)."""
    plan = week_plan()
    assert plan.clock.steps == 10_080 and len(plan.accepted) == 40
    data = plot_data(plan)
    assert data.bucket > 1 and all(panel.stacks.shape[-1] <= MAX_POINTS for panel in data.panels)
    assert len(data.times) == data.panels[0].stacks.shape[-1] + 1
    png_size(plot_plan(plan, tmp_path / "week.png"))


@pytest.fixture
def store(tmp_path: Path) -> str:
    state = str(tmp_path / "plan.db")
    with Store.open(state) as opened:
        opened.init(cluster_text({"memory": "16GiB", "vcores": 16}, steps=120))
        for name, start in (("a", 0), ("b", 30), ("c", 90)):
            assert opened.submit(one(pinned(name, start, 20, 4)), "gree").accepted
    return state


def test_rayon_plot(store: str, tmp_path: Path) -> None:
    out = tmp_path / "out.png"

    def plot(*args: str):  # type: ignore[no-untyped-def]
        return CliRunner().invoke(plot_command, [*args, "--state", store], prog_name="rayon plot")

    result = plot("--out", str(out))
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == str(out) and png_size(out)
    window = plot("--out", str(tmp_path / "w.png"), "--from", at(25), "--to", at(60), "--resource", "vcores")
    assert window.exit_code == 0, window.output
    png_size(tmp_path / "w.png")
    unknown = plot("--out", str(tmp_path / "x.png"), "--resource", "gpus")
    assert unknown.exit_code == 2 and "unknown resource `gpus`" in unknown.stderr
    outside = plot("--out", str(tmp_path / "y.png"), "--from", at(200))
    assert outside.exit_code == 2 and "nothing to plot: the window starts at" in outside.stderr
    assert not (tmp_path / "x.png").exists() and not (tmp_path / "y.png").exists()
    missing = plot("--out", str(tmp_path / "no" / "such" / "dir.png"))
    assert missing.exit_code == 2 and "cannot write" in missing.stderr


def test_times_in_the_window_round_outwards(small: Plan) -> None:
    middle = timedelta(seconds=30)
    assert window_steps(small, instant(25) + middle, instant(48) + middle) == (25, 49)
    assert window_steps(small, instant(25), instant(48)) == (25, 48)
    assert window_steps(small, None, None) == (None, None)
