"""The queue scheduler: queues, application sorting policies, node sorting, placement, limits, preemption.

A library driven by an explicit clock (`now` in seconds), with no threads and no wall clock, so a
discrete-event simulator can drive it and two runs give the same answers.
"""

from follower.scheduler.applications import Allocation, Application, AppState, Ask, Container, Preemption
from follower.scheduler.config import SchedulerConfig, load_config
from follower.scheduler.errors import ConfigError, PlacementRejected, QueueError, SchedulerError, UnknownError
from follower.scheduler.resources import Resources
from follower.scheduler.scheduler import Scheduler

__all__ = [
    "Allocation", "AppState", "Application", "Ask", "ConfigError", "Container", "PlacementRejected", "Preemption",
    "QueueError", "Resources", "Scheduler", "SchedulerConfig", "SchedulerError", "UnknownError", "load_config",
]
