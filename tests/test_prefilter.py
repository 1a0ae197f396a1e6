"""The fast scan (logs/fast/) gives the same report as reading every line, and what it derives is sound."""

from __future__ import annotations

import gzip
import json
import re
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.loggen import write_log, write_logs
from bench.shapes import SHAPES, Corpus
from logphase import scan as scanning
from logphase.errors import InputError
from logphase.frames import TRIGGER
from logphase.logs import timeline
from logphase.logs.fast import FastLines, plan_for, scanners
from logphase.logs.fast.factors import Factor, regex_factors, rule_factors
from logphase.logs.fast.plan import widen_classes
from logphase.logs.fast.stats import unread_votes
from logphase.logs.fast.templates import learn_template
from logphase.logs.matcher import SourceMatcher
from logphase.logs.reader import open_sources, read_lines
from logphase.logs.timeline import LATEST_CAPTURES, TIMELINE_CAPTURES
from logphase.packs import PackSet
from tests.conftest import FIXTURES, REALWORLD, Generated, use_scanner
from tests.equivalence import reports as reports_
from tests.equivalence.sampling import dealt

AS_OF = datetime(2030, 1, 1)
LOGS = sorted(p for p in (FIXTURES / "logs").glob("*/*.log") if not p.name.endswith(".part.log"))
LOGS += sorted((REALWORLD / "logs").glob("*.log"))


@pytest.fixture
def short_head(monkeypatch: pytest.MonkeyPatch) -> None:
    """The matcher reads the first YEAR_LOOKAHEAD lines in full; one line leaves the rest of
    every fixture to the fast path."""
    monkeypatch.setattr(scanning.feed, "YEAR_LOOKAHEAD", 1)


def report(path: Path, packs: PackSet, *, fast: bool) -> str:
    """The JSON report of `analyze`, its scan told to use the fast path or not (the plain one computed
    once per session)."""
    return report_of([path], packs, fast=fast)


def reports(path: Path, packs: PackSet) -> tuple[str, str]:
    """(plain, fast) reports."""
    return report_of([path], packs, fast=False), report_of([path], packs, fast=True)


def report_of(logs: list[Path], packs: PackSet, *, fast: bool) -> str:
    """The JSON report of `analyze` over several logs as one run (the plain one computed once per session)."""
    return reports_.fast(logs, packs) if fast else reports_.plain(logs, packs)


# Every corpus log read by both paths, bare and in other layouts, with either scanner: the equivalence
# harness (tests/equivalence/test_same_report.py), which samples those dimensions.


@pytest.mark.slow
def test_generated_serving_log_is_read_the_same(
    packs: PackSet, generated: Generated, scanner: str, captured: list[Any]
) -> None:
    # GIVEN a generated TP8 log of 1 MB: NCCL init, startup, serving batches and access lines, a crash
    [log] = generated("sglang-pooled", 1_000_000, 20260101)
    # WHEN it is analysed with and without the fast path
    plain, fast = reports(log, packs)
    # THEN the reports are the same, and the matcher saw under a fifth of the lines
    assert fast == plain
    stats = captured[-1].stats
    assert stats.lines == log.read_bytes().count(b"\n")
    assert stats.emitted * 5 < stats.lines


# Each shape read by one scanner, dealt afresh each run so that both are used (tests/equivalence/sampling.py):
# every shape with both over runs, instead of each run (LOGPHASE_TEST_FULL=1: each run).
GENERATED_SHAPES = sorted(name for name, shape in SHAPES.items() if not isinstance(shape, Corpus))
REAL_SHAPES = sorted(name for name, shape in SHAPES.items() if isinstance(shape, Corpus))
SHAPE_SCANNERS = dealt("prefilter-shape-scanners", GENERATED_SHAPES, ["hyperscan", "stdlib"])
REAL_SCANNERS = dealt("prefilter-real-scanners", REAL_SHAPES, ["hyperscan", "stdlib"])


