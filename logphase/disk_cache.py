"""One folder of logphase's on-disk cache: entries keyed by what they were built from, checked before use.

The CLI chooses the folder (`$XDG_CACHE_HOME/logphase/…`); the library alone writes nothing. An
entry is `magic` (what it holds, and the format's version), the sha256 of the payload, the payload:
a damaged or foreign file is never used, only removed and built again. Every failure to read or
write is a miss: a cache that cannot be written (a read-only home) only costs the next run its build.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

DIGEST_BYTES = 32  # sha256 of the payload, right after the magic


@dataclass(frozen=True)
class DiskCache:
    """Entries of one kind in one folder; at most `keep` of them, the least recently written go first."""

    folder: Path
    magic: bytes  # one line: what the entries hold and the format's version (another format: another key)
    keep: int

    def key(self, parts: Iterable[bytes]) -> str:
        """The entry name of what was built from `parts` (each length-prefixed: no two lists collide)."""
        digest = hashlib.sha256(self.magic)
        for part in parts:
            digest.update(b"%d\n" % len(part))
            digest.update(part)
        return digest.hexdigest()

    def load(self, key: str) -> bytes | None:
        """The payload stored under `key`, or None when it is missing or damaged (then removed)."""
        path = self.folder / key
        try:
            data = path.read_bytes()
        except OSError:
            return None
        head = len(self.magic) + DIGEST_BYTES
        digest, payload = data[len(self.magic) : head], data[head:]
        if data.startswith(self.magic) and hashlib.sha256(payload).digest() == digest:
            return payload
        self.remove(key)
        return None

    def store(self, key: str, payload: bytes) -> None:
        """Write atomically: a reader sees the old file or the whole new one, never half of one."""
        import tempfile  # only a run that builds something writes: a warm run does not import it

        temporary: str | None = None
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=self.folder, prefix=".tmp-", delete=False) as out:
                temporary = out.name
                out.write(self.magic + hashlib.sha256(payload).digest() + payload)
            os.replace(temporary, self.folder / key)
            temporary = None
            self._prune()
        except OSError:
            pass
        finally:
            if temporary is not None:  # a full disk: no half-written file is left behind
                with contextlib.suppress(OSError):
                    os.unlink(temporary)

    def remove(self, key: str) -> None:
        with contextlib.suppress(OSError):  # another process may have removed it, or the folder is read-only
            (self.folder / key).unlink()

    def _prune(self) -> None:
        entries = sorted(
            (p for p in self.folder.iterdir() if not p.name.startswith(".")), key=lambda p: p.stat().st_mtime
        )
        for path in entries[: max(0, len(entries) - self.keep)]:
            self.remove(path.name)
