"""Properties of the sniffer and the unwrapper: random text wrapped and read back is the text; nothing a
user pastes makes them raise."""

from __future__ import annotations

import io
import random
from datetime import datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from logphase.logs.envelope import ENVELOPES, Envelopes, Unwrapper, sniff
from logphase.logs.reader import LogSource, read_lines, sniff_bytes
from tests.paste.wrappers import WRAPPERS

# Log-like lines: what a server prints (no tab, no `|`, no control bytes), starting with a capital.
LINE = st.from_regex(r"[A-Z][A-Za-z0-9 .,:;=()\[\]/_'%-]{0,60}", fullmatch=True)
# A hard wrap is left out: a line exactly as long as the column, or a rest that starts the way its line
# did, cannot be told from the log's own lines (tests/paste/test_envelope.py has the wraps it joins). Empty
# leading columns and an indented code block too: a column no listed envelope names is learned from what the
# packs read, and random text is none of theirs (tests/paste/test_learned_columns.py reads them with the packs).
ROUND_TRIP = [wrapper for wrapper in WRAPPERS if wrapper.name not in ("hard-wrap", "empty-columns", "indented-code")]


def read_back(data: bytes) -> list[str]:
    return [line.text for line in read_lines(LogSource(name="pasted", open_stream=lambda: io.BytesIO(data)))]


@settings(max_examples=25, deadline=None)
@given(lines=st.lists(LINE, min_size=3, max_size=30), seed=st.integers(0, 2**32))
def test_random_text_wrapped_and_read_back_is_the_text(lines: list[str], seed: int) -> None:
    # GIVEN random log lines written one second apart
    start = datetime(2025, 3, 8, 12, 0, 0)
    times = [start + timedelta(seconds=i) for i in range(len(lines))]
    for wrapper in ROUND_TRIP:
        # WHEN wrapped by each wrapper and read back
        data = wrapper.generate(lines, random.Random(seed), times)
        # THEN the lines are the text, in order
        assert read_back(data) == lines, wrapper.name


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=4000))
def test_arbitrary_bytes_never_raise(data: bytes) -> None:
    # GIVEN any bytes WHEN sniffed and read THEN no exception, and every line is text
    sniff_bytes(data)
    assert all(isinstance(text, str) for text in read_back(data))


@settings(max_examples=200, deadline=None)
@given(head=st.lists(st.text(max_size=80), max_size=20), body=st.lists(st.text(max_size=300), max_size=20))
def test_any_text_through_any_envelopes_never_raises(head: list[str], body: list[str]) -> None:
    # GIVEN any text sniffed, and any text through every envelope at once (hard-wrapped too)
    sniff(head)
    unwrapper = Unwrapper(Envelopes(ENVELOPES, wrap_width=80, ranks_apart=True))
    # WHEN unwrapped THEN no exception, and every line out is text
    out = [u for number, text in enumerate(body) for u in unwrapper.feed(number, text)] + unwrapper.end()
    assert all(isinstance(u.text, str) for u in out)
