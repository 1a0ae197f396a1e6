"""Writes the bundle's .tar.gz (an edge): all or nothing — a temporary file beside it, renamed at the end."""

from __future__ import annotations

import contextlib
import io
import os
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path

from logphase.bundle.build import Member
from logphase.errors import LogphaseError


class OutputError(LogphaseError):
    """The bundle cannot be written where -o says: no such folder, not writable, a folder."""


def check_output(path: Path) -> None:
    """Refuse an output the bundle could not be written to, before any work is done."""
    folder = path.parent
    if path.is_dir():
        raise OutputError(f"{path}: is a directory", hint=f"name a file: -o {path / 'bundle.tar.gz'}")
    if not folder.is_dir():
        raise OutputError(f"{folder}: no such folder", hint="create it first, or write the bundle elsewhere with -o")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"{folder}: not writable", hint="write the bundle elsewhere with -o FILE")


def write_tar_gz(path: Path, top: str, members: Sequence[Member], mtime: float) -> int:
    """The members under the folder `top`, as `path` (mode 0600, as mkstemp makes it: a bundle
    made with --no-redact holds secrets); returns its size. On any failure nothing is
    left at `path` (nor beside it)."""
    check_output(path)
    try:
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    except OSError as exc:
        raise OutputError(
            f"{path}: cannot write: {exc.strerror}", hint="write the bundle elsewhere with -o FILE"
        ) from None
    try:
        with os.fdopen(handle, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz") as archive:
            for member in members:
                info = tarfile.TarInfo(f"{top}/{member.name}")
                info.size = len(member.data)
                info.mtime = int(mtime)
                info.mode = 0o644
                archive.addfile(info, io.BytesIO(member.data))
        os.replace(temporary, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise OutputError(
            f"{path}: cannot write: {exc.strerror}", hint="check the disk, or write elsewhere with -o"
        ) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return path.stat().st_size
