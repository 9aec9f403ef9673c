"""Every crasher the fuzz tier found, kept in `corpus/` and replayed in the default (fast) suite.

A file's name says its kind: `rdl-*.rdl`, `json-*.json`, `yarn-*.json`, `cluster-*.yaml`, `scenario-*.yaml`.
Each is run through the commands that read it (harness.py) and must keep every invariant. A crasher whose fix is
not small stays here marked `xfail(strict=True)` with its reason, in XFAIL below, so that fixing it is noticed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fuzz.harness import KINDS, TIME_LIMIT, describe, examine

CORPUS = Path(__file__).parent / "corpus"
XFAIL: dict[str, str] = {}  # file name -> why it still fails; each is given only XFAIL_SECONDS to fail
XFAIL_SECONDS = 3


def corpus_files() -> list[Path]:
    return sorted(p for p in CORPUS.iterdir() if p.name.split("-", 1)[0] in KINDS)


def cases() -> list[object]:
    return [pytest.param(p, id=p.name, marks=[pytest.mark.xfail(strict=True, reason=XFAIL[p.name])]
                         if p.name in XFAIL else []) for p in corpus_files()]


def test_the_corpus_is_not_empty_and_every_file_is_named_by_its_kind() -> None:
    assert corpus_files()
    assert all(p.name.split("-", 1)[0] in KINDS for p in CORPUS.iterdir() if p.name != "README.md")
    assert set(XFAIL) <= {p.name for p in corpus_files()}


@pytest.mark.parametrize("path", cases())
def test_a_kept_crasher_keeps_every_invariant(path: Path) -> None:
    kind = path.name.split("-", 1)[0]
    data = path.read_bytes()
    verdict = examine(kind, data, XFAIL_SECONDS if path.name in XFAIL else TIME_LIMIT)
    assert not verdict.problems, describe(kind, data, verdict)
