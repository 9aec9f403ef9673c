"""Errors of the HTTP API: one exception, rendered in the native style under `/v1` and in YARN's under `/ws`
(the handlers that render every error so are installed by planner/api/app.py).

Native: `{"error": {"status", "code", "message", "hint", "errors": [...]}, "changed": false}`, where
`message` is exactly what the command line prints (positioned `FILE:LINE:COL` lines with carets, or
JSON paths) and `errors` the same errors one by one; `changed` is false when nothing was written (null
when that is unknown, after an internal error). YARN: `{"RemoteException": {"exception",
"message", "javaClassName"}}` with our structured error beside it, since YARN's own is bare.
"""

from __future__ import annotations

from typing import Any as AnyType

from rdl.cli import error_json
from rdl.errors import EXIT_INTERNAL, RayonError, RDLErrors

YARN_PREFIX = "/ws/"
# A product error's code → the HTTP status it answers with: the one table (the command line maps the same
# errors to exit statuses, rdl.cli.RayonCommand). A code not listed answers by its exit status: 422 for bad
# input, 500 for an internal failure.
STATUS = {"unknown": 404, "forbidden": 403, "state": 409, "conflict": 409, "initialised": 409, "input": 422,
          "unknown_name": 422, "uninitialised": 503, "schema": 503, "database": 503, "driver": 500, "target": 500,
          "internal": 500}
YARN_EXCEPTIONS = {400: "BadRequestException", 401: "AuthenticationException", 403: "ForbiddenException",
                   404: "NotFoundException", 413: "BadRequestException", 415: "BadRequestException",
                   422: "BadRequestException", 503: "ServiceUnavailableException"}
YARN_PACKAGE = "org.apache.hadoop.yarn.webapp."


class ApiError(Exception):
    """An answer other than success: status, a code, the message, a hint, and positioned errors if any."""

    def __init__(self, status: int, code: str, message: str, hint: str | None = None,
                 errors: list[dict[str, AnyType]] | None = None, extra: dict[str, AnyType] | None = None,
                 headers: dict[str, str] | None = None, changed: bool | None = False):
        self.status = status
        self.code = code
        self.message = message
        self.hint = hint
        self.errors = errors or []
        self.extra = extra or {}
        self.headers = headers
        self.changed = changed
        super().__init__(message)

    @classmethod
    def from_rdl(cls, status: int, errors: RDLErrors, consequence: str) -> ApiError:
        """Bad input: the command line's rendering of every error, and each error as JSON."""
        return cls(status, "input", f"{errors.render()}\n{consequence}", None, [error_json(e) for e in errors.errors])

    @classmethod
    def from_error(cls, error: RayonError) -> ApiError:
        """A product error (the store's, a name's, ...) with the status its code stands for."""
        default = 500 if error.exit_code == EXIT_INTERNAL else 422
        return cls(STATUS.get(error.code, default), error.code, error.headline() if error.place else error.message,
                   error.hint)

    def native(self) -> dict[str, AnyType]:
        body: dict[str, AnyType] = {"status": self.status, "code": self.code, "message": self.message}
        if self.hint:
            body["hint"] = self.hint
        if self.errors:
            body["errors"] = self.errors
        return {"error": body, "changed": self.changed, **self.extra}

    def yarn(self) -> dict[str, AnyType]:
        name = YARN_EXCEPTIONS.get(self.status, "WebApplicationException")
        message = self.message + (f" ({self.hint})" if self.hint else "")
        return {"RemoteException": {"exception": name, "message": message, "javaClassName": YARN_PACKAGE + name},
                **self.native()}
