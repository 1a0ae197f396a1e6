"""The on-disk cache of compiled scanner databases: keyed by their patterns and versions, checked before use."""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from logphase import __version__

MAGIC = b"logphase-scanner-db 1\n"
DIGEST_BYTES = 32  # sha256 of the payload, right after MAGIC: a damaged file is never loaded
KEEP = 64  # databases kept (each distinct set of learned templates makes one); the oldest go first


@dataclass(frozen=True)
class ScannerCache:
    """A folder of compiled databases (the CLI passes `$XDG_CACHE_HOME/logphase/scanners`).
    `engine` names the compiler and its version: a database from another one is another key."""

    folder: Path
    engine: str

    def key(self, patterns: Sequence[tuple[bytes, bool]]) -> str:
        digest = hashlib.sha256(f"{MAGIC!r} {__version__} {self.engine}\n".encode())
        for pattern, caseless in patterns:
            digest.update(b"%d %d\n" % (len(pattern), caseless) + pattern)
        return digest.hexdigest()

    def load(self, key: str) -> bytes | None:
        """The payload stored under `key`, or None when it is missing or damaged (then removed)."""
        path = self.folder / key
        try:
            data = path.read_bytes()
        except OSError:
            return None
        head = len(MAGIC) + DIGEST_BYTES
        if data[: len(MAGIC)] == MAGIC and hashlib.sha256(data[head:]).digest() == data[len(MAGIC) : head]:
            return data[head:]
        self._remove(path)
        return None

    def store(self, key: str, payload: bytes) -> None:
        """Write atomically (a reader sees the old file or the whole new one); a cache that cannot
        be written only costs the next run its compile."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=self.folder, prefix=".tmp-", delete=False) as out:
                out.write(MAGIC + hashlib.sha256(payload).digest() + payload)
            os.replace(out.name, self.folder / key)
            self._prune()
        except OSError:
            return

    def _prune(self) -> None:
        entries = sorted(
            (p for p in self.folder.iterdir() if not p.name.startswith(".")), key=lambda p: p.stat().st_mtime
        )
        for path in entries[: max(0, len(entries) - KEEP)]:
            self._remove(path)

    @staticmethod
    def _remove(path: Path) -> None:
        with contextlib.suppress(OSError):  # another process may have removed it, or the folder is read-only
            path.unlink()
