"""Recursive-descent parser from RDL text to the tree.

Hand-written rather than generated so that every message can say what was expected
at that point and guess the fix. A syntax error stops the parse (what follows it
cannot be trusted); value errors (a bad unit, a bare number) are collected and
reported together.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from typing import Any as AnyValue

from rdl import tree, units, zones
from rdl.errors import ErrorSink, RDLError, RDLErrors, Span, did_you_mean
from rdl.syntax.lexer import Token, paused_gc, tokenize
from rdl.tree import Absolute, All, Any, Atom, Expr, Order, Relative, Reservation, Resources, TimeValue, Window

LOOKAHEAD = 2
HEADER_KEYS = ("user", "queue", "arrival", "deadline", "value", "priority", "every", "until", "tz", "placement",
               "pack")
COMBINATORS = ("atom", "window", "order", "all", "any")
ATOM_KEYS = ("b", "g", "h", "l", "w")


# A parsed `key=value` argument: the value's token (or resource-vector entries) and its span.
RawValue = Token | list[tuple[Token, Token]]
Keywords = dict[str, tuple[Token, RawValue]]


class ValueReader:
    """Converts value tokens (from RDL text or JSON) into typed values, collecting errors."""

    def __init__(self) -> None:
        self.sink = ErrorSink()
        self.zone: str | None = None  # the reservation's `tz`, read first: zone-less times are wall times there

    def read_zone(self, token: Token | None) -> str | None:
        """The `tz` header's zone name (kept as `self.zone` for the times read after it), or None."""
        self.zone = None
        if token is None:
            return None
        if token.kind not in ("name", "zone", "string"):
            return self.bad(token, f"`tz` is a time zone, got {token.describe()}", "a name such as `Europe/Berlin`")
        problem = zones.zone_problem(unquote(token))
        if problem is not None:
            return self.bad(token, problem[0], "a time zone name", problem[1])
        self.zone = unquote(token)
        return self.zone

    def build(self, keyword: str, keywords: Keywords, children: list[Expr], name: str | None, span: Span) -> Expr:
        """The node for `keyword(...)` from its keyword arguments and child expressions."""
        return _BUILDERS[keyword](self, keywords, children, name, span)

    def header(self, values: dict[str, Token]) -> dict[str, object]:
        """Typed header attributes from their value tokens; failed ones are left out (and reported)."""
        typed = {key: self.header_value(key, token) for key, token in values.items()}
        every = typed.get("every")
        if self.zone is not None and isinstance(every, float) and every % 86400:
            typed["every"] = self.bad(values["every"], f"with `tz`, `every` counts calendar days in the zone: a whole "
                                      f"number of days, got `{values['every'].text}`", "`1d`, `7d` or `1w`")
        return {k: v for k, v in typed.items() if v is not None}

    def header_value(self, key: str, token: Token) -> object:
        if key in ("user", "queue"):
            if token.kind not in ("name", "string"):
                return self.bad(token, f"`{key}` is a name", "a name such as `alice`")
            text = unquote(token)
            if "\0" in text:  # PostgreSQL keeps no NUL in text
                return self.bad(token, f"`{key}` holds a NUL character: {text!r}", "a name such as `alice`")
            return text
        if key in ("arrival", "deadline", "until"):
            return self.time(token, key)
        if key == "value":
            value = self.number(token, key)
            if value is not None and value <= 0:
                return self.bad(token, f"`value` must be positive, got {token.text}", "a positive number")
            return value
        if key == "priority":
            return self.integer(token, key, minimum=None)
        if key == "tz":  # read before the other values, by `read_zone`
            return self.zone
        if key in tree.CHOICES:  # a word from a short list
            if token.text not in tree.CHOICES[key] or token.kind != "name":
                words = " or ".join(f"`{word}`" for word in tree.CHOICES[key])
                return self.bad(token, f"`{key}` is {words}, got {token.describe()}", words,
                                did_you_mean(token.text, tree.CHOICES[key]))
            return token.text
        return self.duration(token, key, positive=True)

    # -- values ----------------------------------------------------------------------

    def bad(self, token: Token | Span, message: str, expected: str | None = None,
            hint: str | None = None) -> AnyValue:
        """Record an error; returns None, so `return self.bad(...)` reads as "no value"."""
        span = token.span if isinstance(token, Token) else token
        self.sink.add(span, message, expected=expected, hint=hint)
        return None

    def convert(self, token: Token, parse: Callable[[str], object], key: str) -> object:
        try:
            return parse(token.text)
        except ValueError as exc:
            return self.bad(token, f"`{key}`: {exc}")

    def number(self, token: Token, key: str) -> float | None:
        if token.kind != "number":
            return self.bad(token, f"`{key}` is a number, got {token.describe()}")
        try:
            value, unit = units.split_number(token.text)
        except ValueError as exc:  # `1e400`, or JSON's Infinity
            return self.bad(token, f"`{key}`: {exc}")
        if unit:
            return self.bad(token, f"`{key}` is a plain number and takes no unit, got `{token.text}`")
        return value

    def integer(self, token: Token, key: str, minimum: int | None = 1) -> int | None:
        value = self.number(token, key)
        if value is None:
            return None
        if value != int(value):
            return self.bad(token, f"`{key}` must be a whole number, got `{token.text}`")
        if minimum is not None and value < minimum:
            return self.bad(token, f"`{key}` must be at least {minimum}, got `{token.text}`")
        if abs(value) > units.MAX_INTEGER:
            return self.bad(token, f"`{key}` must be at most {units.MAX_INTEGER:,}, got `{token.text}`",
                            hint="leave `h` out for no limit" if key == "h" else None)
        return int(value)

    def duration(self, token: Token, key: str, positive: bool) -> float | None:
        if token.kind != "number":
            return self.bad(token, f"`{key}` is a duration, got {token.describe()}", "a number with a unit: `90m`")
        value = self.convert(token, units.parse_work if key == "w" else units.parse_duration, key)
        if isinstance(value, float) and (value < 0 or (positive and value == 0)):
            return self.bad(token, f"`{key}` must be {'positive' if positive else 'zero or more'}, got `{token.text}`")
        return value if isinstance(value, float) else None

    def time(self, token: Token, key: str) -> TimeValue | None:
        if token.kind == "relative":
            offset = self.convert(token, units.parse_relative, key)
            return Relative(offset) if isinstance(offset, float) else None
        if token.kind == "time" and self.zone is not None and zones.is_local_time(token.text):
            instant = self.convert(token, partial(zones.read_local, zone=self.zone), key)
            return Absolute(instant) if instant is not None else None  # type: ignore[arg-type]
        if token.kind == "time":
            instant = self.convert(token, units.parse_instant, key)
            return Absolute(instant) if instant is not None else None  # type: ignore[arg-type]
        hint = f"did you mean `+{_with_unit(token.text)}`?" if token.kind == "number" else None
        return self.bad(token, f"`{key}` is a time, got {token.describe()}",
                        "an ISO-8601 time with a zone or a relative time such as `+6h`", hint)

    def resources(self, key: Token, raw: RawValue) -> Resources | None:
        if isinstance(raw, Token):
            return self.bad(raw, f"`{key.text}` is a resource vector, got {raw.describe()}",
                            "`{memory: 2GiB, vcores: 1}`")
        values: dict[str, float] = {}
        for name, token in raw:
            if name.text in values:
                self.bad(name, f"resource `{name.text}` is given twice")
                continue
            if token.kind != "number":
                self.bad(token, f"resource `{name.text}` needs a quantity, got {token.describe()}")
                continue
            quantity = self.convert(token, partial(units.parse_quantity, name.text), name.text)
            if isinstance(quantity, float):
                if quantity < 0:
                    self.bad(token, f"resource `{name.text}` cannot be negative, got `{token.text}`")
                values[name.text] = quantity
        if not raw:
            return self.bad(key, f"`{key.text}` is an empty resource vector", "at least one resource")
        return Resources.of(values)



