"""The YARN REST submission body's vocabulary: JSON paths, keys, interpreter codes, expected values, the epoch."""

from __future__ import annotations

from datetime import UTC, datetime

from rdl import units

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
DEFINITION = "$.reservation-definition"
REQUESTS = f"{DEFINITION}.reservation-requests"
FALLBACK_NAME = "yarn_reservation"

R_ANY, R_ALL, R_ORDER, R_ORDER_NO_GAP = 0, 1, 2, 3
INTERPRETERS = {R_ANY: "R_ANY", R_ALL: "R_ALL", R_ORDER: "R_ORDER", R_ORDER_NO_GAP: "R_ORDER_NO_GAP"}

TOP_KEYS = ("queue", "reservation-id", "reservation-definition")
DEFINITION_KEYS = ("arrival", "deadline", "reservation-name", "priority", "recurrence-expression",
                   "reservation-requests")
REQUESTS_KEYS = ("reservation-request-interpreter", "reservation-request")
REQUEST_KEYS = ("capability", "num-containers", "min-concurrency", "duration")
CAPABILITY = {"memory": units.MEMORY, "vCores": "vcores"}

EXPECTED = {
    "arrival": "a time in epoch milliseconds (UTC), such as 1795395600000",
    "deadline": "a time in epoch milliseconds (UTC), such as 1795417200000",
    "priority": "a whole number (in YARN a lower number is more important)",
    "reservation-request-interpreter": "0 (R_ANY), 1 (R_ALL), 2 (R_ORDER) or 3 (R_ORDER_NO_GAP), or that name",
    "num-containers": "a positive whole number of containers",
    "min-concurrency": "a positive whole number of containers that run together (the gang)",
    "duration": "a positive whole number of milliseconds",
    "memory": "a positive whole number of MB",
    "vCores": "a positive whole number of virtual cores",
}
REQUEST_SHAPE = '{"capability": {"memory": MB, "vCores": N}, "num-containers": N, "min-concurrency": G, "duration": MS}'
