"""The HTTP client of client mode: the native `/v1` API of a running `rayon serve`, through httpx.

Each method is one use of an endpoint (docs/api.md); its answers come back as the API's JSON. An error
answer becomes the `RayonError` the server described (its message, hint and code): exit 2 for a 4xx, 1 for
a 5xx or a server that cannot be reached, as a local store's errors exit.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any as AnyType

import httpx

from planner.cli.target import TOKEN_ENV, Remote
from rdl import units
from rdl.errors import EXIT_BAD_INPUT, EXIT_INTERNAL, Interrupted, RayonError

TIMEOUT_ENV = "RAYON_TIMEOUT"
DEFAULT_TIMEOUT = 60.0  # seconds for one request: a replan is a job polled, not a request held open
PAGE = 1000  # the API's largest page
POLL = 0.5  # seconds between looks at a job


class Client:
    """One server and token; a connection kept open across the requests of one command."""

    def __init__(self, remote: Remote, transport: httpx.BaseTransport | None = None):
        self.remote = remote
        headers = {"Authorization": f"Bearer {remote.token}"} if remote.token else {}
        timeout = float(os.environ.get(TIMEOUT_ENV) or DEFAULT_TIMEOUT)
        self.http = httpx.Client(base_url=remote.server.rstrip("/"), headers=headers, timeout=timeout,
                                 transport=transport)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.http.close()

    @property
    def where(self) -> str:
        return self.remote.server

    def request(self, method: str, path: str, *, missing_ok: bool = False, **kwargs: AnyType) -> AnyType:
        """The JSON answer of one request (None for a 404 when `missing_ok`); an error answer raised as the server
        described it."""
        try:
            answer = self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise RayonError(f"cannot reach the rayon server at {self.where}: {exc or type(exc).__name__}",
                             code="unreachable", exit_code=EXIT_INTERNAL,
                             hint=f"is `rayon serve` running there? (chosen by {self.remote.chosen_by})") from None
        if answer.status_code == 404 and missing_ok:
            return None
        if answer.status_code >= 400:
            raise self.error(answer)
        return answer.json()

    def error(self, answer: httpx.Response) -> RayonError:
        """The `RayonError` of an error answer: the server's message, hint and code."""
        try:
            body = answer.json().get("error", {})
        except ValueError:
            body = {}
        if not isinstance(body, dict):
            body = {}
        message = str(body.get("message") or f"{answer.status_code} {answer.reason_phrase}")
        hint = body.get("hint")
        if answer.status_code == 401:  # the server's hint speaks of HTTP headers: say where this command takes one
            hint = (f"give the command a token: ${TOKEN_ENV}, or the context file's `token:` (an admin makes one "
                    "with `rayon token USER` where the server runs)")
        code = str(body.get("code") or "http")
        return RayonError(message, code=code, hint=hint,
                          exit_code=EXIT_INTERNAL if answer.status_code >= 500 else EXIT_BAD_INPUT)

    # -- reads -------------------------------------------------------------------------------------------------

    def now(self) -> datetime:
        """The plan's clock, as the server keeps it."""
        return units.parse_instant(self.request("GET", "/v1/ready")["now"])

    def pages(self, path: str, params: dict[str, AnyType]) -> Iterator[dict[str, AnyType]]:
        """Every item of a paged listing, page after page."""
        query = {k: v for k, v in params.items() if v is not None}
        offset = int(query.pop("offset", 0))
        while True:
            page = self.request("GET", path, params={**query, "offset": offset, "limit": PAGE})
            yield from page["items"]
            offset += len(page["items"])
            if page.get("next") is None or not page["items"]:
                return

    def reservations(self, user: str | None, state: str | None, start: datetime | None,
                     end: datetime | None) -> list[dict[str, AnyType]]:
        """Every stored reservation the token may see, with its leases."""
        return list(self.pages("/v1/reservations", {
            "user": user, "state": state, "allocations": "true",
            "from": None if start is None else units.format_instant(start),
            "to": None if end is None else units.format_instant(end)}))

    def reservation(self, name: str) -> dict[str, AnyType]:
        """One reservation, from the live plan or else from the history."""
        found = self.request("GET", f"/v1/reservations/{name}", missing_ok=True)
        if found is not None:
            return dict(found)
        past = self.request("GET", "/v1/history", params={"name": name, "limit": 1})["items"]
        if past:
            return dict(past[0])
        self.request("GET", f"/v1/reservations/{name}")  # raises the server's own 404, with its suggestion
        raise AssertionError("unreachable")

    def exists(self, name: str) -> bool:
        """Whether the plan holds a reservation of that name (as the token sees it)."""
        return self.request("GET", f"/v1/reservations/{name}", missing_ok=True) is not None

    def log(self, limit: int | None, reservation: str | None = None) -> list[dict[str, AnyType]]:
        """The latest `limit` log entries (all of them for None), oldest first."""
        entries: list[dict[str, AnyType]] = []
        before = None
        while limit is None or len(entries) < limit:
            size = PAGE if limit is None else min(PAGE, limit - len(entries))
            page = self.request("GET", "/v1/log", params={k: v for k, v in {
                "limit": size, "before": before, "reservation": reservation}.items() if v is not None})
            entries = page["entries"] + entries
            if page.get("next") is None or not page["entries"]:
                break
            before = page["entries"][0]["id"]
        return entries

    def history(self, name: str | None, user: str | None, state: str | None, offset: int,
                limit: int) -> dict[str, AnyType]:
        """One page of the history."""
        return dict(self.request("GET", "/v1/history", params={k: v for k, v in {
            "name": name, "user": user, "state": state, "offset": offset, "limit": limit}.items() if v is not None}))

    def plan_use(self, start: datetime | None, end: datetime | None) -> dict[str, AnyType]:
        """Capacity and promised use, step by step, over [start, end) (the whole horizon by default)."""
        return dict(self.request("GET", "/v1/plan/use", params={k: units.format_instant(v) for k, v in {
            "from": start, "to": end}.items() if v is not None}))

    # -- writes ------------------------------------------------------------------------------------------------

    def submit(self, body: str, content_type: str, agent: str, dry_run: bool) -> dict[str, AnyType]:
        """One reservation's decision record (committed unless `dry_run`)."""
        return dict(self.request("POST", "/v1/reservations", content=body.encode("utf-8"),
                                 headers={"Content-Type": content_type},
                                 params={"agent": agent, "dry_run": str(dry_run).lower()}))

    def submit_batch(self, files: list[dict[str, AnyType]], agent: str, dry_run: bool,
                     explain: bool = True) -> list[dict[str, AnyType]]:
        """The decision records of a batch of files (`{name, text, format}` each), decided in order and committed
        whole (unless `dry_run`); without `explain`, a capacity rejection does not search its earliest deadline."""
        answer = self.request("POST", "/v1/reservations/batch", json={"files": files},
                              params={"agent": agent, "dry_run": str(dry_run).lower(),
                                      "explain": str(explain).lower()})
        return [dict(decision) for decision in answer["decisions"]]

    def names(self) -> set[str]:
        """The names of every reservation the plan holds that the token may see (any state)."""
        return {item["reservation"] for item in self.pages("/v1/reservations", {})}

    def update(self, name: str, body: str, content_type: str, agent: str, dry_run: bool) -> dict[str, AnyType]:
        """The decision on a new version of `name`."""
        return dict(self.request("PUT", f"/v1/reservations/{name}", content=body.encode("utf-8"),
                                 headers={"Content-Type": content_type},
                                 params={"agent": agent, "dry_run": str(dry_run).lower()}))

    def cancel(self, name: str, after: datetime | None) -> dict[str, AnyType]:
        """The reservation once cancelled (from `after` on, for a recurring one)."""
        params = {} if after is None else {"from": units.format_instant(after)}
        return dict(self.request("DELETE", f"/v1/reservations/{name}", params=params))

    def replan(self, time_limit: float, solver: str, gap: float) -> dict[str, AnyType]:
        """Start a replan job and wait for its end; the finished job."""
        job = self.request("POST", "/v1/admin/replan", json={"time_limit": time_limit, "solver": solver,
                                                               "gap": gap})
        try:
            while "finished" not in job:
                time.sleep(POLL)
                job = self.request("GET", f"/v1/jobs/{job['id']}")
        except KeyboardInterrupt:  # Ctrl-C ends the job too: the plan stays as it was before it
            self.request("DELETE", f"/v1/jobs/{job['id']}")
            raise Interrupted(f"interrupted: replan job {job['id']} cancelled; the plan is as it was before it",
                              hint="what a job commits, it commits whole") from None
        return dict(job)
