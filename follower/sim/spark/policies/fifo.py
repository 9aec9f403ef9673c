"""`fifo`: Spark's FIFO ordering, which is also what `spark.scheduler.mode=FAIR` gives with no pool file.

Without an allocation file every job lands in Spark's `default` pool, whose scheduling mode is FIFO:
task sets are served by job (earliest submitted first), then by stage. The paper's tool runs its
`DEFAULT_FAIR` baseline that way, so this is the policy its "Spark FAIR" rows measured.
"""

from __future__ import annotations

from typing import Any

from follower.sim.spark.policies.base import Policy
from follower.sim.spark.runtime import StageRun


class SparkFifo(Policy):
    """The earliest job's earliest stage first."""

    name = "fifo"

    def key(self, stage: StageRun, now: float) -> tuple[Any, ...]:
        return (stage.job.seq, stage.seq)
