"""Hung or still starting from the log's own rhythm (issue 26): bar ticks dated by tqdm's own elapsed time,
a running bar's pace as the stall bound in analyze and watch alike, over generated start-ups."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logphase.judging.budgets import BAR_FLOOR_S, BAR_K, Budgets
from logphase.judging.logs import judge
from logphase.logs.reader import Line
from logphase.logs.timeline import Timeline
from logphase.packs import load_packs
from logphase.phases import Phase, Verdict
from logphase.watch.ingest import Ingest
from logphase.watch.state import Settings, WatchState, step
from tests.conftest import FIXTURES, run_cli, run_json
from tests.startups import Startup, sglang_startup, vllm_startup

START = datetime(2026, 5, 10, 10, 0, 0)
PACKS = load_packs(builtin=True)


def _learned(waits: list[int]) -> Budgets:
    """Budgets learned from three earlier runs of the same start-up (3 × p95 of their whole capture, at
    least 60 s: baselines/stats.py), mostly far below a bar's bound: they must not make a bar stall sooner."""
    return Budgets(learned={Phase.CUDA_GRAPH: max(60.0, 3.0 * sum(waits))}, learned_from={Phase.CUDA_GRAPH: 3})


def _ingest(startup: Startup) -> Ingest:
    """The log read as it was written: each line arrives at its own time (seconds after START)."""
    ingest = Ingest(PACKS, reference=START)
    for number, (text, at) in enumerate(zip(startup.lines, startup.times, strict=True), start=1):
        ingest.feed([Line(number, text, 0)], arrived=(at - START).total_seconds())
    return ingest


def _timeline(startup: Startup) -> Timeline:
    return _ingest(startup).timeline()


def _write(tmp_path: Path, startup: Startup) -> Path:
    log = tmp_path / "startup.log"
    log.write_text("\n".join(startup.lines) + "\n")
    return log


def test_a_stuck_capture_bar_is_dated_by_its_own_clock_and_its_phase_has_a_width(tmp_path: Path) -> None:
    # GIVEN an SGLang capture whose bar ticked every 10 s (no stamps on its lines) and stopped at 3/24
    startup = sglang_startup(START, [10] * 24).cut(33)
    assert startup.lines[-1].endswith("| 3/24 [00:30<03:30, 10.00s/it]")
    begin = startup.times[startup.ticks[0]]
    # WHEN its timeline is built
    timeline = _timeline(startup)
    # THEN TP0's capture lasts from its begin line to the last tick (30 s later), not 0 s
    span = next(s for s in timeline.spans if s.phase is Phase.CUDA_GRAPH and s.rank == "TP0")
    assert (span.start, span.end) == (begin, begin + timedelta(seconds=30))
    assert timeline.last_progress is not None and timeline.last_progress.time == begin + timedelta(seconds=30)
    # AND the ticks whose time was inferred are named
    assert [(d.rank, d.count, d.first_line, d.last_line) for d in timeline.dated] == [("TP0", 3, 31, 33)]
    # AND the report's table and HTML show the phase 30 s wide, and say which times were inferred
    log = _write(tmp_path, startup)
    table = run_cli("analyze", "--post-mortem", str(log)).output
    assert re.search(r"^cuda_graph +TP\[0-3\] +10:00:39 +10:01:09 +30s ", table, re.MULTILINE), table
    assert "TP0: the times of 3 progress-bar ticks (lines 31–33) inferred from the bar's own elapsed time" in table
    page = run_cli("analyze", "--post-mortem", "--format", "html", str(log)).output
    widths = [
        float(width)
        for width, title in re.findall(r'<rect [^>]*width="([\d.]+)"[^>]*><title>([^<]*)</title>', page)
        if title.startswith("cuda_graph 10:00:39–10:01:09")
    ]
    assert widths and max(widths) > 100  # of the SVG's 1000: the capture is 30 s of a 69 s start-up


def test_a_tick_is_never_dated_before_the_stamp_it_follows() -> None:
    # GIVEN a bar whose elapsed time says 5 s after the begin line, printed after a line stamped 40 s later
    lines = [
        "[2026-05-10 10:00:00 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=40.00 GB",
        "Capturing batches (bs=256 avail_mem=39.00 GB):   0%|          | 0/4 [00:00<?, ?it/s]",
        "[2026-05-10 10:00:40 TP1] Capture cuda graph begin. This can take up to several minutes. avail mem=40.00 GB",
        "Capturing batches (bs=255 avail_mem=39.00 GB):  25%|██▌       | 1/4 [00:05<00:15,  5.00s/it]",
        "Capturing batches (bs=254 avail_mem=39.00 GB):  50%|█████     | 2/4 [00:50<00:50, 25.00s/it]",
    ]
    ingest = Ingest(PACKS, reference=START)
    ingest.feed([Line(n, text, 0) for n, text in enumerate(lines, start=1)], arrived=0.0)
    # WHEN dated THEN the tick takes the later stamp (the bar began later than its phase), and the next tick
    # its start (10:00:35 at the latest) plus 50 s
    span = next(s for s in ingest.timeline().spans if s.phase is Phase.CUDA_GRAPH and s.rank == "TP0")
    assert span.end == datetime(2026, 5, 10, 10, 1, 25)


