"""Workloads for the cluster simulator: the job model, seeded generators and importers for real traces.

See docs/workloads.md for every mapping from a trace to a job.
"""

from follower.sim.workloads.alibaba import AlibabaParams, read_alibaba
from follower.sim.workloads.deadlines import ProductionRule, Slack, job_random
from follower.sim.workloads.google import GoogleParams, read_google
from follower.sim.workloads.job import BEST_EFFORT, PRODUCTION, Job, Workload, node_capacity, node_names
from follower.sim.workloads.report import ImportReport, LineIssue, TraceError
from follower.sim.workloads.swf import SwfParams, read_swf
from follower.sim.workloads.synthetic import (
    PowerSmallParams,
    SuperSmallParams,
    SyntheticParams,
    generate_synthetic,
    uwfq_power_small,
    uwfq_super_small,
)
from follower.sim.workloads.tracefile import Slice

__all__ = [
    "BEST_EFFORT", "PRODUCTION", "AlibabaParams", "GoogleParams", "ImportReport", "Job", "LineIssue",
    "PowerSmallParams", "ProductionRule", "Slack", "Slice", "SuperSmallParams", "SwfParams", "SyntheticParams",
    "TraceError", "Workload", "generate_synthetic", "job_random", "node_capacity", "node_names", "read_alibaba",
    "read_google", "read_swf", "uwfq_power_small", "uwfq_super_small",
]
