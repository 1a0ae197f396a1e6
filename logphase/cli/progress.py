"""Progress of a long read on stderr (bytes, rate, ETA): only on a terminal, only for big inputs."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, Any, cast

from logphase.logs.reader import LogSource

if TYPE_CHECKING:
    from tqdm import tqdm

# Below this a read takes well under a second or two: a bar would only flicker.
SHOW_ABOVE = 50 << 20


class ReadProgress:
    """Bytes read so far; the bar appears once the input is known (or seen) to be over SHOW_ABOVE."""

    def __init__(self, total: int | None, stream: IO[str]) -> None:
        self.total, self.stream = total, stream
        self.done = 0
        self.bar: tqdm[Any] | None = None

    def add(self, count: int) -> None:
        self.done += count
        if self.bar is not None:
            self.bar.update(count)
        elif (self.total or self.done) > SHOW_ABOVE:
            from tqdm import tqdm  # only a big read pays for the import

            self.bar = tqdm(
                total=self.total,
                initial=self.done,
                unit="B",
                unit_scale=True,
                unit_divisor=1024,
                desc="reading",
                file=self.stream,
                leave=False,
                dynamic_ncols=True,
            )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


class CountingStream:
    """A binary stream that tells `count` how many bytes each read returned."""

    def __init__(self, inner: IO[bytes], count: Callable[[int], None]) -> None:
        self.inner, self.count = inner, count

    def read(self, size: int = -1) -> bytes:
        data = self.inner.read(size)
        self.count(len(data))
        return data

    def read1(self, size: int = -1) -> bytes:
        read1 = getattr(self.inner, "read1", self.inner.read)
        data: bytes = read1(size)
        self.count(len(data))
        return data

    def readline(self, size: int = -1) -> bytes:
        data = self.inner.readline(size)
        self.count(len(data))
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)  # seek, close, fileno, …: the stream's own


@contextmanager
def progress_on_stderr(sources: Sequence[LogSource], stderr: IO[str] | None = None) -> Iterator[None]:
    """While the block runs, reading `sources` shows progress on stderr when it is a terminal."""
    stream = stderr if stderr is not None else sys.stderr
    if not stream.isatty():
        yield
        return
    progress = ReadProgress(total_bytes(sources), stream)
    for source in sources:
        source.open_stream = _counted(source.open_stream, progress.add)
    try:
        yield
    finally:
        progress.close()


def total_bytes(sources: Sequence[LogSource]) -> int | None:
    """The bytes the sources hold where each is a plain, uncompressed file (`modified` says so); else None."""
    if not sources or any(source.modified is None for source in sources):
        return None
    try:
        return sum(os.path.getsize(source.name) for source in sources)
    except OSError:
        return None


def _counted(opener: Callable[[], IO[bytes]], count: Callable[[int], None]) -> Callable[[], IO[bytes]]:
    def counted() -> IO[bytes]:
        return cast(IO[bytes], CountingStream(opener(), count))  # an IO[bytes] in all the reader asks of it

    return counted
