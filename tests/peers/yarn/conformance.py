"""Conformance of our YARN REST dialect with YARN's real ResourceManager: the same requests to both, every difference.

    .venv/bin/python -m tests.peers.yarn.conformance [--json]

starts the RM (tests/peers/yarn/rm, built by Maven) and `rayon serve` on a matching store, sends both the sequence
in `SCRIPT` — the cluster probe, new-reservation, submit with each interpreter (as integers and as names), list
(with and without allocations, by time window, by id, by queue), update, delete and the error paths — and prints
every difference in status, field names, types and values. Ids and times that differ by nature (the RM's start,
acceptance times) are normalised first; so is the RM's JSON encoding (Jersey 1 writes every number as a string, a
one-element list as its element, an empty list not at all), which is reported once per answer as `encoding`.

A difference is *explained* when `DELIBERATE` lists it with the reason (the same list as docs/api.md's); the peer
tests (tests/peers/yarn/test_conformance.py) fail on any other. Exit status: 0 when every difference is explained,
1 otherwise, 2 when the RM cannot run here (the reason on standard error).
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any as AnyType

import httpx

from tests.peers.yarn.oracle import Target, Unavailable, rayon, real_rm

BASE = "/ws/v1/cluster/reservation"
ID = re.compile(r"reservation_\d+_\d+")
LISTS = ("reservations", "resource-allocations", "reservation-request")  # lists Jersey 1 may write as one object
TEXT = {"reservation-name", "queue", "user", "reservation-id", "message", "exception", "javaClassName", "state",
        "haState", "rmStateStoreName", "recurrence-expression"}  # keys whose values are strings in both
CLOCK_KEYS = {"acceptance-time", "id", "startedOn"}  # when the server decided or started: differs by nature
Body = Callable[["Context"], AnyType]


@dataclass
class Context:
    """What one server's answers gave the script so far: its ids, by the name of the case that asked for them."""

    target: Target
    t0: int  # the script's time origin, epoch ms (whole minutes, a little in the future)
    ids: dict[str, str] = field(default_factory=dict)

    def id(self, case: str) -> str:
        """The id kept for a case; for a case that never asked, one of YARN's form that no server issued."""
        return self.ids.get(case, f"reservation_1_{sum(map(ord, case)) % 10_000:04d}")

    def label(self, rid: str) -> str:
        """An id as the name of its case, so the two servers' ids compare equal."""
        for case in [*self.ids, "never", "unknown"]:
            if self.id(case) == rid:
                return f"<id:{case}>"
        return "<id:?>"


@dataclass(frozen=True)
class Step:
    """One request of the script: a name, the method and path, query parameters, a body, and an id to keep."""

    name: str
    method: str
    path: str
    params: Callable[[Context], dict[str, str]] | None = None
    body: Body | None = None
    keep: str | None = None  # keep the answer's reservation-id under this case name
    page: bool = False  # a web page: only its status is compared


@dataclass(frozen=True)
class Difference:
    step: str
    path: str
    kind: str  # status | missing | extra | type | value | message | encoding
    yarn: AnyType
    ours: AnyType
    reason: str | None = None  # why it is deliberate; None: unexplained

    def line(self) -> str:
        mark = "  (deliberate)" if self.reason else ""
        where = self.path or "$"
        return f"{self.step}: {self.kind} at {where}: yarn {_short(self.yarn)}, ours {_short(self.ours)}{mark}"


# -- the request bodies ------------------------------------------------------------------------------------------------


def request(memory: int = 1024, vcores: int = 1, containers: int = 2, gang: int = 1, seconds: int = 60) -> dict:
    return {"capability": {"memory": memory, "vCores": vcores}, "num-containers": containers,
            "min-concurrency": gang, "duration": seconds * 1000}


def definition(c: Context, name: str, requests: list[dict], interpreter: AnyType = None, start_min: int = 0,
               end_min: int = 60) -> dict:
    reqs: dict[str, AnyType] = {"reservation-request": requests}
    if interpreter is not None:
        reqs["reservation-request-interpreter"] = interpreter
    return {"arrival": c.t0 + start_min * 60_000, "deadline": c.t0 + end_min * 60_000, "reservation-name": name,
            "priority": 0, "reservation-requests": reqs}