class Parser(ValueReader):
    """Parses one file's text into reservations."""

    def __init__(self, text: str, file: str):
        super().__init__()
        self.file = file
        self.tokens = tokenize(text, file)
        self.tokens += [self.tokens[-1]] * LOOKAHEAD  # reading past the end keeps seeing `eof`
        self.pos = 0

    # -- token helpers ---------------------------------------------------------------

    @property
    def token(self) -> Token:
        return self.tokens[self.pos]

    def peek(self, offset: int = 1) -> Token:
        return self.tokens[self.pos + offset]

    def advance(self) -> Token:
        token = self.tokens[self.pos]
        if token.kind != "eof":
            self.pos += 1
        return token

    def at(self, text: str) -> bool:
        # Only punctuation tokens can spell `(`, `)`, `{`, `}`, `,`, `:` or `=`.
        return self.tokens[self.pos].text == text

    def expect(self, text: str, context: str, hint: str | None = None) -> Token:
        if not self.at(text):
            raise RDLError(self.token.span, f"{context}, got {self.token.describe()}", expected=f"`{text}`", hint=hint)
        return self.advance()

    def expect_name(self, context: str) -> Token:
        if self.token.kind != "name":
            raise RDLError(self.token.span, f"{context}, got {self.token.describe()}", expected="a name")
        return self.advance()

    # -- reservations ----------------------------------------------------------------

    def parse(self) -> list[Reservation]:
        reservations = []
        while self.token.kind != "eof":
            reservations.append(self.reservation())
        return reservations

    def reservation(self) -> Reservation:
        keyword = self.token
        if keyword.kind != "name" or keyword.text != "reservation":
            hint = did_you_mean(keyword.text, ["reservation"]) if keyword.kind == "name" else None
            raise RDLError(keyword.span, f"unexpected {keyword.describe()}", expected="`reservation NAME ... {`",
                           hint=hint)
        self.advance()
        name = self.expect_name("a reservation needs a name after `reservation`")
        header = self.header_tokens()
        self.read_zone(header.pop("tz", None))
        opened = self.expect("{", f"the body of reservation `{name.text}` starts with `{{`",
                              hint="header attributes are written `key=value`")
        body = self.expression()
        if not self.at("}"):
            # The file ended, or the next reservation began: the `}` is missing, not a second expression.
            missing = self.token.kind == "eof" or (self.token.kind == "name" and self.token.text == "reservation")
            hint = (f"the `{{` at line {opened.span.line}, column {opened.span.col} is never closed: end the "
                    "reservation with `}`" if missing else "wrap several pieces in `all(...)` or `order(...)`")
            raise RDLError(self.token.span, f"reservation `{name.text}` holds one expression and ends with `}}`, "
                           f"got {self.token.describe()}", hint=hint)
        self.advance()
        return Reservation(name=name.text, body=body, span=keyword.span, tz=self.zone,
                           places={key: token.span for key, token in header.items()},
                           **self.header(header))  # type: ignore[arg-type]

    def header_tokens(self) -> dict[str, Token]:
        values: dict[str, Token] = {}
        while self.token.kind == "name":
            key = self.advance()
            if key.text not in HEADER_KEYS and self.at("("):  # `reservation r atom(...)`: the `{` is missing
                raise RDLError(key.span, f"the body of a reservation starts with `{{`, got `{key.text}(`",
                               expected="`{`")
            if key.text not in HEADER_KEYS:
                raise RDLError(key.span, f"unknown header attribute `{key.text}`",
                               expected="one of " + ", ".join(HEADER_KEYS), hint=did_you_mean(key.text, HEADER_KEYS))
            if key.text in values:
                self.sink.add(key.span, f"header attribute `{key.text}` is given twice")
            self.expect("=", f"header attribute `{key.text}` needs a value")
            values[key.text] = self.value_token(key.text)
        return values

    # -- expressions -----------------------------------------------------------------

    def expression(self) -> Expr:
        name: str | None = None
        start = self.token
        if start.kind == "name" and self.peek().kind == "punct" and self.peek().text == ":":
            name = start.text
            self.advance()
            self.advance()
        keyword = self.token
        if keyword.kind != "name" or keyword.text not in COMBINATORS:
            hint = did_you_mean(keyword.text, COMBINATORS) if keyword.kind == "name" else None
            raise RDLError(keyword.span, f"expected an expression, got {keyword.describe()}",
                           expected="one of " + ", ".join(f"`{c}(...)`" for c in COMBINATORS), hint=hint)
        self.advance()
        self.expect("(", f"`{keyword.text}` takes its arguments in parentheses")
        keywords, children = self.arguments(keyword.text)
        return self.build(keyword.text, keywords, children, name, start.span)

    def arguments(self, what: str) -> tuple[dict[str, tuple[Token, RawValue]], list[Expr]]:
        keywords: dict[str, tuple[Token, RawValue]] = {}
        children: list[Expr] = []
        while not self.at(")"):
            if self.token.kind == "name" and self.peek().kind == "punct" and self.peek().text == "=":
                key = self.advance()
                self.advance()
                if key.text in keywords:
                    self.sink.add(key.span, f"`{key.text}` is given twice in `{what}(...)`")
                keywords[key.text] = (key, self.raw_value(key.text))
            else:
                children.append(self.expression())
            if not self.at(")"):
                self.expect(",", f"arguments of `{what}(...)` are separated by `,` and closed by `)`")
        self.advance()
        return keywords, children

    def raw_value(self, key: str) -> RawValue:
        if self.at("{"):
            return self.resource_entries()
        return self.value_token(key)

    def value_token(self, key: str) -> Token:
        token = self.token
        if token.kind in ("name", "number", "time", "relative", "string", "zone"):
            return self.advance()
        raise RDLError(token.span, f"`{key}=` needs a value, got {token.describe()}")

    def resource_entries(self) -> list[tuple[Token, Token]]:
        self.expect("{", "a resource vector")
        entries: list[tuple[Token, Token]] = []
        while not self.at("}"):
            name = self.expect_name("a resource vector holds `name: quantity` entries")
            self.expect(":", f"resource `{name.text}` needs `:` and a quantity")
            entries.append((name, self.value_token(name.text)))
            if not self.at("}"):
                self.expect(",", "resource entries are separated by `,` and closed by `}`")
        self.advance()
        return entries


