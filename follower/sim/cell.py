"""One cell of the evaluation grid (a scenario with an agent or policy, at a slack) and every seed's figures.

The tables (`follower.sim.report`) and the figures (`follower.sim.figures`) read a cell's figures the
same way: a reader picks one value out of a run's summary, and `Cell.spread` gives its mean and
95 % interval over the seeds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from follower.sim.spread import Spread, spread

Reader = Callable[[dict[str, Any]], float | None]


@dataclass(frozen=True)
class Cell:
    """One cell of the grid: which scenario, with what, and what each of its seeds measured."""

    study: str
    scenario: str
    agent: str
    policy: str
    slack: float | None
    seeds: tuple[int, ...]
    summaries: tuple[dict[str, Any], ...]
    fairness: tuple[dict[str, Any], ...] = ()
    load: float | None = None  # the load study's arrival factor

    @property
    def option(self) -> str:
        """What the cell compares: the agent in the reservation and load studies, the policy in the fairness study."""
        return self.policy if self.study == "fairness" else self.agent

    def spread(self, get: Reader) -> Spread | None:
        """Mean and 95 % interval over the seeds of the figure `get` reads from a summary (None values skipped)."""
        return spread(value for summary in self.summaries if (value := get(summary)) is not None)

    def ratio_spread(self, baseline: Cell, get: Reader) -> Spread | None:
        """Mean and 95 % interval of this cell's figure over `baseline`'s at the same seed (a paired comparison: the
        workload a seed draws weighs on both alike, so the ratio varies far less than either figure)."""
        return self.paired_spread(baseline, get, lambda mine, base: mine / base if base else None)

    def difference_spread(self, baseline: Cell, get: Reader) -> Spread | None:
        """Mean and 95 % interval of this cell's figure less `baseline`'s at the same seed (paired, as above)."""
        return self.paired_spread(baseline, get, lambda mine, base: mine - base)

    def paired_spread(self, baseline: Cell, get: Reader,
                      combine: Callable[[float, float], float | None]) -> Spread | None:
        """Mean and 95 % interval over the seeds both cells ran of `combine(this cell's figure, baseline's)` (None:
        that seed left out)."""
        theirs = dict(zip(baseline.seeds, baseline.summaries, strict=True))
        values = []
        for seed, summary in zip(self.seeds, self.summaries, strict=True):
            mine, base = get(summary), (get(theirs[seed]) if seed in theirs else None)
            if mine is not None and base is not None and (value := combine(mine, base)) is not None:
                values.append(value)
        return spread(values)

    def ratio_of_sums(self, baseline: Cell, get: Reader) -> float | None:
        """This cell's figure summed over the seeds both cells ran, over `baseline`'s sum (None when that is 0): the
        ratio for counts, where a mean of per-seed ratios is swayed by the seeds whose count is near zero."""
        theirs = dict(zip(baseline.seeds, baseline.summaries, strict=True))
        mine = base = 0.0
        for seed, summary in zip(self.seeds, self.summaries, strict=True):
            if seed in theirs and (a := get(summary)) is not None and (b := get(theirs[seed])) is not None:
                mine, base = mine + a, base + b
        return mine / base if base else None

    def fairness_spread(self, key: str) -> Spread | None:
        """Mean and 95 % interval over the seeds of a fairness figure (`dvr`, `dsr`)."""
        return spread(value for figures in self.fairness if (value := figures.get(key)) is not None)


def all_jobs(summary: dict[str, Any]) -> dict[str, Any]:
    """Response figures over every job (the fairness studies have no production class)."""
    return summary.get("all_jobs") or summary["best_effort"]


def bucket_response(index: int, key: str = "size_buckets") -> Reader:
    """Reads the mean response of size bucket `index` (of every job, or of `key`'s jobs) from a summary."""
    return lambda summary: summary[key][index]["mean_response_s"]
