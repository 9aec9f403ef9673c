"""Bearer tokens mapped to users and roles, kept as hashes only (a token file, or the environment).

A token is a random secret (`rayon_` and 43 URL-safe characters, 256 bits) shown once when it is
made; only its SHA-256 is stored. A fast hash is enough for secrets of that entropy (password
hashing such as bcrypt exists to slow the guessing of low-entropy secrets, and would cost
milliseconds on every request). The token file is YAML:

    tokens:
      - {user: alice, role: user, hash: "sha256:5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8"}
      - {user: ops, role: admin, hash: "sha256:...", expires: "2026-12-24T00:00:00Z"}

and `$RAYON_TOKENS` holds more entries as `USER:ROLE:sha256:HEX`, separated by commas or whitespace.
A token with `expires` is refused from that time on. A server notices a changed token file by
itself (within `RELOAD_EVERY` seconds, or at once on SIGHUP): revoking a token is deleting its line.
A file that no longer reads is reported and the tokens read before stay in force.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import secrets
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any as AnyType

import yaml

from rdl import config, units
from rdl.errors import RayonError, did_you_mean

ROLES = ("user", "admin")
ALGORITHM = "sha256"
TOKEN_PREFIX = "rayon_"
ENV_TOKENS = "RAYON_TOKENS"
ENV_TOKEN_FILE = "RAYON_TOKENS_FILE"
_HEX = re.compile(r"[0-9a-f]{64}")
_USER = re.compile(r"[A-Za-z0-9_.@\-]+")
FIELDS = ("user", "role", "hash", "expires")
RELOAD_EVERY = 2.0  # seconds between looks at the token file's modification time
log = logging.getLogger("rayon.tokens")


class TokenError(RayonError):
    """A token file or environment entry that cannot be read: where, what is wrong, and the fix."""

    code = "token"

    def __init__(self, where: str, message: str, hint: str | None = None):
        self.where = where
        super().__init__(message, hint=hint, place=where)


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: a user name and a role."""

    user: str
    role: str
    expires: datetime | None = None

    def expired(self, now: datetime) -> bool:
        """Whether the token has expired at `now`."""
        return self.expires is not None and now >= self.expires

    @property
    def admin(self) -> bool:
        return self.role == "admin"

    def may_act_for(self, owner: str | None) -> bool:
        """Whether this caller may see or change what `owner` owns (admins may act for anyone)."""
        return self.admin or owner == self.user


def hash_token(token: str) -> str:
    """The stored form of a token: `sha256:` and the hex digest of its UTF-8 bytes."""
    return f"{ALGORITHM}:{hashlib.sha256(token.encode()).hexdigest()}"


def new_token() -> str:
    """A fresh random token (256 bits), to be shown once and stored only as its hash."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


class TokenRegistry:
    """Token hashes → principals; `authenticate` answers who a presented token belongs to."""

    def __init__(self, entries: Mapping[str, Principal] | None = None):
        self._by_hash: dict[str, Principal] = dict(entries or {})
        self._source: tuple[str | Path, Mapping[str, str]] | None = None  # where `load` read it, for reloads
        self._stamp: tuple[float, int] | None = None  # the token file's modification time and size when read
        self._looked = 0.0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._by_hash)

    def authenticate(self, token: str) -> Principal | None:
        """The principal of a token (perhaps expired: see `Principal.expired`), or None for an unknown one."""
        self.refresh()
        return self._by_hash.get(hash_token(token))

    def refresh(self, force: bool = False) -> None:
        """Read the token file again if it changed (looked at every RELOAD_EVERY seconds, or now if `force`)."""
        if self._source is None or (not force and time.monotonic() - self._looked < RELOAD_EVERY):
            return
        with self._lock:
            self._looked = time.monotonic()
            path, environ = self._source
            stamp = _stamp(path)
            if stamp == self._stamp and not force:
                return
            try:
                fresh = TokenRegistry.load(path, environ)
            except Exception as error:  # keep serving with the tokens read before; say why the file was not taken
                log.warning("token file not reloaded: %s", error)
                self._stamp = stamp
                return
            self._by_hash, self._stamp = fresh._by_hash, fresh._stamp
            log.info("token file reloaded: %d token(s)", len(self._by_hash))

    def add(self, digest: str, principal: Principal, where: str) -> None:
        """Register one hashed token; a hash listed twice is an error (two users would share a token)."""
        if digest in self._by_hash:
            raise TokenError(where, f"this token hash is already given to `{self._by_hash[digest].user}`",
                             "every token belongs to one user: make a new token with `rayon token USER`")
        self._by_hash[digest] = principal

    def users(self) -> list[str]:
        """Users with at least one token, sorted."""
        return sorted({p.user for p in self._by_hash.values()})

    def admins(self) -> set[str]:
        """Users holding an admin token."""
        return {p.user for p in self._by_hash.values() if p.admin}

    @classmethod
    def load(cls, path: str | Path | None = None, environ: Mapping[str, str] | None = None) -> TokenRegistry:
        """Tokens from the file (if given) and from `$RAYON_TOKENS` (if set)."""
        registry = cls()
        env = dict(os.environ if environ is None else environ)
        if path is not None:
            registry._source, registry._stamp, registry._looked = (path, env), _stamp(path), time.monotonic()
            for digest, principal, where in read_token_file(path):
                registry.add(digest, principal, where)
        for digest, principal, where in parse_env_tokens(env.get(ENV_TOKENS, "")):
            registry.add(digest, principal, where)
        return registry


def _stamp(path: str | Path) -> tuple[float, int] | None:
    """The file's modification time and size, or None when it cannot be seen."""
    try:
        status = Path(path).stat()
    except OSError:
        return None
    return status.st_mtime, status.st_size


