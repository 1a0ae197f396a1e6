"""Writing an output file (an edge): never over an input, a folder or a device; all or nothing."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import BinaryIO

from logphase.errors import LogphaseError, UsageError


class OutputError(LogphaseError):
    """An output cannot be written where it is named: no such folder, not writable, a folder, a device."""


def check_output(path: Path, *, inputs: Sequence[str] = (), force: bool = False, option: str = "-o FILE") -> None:
    """Refuse an output that would destroy something, before any work is done (and again just
    before the file is renamed into place): an input of this command (by inode, so a hard link or a
    symlink to one is caught), a directory, a device or anything else that is not a regular file,
    or an existing file unless `force`. `option` is how a hint names the option to change."""
    folder = path.parent
    try:
        target = os.stat(path)  # follows a symlink: what it points at is what matters
    except FileNotFoundError:
        target = None  # nothing there, or a dangling symlink: the rename replaces the link only
    except OSError as exc:
        raise OutputError(f"{path}: cannot check: {exc.strerror}", hint=f"write elsewhere with {option}") from None
    if target is not None:
        if stat.S_ISDIR(target.st_mode):
            raise OutputError(f"{path}: is a directory", hint=f"name a file with {option}")
        if not stat.S_ISREG(target.st_mode):
            raise OutputError(
                f"{path}: not a regular file (a device, a pipe or a socket): an output is never written over one",
                hint=f"name a new file with {option}",
            )
        for name in inputs:
            if _same_file(target, name):
                raise UsageError(
                    f"{path}: is an input of this command ({name}): writing there would destroy it",
                    hint=f"name another file with {option}",
                )
        if not force:
            raise UsageError(
                f"{path}: already exists", hint=f"name another file with {option}, or replace it with --force"
            )
    if not folder.is_dir():
        raise OutputError(f"{folder}: no such folder", hint=f"create it first, or write elsewhere with {option}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"{folder}: not writable", hint=f"write elsewhere with {option}")


def write_atomically(
    path: Path,
    write: Callable[[BinaryIO], None],
    *,
    inputs: Sequence[str] = (),
    force: bool = False,
    option: str = "-o FILE",
) -> int:
    """`write` into a temporary file beside `path` (mode 0600, as mkstemp makes it), then put it in
    place; returns its size. On any failure nothing is left at `path` (nor beside it), and what was
    there is untouched. Without `force` the file is linked into place (fails if a file appeared there
    meanwhile), else renamed over it."""
    check_output(path, inputs=inputs, force=force, option=option)
    try:
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    except OSError as exc:
        raise OutputError(f"{path}: cannot write: {exc.strerror}", hint=f"write elsewhere with {option}") from None
    try:
        with os.fdopen(handle, "wb") as raw:
            write(raw)
        # checked again: the work took a while, and what the path names may have changed meanwhile
        check_output(path, inputs=inputs, force=force, option=option)
        _put_in_place(Path(temporary), path, force=force)
    except FileExistsError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise UsageError(
            f"{path}: appeared while it was being written", hint=f"name another file with {option}, or use --force"
        ) from None
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise OutputError(
            f"{path}: cannot write: {exc.strerror}", hint=f"check the disk, or write elsewhere with {option}"
        ) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return path.stat().st_size


def _same_file(target: os.stat_result, name: str) -> bool:
    try:
        other = os.stat(name)
    except OSError:
        return False
    return (other.st_dev, other.st_ino) == (target.st_dev, target.st_ino)


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