def submission(case: str, requests: list[dict], interpreter: AnyType = None, name: str | None = None,
               queue: str | None = None, **window: int) -> Body:
    def make(c: Context) -> dict:
        return {"queue": queue or c.target.queue, "reservation-id": c.id(case),
                "reservation-definition": definition(c, name or case, requests, interpreter, **window)}
    return make


def updating(case: str, requests: list[dict], interpreter: AnyType = 1, **extra: AnyType) -> Body:
    def make(c: Context) -> dict:
        return {**extra, "reservation-id": c.id(case),
                "reservation-definition": definition(c, case, requests, interpreter)}
    return make


def _quoted(data: AnyType) -> AnyType:
    """Every number as a string, as YARN's own JSON writes them."""
    if isinstance(data, dict):
        return {key: _quoted(value) for key, value in data.items()}
    if isinstance(data, list):
        return [_quoted(value) for value in data]
    return str(data) if isinstance(data, int) and not isinstance(data, bool) else data


def _with(data: dict, **definition: AnyType) -> dict:
    return {**data, "reservation-definition": {**data["reservation-definition"], **definition}}


def only_id(case: str) -> Body:
    return lambda c: {"reservation-id": c.id(case)}


def query(**values: AnyType) -> Callable[[Context], dict[str, str]]:
    """Query parameters; `queue=...` is the reservable queue, `rid=case` that case's id, ints are minutes from t0."""
    def make(c: Context) -> dict[str, str]:
        params: dict[str, str] = {}
        for key, value in values.items():
            if key == "rid":
                params["reservation-id"] = c.id(value)
            elif value is ...:
                params[key.replace("_", "-")] = c.target.queue
            elif isinstance(value, int) and key in ("start_time", "end_time"):
                params[key.replace("_", "-")] = str(c.t0 + value * 60_000)
            else:
                params[key.replace("_", "-")] = str(value)
        return params
    return make


def new(case: str) -> Step:
    return Step(f"new {case}", "POST", f"{BASE}/new-reservation", keep=case)


TWO = [request(), request(memory=2048, containers=1, seconds=120)]
INTERPRETERS = {0: "R_ANY", 1: "R_ALL", 2: "R_ORDER", 3: "R_ORDER_NO_GAP"}