_ESCAPES = {"n": "\n", "t": "\t"}


def unquote(token: Token) -> str:
    """A string token's text: `\\n`, `\\t`, and `\\` before any other character stands for that character."""
    if token.kind == "string":
        return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), token.text[1:-1], flags=re.DOTALL)
    return token.text


# -- builders: keyword arguments and children into nodes ------------------------------


def check_keys(parser: ValueReader, what: str, keywords: Keywords, allowed: tuple[str, ...], span: Span) -> None:
    for key, _ in keywords.values():
        if key.text not in allowed and not allowed:  # `all(..., gap=5m)`: no list of nothing to choose from
            hint = f"`gap` belongs to `order`, not `{what}`" if key.text == "gap" else \
                f"`{what}` takes only its children"
            parser.bad(key, f"`{what}` has no argument `{key.text}`", None, hint)
        elif key.text not in allowed:
            parser.bad(key, f"`{what}` has no argument `{key.text}`", "one of " + ", ".join(allowed),
                       did_you_mean(key.text, allowed))


def scalar(parser: ValueReader, keywords: Keywords, key: str) -> Token | None:
    """The token of a scalar keyword argument, or None (with an error if a vector was given)."""
    if key not in keywords:
        return None
    name, raw = keywords[key]
    if isinstance(raw, Token):
        return raw
    parser.bad(name, f"`{key}` takes a single value, not a resource vector")
    return None


