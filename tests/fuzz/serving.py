"""Generators of the files `rayon serve` reads: its configuration file (`--config`) and its token file (`--tokens`).

Both start as files the server really takes, written from drawn settings, then are mutated as the other inputs
are (strategies.py); some take the shapes that found issue #29's items 9 and 11: YAML nested thousands deep, a
path where a host belongs, bytes that are not UTF-8, keys of mixed types, expiry times outside 1970-9000.
"""

from __future__ import annotations

from hypothesis import strategies as st

from tests.fuzz.strategies import EXTREME_NUMBERS, EXTREME_YEARS, deep_yaml, mutated_bytes

HASH = "sha256:" + "0123456789abcdef" * 4
SETTINGS = {  # a key of `rayon serve`'s configuration and values for it, good and bad
    "state": ("plan.db", "postgresql+psycopg://rayon@127.0.0.1:1/rayon", "''", "/", "../../etc/passwd", "~/x.db"),
    "tokens": ("tokens.yaml", "tokens.yaml", "missing.yaml", "/", "''", "."),
    "host": ("127.0.0.1", "::1", "localhost", "0.0.0.0", "'../../etc'", "'a b'", "256.1.1.1", "'-x'", "x" * 300,
             "'\u00e9.example'", "'[::1]'"),
    "port": ("0", "8080", "65535", "65536", "-1", "'80'", "0x50", "1e3", "[]"),
    "max-body": ("1", "1048576", "0", "-5", "1e400", "9" * 40),
    "max-connections": ("1", "1000", "0", "99999999999999999999"),
    "max-header-bytes": ("1024", "65536", "1023", "-1"),
    "header-timeout": ("0.1", "10", "3600", "0", "3601", "nan", "inf", "1e-9"),
    "log-level": ("info", "debug", "INFO", "loud", "''"),
    "access-log": ("true", "false", "yes", "no", "1", "maybe", "null"),
    "log-format": ("text", "json", "xml"),
    "clock": ("wall", "manual", "fast:60", "fast:0", "fast:-1", "fast:1e309", "fast:nan", "slow"),
    "replan-every": ("6h", "1m", "0s", "-1h", "36526d", "99999999999d", "1e300h", "5"),
    "replan-time-limit": ("0.5", "30", "0.4", "1e308"),
    "workers": ("1", "2", "64", "65", "0"),
    "decider": ("inline", "process", "thread"),
    "unknown": ("1",),
    "max_body": ("65536",),
}


@st.composite
def serve_config_text(draw: st.DrawFn) -> str:
    """`key: value` lines of a serve configuration, some keys repeated or unknown, some values bad."""
    keys = draw(st.lists(st.sampled_from(sorted(SETTINGS)), max_size=8))
    lines = [f"{key}: {draw(st.sampled_from(SETTINGS[key]))}" for key in keys]
    special = draw(st.sampled_from(("none",) * 6 + ("deep", "list", "scalar", "numbers")))
    if special == "deep":
        lines.append(f"{draw(st.sampled_from(('port', 'host', 'state', 'x')))}: {deep_yaml(draw)}")
    elif special == "list":  # not a mapping at all
        lines = [f"- {line}" for line in lines] or ["- 1"]
    elif special == "scalar":
        lines = [draw(st.sampled_from(("8080", "~", "'port: 1'", "!!binary aGk=", "&a [*a]")))]
    elif special == "numbers":
        lines += [f"{key}: {draw(st.sampled_from(EXTREME_NUMBERS))}" for key in ("port", "max-body", "workers")]
    return "\n".join(lines) + "\n"


@st.composite
def config_text(draw: st.DrawFn) -> bytes:
    return draw(mutated_bytes(draw(serve_config_text())))


@st.composite
def token_file_text(draw: st.DrawFn) -> str:
    """A token file: entries of user, role, hash and expiry, some of them wrong."""
    entries = []
    for index in range(draw(st.integers(0, 3))):
        fields = {"user": draw(st.sampled_from(("alice", f"u{index}", "ops@x", "'a b'", "''", "1", "[a]"))),
                  "role": draw(st.sampled_from(("user", "admin", "root", "null"))),
                  "hash": draw(st.sampled_from((f'"{HASH}"', f'"{HASH[:-1]}"', '"rayon_abc"', '"md5:00"', "7")))}
        if draw(st.booleans()):
            year = draw(st.sampled_from((*EXTREME_YEARS, 2030)))
            fields["expires"] = draw(st.sampled_from((f"{year:04d}-01-01T00:00:00Z", "2030-01-01", "soon", "1e309")))
        if draw(st.integers(0, 5)) == 0:
            fields[draw(st.sampled_from(("1", "[a, b]", "password", "hash ")))] = "x"
        entries.append("  - {" + ", ".join(f"{k}: {v}" for k, v in fields.items()) + "}")
    lines = ["tokens:", *entries] if entries else [draw(st.sampled_from(("tokens: []", "tokens:", "", "tokens: {}")))]
    special = draw(st.sampled_from(("none",) * 6 + ("deep", "top", "anchors")))
    if special == "deep":
        lines = [f"tokens: {deep_yaml(draw)}"]
    elif special == "top":  # another key beside `tokens`, of another type
        lines.append(draw(st.sampled_from(("1: 2", "users: []", "? [a]\n: b"))))
    elif special == "anchors":  # an alias repeated: a small file standing for a large value
        lines = ["a: &a [x, x, x, x]", "b: &b [*a, *a, *a, *a]", "c: &c [*b, *b, *b, *b]", "tokens: [*c, *c]"]
    return "\n".join(lines) + "\n"


@st.composite
def tokens_text(draw: st.DrawFn) -> bytes:
    return draw(mutated_bytes(draw(token_file_text())))


INPUTS = {"config": config_text, "tokens": tokens_text}
