"""Finished runs of an evaluation grid, kept on disk as each one ends, so that a stopped grid goes on where it was.

The full grid takes hours on two cores; a crash, a reboot or the end of a working session would otherwise lose
all of it, as the results are written only once every run is done. Each finished run is pickled into the
checkpoint folder (written to a temporary file, then renamed: a run is there whole or not at all) under a key
of everything its figures depend on: the run itself (scenario, agent or policy, slack, which seed), the
scenario file's bytes and the MILP's time limit. Running the same grid into the same folder again simulates
only the runs missing; a changed scenario or option gives new keys, so nothing stale is reused. A change to the
simulator's own code does not: delete the folder after one. The folder is removed once the grid's results are
written.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import shutil
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from follower.sim.evaluate import Outcome
    from follower.sim.grid import Run

PARTIAL = "partial"  # the checkpoint folder's name, inside the report's folder


class Checkpoint:
    """The finished runs of one grid in `folder`, each under the key of what it depends on."""

    def __init__(self, folder: Path, milp_time_limit: float):
        self.folder = folder
        self.milp_time_limit = milp_time_limit

    def key(self, run: Run) -> str:
        """The file name of `run`'s outcome: a digest of the run, its scenario file's bytes and the time limit."""
        try:
            scenario = hashlib.sha256(Path(run.path).read_bytes()).hexdigest()
        except OSError:
            scenario = ""  # not readable now: the run itself will say so
        fields = {name: value for name, value in asdict(run).items() if not (name == "load" and value is None)}
        what = json.dumps([fields, scenario, self.milp_time_limit], sort_keys=True, default=str)
        return hashlib.sha256(what.encode()).hexdigest()[:24] + ".pickle"

    def load(self, run: Run) -> Outcome | None:
        """`run`'s outcome if an earlier attempt finished it, else None (an unreadable file counts as missing)."""
        path = self.folder / self.key(run)
        try:
            with path.open("rb") as source:
                found: Outcome = pickle.load(source)
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
            return None
        return found

    def kept(self, runs: Sequence[Run]) -> set[int]:
        """The indices in `runs` of the runs kept (without reading them)."""
        return {index for index, run in enumerate(runs) if (self.folder / self.key(run)).is_file()}

    def done(self, runs: Sequence[Run]) -> dict[int, Outcome]:
        """The outcomes already kept, by the index of their run in `runs`."""
        kept = {index: self.load(run) for index, run in enumerate(runs)}
        return {index: outcome for index, outcome in kept.items() if outcome is not None}

    def save(self, run: Run, outcome: Outcome) -> None:
        """Keep `outcome` as `run`'s, whole or not at all."""
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / self.key(run)
        partial = path.with_suffix(".writing")
        with partial.open("wb") as sink:
            pickle.dump(outcome, sink, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(partial, path)

    def clear(self) -> None:
        """Forget every kept run (once the grid's results are written)."""
        shutil.rmtree(self.folder, ignore_errors=True)