SCRIPT: list[Step] = [
    Step("web UI page", "GET", "/cluster", page=True),  # yarn-api-client's probe for the active RM
    Step("cluster", "GET", "/ws/v1/cluster"),
    Step("cluster info", "GET", "/ws/v1/cluster/info"),
    *(step for code in INTERPRETERS for step in (
        new(f"int{code}"),
        Step(f"submit int{code}", "POST", f"{BASE}/submit", body=submission(f"int{code}", TWO, code)))),
    *(step for code, word in INTERPRETERS.items() for step in (
        new(f"name{code}"),
        Step(f"submit {word}", "POST", f"{BASE}/submit", body=submission(f"name{code}", TWO, word)))),
    new("bare"),
    Step("submit several requests, no interpreter", "POST", f"{BASE}/submit", body=submission("bare", TWO)),
    new("one"), Step("submit one request, no interpreter", "POST", f"{BASE}/submit",
                     body=submission("one", [request(containers=1)])),
    new("quoted"), Step("submit numbers as strings", "POST", f"{BASE}/submit",
                        body=lambda c: _quoted(submission("quoted", TWO, 2)(c))),
    new("ranked"), Step("submit with a priority", "POST", f"{BASE}/submit",
                        body=lambda c: _with(submission("ranked", TWO, 1)(c), priority=3)),
    new("spaced"), Step("submit a name with spaces", "POST", f"{BASE}/submit",
                        body=submission("spaced", TWO, 1, name="nightly etl")),
    new("daily"), Step("submit a daily recurrence", "POST", f"{BASE}/submit",
                       body=lambda c: _with(submission("daily", TWO, 1)(c), **{"recurrence-expression": "86400000"})),
    new("past"), Step("submit an arrival in the past", "POST", f"{BASE}/submit",
                      body=submission("past", TWO, 1, start_min=-30, end_min=-5)),
    Step("submit again, same definition", "POST", f"{BASE}/submit", body=submission("int1", TWO, 1)),
    Step("submit again, another name only", "POST", f"{BASE}/submit", body=submission("int1", TWO, 1, name="other")),
    Step("submit again, another definition", "POST", f"{BASE}/submit",
         body=submission("int1", [request(containers=3)], 1)),
    new("big"), Step("submit what cannot fit", "POST", f"{BASE}/submit",
                     body=submission("big", [request(memory=4096, vcores=4, containers=8, gang=8, seconds=600)], 1,
                                     end_min=11)),
    new("elsewhere"), Step("submit to a queue that is not reservable", "POST", f"{BASE}/submit",
                           body=submission("elsewhere", TWO, 1, queue="default")),
    Step("submit an id never issued", "POST", f"{BASE}/submit", body=submission("never", TWO, 1)),
    new("bad"),
    Step("submit a body that is not JSON", "POST", f"{BASE}/submit", body=lambda c: b"{not json"),
    Step("submit without a definition", "POST", f"{BASE}/submit",
         body=lambda c: {"queue": c.target.queue, "reservation-id": c.ids["bad"]}),
    Step("submit without a queue", "POST", f"{BASE}/submit",
         body=lambda c: {"reservation-id": c.ids["bad"], "reservation-definition": definition(c, "bad", TWO, 1)}),
    Step("submit a deadline before the arrival", "POST", f"{BASE}/submit",
         body=submission("bad", TWO, 1, start_min=30, end_min=10)),
    Step("submit zero containers", "POST", f"{BASE}/submit", body=submission("bad", [request(containers=0)], 1)),
    Step("submit an interpreter out of range", "POST", f"{BASE}/submit", body=submission("bad", TWO, 7)),
    new("gangless"),
    Step("submit without min-concurrency", "POST", f"{BASE}/submit",
         body=submission("gangless", [{k: v for k, v in request().items() if k != "min-concurrency"}], 1)),
    Step("list the queue", "GET", f"{BASE}/list", params=query(queue=...)),
    Step("list the queue with allocations", "GET", f"{BASE}/list",
         params=query(queue=..., include_resource_allocations="true")),
    Step("list with include-resource-allocations=TRUE", "GET", f"{BASE}/list",
         params=query(queue=..., rid="int1", include_resource_allocations="TRUE")),
    Step("list from the start of time to no end", "GET", f"{BASE}/list",
         params=query(queue=..., start_time="-1", end_time="-1")),
    Step("list a window holding them", "GET", f"{BASE}/list", params=query(queue=..., start_time=0, end_time=90)),
    Step("list a window after them", "GET", f"{BASE}/list", params=query(queue=..., start_time=120, end_time=180)),
    Step("list by id", "GET", f"{BASE}/list",
         params=query(queue=..., rid="int2", include_resource_allocations="true")),
    Step("list by id with a window after it", "GET", f"{BASE}/list",
         params=query(queue=..., rid="int2", start_time=120, end_time=180)),
    Step("list by id naming another queue", "GET", f"{BASE}/list", params=query(queue="default", rid="int2")),
    Step("list without a queue", "GET", f"{BASE}/list", params=query()),
    Step("list an unknown queue", "GET", f"{BASE}/list", params=query(queue="nowhere")),
    Step("list start == end", "GET", f"{BASE}/list", params=query(queue=..., start_time=10, end_time=10)),
    Step("list a start-time that is no number", "GET", f"{BASE}/list", params=query(queue=..., start_time="soon")),
    Step("list include-resource-allocations=maybe", "GET", f"{BASE}/list",
         params=query(queue=..., include_resource_allocations="maybe")),
    Step("list an unknown id", "GET", f"{BASE}/list", params=query(queue=..., rid="unknown")),
    Step("update to a smaller definition", "POST", f"{BASE}/update", body=updating("int2", [request(containers=1)], 2)),
    Step("update naming another queue", "POST", f"{BASE}/update",
         body=updating("int3", [request(containers=1)], 3, queue="default")),
    Step("update to what cannot fit", "POST", f"{BASE}/update",
         body=updating("int1", [request(memory=8192, vcores=8, containers=4, gang=4, seconds=3000)])),
    Step("update an unknown id", "POST", f"{BASE}/update", body=updating("unknown", TWO)),
    Step("list after the updates", "GET", f"{BASE}/list", params=query(queue=..., include_resource_allocations="true")),
    Step("delete", "POST", f"{BASE}/delete", body=only_id("int0")),
    Step("delete again", "POST", f"{BASE}/delete", body=only_id("int0")),
    Step("delete an unknown id", "POST", f"{BASE}/delete", body=only_id("unknown")),
    Step("delete without an id", "POST", f"{BASE}/delete", body=lambda c: {}),
    Step("list after the delete", "GET", f"{BASE}/list", params=query(queue=...)),
]

