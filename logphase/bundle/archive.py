"""Writes the bundle's .tar.gz (an edge): all or nothing — a temporary file beside it, renamed at the end."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from logphase.bundle.build import Member
from logphase.outputs import write_atomically


def input_paths(logs: Sequence[str], dump_files: Sequence[str], packs: Sequence[Path]) -> list[str]:
    """The files a bundle reads (a folder of packs: each file in it)."""
    paths = [*(log for log in logs if log != "-"), *dump_files]
    for pack in packs:
        paths.extend(map(str, pack.rglob("*")) if pack.is_dir() else [str(pack)])
    return paths


def write_tar_gz(
    path: Path,
    top: str,
    members: Sequence[Member],
    mtime: float,
    *,
    inputs: Sequence[str] = (),
    force: bool = False,
) -> int:
    """The members under the folder `top`, as `path` (mode 0600, as mkstemp makes it: a bundle
    made with --no-redact holds secrets); returns its size. On any failure nothing is
    left at `path` (nor beside it), and what was there is untouched. Without `force` the bundle
    is linked into place (fails if a file appeared there meanwhile), else renamed over it."""

    def write(raw: BinaryIO) -> None:
        with tarfile.open(fileobj=raw, mode="w:gz") as archive:
            for member in members:
                info = tarfile.TarInfo(f"{top}/{member.name}")
                info.size = len(member.data)
                info.mtime = int(mtime)
                info.mode = 0o644
                archive.addfile(info, io.BytesIO(member.data))

    return write_atomically(path, write, inputs=inputs, force=force)
