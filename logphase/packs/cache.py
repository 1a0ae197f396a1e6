"""The on-disk cache of loaded packs: the checked, indexed PackSet of some pack files, keyed by their bytes.

A run with a warm cache unpickles its packs instead of parsing the TOML, checking every table
against the schema, checking a user pack's examples, deriving each rule's literals and indexing
the rules (~90 ms of a small log's analysis). The key holds everything the result depends on: each
file's path, trust and bytes, the load's options, the Python and logphase versions, the source of
the code that builds a PackSet (an edited checkout is another key), the regex engine's format (the
shipped regexes are stored compiled: packs/sre_code.py), and the `regex` module's version where a
user pack's regexes were checked with it.
"""

from __future__ import annotations

import hashlib
import io
import pickle
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from logphase import __version__, phases
from logphase.disk_cache import DiskCache
from logphase.packs.model import PackRegex, PackSet
from logphase.packs.sre_code import ENGINE

MAGIC = b"logphase-packs 2\n"  # 2: shipped regexes with their compiled code (packs/sre_code.py)
KEEP = 16  # pack sets kept (each set of pack files and options makes one); the oldest go first
# What a cached PackSet may hold: anything else in an entry means it is not one of ours.
PICKLED = {
    "logphase.packs.model": {
        "PackSet",
        "Pack",
        "PrefixRule",
        "Rule",
        "StallSignature",
        "FrameAnchor",
        "ServerArgsFormat",
        "IgnoreEntry",
        "NextSteps",
        "ModuleHint",
        "PackRegex",
    },
    "logphase.phases": {"Phase", "EventKind", "Role", "Verdict"},
}


@dataclass(frozen=True)
class PackFile:
    """One pack file as read for a load: shipped ones are `trusted` (their examples are not re-checked)."""

    path: Path
    trusted: bool
    data: bytes


@dataclass(frozen=True)
class PackCache:
    """A folder of loaded pack sets (the CLI passes `$XDG_CACHE_HOME/logphase/packs`)."""

    folder: Path

    @property
    def entries(self) -> DiskCache:
        return DiskCache(self.folder, MAGIC, KEEP)

    def key(self, files: Sequence[PackFile], options: str) -> str:
        parts = [__version__.encode(), sys.version.encode(), ENGINE.encode(), options.encode(), _code_digest()]
        if not all(file.trusted for file in files):
            import regex  # a user pack's regexes were checked by it

            parts.append(f"regex {regex.__version__}".encode())
        for file in files:
            parts += [str(file.path).encode(), b"%d" % file.trusted, file.data]
        return self.entries.key(parts)

    def load(self, key: str) -> PackSet | None:
        """The pack set stored under `key`; None when there is none, or the entry cannot be read back
        as one (then it is removed, and the caller's load stores a good one)."""
        payload = self.entries.load(key)
        if payload is None:
            return None
        try:
            loaded = _PackUnpickler(io.BytesIO(payload)).load()
        except Exception:  # a checksum that holds over what is no pack set: never trusted
            loaded = None
        if not isinstance(loaded, PackSet):
            self.entries.remove(key)
            return None
        return loaded

    def store(self, key: str, packs: PackSet) -> None:
        """Write it; a cache that cannot be written (read-only home) only costs the next run its load."""
        out = io.BytesIO()
        _PackPickler(out, protocol=pickle.HIGHEST_PROTOCOL).dump(packs)
        self.entries.store(key, out.getvalue())


class _PackPickler(pickle.Pickler):
    def reducer_override(self, obj: Any) -> Any:
        """Each shipped regex stored with its compiled code (assembled once per cache entry): a warm
        run builds the patterns its lines pick from their code (packs/sre_code.py)."""
        if type(obj) is PackRegex:
            obj.keep_code()
        return NotImplemented  # pickled as usual, its code in its state


class _PackUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if name in PICKLED.get(module, ()):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not part of a pack set")


def _code_digest() -> bytes:
    """The source of the modules whose code shapes a loaded PackSet (this package, the phases)."""
    digest = hashlib.sha256()
    try:
        for path in [*sorted(Path(__file__).parent.glob("*.py")), Path(phases.__file__)]:
            digest.update(path.read_bytes())
    except OSError:  # installed without its sources: the logphase version alone tells the code apart
        return b""
    return digest.digest()