def _bar_bound(startup: Startup) -> float | None:
    """max(k × the slowest wait between the bar's ticks, floor), as the issue states it; None before two ticks."""
    ticks = [startup.times[i] for i in startup.ticks]
    waits = [(b - a).total_seconds() for a, b in pairwise(ticks)]
    return max(BAR_K * max(waits), BAR_FLOOR_S) if waits else None


def _analyze_verdict(timeline: Timeline, at: datetime, budgets: Budgets) -> Verdict:
    return judge(timeline, as_of=at, post_mortem=False, budgets=budgets).verdict


def _watch_verdict(ingest: Ingest, t: float, budgets: Budgets) -> Verdict:
    watch_settings = Settings(budgets=budgets)
    obs = ingest.observe(t, since=0.0, budgets=budgets)
    state, _ = step(WatchState(), obs, watch_settings)
    return state.outcome.verdict if state.outcome is not None else Verdict.PROGRESSING


# a bar's pace: a base wait per tick (whole seconds) and each tick within 0.5–1.5 × of it, so no wait is
# over 3 × another: a bar still ticking never waits k (5) × its slowest tick
paces = st.integers(min_value=1, max_value=60).flatmap(
    lambda base: st.lists(st.integers(min_value=max(1, base // 2), max_value=base + base // 2), min_size=2, max_size=30)
)
systems = st.sampled_from(["sglang", "vllm"])


def _startup(system: str, waits: list[int]) -> Startup:
    return sglang_startup(START, waits) if system == "sglang" else vllm_startup(START, waits)


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(system=systems, waits=paces, stop=st.integers(min_value=2), data=st.data())
def test_a_bar_that_stops_is_stalled_past_its_bound_and_never_before(
    system: str, waits: list[int], stop: int, data: st.DataObject
) -> None:
    # GIVEN a start-up whose capture bar stops after its `stop`-th tick (of more), read up to that tick
    whole = _startup(system, waits)
    last_tick = whole.ticks[min(stop, len(whole.ticks) - 2)]
    startup = whole.cut(last_tick + 1)
    bound = _bar_bound(startup)
    assert bound is not None
    ingest = _ingest(startup)
    timeline = ingest.timeline()
    tick = startup.times[last_tick]
    # WHEN judged some time after its last tick, by analyze (with and without recorded runs) and by watch
    after = data.draw(st.floats(min_value=0.0, max_value=3 * bound))
    for budgets in (Budgets(), _learned(waits)):
        analyzed = _analyze_verdict(timeline, tick + timedelta(seconds=after), budgets)
        watched = _watch_verdict(ingest, (tick - START).total_seconds() + after, budgets)
        # THEN stalled exactly once the silence is past max(k × its slowest tick, floor)
        wanted = Verdict.STALLED if after > bound else Verdict.PROGRESSING
        assert (analyzed, watched) == (wanted, wanted), (after, bound)


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(system=systems, waits=paces, data=st.data())
def test_a_bar_still_ticking_is_never_stalled_at_any_cut_line(
    system: str, waits: list[int], data: st.DataObject
) -> None:
    # GIVEN a start-up read up to any line, and judged just before its next line was written
    whole = _startup(system, waits)
    end = data.draw(st.integers(min_value=1, max_value=len(whole.lines) - 1))
    startup = whole.cut(end)
    upcoming = whole.times[end]
    ingest = _ingest(startup)
    for budgets in (Budgets(), _learned(waits)):
        # WHEN analyze and watch judge it at that moment
        analyzed = _analyze_verdict(ingest.timeline(), upcoming, budgets)
        watched = _watch_verdict(ingest, (upcoming - START).total_seconds(), budgets)
        # THEN neither calls it stalled: the next line was on its way
        assert Verdict.STALLED not in (analyzed, watched), (end, startup.lines[-1])


def test_the_stall_reason_names_the_bar_rule_in_analyze_and_watch(tmp_path: Path) -> None:
    # GIVEN the case: a capture bar at 1.95 s/it stopped at 11/24, read 4 minutes later
    waits = [2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2]
    startup = sglang_startup(START, [*waits, *[2] * 13]).cut(30 + len(waits))
    assert "| 11/24 [" in startup.lines[-1]
    tick = startup.times[-1]
    log = _write(tmp_path, startup)
    # WHEN analyze judges it live
    code, report = run_json("analyze", "--as-of", f"{tick + timedelta(minutes=4):%Y-%m-%d %H:%M:%S}", str(log))
    # THEN stalled after 2 min (5 × 2 s is under the floor), the reason naming the bar and the rule
    assert (code, report["verdict"], report["budget_s"]) == (4, "stalled", 120.0)
    assert report["reason"] == (
        f"the cuda_graph bar stopped at 11/24 (line {len(startup.lines)}): still for 4m00s, past its bound of "
        "2m00s (5 × its slowest tick (2s), at least 2m00s)"
    )
    # AND watch, 4 minutes after the tick arrived, says the same words
    ingest = _ingest(startup)
    obs = ingest.observe((tick - START).total_seconds() + 240, since=0.0, budgets=Budgets())
    state, _ = step(WatchState(), obs, Settings())
    assert state.outcome is not None
    assert state.outcome.reason == f"stalled: {report['reason']}"


def test_a_rank_that_never_began_the_capture_its_peers_run_is_named(tmp_path: Path) -> None:
    # GIVEN an SGLang TP4 start-up where TP0-2 print their capture begin and TP0's bar runs 45 s, while
    # TP3 stopped after its `Memory pool end` (line 25)
    startup = sglang_startup(START, [5] * 12, lagging=3)
    log = _write(tmp_path, startup.cut(38))
    assert "TP3] Memory pool end." in startup.lines[24]
    # WHEN analysed post-mortem
    code, report = run_json("analyze", "--post-mortem", str(log))
    headline = run_cli("analyze", "--post-mortem", str(log)).output.splitlines()[0]
    # THEN the run is where its slowest rank is, and TP3 is the culprit, named with where it stopped
    assert (code, report["verdict"], report["phase"], report["culprit_ranks"]) == (4, "stalled", "kv_cache", ["TP3"])
    assert headline.startswith(
        "logphase: STALLED at kv_cache — TP3 never began cuda_graph (last line 25: Memory pool end. avail mem=40.00 GB)"
    )


LAGGARDS = [
    # (fixture, arguments, the culprits, the headline's start after `logphase: VERDICT at phase — `)
    ("torch/nccl-watchdog-timeout-rank4-lagging.log", (), ["rank 4"], "rank 4 did not arrive: rank 2 timed out"),
    (
        "sglang/nccl-info-tp8-rank5-missing-init-complete.log",
        ("--post-mortem",),
        ["TP5"],
        "TP5 never completed its NCCL init (last line 3: Init torch distributed begin.)",
    ),
    ("nccl/mpirun-tag-output-init-stalled.log", ("--post-mortem",), ["rank 3"], "rank 3 never completed its NCCL init"),
    (
        "tgi/v145-tp2-shard-stuck-weight-load.log",
        ("--post-mortem",),
        ["rank 1"],
        "rank 1 stopped in weight_load (last line 322: Waiting for shard to be ready... rank=1)",
    ),
    (
        "vllm/v1-shm-broadcast-stuck-weight-load.log",
        ("--post-mortem",),
        ["TP3"],
        "TP3 stopped in weight_load (last line 16: Starting to load model",
    ),
]


@pytest.mark.parametrize(("fixture", "args", "culprits", "said"), LAGGARDS, ids=[case[0] for case in LAGGARDS])
def test_the_headline_names_the_rank_behind(
    fixture: str, args: tuple[str, ...], culprits: list[str], said: str
) -> None:
    # GIVEN a fixture where one rank is behind the others (or never joined the collective they wait in)
    log = str(FIXTURES / "logs" / fixture)
    # WHEN analysed THEN culprit_ranks and the headline name it, and every rank in the log is counted
    _, report = run_json("analyze", *args, log)
    headline = run_cli("analyze", *args, log).output.splitlines()[0]
    assert report["culprit_ranks"] == culprits
    assert headline.split(" — ", 1)[1].startswith(said), headline
    assert set(culprits) <= set(report["ranks"])


def test_a_post_mortem_stall_on_its_last_line_says_no_silence_and_cuts_no_word(tmp_path: Path) -> None:
    # GIVEN a log that ends on its last progress, with a reason longer than the headline
    startup = sglang_startup(START, [5] * 12, lagging=3)
    log = _write(tmp_path, startup.cut(38))
    # WHEN shown as a table
    first, facts = run_cli("analyze", "--post-mortem", str(log)).output.splitlines()[:2]
    # THEN no "no progress for 0s" beside the stall, and the headline is cut between words
    assert "0s" not in facts
    assert first.endswith("…") and not first.removesuffix("…").endswith(("erro", " e"))
    words = set(re.findall(r"\S+", run_json("analyze", "--post-mortem", str(log))[1]["reason"]))
    assert all(word in words for word in first.split(" — ", 1)[1].removesuffix("…").split())


def _refusal(*logs: Path) -> tuple[int, str]:
    result = run_cli("analyze", "--post-mortem", *(str(log) for log in logs))
    return result.exit_code, result.output


def test_logs_of_two_systems_are_refused_not_merged(tmp_path: Path) -> None:
    # GIVEN an SGLang start-up and a vLLM start-up of the same hour
    sglang, vllm = tmp_path / "sglang.log", tmp_path / "vllm.log"
    sglang.write_text("\n".join(sglang_startup(START, [2] * 5).lines) + "\n")
    vllm.write_text("\n".join(vllm_startup(START, [2] * 5).lines) + "\n")
    # WHEN analysed together THEN refused (usage, exit 2) with the two systems named and a hint
    code, output = _refusal(sglang, vllm)
    assert code == 2
    assert f"logphase: error: {sglang} is a sglang log and {vllm} a vllm log: two runs, not one" in output
    assert "hint: analyze each run's logs on their own" in output


def test_logs_a_week_apart_are_refused_not_merged_into_ready(tmp_path: Path) -> None:
    # GIVEN a start-up hung in its capture, and last week's start-up of the same server, which captured
    hung, good = tmp_path / "hung.log", tmp_path / "last-weeks-good.log"
    hung.write_text("\n".join(sglang_startup(START, [2] * 12).cut(36).lines) + "\n")
    good.write_text("\n".join(sglang_startup(START - timedelta(days=7), [2] * 12).lines) + "\n")
    # WHEN analysed together THEN refused: the gap between them is said
    code, output = _refusal(hung, good)
    assert code == 2
    assert f"logphase: error: {hung} begins 6d 23h after {good} ends: two runs, not one" in output


def test_a_log_holding_a_second_launch_beside_another_log_is_refused(tmp_path: Path) -> None:
    # GIVEN two logs of one hour, the second holding a start, then a second start (a relaunch appended)
    first, second = tmp_path / "node0.log", tmp_path / "node1.log"
    one = sglang_startup(START, [2] * 5)
    again = sglang_startup(START + timedelta(minutes=5), [2] * 5)
    first.write_text("\n".join(one.lines) + "\n")
    second.write_text("\n".join([*one.lines, *again.lines]) + "\n")
    # WHEN analysed together THEN refused, naming the line of the second launch
    code, output = _refusal(first, second)
    assert code == 2
    assert f"logphase: error: {second} holds another launch at line {len(one.lines) + 1}" in output
    # AND alone, the log with two starts is judged as its last start, as before
    assert run_cli("analyze", "--post-mortem", str(second)).exit_code == 4


def test_a_rank_that_writes_regularly_is_bounded_by_its_own_cadence_where_no_bar_runs() -> None:
    # GIVEN TP0 in kv_cache writing a line every 40 s (four waits), no bar running, no recorded runs
    lines = [
        f"[2026-05-10 10:0{minute}:{second:02d} TP0] KV Cache is allocated. #tokens: {1000 * n}, K size: 8.00 GB, "
        "V size: 8.00 GB"
        for n, (minute, second) in enumerate([(0, 0), (0, 40), (1, 20), (2, 0), (2, 40)], start=1)
    ]
    ingest = Ingest(PACKS, reference=START)
    ingest.feed([Line(n, text, 0) for n, text in enumerate(lines, start=1)], arrived=0.0)
    timeline = ingest.timeline()
    # WHEN its budget is drawn THEN 10 × its longest wait (40 s): 6m40s, the rule named
    budget = Budgets(defaults={Phase.KV_CACHE: 300.0}).for_run(timeline, Phase.KV_CACHE)
    assert (budget.seconds, budget.source) == (
        400.0,
        "10 × the longest wait between the ranks' lines in kv_cache and the phase before (40s), at least 5m00s",
    )
    # AND a budget learned from recorded runs of the setup outranks the cadence, --stall-after every rule
    assert Budgets(learned={Phase.KV_CACHE: 90.0}).for_run(timeline, Phase.KV_CACHE).seconds == 90.0
    assert Budgets(stall_after_s=5.0).for_run(timeline, Phase.KV_CACHE).seconds == 5.0
    # AND three waits are no cadence yet: the pack's budget stands
    ingest = Ingest(PACKS, reference=START)
    ingest.feed([Line(n, text, 0) for n, text in enumerate(lines[:4], start=1)], arrived=0.0)
    assert Budgets(defaults={Phase.KV_CACHE: 300.0}).for_run(ingest.timeline(), Phase.KV_CACHE).source == "pack default"
