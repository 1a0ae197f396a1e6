"""ChunkLines: where the lines of one chunk of a source's bytes start and end, and their numbers (pure)."""

from __future__ import annotations


class ChunkLines:
    """One chunk of a source's bytes as the fast path walks it: `buf` up to `end` (whole lines), `pos`
    the first line not yet handed over, its line numbers counted from `_number_cache` (an offset
    and the number of the line that starts there)."""

    buf: bytes
    end: int
    pos: int
    _number_cache: tuple[int, int]

    def _number(self, offset: int) -> int:
        """The line number of the line that starts at `offset` (newlines counted in C)."""
        known, number = self._number_cache
        if offset >= known:
            number += self.buf.count(b"\n", known, offset)
        else:
            number -= self.buf.count(b"\n", offset, known)
        self._number_cache = (offset, number)
        return number

    def _line_end(self, offset: int) -> int:
        end = self.buf.find(b"\n", offset)
        return self.end if end < 0 or end > self.end else end

    def _line_start(self, offset: int) -> int:
        return self.buf.rfind(b"\n", 0, offset) + 1

    def _previous(self, offset: int) -> int:
        """The start of the line before the one at `offset`."""
        return self.buf.rfind(b"\n", 0, max(0, offset - 1)) + 1
