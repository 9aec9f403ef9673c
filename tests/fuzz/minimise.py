"""Shrink a failing fuzz input to a small one that fails the same way: `python -m tests.fuzz.minimise KIND FILE`.

Greedy delta debugging over lines, then tokens, then characters: a piece is dropped when the input without it
still breaks an invariant with the same signature (harness.py). The result is printed to standard output.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from tests.fuzz.harness import examine, signature
from tests.fuzz.strategies import TOKEN


def shrink(pieces: list[bytes], fails: Callable[[bytes], bool]) -> list[bytes]:
    chunk = max(1, len(pieces) // 2)
    while chunk >= 1:
        i = 0
        while i < len(pieces):
            candidate = pieces[:i] + pieces[i + chunk:]
            if candidate != pieces and fails(b"".join(candidate)):
                pieces = candidate
            else:
                i += chunk
        chunk //= 2
    return pieces


def minimise(kind: str, data: bytes) -> bytes:
    first = examine(kind, data)
    if not first.problems:
        raise SystemExit("the input does not fail")
    wanted = signature(first)

    def fails(candidate: bytes) -> bool:
        verdict = examine(kind, candidate)
        return bool(verdict.problems) and signature(verdict) == wanted

    data = b"".join(shrink(data.splitlines(keepends=True), fails))
    text = data.decode("utf-8", errors="surrogateescape")
    tokens = [t.encode("utf-8", errors="surrogateescape") for t in TOKEN.findall(text)]
    data = b"".join(shrink(tokens, fails))
    if len(data) < 400:
        data = b"".join(shrink([bytes([b]) for b in data], fails))
    return data


if __name__ == "__main__":
    sys.stdout.buffer.write(minimise(sys.argv[1], Path(sys.argv[2]).read_bytes()))
