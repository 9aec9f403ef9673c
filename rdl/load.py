"""Load input files of every form (RDL text, RDL JSON, YARN JSON, cluster YAML) from files and folders."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from rdl.cluster import Cluster, is_cluster_text, parse_cluster
from rdl.errors import RDLError, RDLErrors
from rdl.forms import jsonform, yarn
from rdl.registry import Registry
from rdl.source import read_text
from rdl.syntax.parser import parse_text
from rdl.tree import Reservation
from rdl.validate import validate

# The reservation forms by name: each reads a file's text into its reservations (positioned RDLErrors otherwise).
READERS: Registry[Callable[[str, str], list[Reservation]]] = Registry.of("format", {
    "rdl": parse_text,
    "json": jsonform.parse_json_text,
    "yarn": lambda text, name: [yarn.parse_yarn_text(text, name)],
})
FORMATS = (*READERS, "cluster")
SUFFIXES = {".rdl": "rdl", ".json": "json", ".yaml": "cluster", ".yml": "cluster"}


@dataclass
class LoadedFile:
    """One input file: what it held, or the errors that kept it out."""

    path: str
    format: str
    text: str = ""
    reservations: list[Reservation] = field(default_factory=list)
    cluster: Cluster | None = None
    errors: RDLErrors | None = None


def expand(paths: Iterable[str | Path]) -> list[Path]:
    """Files as given, and inside folders every file with a known suffix, sorted.

    Inside a folder, a YAML file counts only if it is a cluster file: other YAML kept beside
    reservations (simulation scenarios, scheduler configurations) is not the planner's input.
    """
    found: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            found += sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in SUFFIXES and _planner_input(p))
        else:
            found.append(path)
    return found


def _planner_input(path: Path) -> bool:
    return SUFFIXES[path.suffix] != "cluster" or is_cluster_text(path.read_text(encoding="utf-8", errors="replace"))


def detect_format(path: Path, text: str) -> str:
    """The form of a file, by suffix and, for JSON and YAML, by content."""
    suffix = SUFFIXES.get(path.suffix)
    if suffix == "json":
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, RecursionError):  # reading it as RDL JSON reports either, positioned
            return "json"
        return "yarn" if yarn.looks_like_yarn(data) else "json"
    if suffix == "cluster" or (suffix is None and is_cluster_text(text)):
        return "cluster"
    return "rdl"


def read_file(path: Path, form: str | None = None) -> LoadedFile:
    """Parse one file (validation comes later, when the cluster is known)."""
    name = str(path)
    try:
        text = read_text(path)
    except RDLErrors as errors:
        return LoadedFile(name, form or "rdl", errors=errors)
    form = form or detect_format(path, text)
    loaded = LoadedFile(name, form, text)
    try:
        if form == "cluster":
            loaded.cluster = parse_cluster(text, name)
        else:
            loaded.reservations = READERS.get(form)(text, name)
    except RDLErrors as errors:
        loaded.errors = errors.with_sources({name: text})
    return loaded


def validate_file(loaded: LoadedFile, cluster: Cluster | None, now: datetime | None) -> None:
    """Validate a parsed file's reservations in place, recording its errors."""
    if loaded.errors is not None or not loaded.reservations:
        return
    try:
        validate(loaded.reservations, cluster, now)
    except RDLErrors as errors:
        loaded.errors = errors.with_sources({loaded.path: loaded.text})


def load(paths: Sequence[str | Path], form: str | None = None, cluster: Cluster | None = None,
         now: datetime | None = None) -> list[LoadedFile]:
    """Read and validate every file; a lone cluster file among them is what the others are checked against."""
    files = [read_file(path, form if form != "cluster" else None) for path in expand(paths)]
    if cluster is None:
        clusters = [f.cluster for f in files if f.cluster is not None]
        cluster = clusters[0] if len(clusters) == 1 else None
    for loaded in files:
        validate_file(loaded, cluster, now)
    return files


def all_errors(files: Iterable[LoadedFile]) -> RDLErrors | None:
    """Every file's errors together, or None when all are valid."""
    errors: list[RDLError] = []
    sources: dict[str, str] = {}
    for loaded in files:
        if loaded.errors is not None:
            errors += loaded.errors.errors
            sources |= loaded.errors.sources
    return RDLErrors(errors, sources) if errors else None
