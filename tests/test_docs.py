"""Every example in the user documentation is real: the fenced blocks of `docs/*.md` and README.md are run.

A block's info string says what it is and how it is checked:

| info string | checked by |
|---|---|
| `rdl`, `json` | `rayon check --cluster CLUSTER` exits 0 (RDL text; a reservation in JSON form) |
| `yaml` | a cluster file: `rayon check` exits 0, and `rayon plan` with it plans one small reservation |
| `rdl-error`, `json-error`, `yaml-error` | `rayon check` exits 2 and prints the `error` block that follows |
| `json-plan` | the document `rayon plan --json` prints, trimmed: every key, entry and value shown is in the real one |
| `sh`, `text`, `python` | not run |

Attributes follow the info string as `key=value`: `file=NAME` writes the block under that name
beside the others of its page (a cluster file a later block uses, say); `cluster=NAME` (a file of
the page, else a path from the repository's root; default `examples/cluster.yaml`); for `json-plan`,
`paths=A,B` (default `examples/`) and `now=TIME`. Inputs are written to a scratch folder and checked
from there, so messages name them as the page shows: `bad.rdl`, `bad.json`, `cluster.yaml` unless
`file=` says otherwise. A fence without an info string is an error, so no example escapes the test.
"""

from __future__ import annotations

import inspect
import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any as AnyType

import pytest
from click.testing import CliRunner, Result

from follower.cli import main

ROOT = Path(__file__).resolve().parents[1]
PAGES = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
DEFAULT_CLUSTER = "examples/cluster.yaml"
CHECKED = ("rdl", "json", "yaml")
ERRORS = ("rdl-error", "json-error", "yaml-error")
RUN = (*CHECKED, *ERRORS, "json-plan")
NOT_RUN = ("sh", "text", "python", "error")
DEFAULT_NAMES = {"rdl": "example.rdl", "json": "example.json", "yaml": "cluster.yaml", "rdl-error": "bad.rdl",
                 "json-error": "bad.json", "yaml-error": "cluster.yaml"}
# What `rayon plan` is given beside a cluster file example, to show that every command accepts it.
ONE_RESERVATION = "reservation r {\n  atom(b={memory: 2GiB, vcores: 1}, w=1h)\n}\n"
FENCE = re.compile(r"^(```+)(.*)$")


@dataclass
class Block:
    page: Path
    line: int
    kind: str
    attrs: dict[str, str]
    text: str
    expected: str | None = None  # the `error` block after an error example
    siblings: list[Block] = field(default_factory=list, repr=False)

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}:{self.kind}"

    @property
    def name(self) -> str:
        return self.attrs.get("file", DEFAULT_NAMES.get(self.kind, "example.txt"))


def fenced_blocks(page: Path) -> list[Block]:
    """The page's fenced code blocks in order, with their info strings split into a kind and attributes."""
    blocks: list[Block] = []
    lines = page.read_text().splitlines()
    index = 0
    while index < len(lines):
        match = FENCE.match(lines[index])
        if not match:
            index += 1
            continue
        fence, info = match.group(1), match.group(2).split()
        end = next((i for i in range(index + 1, len(lines)) if lines[i].strip() == fence), None)
        assert end is not None, f"{page.name}:{index + 1}: a code block is never closed"
        attrs = dict(word.split("=", 1) for word in info[1:] if "=" in word)
        blocks.append(Block(page, index + 1, info[0] if info else "", attrs, "\n".join(lines[index + 1:end]) + "\n"))
        index = end + 1
    for block in blocks:
        block.siblings = blocks
    for block, following in zip(blocks, [*blocks[1:], None], strict=True):
        if block.kind in ERRORS and following is not None and following.kind == "error":
            block.expected = following.text
    return blocks


ALL_BLOCKS = [block for page in PAGES for block in fenced_blocks(page)]
RUN_BLOCKS = [block for block in ALL_BLOCKS if block.kind in RUN]


def make_runner() -> CliRunner:
    """A runner that keeps stderr apart: click < 8.2 needs `mix_stderr=False`, later ones always do."""
    if "mix_stderr" in inspect.signature(CliRunner).parameters:
        return CliRunner(mix_stderr=False)  # type: ignore[call-arg]
    return CliRunner()


def rayon(*args: str) -> Result:
    return make_runner().invoke(main, list(args), catch_exceptions=False, prog_name="rayon")


def write_page_files(block: Block, folder: Path) -> None:
    """Every block of the page named with `file=` (a cluster file later examples use), then this one."""
    for sibling in block.siblings:
        if "file" in sibling.attrs:
            (folder / sibling.attrs["file"]).write_text(sibling.text)
    (folder / block.name).write_text(block.text)


def resolve(name: str, folder: Path) -> str:
    """A file of the page (written to `folder`), else a path from the repository's root."""
    return name if (folder / name).exists() else str(ROOT / name)


