"""The fast scan reads logs in their envelopes (docker, CRI, journald, srun, a quote, CRLF) as it reads
bare ones, and gives the report reading every line gives."""

from __future__ import annotations

import random
import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bench.loggen import write_logs
from logphase import scan as scanning
from logphase.logs.envelope import Envelopes, sniff
from logphase.logs.fast.templates import learn_template
from logphase.packs import PackSet, load_packs
from tests.conftest import Generated, Written
from tests.paste.wrappers import BY_NAME, line_times
from tests.test_prefilter import report

# The wrappers whose lines the fast path reads (a prefix on each line): all of the paste-proof suite's but
# these, which take the plain path (hard-wrapped pastes, exports listed newest first, markdown escapes and inline
# code undone per line, stamps on lines of their own above the lines they date) and must give the same report too,
# and colour codes, which are no envelope (a coloured line is always read).
PLAIN_PATH_WRAPPERS = {
    "hard-wrap",
    "loki-export",
    "cloudwatch-export",
    "markdown-escapes",
    "inline-code",
    "stamp-lines",
}
PREFIX_WRAPPERS = set(BY_NAME) - PLAIN_PATH_WRAPPERS - {"ansi"}


@pytest.fixture
def short_head(monkeypatch: pytest.MonkeyPatch) -> None:
    """The matcher reads the first line in full; the fast path the rest of every log."""
    monkeypatch.setattr(scanning.feed, "YEAR_LOOKAHEAD", 1)


# Every corpus log in every wrapping (the paste-proof suite's wrappers and pairs), read by both paths
# with either scanner: the equivalence harness (tests/equivalence/test_same_report.py), sampled.


@pytest.mark.slow
def test_the_prefix_wrappers_take_the_fast_path(
    packs: PackSet, tmp_path: Path, short_head: None, captured: list[Any]
) -> None:
    # GIVEN a generated serving log (long lines: a hard-wrapped paste shows) through each wrapper
    [bare] = write_logs(tmp_path / "bare.log", 50_000, seed=3, shape="sglang-0.5")
    lines = bare.read_text().splitlines()
    taken = set()
    for name in BY_NAME:
        path = tmp_path / f"{name}.log"
        path.write_bytes(wrap_lines(lines, name))
        captured.clear()
        # WHEN it is analysed
        report(path, packs, fast=True)
        if captured:
            taken.add(name)
    # THEN the wrappers that are a prefix of each line are read by the fast path; the exports listed
    # newest first are not, nor a paste found hard-wrapped (where its lines are joined)
    assert taken >= PREFIX_WRAPPERS
    assert not taken & {"loki-export", "cloudwatch-export"}
    assert not Envelopes(wrap_width=120).prefixes_only


@pytest.mark.slow
@pytest.mark.parametrize("wrapper", ["cri-parts", "docker-t", "srun-label", "crlf"])
def test_a_generated_serving_log_wrapped_is_summarised(
    wrapper: str, packs: PackSet, generated: Generated, written: Written, scanner: str, captured: list[Any]
) -> None:
    # GIVEN a generated 1 MB SGLang TP8 serving log (8 ranks, access lines, NCCL chatter, a crash)
    # wrapped line by line: CRI cutting every 400th line into two `P` parts and an `F` one, docker
    # stamping every line (the NCCL lines take their time from it), srun labelling one task, CRLF
    def wrapped_log() -> bytes:
        [bare] = generated("sglang-0.5", 1_000_000, 11)
        lines = bare.read_text().splitlines()
        return cri_parts(lines) if wrapper == "cri-parts" else wrap_lines(lines, wrapper)

    wrapped = written(f"summarised-{wrapper}.log", wrapped_log)
    # WHEN it is analysed with and without the fast path
    plain, fast = (report(wrapped, packs, fast=fast) for fast in (False, True))
    # THEN the reports are the same, and the matcher saw under a third of the lines past the head
    assert fast == plain
    stats = captured[-1].stats
    assert stats.lines == wrapped.read_bytes().count(b"\n")
    assert (stats.emitted - scanning.feed.YEAR_LOOKAHEAD) * 3 < stats.lines


def wrap_lines(lines: list[str], wrapper: str) -> bytes:
    rng = random.Random(13)
    return BY_NAME[wrapper].generate(lines, rng, line_times(lines, load_packs(), rng))


START = datetime(2026, 3, 2, 9, 14)


def cri_parts(lines: list[str]) -> bytes:
    """CRI's file of these lines, every 400th cut in three (a runtime cuts lines over 16 KiB: `P`, `P`, `F`)."""
    out = []
    for number, line in enumerate(lines):
        stamp = f"{START + timedelta(milliseconds=number):%Y-%m-%dT%H:%M:%S.%f}123Z stdout"
        if number % 400 == 399 and len(line) > 2:
            third = len(line) // 3
            out += [
                f"{stamp} P {line[:third]}",
                f"{stamp} P {line[third : 2 * third]}",
                f"{stamp} F {line[2 * third :]}",
            ]
        else:
            out.append(f"{stamp} F {line}")
    return "".join(f"{line}\n" for line in out).encode()


# --- templates in envelopes ---------------------------------------------------------------------------

CRI_LINE = "2026-03-02T09:16:06.604982675Z stdout F [2026-03-02 09:16:06 TP0] Decode batch, #running-req: 12"


def envelopes_of(*lines: str) -> Envelopes:
    return sniff(list(lines) * 4)


