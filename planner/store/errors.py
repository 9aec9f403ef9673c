"""The plan store's error: a code the caller can branch on, what went wrong and where, and what to do."""

from __future__ import annotations

from rdl.errors import EXIT_BAD_INPUT, EXIT_INTERNAL, RayonError

INTERNAL_CODES = ("database", "conflict")  # not the user's input: the command exits 1


class StoreError(RayonError):
    """A plan store problem the user can act on: a code, what went wrong and where, and what to do."""

    def __init__(self, code: str, message: str, hint: str | None = None):
        super().__init__(message, code=code, hint=hint,
                         exit_code=EXIT_INTERNAL if code in INTERNAL_CODES else EXIT_BAD_INPUT)
