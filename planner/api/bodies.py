"""Request bodies to reservations: RDL text, RDL JSON or YARN JSON, with the command line's positioned errors.

Malformed input (not UTF-8, a syntax error, a JSON shape the form does not have) answers 400;
well-formed input that does not hold up against the plan's cluster (validation) answers 422.
Either way the message is what `rayon submit` prints for the same text, `FILE` being `<request>`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any as AnyType

from planner.api.errors import ApiError
from rdl.cluster import Cluster
from rdl.errors import RDLError, RDLErrors, Span
from rdl.forms import jsonform, yarn
from rdl.load import READERS
from rdl.registry import UnknownName
from rdl.syntax.parser import parse_text
from rdl.tree import Reservation
from rdl.validate import validate

SOURCE = "<request>"
CONTENT_TYPES = {"text/plain": "rdl", "text/x-rdl": "rdl", "application/x-rdl": "rdl", "application/json": "json"}
# Types that say nothing of the body's form, read by its content instead: `curl --data-binary @file` sends the
# file unchanged but labels it a form (application/x-www-form-urlencoded).
BY_CONTENT = ("", "application/octet-stream", "application/x-www-form-urlencoded")


def decode(body: bytes, consequence: str) -> str:
    """The body as text; 400 when it is not UTF-8 (naming the byte) or empty."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ApiError(400, "input", f"{SOURCE}: the body is not UTF-8 text (byte {exc.start}: "
                       f"{body[exc.start:exc.start + 1]!r})\n{consequence}") from None
    if not text.strip():
        raise ApiError(400, "input", f"{SOURCE}: the body is empty\n{consequence}",
                       "send one reservation as RDL text or JSON")
    return text


def body_format(content_type: str | None, chosen: str | None, text: str) -> str:
    """The form of a body: `?format=` if given, else by Content-Type, else JSON if it looks like JSON."""
    if chosen is not None:
        try:
            return READERS.check(chosen)
        except UnknownName as unknown:
            raise ApiError(422, "input", unknown.message, unknown.hint) from None
    media = (content_type or "").split(";")[0].strip().lower()
    if media in CONTENT_TYPES:
        return CONTENT_TYPES[media]
    if media not in BY_CONTENT:
        raise ApiError(415, "media_type", f"cannot read a body of type `{media}`",
                       "send RDL text with `Content-Type: text/plain` or JSON (RDL or YARN) with "
                       "`Content-Type: application/json`")
    return "json" if text.lstrip()[:1] in ("{", "[") else "rdl"


def parse_body(text: str, form: str, consequence: str) -> list[Reservation]:
    """Every reservation in the body; 400 with every positioned error when it does not parse."""
    try:
        return parse_as(text, form, SOURCE)
    except RDLErrors as errors:
        raise ApiError.from_rdl(400, errors.with_sources({SOURCE: text}), consequence) from None


def parse_as(text: str, form: str, source: str) -> list[Reservation]:
    """Every reservation in `text` of this form (rdl, json, yarn), its places named `source`; RDLErrors if not."""
    if form == "rdl":
        return parse_text(text, source)
    data = _json(text, source)
    if form == "yarn" or (form == "json" and yarn.looks_like_yarn(data)):
        return [yarn.from_yarn(data, source)]
    return jsonform.from_json(data, source)


def _json(text: str, source: str = SOURCE) -> AnyType:
    """Decoded JSON; a syntax error, a repeated key or nesting too deep as the loaders report it, positioned."""
    return jsonform.loads(text, source)


def json_object(body: bytes, consequence: str) -> dict[str, AnyType]:
    """A body that must be one JSON object (YARN's requests); 400 otherwise, positioned."""
    text = decode(body, consequence)
    try:
        data = _json(text)
    except RDLErrors as errors:
        raise ApiError.from_rdl(400, errors.with_sources({SOURCE: text}), consequence) from None
    if not isinstance(data, dict):
        error = RDLError(Span(SOURCE, json_path="$"), f"the body must be a JSON object, got {type(data).__name__}")
        raise ApiError.from_rdl(400, RDLErrors([error]), consequence)
    return data


def only_one(found: list[Reservation], consequence: str) -> Reservation:
    """The one reservation of a body; 422 for none or several (each request is one decision, whole or nothing)."""
    if len(found) == 1:
        return found[0]
    names = ", ".join(f"`{r.name}`" for r in found) or "no reservation"
    raise ApiError(422, "input", f"{SOURCE} holds {names}: send exactly one reservation per request\n{consequence}",
                   "send several in one request, decided together, with POST /v1/reservations/batch")


def read_one(raw: bytes, content_type: str | None, form: str | None, consequence: str) -> tuple[Reservation, str]:
    """The one reservation of a request body, parsed (not yet validated), and the body's text."""
    text = decode(raw, consequence)
    return only_one(parse_body(text, body_format(content_type, form, text), consequence), consequence), text


def validated(reservation: Reservation, cluster: Cluster, now: datetime, text: str, consequence: str,
              status: int = 422) -> Reservation:
    """The reservation, checked against the cluster at the plan's clock as `rayon submit` checks it."""
    try:
        validate([reservation], cluster, now)
    except RDLErrors as errors:
        raise ApiError.from_rdl(status, errors.with_sources({SOURCE: text}), consequence) from None
    return reservation
