"""Reading a browser's PNG screenshot without an imaging library: its size, and its pixels row by row."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CHANNELS = {2: 3, 6: 4}  # colour types: RGB, RGBA (what Chromium writes), 8 bits each


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) from the IHDR chunk, which follows the signature."""
    head = path.read_bytes()[:24]
    assert head[:8] == SIGNATURE, "not a PNG"
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def png_rows(path: Path) -> Iterator[list[tuple[int, int, int]]]:
    """Each row's (r, g, b) pixels, top to bottom (PNG's five row filters undone)."""
    data = path.read_bytes()
    assert data[:8] == SIGNATURE, "not a PNG"
    offset, idat, header = 8, b"", b""
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind, body = data[offset + 4 : offset + 8], data[offset + 8 : offset + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
        offset += 12 + length
    width, height, depth, colour_type, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour_type in _CHANNELS and interlace == 0, "an 8-bit RGB(A), non-interlaced PNG"
    channels = _CHANNELS[colour_type]
    stride = width * channels
    raw = zlib.decompress(idat)
    previous = bytearray(stride)
    for row in range(height):
        start = row * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        _unfilter(kind, line, previous, channels)
        yield [(line[i], line[i + 1], line[i + 2]) for i in range(0, stride, channels)]
        previous = line


def _unfilter(kind: int, line: bytearray, previous: bytearray, channels: int) -> None:
    if kind == 1:  # Sub
        for i in range(channels, len(line)):
            line[i] = (line[i] + line[i - channels]) & 0xFF
    elif kind == 2:  # Up
        for i in range(len(line)):
            line[i] = (line[i] + previous[i]) & 0xFF
    elif kind == 3:  # Average
        for i in range(len(line)):
            left = line[i - channels] if i >= channels else 0
            line[i] = (line[i] + (left + previous[i]) // 2) & 0xFF
    elif kind == 4:  # Paeth
        for i in range(len(line)):
            a = line[i - channels] if i >= channels else 0
            b = previous[i]
            c = previous[i - channels] if i >= channels else 0
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