def test_a_cri_template_starts_with_the_envelope_and_stands_for_other_times(packs: PackSet) -> None:
    # GIVEN a CRI-wrapped SGLang TP0 line
    envelopes = envelopes_of(CRI_LINE)
    inner = CRI_LINE.split(" F ", 1)[1]
    template = learn_template(packs, CRI_LINE.encode(), inner, envelopes)
    assert template is not None
    pattern = re.compile(template.regex())
    # THEN it covers the envelope's 40 bytes, keeps TP0, takes its time from the line's own stamp,
    # and matches TP0 lines at other times but neither another rank nor a part CRI cut (`P`)
    assert (template.envelope_end(CRI_LINE.encode()), template.rank, template.stamp) == (40, "TP0", "year")
    assert pattern.match(b"2027-11-30T23:59:59.000000001Z stdout F [2027-11-30 23:59:59 TP0] Prefill batch")
    assert not pattern.match(b"2026-03-02T09:16:06.604982675Z stdout F [2026-03-02 09:16:06 TP1] Decode batch")
    assert not pattern.match(b"2026-03-02T09:16:06.604982675Z stdout P [2026-03-02 09:16:06 TP0] Decode batch")


def test_a_cri_template_stands_for_every_length_of_a_trimmed_fraction(packs: PackSet) -> None:
    # GIVEN a CRI file whose first lines' stamps have fractions of 9 and 8 digits (containerd writes
    # Go's RFC3339Nano: trailing zeros trimmed, so lines of one shape carry 1 to 9 digits), and a
    # line of it with nine
    envelopes = envelopes_of(CRI_LINE, CRI_LINE.replace(".604982675Z", ".60498267Z"))
    assert envelopes.trimmed
    template = learn_template(packs, CRI_LINE.encode(), CRI_LINE.split(" F ", 1)[1], envelopes)
    assert template is not None
    pattern = re.compile(template.regex())
    # WHEN lines of the same shape carry shorter fractions
    trimmed = [b"2026-03-02T09:16:06.6049Z stdout F [2026-03-02 09:16:06 TP0] Decode batch", b"2026-03-02T09:16:07.5Z"]
    trimmed[1] += b" stdout F [2026-03-02 09:16:07 TP0] Prefill batch"
    # THEN the one template matches them, and its envelopes' prefix ends where each one's does
    assert [bool(pattern.match(line)) for line in trimmed] == [True, True]
    assert [template.envelope_end(line) for line in trimmed] == [35, 32]
    # AND a stamp with no fraction (all nine digits zero: Go drops the dot too) is off it: read as such
    assert not pattern.match(b"2026-03-02T09:16:07Z stdout F [2026-03-02 09:16:07 TP0] Prefill batch")


def test_a_stamp_written_with_nine_digits_always_keeps_them_in_its_template(packs: PackSet) -> None:
    # GIVEN `docker logs -t` lines (RFC3339NanoFixed: nine digits of fraction on every line)
    lines = [f"2026-03-02T09:16:0{n}.60498267{n}Z [2026-03-02 09:16:0{n} TP0] Decode batch" for n in range(5)]
    envelopes = envelopes_of(*lines)
    # WHEN a line's template is learned
    template = learn_template(packs, lines[0].encode(), lines[0].split("Z ", 1)[1], envelopes)
    # THEN its fraction is nine digit classes, not a run of any length (a fixed length costs no
    # search for where each line's envelope ends)
    assert not envelopes.trimmed
    assert template is not None and template.runs == ()
    assert template.envelope_end(lines[1].encode()) == 31


def test_a_cut_part_gives_no_template(packs: PackSet) -> None:
    # GIVEN a CRI `P` line (its text continues on the next line) THEN it gives no template
    envelopes = envelopes_of(CRI_LINE)
    line = CRI_LINE.replace(" F ", " P ")
    assert learn_template(packs, line.encode(), line.split(" P ", 1)[1], envelopes) is None


def test_a_line_without_its_own_stamp_takes_the_envelopes(packs: PackSet) -> None:
    # GIVEN an NCCL line (no stamp of its own) under `docker logs -t`
    line = "2026-03-02T09:16:06.604982675Z gpu-node-17:41221:41314 [3] NCCL INFO Channel 07/1 : 3[3] -> 4[4]"
    envelopes = envelopes_of(line)
    template = learn_template(packs, line.encode(), line.split(" ", 1)[1], envelopes)
    # THEN its time is the envelope's
    assert template is not None and template.stamp == "envelope"


def test_an_srun_label_is_the_rank_of_its_template(packs: PackSet) -> None:
    # GIVEN lines of tasks 3 and 12 under `srun --label` (padded to two columns)
    lines = [f"{task:>2}: [2026-03-02 09:16:06] Decode batch, #running-req: 12" for task in (3, 12)]
    envelopes = envelopes_of(*lines)
    template = learn_template(packs, lines[0].encode(), lines[0][4:], envelopes)
    assert template is not None
    # THEN the template is task 3's, as the matcher names it, and does not match task 12's lines
    assert template.rank == "rank 3"
    assert not re.match(template.regex(), lines[1].encode())


def test_a_crlf_line_gives_the_template_of_its_text(packs: PackSet) -> None:
    # GIVEN a line saved with CRLF THEN its template is that of the line without the carriage return
    line = "[2026-03-02 09:16:06 TP0] Decode batch, #running-req: 12"
    assert learn_template(packs, (line + "\r").encode(), line) == learn_template(packs, line.encode(), line)
