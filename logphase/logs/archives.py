"""Tar archives as sources: one pass over the members in order, each member then a byte range read on demand."""

from __future__ import annotations

import io
import os
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from typing import IO, TYPE_CHECKING, Any, cast

from logphase.errors import InputError
from logphase.logs.reader import CHUNK_BYTES, READ_ERRORS, SNIFF_BYTES, LogSource, refuse_binary, sniff_bytes

if TYPE_CHECKING:
    from logphase.packs import PackSet

# What walking an archive raises when it is broken: its stream's read errors and tarfile's own
# (raised only here: a member is then read as a byte range of a file)
ARCHIVE_ERRORS: tuple[type[BaseException], ...] = (*READ_ERRORS, tarfile.TarError)

# A compressed archive (or one on stdin) is unpacked once into one temporary file; past this it is
# refused (a small .tar.gz can hold terabytes of zeros).
MAX_UNPACKED_BYTES = 8 << 30


class _Bytes:
    """One open file the members are ranges of: the archive itself (uncompressed) or the temporary
    file it was unpacked into. One descriptor for any number of members; closed with its last user."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __del__(self) -> None:
        os.close(self.fd)

    def opener(self, start: int, size: int) -> Callable[[], IO[bytes]]:
        return lambda: cast(IO[bytes], io.BufferedReader(_Range(self, start, size), CHUNK_BYTES))


class _Range(io.RawIOBase):
    """Bytes [start, start + size) of a shared file, read with pread: members never share a position."""

    def __init__(self, data: _Bytes, start: int, size: int) -> None:
        self._data, self._start, self._size, self._at = data, start, size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._at, io.SEEK_END: self._size}[whence]
        self._at = max(0, min(self._size, base + offset))
        return self._at

    def tell(self) -> int:
        return self._at

    def readinto(self, buffer: Any) -> int:
        wanted = min(len(buffer), self._size - self._at)
        if wanted <= 0:
            return 0
        data = os.pread(self._data.fd, wanted, self._start + self._at)
        buffer[: len(data)] = data
        self._at += len(data)
        return len(data)


# A member as the pass over the archive finds it: its name, where its bytes are, and its first bytes.
_Found = tuple[str, int, int, bytes]


def tar_sources(
    name: str, open_archive: Callable[[], IO[bytes]], *, path: str | None, packs: PackSet | None = None
) -> list[LogSource]:
    """Each regular member of the archive is a log of its own (one per node or rank, typically).
    `path`: the archive's own file when it is an uncompressed tar (its members are read in place);
    otherwise the decompressed stream is unpacked once, in order, into one temporary file. A member's
    first bytes are judged (binary? an envelope?) as the pass finds it and then dropped: memory holds
    a few numbers per member, whatever the members' sizes."""
    sources = []
    try:
        if path is not None:
            data = _Bytes(os.open(path, os.O_RDONLY))
            found = _in_place(path, data)
        else:
            spool = tempfile.TemporaryFile()  # noqa: SIM115 - closed by _unpacked; its descriptor lives in _Bytes
            data = _Bytes(os.dup(spool.fileno()))
            found = _unpacked(name, open_archive(), spool)
        for member, start, size, head in found:
            label = f"{name}:{member}"
            refuse_binary(label, head)
            sources.append(
                LogSource(name=label, open_stream=data.opener(start, size), envelopes=sniff_bytes(head, packs=packs))
            )
    except ARCHIVE_ERRORS as exc:
        raise InputError(
            f"{name}: broken or truncated archive: {exc}", hint="check the archive, or re-create it"
        ) from None
    if not sources:
        raise InputError(f"{name}: the archive holds no files", hint="give the logs themselves, or an archive of them")
    return sources


def _members(archive: tarfile.TarFile) -> Iterator[tarfile.TarInfo]:
    """The archive's headers in order, without the list of all of them TarFile keeps as it reads."""
    kept = cast(Any, archive).members  # not in the type stubs; a list TarFile appends every header to
    while (info := archive.next()) is not None:
        kept.clear()
        yield info


def _in_place(path: str, data: _Bytes) -> Iterator[_Found]:
    """The headers read in one pass (an uncompressed tar reads no member's bytes to find the next)."""
    with tarfile.open(path, "r:") as archive:
        for info in _members(archive):
            if info.isfile():
                yield (
                    info.name,
                    info.offset_data,
                    info.size,
                    os.pread(data.fd, min(SNIFF_BYTES, info.size), info.offset_data),
                )


def _unpacked(name: str, stream: IO[bytes], spool: IO[bytes]) -> Iterator[_Found]:
    """One pass over a stream that cannot seek back (stdin, a compressed archive): every member's
    bytes go, in order, into one temporary file (one descriptor, whatever the number of members)."""
    written = 0
    try:
        with tarfile.open(fileobj=stream, mode="r|*") as archive:
            for info in _members(archive):
                extracted = archive.extractfile(info) if info.isfile() else None
                if extracted is None:
                    continue
                start = written
                head = b""
                while chunk := extracted.read(CHUNK_BYTES):
                    head = head or chunk[:SNIFF_BYTES]
                    written += len(chunk)
                    if written > MAX_UNPACKED_BYTES:
                        raise InputError(
                            f"{name}: over {MAX_UNPACKED_BYTES >> 30} GB unpacked: too big to read as it is",
                            hint="unpack it first and give the logs that matter (tar -xf ARCHIVE)",
                        )
                    spool.write(chunk)
                spool.flush()
                yield info.name, start, written - start, head
    finally:
        stream.close()
        spool.close()