# Differences we keep on purpose, as (step pattern, path pattern, kind) → why; docs/api.md lists the same.
DELIBERATE: dict[tuple[str, str, str], str] = {
    (".*", r"", "encoding"): "YARN 3.4.1's Jersey 1 JSON quotes numbers, writes a one-element list as its element and "
                             "leaves an empty list out; we write JSON numbers and lists",
    (".*", r".*resourceInformations", "missing"): "YARN's per-resource-type detail of each resource; we answer "
                                                  "memory and vCores only",
    (".*", r"\$\.RemoteException\.message", "message"): "our messages say what was wrong and how to fix it",
    (".*", r"\$\.(error|decision|reservation-id|changed)", "extra"): "ours: the decision record, or the structured "
                                                                   "error and whether anything changed, beside "
                                                                   "YARN's answer",
    ("list.*", r"\$\.(total|next-offset)", "extra"): "ours: the list comes in pages",
    ("cluster.*", r"\$\.clusterInfo\..*", "value"): "versions and build strings are ours",
    ("list.*", r"\$\.reservations\[<id:[^]]*>\]\.resource-allocations.*", "value"):
        "where a reservation is placed is each planner's own choice (YARN's agent against ours: "
        "tests/peers/yarn/agents compares them); the shape, the total held per stretch of time, is YARN's",
    ("list.*", r"\$\.reservations\[<id:name[123]>\]\.reservation-definition\.reservation-requests\."
               r"reservation-request-interpreter", "value"):
        "an interpreter given by name (`R_ORDER`) means that interpreter here; YARN 3.4's JSON layer reads any "
        "name as 0, R_ANY",
    ("list.*", r"\$\.reservations\[<id:ranked>\]\.reservation-definition\.priority", "value"):
        "YARN 3.4.1 lists `priority` 0 whatever was submitted; we keep the priority sent (RDL's is its negation) "
        "and it orders what a replan drops first",
    ("submit an interpreter out of range|list a start-time that is no number", r"", "status"):
        "YARN answers these with 503 (an ArrayIndexOutOfBoundsException, a Jersey parameter error); we answer "
        "400 as for every other bad input",
    ("list a start-time that is no number", r"\$\.RemoteException\.(exception|javaClassName)", "value"):
        "the same: YARN's Jersey QueryParamException, our BadRequestException",
    ("delete again", r"\$\.RemoteException\.(exception|javaClassName)", "value"):
        "YARN answers a second delete with an IllegalArgumentException; we answer BadRequestException for every "
        "bad request",
    ("submit without min-concurrency", r"", "status"): "`min-concurrency` left out is 1 here, as in YARN's Java API; "
                                                       "YARN's REST API refuses it (`Gang Size should be >= 1`)",
    ("submit without min-concurrency", r"\$\.RemoteException", "missing"): "the same",
    ("submit without min-concurrency", r"\$\.(reservation-id|decision)", "extra"): "the same",
    ("list.*", r"\$\.reservations\[<id:gangless>\]", "extra"): "the same: we listed what YARN refused",
    ("submit an? .*|submit without.*|submit zero.*|submit a deadline.*|submit an interpreter.*|.*not JSON",
     r"\$\.RemoteException\.(exception|javaClassName)", "value"):
        "YARN answers a body it cannot read with a bare 400 from its JSON layer, or its own validator's "
        "BadRequestException; we always answer BadRequestException with the JSON path",
}


