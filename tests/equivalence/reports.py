"""The JSON report of `analyze --post-mortem` over some files, and the plain path's report of the same
files computed once per session: the reference every "same report under X" check compares with."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from logphase import pipeline
from logphase import scan as scanning
from logphase.logs.reader import open_sources
from logphase.packs import PackSet
from logphase.report.formats.json import JsonFormat

AS_OF = datetime(2030, 1, 1)

_PLAIN: dict[tuple[tuple[tuple[Path, int, int], ...], int], str] = {}


def analysed(paths: Sequence[Path], packs: PackSet, options: pipeline.Options) -> str:
    """The JSON report of the files read as one run, with `options`."""
    sources = open_sources([str(path) for path in paths], packs=packs)
    return JsonFormat().analysis(pipeline.report(sources, packs, options))


def plain(paths: Sequence[Path], packs: PackSet) -> str:
    """The plain path's report of the files (every line read): computed once per session for the same
    files (path, modification time and size) and head (scanning.feed.YEAR_LOOKAHEAD, which tests shorten)."""
    key = (tuple((path, path.stat().st_mtime_ns, path.stat().st_size) for path in paths), scanning.feed.YEAR_LOOKAHEAD)
    if key not in _PLAIN:
        _PLAIN[key] = analysed(paths, packs, pipeline.Options(as_of=AS_OF, post_mortem=True, fast=False))
    return _PLAIN[key]


def fast(paths: Sequence[Path], packs: PackSet) -> str:
    """The fast path's report of the files."""
    return analysed(paths, packs, pipeline.Options(as_of=AS_OF, post_mortem=True, fast=True))
