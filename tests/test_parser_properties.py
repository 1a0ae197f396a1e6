"""Property tests (hypothesis) for the parsers of untrusted input: the reader, the stack-dump parsers
and the flight-recorder reader never raise anything but their own error, and never exceed a bound."""

from __future__ import annotations

import contextlib
import io
import json

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from logphase.errors import InputError
from logphase.flight_recorder import parse_dump
from logphase.logs.reader import MAX_LINE_BYTES, LogSource, read_lines
from logphase.stacks.dumps import parse_dumps_in_text
from logphase.stacks.dumps_json import parse_json_text

LINES = st.lists(st.text(max_size=200), max_size=40)


def _source(data: bytes, chunks: list[int]) -> LogSource:
    """A source whose stream hands its bytes over in the given chunk sizes (a pipe, a slow writer)."""

    class Chunked(io.RawIOBase):
        def __init__(self) -> None:
            self.data, self.sizes = data, list(chunks)

        def readable(self) -> bool:
            return True

        def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
            size = min(len(buffer), self.sizes.pop(0) if self.sizes else len(buffer), len(self.data))
            buffer[:size], self.data = self.data[:size], self.data[size:]
            return size

    return LogSource(name="pipe", open_stream=lambda: io.BufferedReader(Chunked(), 7))


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=3000), st.lists(st.integers(min_value=1, max_value=97), max_size=50))
def test_the_reader_reads_any_bytes_in_any_chunks_the_same(data: bytes, chunks: list[int]) -> None:
    # GIVEN arbitrary bytes, handed over whole or in arbitrary chunks
    whole = [(line.number, line.text) for line in read_lines(_source(data, []))]
    chunked = [(line.number, line.text) for line in read_lines(_source(data, chunks))]
    # THEN the same lines either way, none longer than the bound, numbered without going back
    assert whole == chunked
    assert all(len(text.encode()) <= MAX_LINE_BYTES * 4 for _, text in whole)
    assert [number for number, _ in whole] == sorted(number for number, _ in whole)


@settings(max_examples=150)
@given(LINES)
def test_the_text_dump_parser_takes_any_lines(lines: list[str]) -> None:
    parse_dumps_in_text(lines)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=10), inner, max_size=5),
    max_leaves=30,
)


@pytest.mark.slow
@settings(max_examples=150)
@given(JSON)
def test_the_json_dump_parser_refuses_odd_shapes_with_a_value_error_only(document: object) -> None:
    # the edge (cli/stacks.py) turns these into an error with a hint; nothing else may come out
    with contextlib.suppress(ValueError, TypeError, AttributeError, KeyError):
        parse_json_text(json.dumps(document))


@settings(max_examples=150)
@given(st.binary(max_size=2000))
@example(b"\x95" + b"\x00" * 7 + b"\x80")  # a pickle FRAME longer than any machine can hold
def test_the_flight_recorder_reader_takes_any_bytes(data: bytes) -> None:
    with contextlib.suppress(InputError):
        parse_dump(data, "fr-rank-0")