def _principal(user: AnyType, role: AnyType, where: str, expires: AnyType = None) -> Principal:
    """A checked user, role and expiry."""
    if not isinstance(user, str) or not _USER.fullmatch(user):
        raise TokenError(where, f"`user` must be a user name (letters, digits, `_ . @ -`), got {user!r}")
    if role not in ROLES:
        hint = did_you_mean(str(role), ROLES)
        raise TokenError(where, f"unknown role {role!r}; choose one of {', '.join(ROLES)}", hint)
    return Principal(user, role, _expiry(expires, where))


def _expiry(value: AnyType, where: str) -> datetime | None:
    """A checked `expires` time (ISO-8601 with a zone), or None."""
    if value is None:
        return None
    try:
        return value if isinstance(value, datetime) and value.tzinfo else units.read_instant(str(value))
    except ValueError as exc:
        raise TokenError(where, f"`expires`: {exc}", "for example `expires: 2026-12-24T00:00:00Z`") from None


def _digest(value: AnyType, where: str) -> str:
    """A checked `sha256:HEX` hash (tokens themselves are never accepted in a file)."""
    text = value.strip().lower() if isinstance(value, str) else ""
    algorithm, _, hexdigest = text.partition(":")
    if algorithm != ALGORITHM or not _HEX.fullmatch(hexdigest):
        shown = "a token, not a hash" if isinstance(value, str) and value.startswith(TOKEN_PREFIX) else repr(value)
        raise TokenError(where, f"`hash` must be `sha256:` and 64 hex digits, got {shown}",
                         "store only hashes: `rayon token USER --tokens FILE` adds one and prints the token once")
    return text


def read_token_file(path: str | Path) -> list[tuple[str, Principal, str]]:
    """The (hash, principal, place) entries of a token file."""
    name = str(path)
    try:
        data = config.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise TokenError(name, f"cannot read the token file: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise TokenError(name, f"the token file is not UTF-8 text (byte {exc.start})") from None
    except yaml.YAMLError as exc:
        raise TokenError(name, f"not valid YAML: {exc}") from None
    if data is None:
        return []
    if not isinstance(data, dict) or not isinstance(data.get("tokens", []), list) or set(data) - {"tokens"}:
        raise TokenError(name, "a token file is a mapping with one key, `tokens`, holding a list of entries",
                         "tokens: [{user: alice, role: user, hash: \"sha256:...\"}]")
    return [_file_entry(item, f"{name}: tokens[{index}]") for index, item in enumerate(data.get("tokens") or [])]


def _file_entry(item: AnyType, where: str) -> tuple[str, Principal, str]:
    if not isinstance(item, dict):
        raise TokenError(where, f"an entry is a mapping {{user, role, hash}}, got {item!r}")
    unknown = sorted(str(key) for key in item if key not in FIELDS)  # keys of any type: `1: x`, `[a]: b`
    if unknown:
        raise TokenError(where, f"unknown field `{unknown[0]}`", did_you_mean(str(unknown[0]), FIELDS))
    principal = _principal(item.get("user"), item.get("role", "user"), where, item.get("expires"))
    return _digest(item.get("hash"), where), principal, where


def parse_env_tokens(text: str) -> list[tuple[str, Principal, str]]:
    """The entries of `$RAYON_TOKENS`: `USER:ROLE:sha256:HEX`, separated by commas or whitespace."""
    entries = []
    for index, entry in enumerate(e for e in re.split(r"[,\s]+", text.strip()) if e):
        where = f"${ENV_TOKENS} entry {index + 1}"
        user, _, rest = entry.partition(":")
        role, _, digest = rest.partition(":")
        entries.append((_digest(digest, where), _principal(user, role, where), where))
    return entries


def append_token(path: str | Path, user: str, role: str, expires: datetime | None = None) -> str:
    """Make a token for the user, add its hash to the token file (created owner-only), and return the token."""
    principal = _principal(user, role, str(path), expires)
    file = Path(path)
    existing: Iterable[tuple[str, Principal, str]] = read_token_file(file) if file.exists() else []
    token = new_token()
    entries = [_entry(digest, p) for digest, p, _ in existing]
    entries.append(_entry(hash_token(token), principal))
    text = "# rayon API tokens: hashes only; `rayon token USER --tokens FILE` adds one.\n" + \
        yaml.safe_dump({"tokens": entries}, sort_keys=False, default_flow_style=None, width=200)
    file.parent.mkdir(parents=True, exist_ok=True)
    temporary = file.with_name(file.name + ".tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(text)
    os.replace(temporary, file)  # a reader never sees half a file
    return token


def _entry(digest: str, principal: Principal) -> dict[str, str]:
    """One token file entry."""
    entry = {"user": principal.user, "role": principal.role, "hash": digest}
    if principal.expires is not None:
        entry["expires"] = units.format_instant(principal.expires)
    return entry


def utcnow() -> datetime:
    """The wall clock, in UTC (tokens expire by it)."""
    return datetime.now(UTC)