@pytest.mark.slow
@pytest.mark.parametrize(("shape", "scanner_name"), SHAPE_SCANNERS, ids=[f"{a}-{b}" for a, b in SHAPE_SCANNERS])
def test_every_shape_of_generated_log_is_read_the_same(
    shape: str,
    scanner_name: str,
    packs: PackSet,
    generated: Generated,
    captured: list[Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    use_scanner(scanner_name, monkeypatch)
    # GIVEN a generated 1 MB serving log of one shape (a version's format, 8 ranks and the HTTP
    # server interleaved line by line, NCCL chatter, a rotated start, a wrapper, a file per rank)
    logs = generated(shape, 1_000_000, 7)
    # WHEN it is analysed with and without the fast path
    plain, fast = (report_of(logs, packs, fast=fast) for fast in (False, True))
    # THEN the reports are the same, and the matcher saw under a fifth of the lines (of each file
    # past its head), whatever their order, their stamps (a time of day) or their wrapper
    assert fast == plain
    assert len(captured) == len(logs)
    for log, filtered in zip(logs, captured, strict=True):
        stats = filtered.stats
        assert stats.lines == log.read_bytes().count(b"\n")
        assert (stats.emitted - scanning.feed.YEAR_LOOKAHEAD) * 5 < stats.lines


@pytest.mark.slow
@pytest.mark.parametrize(("shape", "scanner_name"), REAL_SCANNERS, ids=[f"{a}-{b}" for a, b in REAL_SCANNERS])
def test_every_real_log_grown_is_read_the_same(
    shape: str, scanner_name: str, packs: PackSet, generated: Generated, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_scanner(scanner_name, monkeypatch)
    # GIVEN a real log of fixtures/realworld grown to 1 MB with its own repeated lines (bench/shapes.py Corpus)
    logs = generated(shape, 1_000_000, 7)
    # WHEN it is analysed with and without the fast path
    plain, fast = (report_of(logs, packs, fast=fast) for fast in (False, True))
    # THEN the reports are the same (how few lines the matcher sees is issue 27's bench, not a bound here yet)
    assert fast == plain


@pytest.mark.slow
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    shape=st.sampled_from(sorted(SHAPES)),
    seed=st.integers(1, 10**6),
    size=st.sampled_from([200_000, 700_000, 1_500_000]),
)
def test_a_generated_log_of_any_seed_is_read_the_same(
    shape: str, seed: int, size: int, packs: PackSet, short_head: None
) -> None:
    # GIVEN a generated serving log of a shape, a seed and a size drawn afresh each run (the shapes'
    # tests above use one seed: the templates, kinds and recompiles a log teaches differ with it)
    with tempfile.TemporaryDirectory() as folder:
        logs = write_logs(Path(folder) / f"{shape}.log", size, seed=seed, shape=shape)
        # WHEN it is analysed with and without the fast path
        plain, fast = (report_of(logs, packs, fast=fast) for fast in (False, True))
    # THEN the reports are the same
    assert fast == plain


@pytest.mark.slow
def test_source_counters_are_those_of_the_reader(packs: PackSet, tmp_path: Path) -> None:
    # GIVEN a generated log without a newline after its last line
    log = write_log(tmp_path / "cut.log", 300_000)
    log.write_bytes(log.read_bytes().rstrip(b"\n"))
    # WHEN both paths read it
    plain, fast = open_sources([str(log)]), open_sources([str(log)])
    scanning.scan(plain, packs, AS_OF, fast=False)
    scanning.scan(fast, packs, AS_OF, fast=True)
    # THEN they count the same lines and bytes
    assert (fast[0].lines, fast[0].bytes) == (plain[0].lines, plain[0].bytes)
    assert fast[0].lines == log.read_bytes().count(b"\n") + 1


@pytest.mark.slow
def test_the_counts_come_back_in_scan_stats_not_in_the_source(packs: PackSet, tmp_path: Path) -> None:
    # GIVEN a generated serving log of 1 MB (steady runs: most lines are skipped)
    log = write_log(tmp_path / "served.log", 1_000_000)
    (source,) = open_sources([str(log)])
    fast = FastLines(source, plan_for(packs, (TRIGGER,)), AS_OF, context=(2, 3))
    # WHEN the fast path reads it alone, attached to no matcher
    emitted = sum(1 for _ in fast)
    # THEN the source's counters are untouched, and ScanStats holds what the reader would count
    assert (source.lines, source.bytes, source.truncated_lines) == (0, 0, 0)
    assert (fast.stats.lines, fast.stats.bytes) == (log.read_bytes().count(b"\n"), log.stat().st_size)
    assert 0 < emitted < fast.stats.lines
    assert fast.stats.skipped_events > 0 and fast.stats.skipped_systems["sglang"] > 0
    # AND merged by the caller, they are the reader's
    fast.stats.count_input(source)
    assert (source.lines, source.bytes) == (fast.stats.lines, log.stat().st_size)


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["vllm-v0", "vllm-v1", "sglang-0.5", "nccl-storm"])
def test_the_system_vote_of_unread_lines_follows_the_mix_of_the_log(shape: str, packs: PackSet, tmp_path: Path) -> None:
    # GIVEN a generated 2 MB serving log of one shape (a vLLM log holds a few lines a rule of
    # another system's pack reads: a steady run of its own, beside the vLLM runs)
    (log,) = write_logs(tmp_path / f"{shape}.log", 2_000_000, seed=11, shape=shape)
    # WHEN the plain path reads every line, and the fast path reads a few and counts the rest
    (plain_source,), (fast_source,) = open_sources([str(log)]), open_sources([str(log)])
    plain, fast = SourceMatcher(packs, AS_OF), SourceMatcher(packs, AS_OF)
    for line in read_lines(plain_source):
        plain.match_line(line)
    lines = FastLines(fast_source, plan_for(packs, (TRIGGER,)), AS_OF, context=(2, 3))
    lines.attach(fast)
    for line in lines:
        fast.match_line(line)
    # THEN each system's votes are within a tenth of the plain path's (lines of another system's
    # rule do not take a share of the unread lines by their number of runs), and the same system leads
    assert set(fast.systems) == set(plain.systems)
    for system, votes in plain.systems.items():
        assert abs(fast.systems[system] - votes) <= votes / 10 + 20, system
    assert fast.system == plain.system


def test_unread_lines_vote_as_the_lines_of_a_sample_hold_each_rule_s_factors() -> None:
    # GIVEN a sample of 10 lines: 8 decode batches, an access line, an NCCL line; two rules of two
    # systems (one steady factor, and two that one line may both hold)
    sample = b"[TP0] Decode batch\n" * 8 + b'"GET /get_model_info HTTP/1.1" 200\n' + b"NCCL INFO Channel 00\n"
    rules = [("vllm", [b"Decode batch"]), ("sglang", [b"get_model_info", b"HTTP/"])]
    # WHEN 1,000 unread lines are shared out
    # THEN each rule takes its lines' share (its most frequent factor's), none the NCCL line's
    assert unread_votes(sample, 0, len(sample), 1000, rules) == {"vllm": 800, "sglang": 100}
    # AND where rules' factors share lines, never more events than lines; none for no unread line
    both = [("vllm", [b"Decode"]), ("sglang", [b"batch"])]
    assert sum(unread_votes(sample, 0, len(sample), 1000, both).values()) <= 1000
    assert unread_votes(sample, 0, len(sample), 0, rules) == {}


# --- what the fast path derives from the packs -----------------------------------------------------


def test_factors_of_a_plain_regex() -> None:
    # GIVEN a rule regex that starts with literal text WHEN its factors are derived
    factors = regex_factors(r"^Load weight begin\. avail mem=(?P<avail_gb>[\d.]+) GB")
    # THEN the longest literal run is the one factor
    assert factors == frozenset({Factor(b"Load weight begin. avail mem=", False)})


def test_factors_multiply_across_a_branch() -> None:
    # GIVEN literals around a group of alternatives
    factors = regex_factors(r'^(?:INFO: +)?(?P<client>\S+) - "POST /(?P<endpoint>generate|encode) HTTP/[\d.]+"')
    # THEN each alternative becomes a whole factor
    assert factors == frozenset({Factor(b' - "POST /generate HTTP/', False), Factor(b' - "POST /encode HTTP/', False)})


def test_optional_text_is_never_required() -> None:
    # GIVEN a regex whose only literal is optional THEN nothing is required
    assert regex_factors(r"^(?:Loading )?\d+%") is None


def test_regex_module_syntax_gives_no_factors() -> None:
    # GIVEN syntax the stdlib parser would misread THEN no factors are claimed
    assert regex_factors(r"\p{Lu}+ failed to start") is None
    assert regex_factors(r"[[:alpha:]]+ failed to start") is None


def test_caseless_factors_are_lower_case() -> None:
    # GIVEN an ignore-case regex THEN its factor is lowered and caseless
    assert regex_factors(r"(?i)^Capture CUDA graph failed") == frozenset({Factor(b"capture cuda graph failed", True)})


def test_every_rule_example_holds_one_of_its_factors(packs: PackSet) -> None:
    # GIVEN every rule of the shipped packs that has factors
    prefixes = {prefix.id: prefix for prefix in packs.prefixes}
    missing = []
    for rule in packs.rules:
        factors = rule_factors(rule, prefixes)
        if factors is None:
            continue
        # WHEN each example line is looked at as bytes
        for example in rule.examples:
            raw = example.encode()
            found = any((f.text in raw.lower()) if f.caseless else (f.text in raw) for f in factors)
            if not found:
                missing.append((rule.id, example))
    # THEN every example holds one (a line without one is never shown to the rule)
    assert missing == []


def test_every_steady_rule_example_passes_its_requirements(packs: PackSet) -> None:
    # GIVEN the steady rules (summarised by the first and last of a run) and their required strings
    plan = plan_for(packs, (TRIGGER,))
    rules = plan.steady_rules
    # WHEN each example is checked THEN none is refused
    refused = [(rule.id, e) for rule in rules.values() for e in rule.examples if not plan.could_match(rule, e.encode())]
    assert refused == []


def test_the_plan_filters_every_rule_of_the_shipped_packs(packs: PackSet) -> None:
    # GIVEN the shipped packs WHEN the plan is built THEN every rule outside tracebacks has factors
    plan = plan_for(packs, (TRIGGER,))
    assert plan.enabled, plan.reason


def test_timeline_captures_name_every_capture_the_timeline_reads() -> None:
    # GIVEN the timeline's source: what it reads from an event's captures
    source = Path(timeline.__file__).read_text()
    read = set(re.findall(r'captures(?:\.get\(|\[)"(\w+)"', source))
    read |= set(re.findall(r'"(\w+)" in (?:event\.)?captures', source))
    # and the captures it reads by a named set of them (a server's stats line's counts of requests: LOAD_CAPTURES)
    if "LOAD_CAPTURES & event.captures" in source:
        read |= timeline.LOAD_CAPTURES
    # THEN TIMELINE_CAPTURES (which keeps such rules out of steady runs) or LATEST_CAPTURES (the
    # newest event only) names each of them, and no capture is in both
    assert read == TIMELINE_CAPTURES | LATEST_CAPTURES
    assert not TIMELINE_CAPTURES & LATEST_CAPTURES
    assert "done" in read and "comm" in read


def test_widened_classes_match_unicode_spaces() -> None:
    # GIVEN the dump trigger `^\s{4}\S` as bytes, widened
    widened = re.compile(widen_classes(r"^\s{4}\S").encode(), re.MULTILINE)
    # THEN a line indented with no-break spaces still triggers it, as the str regex does
    assert re.search(r"^\s{4}\S", "\u00a0\u00a0\u00a0\u00a0frame") is not None
    assert widened.search("\u00a0\u00a0\u00a0\u00a0frame".encode()) is not None
    assert widened.search(b"    frame") is not None
    assert widened.search(b"frame    x") is None


# --- templates ---------------------------------------------------------------------------------------


def test_a_template_stands_for_other_times_not_other_ranks(packs: PackSet) -> None:
    # GIVEN an SGLang TP0 serving line
    line = "[2026-03-02 09:16:06 TP0] Decode batch, #running-req: 12, #token: 3456, "
    template = learn_template(packs, line.encode(), line)
    assert template is not None
    pattern = re.compile(template.regex())
    # THEN it matches TP0 lines of any time, and neither TP1 nor the main process
    assert template.rank == "TP0" and template.stamp == "year"
    assert pattern.match(b"[2027-11-30 23:59:59 TP0] Prefill batch, #new-seq: 1")
    assert not pattern.match(b"[2026-03-02 09:16:06 TP1] Decode batch, #running-req: 12")
    assert not pattern.match(b"[2026-03-02 09:16:06] INFO:     127.0.0.1:5000 - x")


def test_an_nccl_template_covers_every_thread(packs: PackSet) -> None:
    # GIVEN an NCCL_DEBUG=INFO line
    line = "gpu-node-17:41221:41314 [3] NCCL INFO Channel 07/1 : 3[3] -> 4[4] via P2P/CUMEM/read"
    template = learn_template(packs, line.encode(), line)
    assert template is not None
    # THEN its pid, thread and device digits are free (the line names no rank) and it has no stamp
    assert template.stamp == "none"
    assert re.match(template.regex(), b"gpu-node-17:41200:41200 [0] NCCL INFO Bootstrap : Using eth0")


def test_no_template_where_the_reader_changed_the_line(packs: PackSet) -> None:
    # GIVEN a line whose bytes the reader changes (colour codes) THEN it gives no template
    raw = b"\x1b[32m[2026-03-02 09:16:06 TP0] Decode batch, #running-req: 12"
    assert learn_template(packs, raw, "[2026-03-02 09:16:06 TP0] Decode batch, #running-req: 12") is None


@pytest.mark.slow
def test_a_truncated_archive_fails_after_the_same_line(packs: PackSet, tmp_path: Path) -> None:
    # GIVEN a generated log, gzipped and cut in the middle
    log = write_log(tmp_path / "served.log", 2_000_000)
    archive = tmp_path / "served.log.gz"
    compressed = gzip.compress(log.read_bytes())
    archive.write_bytes(compressed[: len(compressed) // 2])
    # WHEN both paths read it THEN both stop with the same error, after the same line
    errors = []
    for fast in (False, True):
        with pytest.raises(InputError) as caught:
            scanning.scan(open_sources([str(archive)]), packs, AS_OF, fast=fast)
        errors.append(str(caught.value))
    assert errors[0] == errors[1]
    assert "after line 0" not in errors[1]


SCANNER_PATTERNS: list[tuple[bytes, bool]] = [
    (re.escape(b"Capturing "), False),
    (re.escape(b"Capturing batches ("), False),  # a literal that extends another
    (re.escape(b"NCCL WARN "), True),  # caseless literal
    (b"^(?:[^\\[\\n]|\\[(?:[^0-9\\n]))", False),  # line-anchored, as the template complement
    (b"^[^\\n]{0,12}(?: HTTP/|Decode batch)", False),
    (b'File "|Thread |Process [\\d\\x80-\\xff]|[|]x', False),  # top-level alternatives, `|` in a class
    (b"\\r", False),
    (b"(?i)timeout \\(|x(y|z)", False),  # global flag: not split
]
SCANNER_TEXT = (
    b"[2026-01-01 10:00:00] Capturing batches (bs=8): 10%\n"
    b'[2026-01-01 10:00:01] INFO:     127.0.0.1:4 - "GET /health HTTP/1.1" 200 OK\n'
    b"x HTTP/1.1 Decode batch\n"
    b"gpu-node:1:2 [0] nccl warn oops\n"
    b'  File "a.py", line 3, in f\n'
    b"Process 1234 Thread 0x7f\n"
    b"bar 10%\rbar 20%\n"
    b"[2026-01-01 10:00:02] TIMEOUT (30 s) xz |x\n"
    b"[2026-01-01 10:00:03] nothing here\n"
)


def test_pure_python_scanner_finds_every_pattern_on_every_line() -> None:
    # GIVEN literals, caseless literals, line-anchored patterns and alternations, and lines with each
    scanner = scanners.ReScanner(SCANNER_PATTERNS)
    # WHEN the pure-Python scanner reads the text from its second line on
    start = SCANNER_TEXT.index(b"\n") + 1
    found = scanner.matches(SCANNER_TEXT, start, len(SCANNER_TEXT))
    # THEN each line is reported with exactly the patterns that match in it (as `re` says, line by line)
    expected: set[tuple[int, int]] = set()
    offset = start
    for line in SCANNER_TEXT[start:].split(b"\n"):
        for index, (pattern, caseless) in enumerate(SCANNER_PATTERNS):
            if re.search(pattern, line, re.MULTILINE | (re.IGNORECASE if caseless else 0)):
                expected.add((offset, index))
        offset += len(line) + 1
    got = {(SCANNER_TEXT.rfind(b"\n", 0, stop - 1) + 1, index) for index, stop in found}
    assert got == expected
    assert len(expected) == 12  # the first line (before `start`) is not read; two lines match nothing


def test_scanners_agree() -> None:
    # GIVEN the same patterns in both scanners WHEN they read the same text THEN they find the same lines
    if scanners.hyperscan is None:
        pytest.skip("hyperscan is not installed")
    patterns = [p for p in SCANNER_PATTERNS if not p[0].startswith(b"(?i)")]  # hyperscan takes flags apart

    def lines(scanner: scanners.Scanner) -> set[tuple[int, int]]:
        found = scanner.matches(SCANNER_TEXT, 0, len(SCANNER_TEXT))
        return {(SCANNER_TEXT.rfind(b"\n", 0, stop - 1) + 1, index) for index, stop in found}

    assert lines(scanners.ReScanner(patterns)) == lines(scanners.HsScanner(patterns))


@pytest.mark.slow
def test_quiet_lines_teach_their_template_and_a_cut_frame_on_it_is_still_read(
    packs: PackSet, tmp_path: Path, scanner: str, captured: list[Any]
) -> None:
    # GIVEN a vLLM V1 log: 3,000 interleaved stats, request and worker NCCL lines (the request
    # lines make no event), then a traceback excerpt cut before its `Traceback` line, on the request lines' prefix
    api = "(APIServer pid=41190) INFO 03-02 09:{minute:02d}:{second:02d} [{where}] {message}"
    lines = []
    for index in range(3000):
        minute, second = divmod(index // 10, 60)
        if (
            index % 5 == 4
        ):  # a worker's NCCL line (where 9 lines in 10 carried one process tag, it would be an envelope)
            lines.append(
                "(Worker_TP1 pid=41207) gpu-node-17:41207:41303 [1] NCCL INFO Channel 19/1 : 1[1] -> 2[2] via P2P"
            )
            continue
        if index % 2:
            where, message = "logger.py:43", f"Received request chatcmpl-{index:032x}: prompt: '...'"
        else:
            where = "loggers.py:123"
            message = (
                "Engine 000: Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: 2.0 tokens/s, "
                f"Running: {index % 7} reqs, Waiting: 0 reqs, GPU KV cache usage: 1.0%, Prefix cache hit rate: 0.0%"
            )
        lines.append(api.format(minute=minute, second=second, where=where, message=message))
    lines += [
        '(APIServer pid=41190)   File "/usr/lib/python3/dist-packages/vllm/v1/engine/core.py", line 701, in run',
        "(APIServer pid=41190)     raise EngineDeadError()",
        "(APIServer pid=41190) vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.",
    ]
    log = tmp_path / "vllm.log"
    log.write_text("\n".join(lines) + "\n")
    # WHEN it is analysed with and without the fast path
    plain, fast = reports(log, packs)
    # THEN the reports are the same; the matcher read under a fifth of the lines after the head
    assert fast == plain
    stats = captured[-1].stats
    assert (stats.emitted - scanning.feed.YEAR_LOOKAHEAD) * 5 < 3000 - scanning.feed.YEAR_LOOKAHEAD


def test_an_event_read_as_another_lines_context_is_quoted_with_its_own_context(
    packs: PackSet, tmp_path: Path, short_head: None
) -> None:
    # GIVEN NCCL's INFO lines of three ranks (one template), a blank line the scan must show the matcher,
    # then a WARN on the very next line and INFO lines of the same template after it (NCCL's format:
    # `host:pid:tid [dev] NCCL WARN ...`)
    info = "node7:4{rank}1:4{rank}2 [{rank}] NCCL INFO group.cc:{line} -> 1 [Async thread]\n"
    log = tmp_path / "nccl.log"
    log.write_text(
        "".join(info.format(rank=rank, line=64) for rank in range(3))
        + "\n"
        + "node7:411:412 [1] transport/nvls.cc:246 NCCL WARN Cuda failure 3 'initialization error'\n"
        + "".join(info.format(rank=rank, line=line) for line in (1010, 1501, 64, 418, 95) for rank in range(3))
    )
    # WHEN analysed with and without the fast path
    plain, fast = reports(log, packs)
    # THEN the reports are the same: the WARN's context runs to the third line after it on both paths
    assert fast == plain
    context = [line["line"] for line in json.loads(fast)["root_cause"]["context"]]
    assert context == [3, 4, 5, 6, 7, 8]