# -- running and comparing ---------------------------------------------------------------------------------------------


def run(target: Target, t0: int) -> list[tuple[int, AnyType]]:
    """Every step of the script against one server: (status, decoded JSON or the text) per step."""
    context = Context(target, t0)
    answers: list[tuple[int, AnyType]] = []
    with httpx.Client(base_url=target.url, headers=target.headers, timeout=60.0) as client:
        for step in SCRIPT:
            answers.append(_send(client, context, step))
    return answers


def _send(client: httpx.Client, context: Context, step: Step) -> tuple[int, AnyType]:
    raw = step.body(context) if step.body else None
    content = raw if isinstance(raw, bytes) else (json.dumps(raw).encode() if raw is not None else None)
    headers = {"Content-Type": "application/json"} if content is not None or step.method == "POST" else {}
    answer = client.request(step.method, step.path, params=step.params(context) if step.params else None,
                            content=content, headers=headers)
    try:
        data: AnyType = {} if step.page or not answer.content else answer.json()
    except ValueError:
        data = {"<text>": answer.text[:200]}
    if step.keep and answer.status_code == 200 and isinstance(data, dict):
        context.ids[step.keep] = str(data.get("reservation-id"))
    return answer.status_code, _labelled(data, context)


def _labelled(data: AnyType, context: Context) -> AnyType:
    """Ids replaced by their case names (a message keeps its words, its ids labelled too)."""
    if isinstance(data, dict):
        return {key: _labelled(value, context) for key, value in data.items()}
    if isinstance(data, list):
        return [_labelled(value, context) for value in data]
    if isinstance(data, str):
        return ID.sub(lambda m: context.label(m[0]), data)
    return data


def decode_jersey(data: AnyType, key: str = "", item: bool = False) -> tuple[AnyType, bool]:
    """YARN's Jersey 1 JSON as plain JSON (numbers, lists); and whether anything needed decoding. `item`: `data` is
    an element of the list `key`."""
    if isinstance(data, dict):
        changed = False
        out: dict[str, AnyType] = {}
        for k, v in data.items():
            out[k], c = decode_jersey(v, k)
            changed |= c
        if key in LISTS and not item:
            return [out], True
        return out, changed
    if isinstance(data, list):
        items = [decode_jersey(v, key, item=True) for v in data]
        return [v for v, _ in items], any(c for _, c in items)
    if isinstance(data, str) and key not in TEXT and re.fullmatch(r"-?\d+", data):
        return int(data), True
    return data, False


def compare(yarn: tuple[int, AnyType], ours: tuple[int, AnyType], step: Step) -> list[Difference]:
    """The differences of one step's answers."""
    found: list[Difference] = []
    if yarn[0] != ours[0]:
        found.append(Difference(step.name, "", "status", yarn[0], ours[0]))
    plain, encoded = decode_jersey(yarn[1])
    if step.path.endswith("/list") and yarn[0] == 200 and isinstance(plain, dict) and "reservations" not in plain:
        plain, encoded = {**plain, "reservations": []}, True
    if encoded:
        found.append(Difference(step.name, "", "encoding", "Jersey 1 JSON", "plain JSON"))
    found += _walk(step.name, "$", plain, ours[1])
    return [_explained(d) for d in found]