def build_atom(parser: ValueReader, keywords: Keywords, children: list[Expr], name: str | None, span: Span) -> Expr:
    check_keys(parser, "atom", keywords, ATOM_KEYS, span)
    if children:
        parser.bad(children[0].span, "`atom` takes no expressions, only `b g h l w`")
    if "b" not in keywords:
        parser.bad(span, "`atom` needs a bundle `b={...}`", hint="for example `b={memory: 2GiB, vcores: 1}`")
    if "w" not in keywords:
        parser.bad(span, "`atom` needs its work `w`", hint="bundle-time as a duration, such as `w=50h`")
    bundle = parser.resources(*keywords["b"]) if "b" in keywords else None
    g, h, lease, work = (scalar(parser, keywords, k) for k in ("g", "h", "l", "w"))
    gang = parser.integer(g, "g") if g else 1
    parallelism = parser.integer(h, "h") if h else None
    lease_s = parser.duration(lease, "l", positive=True) if lease else None
    work_s = parser.duration(work, "w", positive=True) if work else None
    return Atom(bundle=bundle or Resources(), work=work_s or 0.0, gang=gang or 1, parallelism=parallelism,
                lease=lease_s, name=name, span=span)


def build_window(parser: ValueReader, keywords: Keywords, children: list[Expr], name: str | None, span: Span) -> Expr:
    check_keys(parser, "window", keywords, ("s", "e"), span)
    if len(children) != 1:
        parser.bad(span, f"`window` wraps exactly one expression, got {len(children)}",
                   hint="wrap several in `all(...)`")
    start, end = scalar(parser, keywords, "s"), scalar(parser, keywords, "e")
    if "e" not in keywords:
        parser.bad(span, "`window` needs its end `e=`", hint="for example `e=+6h`")
    child = children[0] if children else Atom(Resources(), 0.0)
    return Window(child=child, end=(parser.time(end, "e") if end else None) or Relative(0.0),
                  start=parser.time(start, "s") if start else None, name=name, span=span)


