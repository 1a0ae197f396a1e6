"""What the fast path keeps between runs, where the caller names a folder: scan plans and compiled
scanner databases. Passed down explicitly (no module state): two scans with other folders, or none,
can run in one process."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from logphase.disk_cache import DiskCache
from logphase.logs.fast.cache import ScannerCache
from logphase.logs.fast.plan import plan_cache
from logphase.logs.fast.scanners import scanner_cache


@dataclass(frozen=True)
class FastCaches:
    plans: DiskCache | None = None
    scanners: ScannerCache | None = None

    @classmethod
    def at(cls, folder: Path | None) -> FastCaches:
        """The caches under `folder` (the CLI's `$XDG_CACHE_HOME/logphase`); None: none, everything
        built afresh and nothing written."""
        if folder is None:
            return cls()
        return cls(plans=plan_cache(folder / "plans"), scanners=scanner_cache(folder / "scanners"))