def lines_of(text: str) -> list[str]:
    return [line.rstrip() for line in text.strip("\n").splitlines()]


def contains_lines(haystack: str, needle: str) -> bool:
    """Whether the needle's lines appear, one after another, among the haystack's (trailing spaces aside)."""
    hay, pin = lines_of(haystack), lines_of(needle)
    return any(hay[i:i + len(pin)] == pin for i in range(len(hay) - len(pin) + 1))


def trimmed_from(shown: AnyType, real: AnyType, where: str = "$") -> None:
    """Assert that `shown` is `real` with keys and list entries left out (never changed, never added)."""
    if isinstance(shown, dict):
        assert isinstance(real, dict), f"{where}: the page shows an object, the command prints {real!r}"
        for key, value in shown.items():
            assert key in real, f"{where}.{key}: not in what the command prints"
            trimmed_from(value, real[key], f"{where}.{key}")
    elif isinstance(shown, list):
        assert isinstance(real, list), f"{where}: the page shows a list, the command prints {real!r}"
        position = 0
        for index, item in enumerate(shown):  # in order: each shown entry matches a later real one
            while position < len(real) and not _matches(item, real[position]):
                position += 1
            assert position < len(real), f"{where}[{index}]: {item!r} is not among what the command prints (in order)"
            position += 1
    else:
        assert shown == real, f"{where}: the page shows {shown!r}, the command prints {real!r}"


def _matches(shown: AnyType, real: AnyType) -> bool:
    try:
        trimmed_from(shown, real)
    except AssertionError:
        return False
    return True


@cache
def plan_output(cluster: str, paths: tuple[str, ...], now: str | None, folder: str) -> tuple[int, str, str]:
    args = ["plan", "--cluster", cluster, "--json", *paths, *(["--now", now] if now else [])]
    result = rayon(*args)
    return result.exit_code, result.stdout, result.stderr


def test_every_block_says_what_it_is() -> None:
    unknown = [f"{b.id} (`{b.kind}`)" for b in ALL_BLOCKS if b.kind not in (*RUN, *NOT_RUN)]
    assert not unknown, "fenced blocks need an info string from " + ", ".join((*RUN, *NOT_RUN)) + ": " + \
        ", ".join(unknown)


def test_error_blocks_follow_error_examples() -> None:
    errors = {id(b.expected) for b in ALL_BLOCKS if b.expected is not None}
    stray = [b.id for b, before in zip(ALL_BLOCKS[1:], ALL_BLOCKS, strict=False)
             if b.kind == "error" and before.kind not in ERRORS]
    assert errors and not stray, f"`error` blocks must follow an error example: {stray}"
    missing = [b.id for b in ALL_BLOCKS if b.kind in ERRORS and b.expected is None]
    assert not missing, f"error examples need the `error` block they print: {missing}"


def test_the_reference_pages_hold_examples() -> None:
    kinds = {(b.page.name, b.kind) for b in RUN_BLOCKS}
    for page, kind in [("rdl.md", "rdl"), ("rdl.md", "rdl-error"), ("rdl.md", "json"), ("rdl.md", "json-error"),
                       ("cluster.md", "yaml"), ("cluster.md", "yaml-error"),
                       ("decisions.md", "json-plan")]:
        assert (page, kind) in kinds, f"docs/{page} has no `{kind}` example"


@pytest.mark.parametrize("block", RUN_BLOCKS, ids=lambda b: b.id)
def test_block(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_page_files(block, tmp_path)
    cluster = resolve(block.attrs.get("cluster", DEFAULT_CLUSTER), tmp_path)
    if block.kind == "json-plan":
        paths = tuple(resolve(p, tmp_path) for p in block.attrs.get("paths", "examples/").split(","))
        code, stdout, stderr = plan_output(cluster, paths, block.attrs.get("now"), str(tmp_path))
        assert code == 0, stderr
        trimmed_from(json.loads(block.text), json.loads(stdout))
        return
    if block.kind.startswith("yaml"):
        result = rayon("check", block.name)
    else:
        result = rayon("check", "--cluster", cluster, block.name)
    if block.kind in CHECKED:
        assert result.exit_code == 0, f"{block.id}: rayon check says\n{result.stderr}"
        if block.kind == "yaml":  # what `rayon check` accepts, planning accepts too
            (tmp_path / "reservation.rdl").write_text(ONE_RESERVATION)
            planned = rayon("plan", "--cluster", block.name, "reservation.rdl")
            assert planned.exit_code == 0, f"{block.id}: rayon plan says\n{planned.stderr}"
        return
    assert result.exit_code == 2, f"{block.id}: expected exit 2, got {result.exit_code}\n{result.stderr}"
    assert block.expected is not None
    assert contains_lines(result.stderr, block.expected), \
        f"{block.id}: the page shows\n{block.expected}\nbut the command prints\n{result.stderr}"
