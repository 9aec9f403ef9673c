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
TARGET = VALIDATE_DIR / "target"
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
    if shutil.which("go") is None:
        raise PeerUnavailable("go not found on PATH")
    module = MODULE_FILES[version]
    digest = hashlib.sha256()
    for name in ("main.go", module, module.removesuffix(".mod") + ".sum"):
        digest.update((VALIDATE_DIR / name).read_bytes())
    binary = TARGET / f"validate-{version}-{digest.hexdigest()[:12]}"
    TARGET.mkdir(exist_ok=True)
    with open(TARGET / ".lock", "w") as lock:  # several test processes build it once
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not binary.exists():
            command = ["go", "build", "-o", str(binary), "."]
            if module != "go.mod":
                command[2:2] = [f"-modfile={module}"]
            done = subprocess.run(command, cwd=VALIDATE_DIR, capture_output=True, text=True,
                                  env={**os.environ, **GO_ENV}, timeout=900)
            if done.returncode != 0:
                raise PeerUnavailable(f"building the YuniKorn {version} validator failed: "
                                      f"{done.stderr.strip()[-600:]}")
    return binary


def validate(text: str, version: str = NEWEST) -> list[Verdict]:
    """Each document of a YAML stream (documents separated by `---` lines), as YuniKorn `version` judges it."""
    done = subprocess.run([str(build(version))], input=text, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"the YuniKorn validator failed: {done.stderr.strip()[-600:]}")
    return [Verdict(line["document"], line["valid"], line.get("error"), line.get("queues", 0), line["core"])
            for line in map(json.loads, done.stdout.splitlines())]
