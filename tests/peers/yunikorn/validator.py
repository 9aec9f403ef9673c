"""YuniKorn's own configuration validation on our documents: build the Go peer (`validate/`) against a yunikorn-core
release and run `queues.yaml` documents through `configs.ParseAndValidateConfig`, the code a scheduler runs on
every configuration change.

Two releases: the oldest the Go module proxy here serves (1.4.0; 1.3.x is refused) and the newest (1.9.0). The
source is one; the release is chosen by the module file (`go.mod` for the newest, `core-1.4.0.mod` beside it).
Binaries are built once per change of the sources, under `validate/target/`.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

VALIDATE_DIR = Path(__file__).resolve().parent / "validate"
MODULE_FILES = {"1.4.0": "core-1.4.0.mod", "1.9.0": "go.mod"}  # yunikorn-core release -> its module file
OLDEST, NEWEST = "1.4.0", "1.9.0"
# The proxy has no checksum database entries for these modules: go.sum (committed) holds their hashes instead.
GO_ENV = {"GONOSUMDB": "github.com/apache/yunikorn-core,github.com/apache/yunikorn-scheduler-interface",
          "GOFLAGS": "-mod=mod"}


class PeerUnavailable(RuntimeError):
    """The peer cannot run here (no Go, or the module proxy refused what it needs); the message says why."""


@dataclass(frozen=True)
class Verdict:
    """YuniKorn's word on one document: valid or not, its own error text, and how many queues it read."""

    document: int
    valid: bool
    error: str | None
    queues: int
    core: str


def build(version: str) -> Path:
    """The validator built against yunikorn-core `version` (once per change of the sources)."""
    return go_build(VALIDATE_DIR, "validator", version, ("main.go",))


def go_build(folder: Path, what: str, version: str, sources: tuple[str, ...], tag: str | None = None,
             module: str | None = None) -> Path:
    """A Go peer in `folder` built against yunikorn-core `version` with its module file (`module`, default the one
    MODULE_FILES names) and build `tag`, once per change of `sources` and the module files, under
    `folder/target/`; PeerUnavailable when it cannot be built."""
    if shutil.which("go") is None:
        raise PeerUnavailable("go not found on PATH")
    module = module or MODULE_FILES[version]
    digest = hashlib.sha256()
    for name in (*sources, module, module.removesuffix(".mod") + ".sum"):
        digest.update((folder / name).read_bytes())
    target = folder / "target"
    binary = target / f"{folder.name}-{version}-{digest.hexdigest()[:12]}"
    target.mkdir(exist_ok=True)
    with open(target / ".lock", "w") as lock:  # several test processes build it once
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not binary.exists():
            command = ["go", "build", "-o", str(binary)]
            if module != "go.mod":
                command.append(f"-modfile={module}")
            if tag is not None:
                command.append(f"-tags={tag}")
            done = subprocess.run([*command, "."], cwd=folder, capture_output=True, text=True,
                                  env={**os.environ, **GO_ENV}, timeout=900)
            if done.returncode != 0:
                raise PeerUnavailable(f"building the YuniKorn {version} {what} failed: {done.stderr.strip()[-600:]}")
    return binary


def validate(text: str, version: str = NEWEST) -> list[Verdict]:
    """Each document of a YAML stream (documents separated by `---` lines), as YuniKorn `version` judges it."""
    done = subprocess.run([str(build(version))], input=text, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"the YuniKorn validator failed: {done.stderr.strip()[-600:]}")
    return [Verdict(line["document"], line["valid"], line.get("error"), line.get("queues", 0), line["core"])
            for line in map(json.loads, done.stdout.splitlines())]
