"""The on-disk cache of compiled scanner databases: keyed by their patterns and versions, checked before use."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from logphase import __version__
from logphase.disk_cache import DiskCache

MAGIC = b"logphase-scanner-db 1\n"
KEEP = 64  # databases kept (each distinct set of learned templates makes one); the oldest go first


@dataclass(frozen=True)
class ScannerCache:
    """A folder of compiled databases (the CLI passes `$XDG_CACHE_HOME/logphase/scanners`).
    `engine` names the compiler and its version: a database from another one is another key."""

    folder: Path
    engine: str

    @property
    def entries(self) -> DiskCache:
        return DiskCache(self.folder, MAGIC, KEEP)

    def key(self, patterns: Sequence[tuple[bytes, bool]]) -> str:
        parts = [__version__.encode(), self.engine.encode()]
        parts += [b"%d " % caseless + pattern for pattern, caseless in patterns]
        return self.entries.key(parts)

    def load(self, key: str) -> bytes | None:
        """The payload stored under `key`, or None when it is missing or damaged (then removed)."""
        return self.entries.load(key)

    def store(self, key: str, payload: bytes) -> None:
        """Write atomically; a cache that cannot be written only costs the next run its compile."""
        self.entries.store(key, payload)