def build_combinator(kind: type[Order] | type[All] | type[Any]) -> Callable[..., Expr]:
    word = kind.__name__.lower()

    def build(parser: ValueReader, keywords: Keywords, children: list[Expr], name: str | None, span: Span) -> Expr:
        allowed = ("gap",) if kind is Order else ()
        check_keys(parser, word, keywords, allowed, span)
        if not children:
            parser.bad(span, f"`{word}` needs at least one expression")
        if kind is Order:
            gap = scalar(parser, keywords, "gap")
            return Order(tuple(children), gap=parser.duration(gap, "gap", positive=False) if gap else None,
                         name=name, span=span)
        return kind(tuple(children), name=name, span=span)

    return build


_BUILDERS: dict[str, Callable[..., Expr]] = {
    "atom": build_atom,
    "window": build_window,
    "order": build_combinator(Order),
    "all": build_combinator(All),
    "any": build_combinator(Any),
}


def parse_text(text: str, file: str = "<input>") -> list[Reservation]:
    """Parse RDL text into reservations; raises RDLErrors (with the source attached) on any error."""
    sources = {file: text}
    try:
        parser = Parser(text, file)
    except RDLError as error:
        raise RDLErrors([error], sources) from None
    try:
        with paused_gc():
            reservations = parser.parse()
    except RDLError as error:
        raise RDLErrors([*parser.sink.errors, error], sources) from None
    except RecursionError:
        raise RDLErrors([RDLError(parser.token.span, "expressions are nested too deeply")], sources) from None
    parser.sink.raise_if_any(sources)
    return reservations


def _with_unit(text: str) -> str:
    """A number as a relative time's offset: with minutes when it has no unit and is not zero (a bare offset is an
    error, as a bare duration is)."""
    try:
        number, unit = units.split_number(text)
    except ValueError:
        return text
    return text if unit or number == 0 else f"{text}m"
