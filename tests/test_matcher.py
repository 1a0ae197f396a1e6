"""SourceMatcher.fork: the copy the fast path probes with carries every field and shares no state."""

from __future__ import annotations

import copy
from dataclasses import fields
from datetime import date, datetime, timedelta

from logphase.logs.matcher import FRESH_ON_FORK, SHARED_ON_FORK, SourceMatcher
from logphase.logs.reader import Line
from logphase.packs import PackSet
from tests.conftest import FIXTURES

REFERENCE = datetime(2030, 1, 1)
# PP2 x TP4 SGLang startup (192 lines); line 169 opens a traceback whose frames (170-182) place it in
# weight_load; the OOM at 190 ends it, the main process follows.
LOG = FIXTURES / "logs" / "sglang" / "pp2-tp4-oom-weight-load.log"
# Stamps of other clocks: line 165 a day behind (ignored); the envelopes of lines 180 and 182 a year
# ahead (each held until the next line shows the log's clock).
DAY_BEHIND = 165
INSIDE_THE_TRACEBACK = 182
# the caller's: the clock's offsets and first date, read from the log's head, are in `clock`, which reading moves
CONSTRUCTOR_INPUTS = {"packs", "reference"}


def lines(first: int, last: int) -> list[Line]:
    """The log's lines as read out of an envelope whose clock (docker logs -t) runs apart from the
    log's own, so that the matcher's envelope state is exercised too."""
    texts = LOG.read_text().splitlines()
    texts[DAY_BEHIND - 1] = texts[DAY_BEHIND - 1].replace("2025-12-19", "2025-12-18", 1)
    envelope = datetime(2029, 12, 31, 23, 0, 0)
    year = timedelta(days=365)  # 180: held, 181: back on the log's clock (180 set aside), 182: held
    ahead = {INSIDE_THE_TRACEBACK - 2: year, INSIDE_THE_TRACEBACK: year}
    return [
        Line(number, texts[number - 1], 0, stamp=envelope + timedelta(seconds=number) + ahead.get(number, timedelta()))
        for number in range(first, last + 1)
    ]


def read_into_the_traceback(packs: PackSet) -> SourceMatcher:
    matcher = SourceMatcher(packs, REFERENCE)
    for line in lines(1, INSIDE_THE_TRACEBACK):
        matcher.match_line(line)
    return matcher


def immutable(value: object) -> bool:
    return value is None or isinstance(value, (int, float, str, date, timedelta, tuple, frozenset))


def test_every_field_holds_state_in_the_sample(packs: PackSet) -> None:
    # GIVEN a matcher that read an SGLang log into the middle of a traceback's frames
    matcher = read_into_the_traceback(packs)
    # WHEN its fields are compared with a fresh matcher's
    fresh = SourceMatcher(packs, REFERENCE)
    unset = [f.name for f in fields(SourceMatcher) if getattr(matcher, f.name) == getattr(fresh, f.name)]
    # THEN only the constructor's inputs are the same: every other field (a new one too) is exercised
    assert set(unset) == CONSTRUCTOR_INPUTS
    assert matcher.system == "sglang"


def test_a_fork_carries_every_field(packs: PackSet) -> None:
    # GIVEN the matcher inside the traceback
    matcher = read_into_the_traceback(packs)
    # WHEN it is forked
    fork = matcher.fork()
    # THEN every field is equal in the fork, the system vote's winner included, but the ranks seen: its own
    carried = [f.name for f in fields(SourceMatcher) if f.name not in FRESH_ON_FORK]
    assert {name: getattr(fork, name) for name in carried} == {name: getattr(matcher, name) for name in carried}
    assert matcher.ranks_seen and fork.ranks_seen == set()
    assert fork.system == "sglang"
    # AND no mutable field is the same object, but the packs and their memo
    shared = [
        f.name
        for f in fields(SourceMatcher)
        if getattr(fork, f.name) is getattr(matcher, f.name) and not immutable(getattr(matcher, f.name))
    ]
    assert set(shared) == SHARED_ON_FORK


def test_a_fork_reading_on_leaves_the_matcher_as_it_was(packs: PackSet) -> None:
    # GIVEN the matcher inside the traceback, and its state
    matcher = read_into_the_traceback(packs)
    before = {name: copy.deepcopy(value) for name, value in vars(matcher).items() if name not in SHARED_ON_FORK}
    # WHEN a fork reads the rest of the traceback and the lines after it
    fork = matcher.fork()
    events = [event for line in lines(INSIDE_THE_TRACEBACK + 1, 192) for event in fork.match_line(line)]
    # THEN the fork moved on (the traceback ended, its events came), the matcher did not
    assert events and fork.block != matcher.block
    assert {name: value for name, value in vars(matcher).items() if name not in SHARED_ON_FORK} == before
