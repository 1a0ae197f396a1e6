"""The inventory's data: templates merged across releases, as one gzipped JSON-lines file per system.

Each line is one template (`kind`, `level`, `text`) with the releases it appears in and where it
was in the newest of them (`file`, `line`). Encoding and decoding are pure (bytes in, bytes out)."""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from logphase.inventory.templates import Template

RELEASE_PART = re.compile(r"(\d+)|([a-z]+)")


@dataclass(frozen=True)
class InventoryEntry:
    """One template and the releases that print it."""

    system: str
    kind: str
    level: str
    text: str
    file: str
    line: int
    releases: tuple[str, ...]


def release_key(release: str) -> tuple[tuple[int, str], ...]:
    """Orders releases as versions: `0.4.10.post2` after `0.4.6.post5`, `0.5.0rc1` before `0.5.0`."""
    parts: list[tuple[int, str]] = []
    for number, word in RELEASE_PART.findall(release.lower()):
        if number:
            parts.append((int(number), "~"))  # a number sorts after any pre-release word
        else:
            parts.append((-1 if word in ("rc", "a", "b", "dev") else 1, word))
    parts.append((0, ""))  # the end: after a pre-release word (`rc`), before a `post`
    return tuple(parts)


def merge_releases(system: str, found: Mapping[str, Iterable[Template]]) -> list[InventoryEntry]:
    """Templates of several releases (release → its templates) → one entry per distinct template,
    with every release it appears in and its place in the newest one."""
    releases: dict[tuple[str, str, str], set[str]] = {}
    where: dict[tuple[str, str, str], tuple[tuple[tuple[int, str], ...], str, int]] = {}
    for release, templates in found.items():
        order = release_key(release)
        for template in templates:
            key = (template.kind, template.level, template.text)
            releases.setdefault(key, set()).add(release)
            if key not in where or where[key][0] < order:
                where[key] = (order, template.file, template.line)
    entries = [
        InventoryEntry(
            system,
            kind,
            level,
            text,
            where[(kind, level, text)][1],
            where[(kind, level, text)][2],
            tuple(sorted(seen, key=release_key)),
        )
        for (kind, level, text), seen in releases.items()
    ]
    return sorted(entries, key=lambda e: (e.file, e.line, e.kind, e.level, e.text))


def encode(entries: Iterable[InventoryEntry]) -> bytes:
    """Entries → gzipped JSON lines (mtime 0: the same data gives the same bytes)."""
    lines = [
        json.dumps(
            {
                "kind": e.kind,
                "level": e.level,
                "text": e.text,
                "file": e.file,
                "line": e.line,
                "releases": list(e.releases),
            },
            ensure_ascii=False,
            separators=(",", ":"),
        )
        for e in entries
    ]
    return gzip.compress(("\n".join(lines) + "\n").encode("utf-8"), mtime=0)


def decode(system: str, data: bytes) -> list[InventoryEntry]:
    entries = []
    for raw in gzip.decompress(data).decode("utf-8").splitlines():
        if not raw.strip():
            continue
        item = json.loads(raw)
        entries.append(
            InventoryEntry(
                system,
                item["kind"],
                item["level"],
                item["text"],
                item["file"],
                int(item["line"]),
                tuple(item["releases"]),
            )
        )
    return entries


def releases_of(entries: Iterable[InventoryEntry]) -> list[str]:
    return sorted({release for entry in entries for release in entry.releases}, key=release_key)