def _walk(step: str, path: str, yarn: AnyType, ours: AnyType) -> Iterator[Difference]:
    key = path.rsplit(".", 1)[-1]
    if key in CLOCK_KEYS:
        if type(yarn) is not type(ours):
            yield Difference(step, path, "type", type(yarn).__name__, type(ours).__name__)
        return
    if isinstance(yarn, dict) and isinstance(ours, dict):
        for k in yarn.keys() - ours.keys():
            yield Difference(step, f"{path}.{k}", "missing", yarn[k], None)
        for k in ours.keys() - yarn.keys():
            yield Difference(step, f"{path}.{k}", "extra", None, ours[k])
        for k in yarn.keys() & ours.keys():
            yield from _walk(step, f"{path}.{k}", yarn[k], ours[k])
    elif isinstance(yarn, list) and isinstance(ours, list) and _by_id(yarn) and _by_id(ours):
        mine, theirs = _by_id(ours), _by_id(yarn)
        for rid in theirs.keys() - mine.keys():
            yield Difference(step, f"{path}[{rid}]", "missing", "listed", None)
        for rid in mine.keys() - theirs.keys():
            yield Difference(step, f"{path}[{rid}]", "extra", None, "listed")
        for rid in sorted(theirs.keys() & mine.keys()):
            yield from _walk(step, f"{path}[{rid}]", theirs[rid], mine[rid])
    elif isinstance(yarn, list) and isinstance(ours, list):
        if len(yarn) != len(ours):
            yield Difference(step, path, "value", f"{len(yarn)} items", f"{len(ours)} items")
        for index, (a, b) in enumerate(zip(yarn, ours, strict=False)):
            yield from _walk(step, f"{path}[{index}]", a, b)
    elif type(yarn) is not type(ours):
        yield Difference(step, path, "type", yarn, ours)
    elif yarn != ours:
        yield Difference(step, path, "message" if key == "message" else "value", yarn, ours)


def _by_id(items: list[AnyType]) -> dict[str, AnyType]:
    """Listed reservations by their (labelled) ids; {} for any other list (servers list in their own order)."""
    if not items or not all(isinstance(item, dict) and "reservation-id" in item for item in items):
        return {}
    return {str(item["reservation-id"]): item for item in items}


def _explained(difference: Difference) -> Difference:
    for (step, path, kind), reason in DELIBERATE.items():
        if kind == difference.kind and re.fullmatch(step, difference.step) and re.fullmatch(path, difference.path):
            return Difference(difference.step, difference.path, difference.kind, difference.yarn, difference.ours,
                              reason)
    return difference


def exchanges() -> list[tuple[Step, tuple[int, AnyType], tuple[int, AnyType]]]:
    """Start both servers and run the script on each: every step with YARN's answer and ours."""
    with real_rm() as yarn, rayon(yarn) as ours:
        t0 = (int(time.time()) // 60 + 2) * 60_000
        yarn_answers, our_answers = run(yarn, t0), run(ours, t0)
    return list(zip(SCRIPT, yarn_answers, our_answers, strict=True))


def conformance(answers: list[tuple[Step, tuple[int, AnyType], tuple[int, AnyType]]]) -> list[Difference]:
    """Every difference of the answers, step by step."""
    return [d for step, a, b in answers for d in compare(a, b, step)]


def _short(value: AnyType) -> str:
    text = json.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= 160 else text[:157] + "..."


def main(argv: list[str]) -> int:
    try:
        answers = exchanges()
    except Unavailable as why:
        print(f"skipped: {why}", file=sys.stderr)
        return 2
    differences = conformance(answers)
    if "--raw" in argv:
        for step, yarn, ours in answers:
            print(f"== {step.name}\n  yarn {yarn[0]} {json.dumps(yarn[1])[:600]}")
            print(f"  ours {ours[0]} {json.dumps(ours[1])[:600]}")
    if "--json" in argv:
        print(json.dumps([d.__dict__ for d in differences], indent=1, default=str))
    else:
        unexplained = [d for d in differences if not d.reason]
        for d in unexplained + [d for d in differences if d.reason]:
            print(d.line())
        print(f"{len(differences)} differences, {len(unexplained)} unexplained")
    return 1 if any(not d.reason for d in differences) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
