"""The Spark model's scheduling policies, listed by name (built with the application's slot count)."""

from __future__ import annotations

from follower.sim.spark.policies.base import Policy
from follower.sim.spark.policies.fair import SparkFair, UserFair
from follower.sim.spark.policies.fifo import SparkFifo
from follower.sim.spark.policies.fq import JobFairQueuing
from follower.sim.spark.policies.uwfq import Uwfq
from rdl.registry import Registry

POLICIES: Registry[type[Policy]] = Registry.of("Spark policy", {
    "fifo": SparkFifo, "fair": SparkFair, "userfair": UserFair, "jobfq": JobFairQueuing, "uwfq": Uwfq})

__all__ = ["POLICIES", "JobFairQueuing", "Policy", "SparkFair", "SparkFifo", "UserFair", "Uwfq"]
