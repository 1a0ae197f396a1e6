"""Writes the bundle's .tar.gz (an edge): all or nothing — a temporary file beside it, renamed at the end."""

from __future__ import annotations

import contextlib
import io
import os
import stat
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path

from logphase.bundle.build import Member
from logphase.errors import LogphaseError, UsageError


class OutputError(LogphaseError):
    """The bundle cannot be written where -o says: no such folder, not writable, a folder, a device."""


def check_output(path: Path, *, inputs: Sequence[str] = (), force: bool = False) -> None:
    """Refuse an output that would destroy something, before any work is done (and again just
    before the bundle is renamed into place): an input of this bundle (a log, a dump, a pack: by
    inode, so a hard link or a symlink to one is caught), a directory, a device or anything else
    that is not a regular file, or an existing file unless `force`."""
    folder = path.parent
    try:
        target = os.stat(path)  # follows a symlink: what it points at is what matters
    except FileNotFoundError:
        target = None  # nothing there, or a dangling symlink: the rename replaces the link only
    except OSError as exc:
        raise OutputError(
            f"{path}: cannot check: {exc.strerror}", hint="write the bundle elsewhere with -o FILE"
        ) from None
    if target is not None:
        if stat.S_ISDIR(target.st_mode):
            raise OutputError(f"{path}: is a directory", hint=f"name a file: -o {path / 'bundle.tar.gz'}")
        if not stat.S_ISREG(target.st_mode):
            raise OutputError(
                f"{path}: not a regular file (a device, a pipe or a socket): a bundle is never written over one",
                hint="name a new file with -o FILE",
            )
        for name in inputs:
            if _same_file(target, name):
                raise UsageError(
                    f"{path}: is an input of this bundle ({name}): writing the bundle there would destroy it",
                    hint="name another file with -o FILE",
                )
        if not force:
            raise UsageError(
                f"{path}: already exists", hint="name another file with -o FILE, or replace it with --force"
            )
    if not folder.is_dir():
        raise OutputError(f"{folder}: no such folder", hint="create it first, or write the bundle elsewhere with -o")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"{folder}: not writable", hint="write the bundle elsewhere with -o FILE")


def input_paths(logs: Sequence[str], dump_files: Sequence[str], packs: Sequence[Path]) -> list[str]:
    """The files a bundle reads (a folder of packs: each file in it)."""
    paths = [*(log for log in logs if log != "-"), *dump_files]
    for pack in packs:
        paths.extend(map(str, pack.rglob("*")) if pack.is_dir() else [str(pack)])
    return paths


def _same_file(target: os.stat_result, name: str) -> bool:
    try:
        other = os.stat(name)
    except OSError:
        return False
    return (other.st_dev, other.st_ino) == (target.st_dev, target.st_ino)


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
    check_output(path, inputs=inputs, force=force)
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
        # checked again: the analysis took a while, and what -o names may have changed meanwhile
        check_output(path, inputs=inputs, force=force)
        _put_in_place(Path(temporary), path, force=force)
    except FileExistsError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise UsageError(
            f"{path}: appeared while the bundle was made", hint="name another file with -o FILE, or use --force"
        ) from None
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


def _put_in_place(temporary: Path, path: Path, *, force: bool) -> None:
    if force:
        os.replace(temporary, path)
        return
    try:
        os.link(temporary, path)  # never replaces: EEXIST when something is there
    except FileExistsError:
        raise
    except OSError:  # a file system without hard links: the check just made is what we have
        os.replace(temporary, path)
        return
    os.unlink(temporary)
