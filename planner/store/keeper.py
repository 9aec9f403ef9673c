"""Which process keeps the clock of a plan stored in a SQLite file: whoever holds a lock on the file beside it.

The servers of `rayon serve --workers N` share one SQLite file; exactly one of them may advance the plan's
clock, place recurring instances and publish the follower's round. An exclusive `flock` on `PLAN.db.keeper`
chooses it: the kernel frees the lock when its holder's process ends, however it ends, and the next worker to
ask takes over, as PostgreSQL's advisory lock does for servers on one database. Within one process the lock is
shared by every store open on the file (a kernel `flock` taken twice by one process would refuse itself).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

try:
    import fcntl
except ImportError:  # not POSIX: one server per file, which keeps the clock
    fcntl = None  # type: ignore[assignment]

_guard = threading.Lock()
_held: dict[str, tuple[int, int]] = {}  # lock file -> (its descriptor, how many FileKeepers of this process hold it)


@dataclass
class FileKeeper:
    """The keeper's lock for one store file, as one Store asks for it."""

    path: str | None  # the lock file; None: an in-memory store, which only its own process can see
    holding: bool = False

    @classmethod
    def beside(cls, database: str | None) -> FileKeeper:
        """The lock for the SQLite file `database` (None or `:memory:`: nothing to share, so always held)."""
        if not database or database == ":memory:" or database.startswith("file:") or fcntl is None:
            return cls(None)
        return cls(str(Path(database).expanduser().resolve()) + ".keeper")

    def holds(self) -> bool:
        """Whether this process keeps the clock: it holds the lock, or takes it now if it is free."""
        if self.path is None or self.holding:
            return True
        with _guard:
            held = _held.get(self.path)
            if held is None:
                descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
                try:
                    fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    os.close(descriptor)
                    return False  # another process keeps it
                held = (descriptor, 0)
            _held[self.path] = (held[0], held[1] + 1)
            self.holding = True
            return True

    def release(self) -> None:
        """Stop holding the lock; the process lets it go when no store of it holds it any more."""
        if self.path is None or not self.holding:
            return
        with _guard:
            descriptor, count = _held[self.path]
            if count > 1:
                _held[self.path] = (descriptor, count - 1)
            else:
                del _held[self.path]
                os.close(descriptor)  # closing the descriptor frees the flock
            self.holding = False
