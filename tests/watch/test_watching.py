"""The watch state machine: transitions, when it ends and with which exit code, the status line."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from logphase.baselines.records import StopPoint
from logphase.baselines.stats import PhaseStats, phase_stats
from logphase.errors import ExitCode
from logphase.judging.budgets import Budgets, budgets_from
from logphase.judging.confidence import Confidence
from logphase.judging.exits import exit_code
from logphase.judging.logs import Judgement
from logphase.logs.reader import Line
from logphase.logs.timeline import PhaseSpan
from logphase.packs import load_packs
from logphase.phases import Phase, Verdict
from logphase.watch.health import Health, Probe
from logphase.watch.ingest import Ingest
from logphase.watch.state import (
    Observation,
    Settings,
    Transition,
    WatchState,
    interrupted,
    outcome_transition,
    status_line,
    step,
)
from tests.baselines.test_eta_words import _ready_run


def _judged(verdict: Verdict, phase: Phase | None, reason: str = "") -> Judgement:
    return Judgement(verdict, reason, phase, phase, (), None, None, None)


def _obs(t: float, *, phase: Phase | None = Phase.CUDA_GRAPH, silence: float = 0.0, **changes: object) -> Observation:
    observation = Observation(
        t=t,
        lines=int(t * 100),
        judgement=_judged(Verdict.PROGRESSING, phase) if phase else None,
        stop=StopPoint(phase, False, int(t * 100)),
        in_phase_s=t,
        silence_s=silence,
        last_progress_line=12,
    )
    return replace(observation, **changes)  # type: ignore[arg-type]


def _step(state: WatchState, obs: Observation, settings: Settings) -> tuple[WatchState, tuple[Transition, ...]]:
    """`step`, and the outcome told as the CLI tells it once the final report is judged (here a report
    whose evidence carries its verdict: high confidence)."""
    state, said = step(state, obs, settings)
    if state.outcome is not None:
        said = (*said, outcome_transition(state, obs.t, settings, confidence="high", exit_code=_code(state)))
    return state, said


def _code(state: WatchState) -> ExitCode:
    assert state.outcome is not None
    return exit_code(state.outcome.verdict, Confidence.HIGH)


def _texts(transitions: tuple[object, ...]) -> list[str]:
    return [str(t) for t in transitions]


def test_health_changes_and_phase_changes_are_transitions_and_200_ends_it_ready() -> None:
    settings = Settings(budgets=Budgets(stall_after_s=5))
    state, said = _step(WatchState(), _obs(0.0, probe=Probe(Health.REFUSED, None, "connection refused", 0.0)), settings)
    assert _texts(said) == [
        "[+   0.0s] health: connection refused (not listening yet)",
        "[+   0.0s] phase: cuda_graph (line 12)",
    ]
    state, said = _step(state, _obs(1.0), settings)
    assert (said, state.outcome) == ((), None)  # nothing changed: nothing said
    state, said = _step(state, _obs(2.0, probe=Probe(Health.STARTING, 503, "service unavailable", 0.0)), settings)
    assert _texts(said) == ["[+   2.0s] health: 503 starting or warming up"]
    state, said = _step(state, _obs(3.5, probe=Probe(Health.READY, 200, "ok", 0.0)), settings)
    assert _texts(said) == ["[+   3.5s] health: 200 ready", "[+   3.5s] ready: health 200 ready after 4s"]
    assert state.outcome is not None and (_code(state), state.outcome.verdict) == (
        ExitCode.OK,
        Verdict.READY,
    )


def test_a_job_whose_ranks_all_shut_down_ends_it_finished_exit_0() -> None:
    # GIVEN a watched torch job WHEN its log says every rank destroyed its communicators
    reason = "the job finished: every rank shut down cleanly (the last: rank 1, line 65, ...)"
    finished = _obs(9.0, judgement=_judged(Verdict.FINISHED, Phase.DIST_INIT, reason))
    state, said = _step(WatchState(), finished, Settings(budgets=Budgets(stall_after_s=5)))
    # THEN the watch ends with exit 0 and says why
    assert _texts(said)[-1] == f"[+   9.0s] {reason}"
    assert state.outcome is not None and (_code(state), state.outcome.verdict) == (
        ExitCode.OK,
        Verdict.FINISHED,
    )


def test_silence_past_stall_after_ends_it_stalled_exit_4() -> None:
    settings = Settings(budgets=Budgets(stall_after_s=5))
    state, _ = _step(WatchState(), _obs(0.0), settings)
    state, said = _step(state, _obs(5.0, silence=5.0), settings)
    assert state.outcome is None  # at the budget: not yet
    state, said = _step(state, _obs(5.5, silence=5.5), settings)
    assert _texts(said) == [
        "[+   5.5s] stalled: no progress for 6s in cuda_graph (budget 5s, --stall-after); last progress at line 12"
    ]
    assert state.outcome is not None and _code(state) is ExitCode.PROBLEM and state.outcome.verdict is Verdict.STALLED


def test_a_health_change_is_progress_while_the_log_is_quiet() -> None:
    settings = Settings(budgets=Budgets(stall_after_s=5))
    state, _ = _step(WatchState(), _obs(0.0, probe=Probe(Health.REFUSED, None, "", 0.0)), settings)
    state, _ = _step(state, _obs(4.0, silence=4.0, probe=Probe(Health.STARTING, 503, "", 0.0)), settings)
    state, _ = _step(state, _obs(8.0, silence=8.0), settings)
    assert state.outcome is None  # the 503 at 4 s was progress: 4 s of silence, not 8
    state, _ = _step(state, _obs(9.5, silence=9.5), settings)
    assert state.outcome is not None and state.outcome.verdict is Verdict.STALLED


def test_learned_budgets_win_over_pack_defaults_and_say_where_they_come_from() -> None:
    stats = {Phase.CUDA_GRAPH: PhaseStats(Phase.CUDA_GRAPH, 3, 110.0, 118.0, 119.0)}
    settings = Settings(budgets=budgets_from({Phase.CUDA_GRAPH: 1800.0}, stats), stats=stats)
    state, _ = _step(WatchState(), _obs(0.0), settings)
    state, said = _step(state, _obs(400.0, silence=358.0), settings)
    assert _texts(said)[-1] == (
        "[+ 400.0s] stalled: no progress for 5m58s in cuda_graph (budget 5m57s, learned from 3 successful runs); "
        "last progress at line 12"
    )


def test_overdue_is_said_once_before_the_stall() -> None:
    stats = {Phase.CUDA_GRAPH: PhaseStats(Phase.CUDA_GRAPH, 3, 110.0, 118.0, 119.0)}
    settings = Settings(budgets=budgets_from({}, stats), stats=stats)
    state, _ = _step(WatchState(), _obs(0.0), settings)
    # 4 min in (2 × p90) is slow, not overdue: that takes 10 × p90 (19m40s) and 2 min without progress
    state, said = _step(state, _obs(240.0, silence=120.0), settings)
    assert said == ()
    state, said = _step(state, _obs(1180.0, silence=120.0), settings)
    assert _texts(said) == ["[+1180.0s] overdue: 19m40s in cuda_graph, successful runs take 1m50s (p90 1m58s)"]
    state, said = _step(state, _obs(1181.0, silence=121.0), settings)
    assert (said, state.overdue, state.outcome) == ((), True, None)


def test_crash_in_the_log_and_a_vanished_process_end_it_with_exit_4() -> None:
    crashed = _judged(
        Verdict.CRASHED,
        Phase.CUDA_GRAPH,
        "TP1 crashed during cuda_graph: RuntimeError: CUDA error: out of memory (line 25)",
    )
    state, said = _step(WatchState(), _obs(1.0, judgement=crashed), Settings())
    assert (
        _texts(said)[-1]
        == "[+   1.0s] crashed: TP1 crashed during cuda_graph: RuntimeError: CUDA error: out of memory (line 25)"
    )
    assert state.outcome is not None and _code(state) is ExitCode.PROBLEM
    state, said = _step(WatchState(), _obs(2.0, process_alive=False), Settings(pid=4242))
    assert _texts(said)[-1] == "[+   2.0s] crashed: process 4242 exited during cuda_graph without a ready line"


def test_timeout_ends_it_still_starting_exit_5_and_stdin_ending_is_judged_post_mortem() -> None:
    state, said = _step(WatchState(), _obs(3.0), Settings(timeout_s=3.0))
    assert state.outcome is not None and (_code(state), _texts(said)[-1]) == (
        ExitCode.STARTING,
        "[+   3.0s] still starting after 3s (in cuda_graph): --timeout",
    )
    # GIVEN the input ended mid-capture: the log's post-mortem judgement (Ingest judges it so) decides
    ended = _judged(Verdict.STALLED, Phase.CUDA_GRAPH, "the log ends during cuda_graph with no error (line 12)")
    state, said = _step(WatchState(), _obs(3.0, input_ended=True, judgement=ended), Settings())
    assert state.outcome is not None and (_code(state), _texts(said)[-1]) == (
        ExitCode.PROBLEM,
        "[+   3.0s] stalled: the log ends during cuda_graph with no error (line 12)",
    )
    # AND an input that ended without a line any rule knows is unknown, as analyze says
    state, said = _step(WatchState(), _obs(3.0, input_ended=True, phase=None), Settings())
    assert state.outcome is not None and (state.outcome.verdict, _texts(said)[-1]) == (
        Verdict.UNKNOWN,
        "[+   3.0s] unknown: no line matched any pattern",
    )


def test_status_line_shows_phase_usual_time_rate_progress_and_health() -> None:
    stats = {Phase.CUDA_GRAPH: PhaseStats(Phase.CUDA_GRAPH, 3, 110.0, 118.0, 119.0)}
    settings = Settings(stats=stats)
    state, _ = _step(WatchState(), _obs(62.0, probe=Probe(Health.STARTING, 503, "", 0.0)), settings)
    state, _ = _step(state, _obs(66.0, silence=6.0), settings)  # 400 lines in the last 4 s
    line = status_line(state, _obs(66.0, silence=6.0), settings)
    assert (
        line == "cuda_graph 1m06s (usually 1m50s) · 100 lines/s · progress 6s ago · health 503 starting or warming up"
    )


def test_ingest_measures_silence_by_the_log_clock_and_arrival_not_the_wall_clock() -> None:
    # GIVEN a log stamped in another time zone (hours off the watcher's clock)
    packs = load_packs(builtin=True)
    ingest = Ingest(packs, reference=datetime(2026, 1, 1, 23, 0, 0))
    ingest.feed(
        [
            Line(1, "[2026-01-01 10:00:00 TP0] Load weight begin. avail mem=70.00 GB", 0),
            Line(2, "[2026-01-01 10:00:30 TP0] Load weight end. type=X, avail mem=50.00 GB", 0),
            Line(3, "[2026-01-01 10:00:40 TP0] an unrecognised line", 0),
        ],
        arrived=100.0,
    )
    # THEN 10 s of log time after the progress (less a second of stamp resolution) plus 5 s since arrival
    assert ingest.silence(105.0, since=0.0) == 14.0
    assert (ingest.stop_point().phase, ingest.lines) == (Phase.WEIGHT_LOAD, 3)


def test_ingest_dates_year_less_stamps_by_the_first_dated_line_as_analyze_does() -> None:
    # GIVEN a log whose first stamps carry no year (vLLM's `INFO 11-26 …`) and a later line that
    # does (SGLang's `[2024-11-26 …]`), watched a year later
    # WHEN the existing file is caught up on in one batch
    spans = caught_up(
        datetime(2025, 12, 1, 0, 0, 0),
        "INFO 11-26 14:23:34 weight_utils.py:243] Using model weights format ['*.safetensors']",
        "[2024-11-26 14:25:58] Initialization failed. warmup error: Traceback (most recent call last):",
    )
    # THEN the year-less stamp is of 2024, like the dated line after it (was: the watch's own year, 2025)
    assert [(span.phase, span.start) for span in spans][:1] == [(Phase.WEIGHT_LOAD, datetime(2024, 11, 26, 14, 23, 34))]


def test_ingest_dates_times_of_day_by_the_first_line_with_a_date_as_analyze_does() -> None:
    # GIVEN an SGLang 0.3 log (`[23:16:54 TP0]`: a time of day only) whose first date is on a later vLLM
    # line (`INFO 09-19 …`: no year), watched on 1 December
    # WHEN the existing file is caught up on in one batch
    spans = caught_up(
        datetime(2026, 12, 1, 12, 0, 0),
        "[23:16:54 TP0] Load weight begin. avail mem=78.54 GB",
        "INFO 09-19 23:16:56 weight_utils.py:236] Using model weights format ['*.safetensors']",
    )
    # THEN TP0's time of day is on 19 September, the vLLM line's date (was: the day before the watch's)
    assert [span.start for span in spans if span.rank == "TP0"] == [datetime(2026, 9, 19, 23, 16, 54)]


def caught_up(reference: datetime, *texts: str) -> list[PhaseSpan]:
    """The timeline's spans of a watch started at `reference` that catches up on these lines in one batch."""
    ingest = Ingest(load_packs(builtin=True), reference=reference)
    ingest.feed([Line(number, text, 0) for number, text in enumerate(texts, start=1)], arrived=0.0)
    return list(ingest.timeline().spans)


def test_the_status_line_gives_the_eta_as_the_report_words_it() -> None:
    # GIVEN three recorded successful runs (capture 100, 110, 120 s), and a watch 30 s into its capture
    runs = [_ready_run(capture, number=n) for n, capture in enumerate((100.0, 110.0, 120.0), start=1)]
    stats = phase_stats(runs)
    settings = Settings(budgets=budgets_from({}, stats), stats=stats, pool=runs)
    obs = replace(_obs(30.0), in_phase_s=30.0)
    # WHEN its status line is made THEN the ETA reads as in the report: `ready in ~…, from 3 runs`
    line = status_line(WatchState(phase=Phase.CUDA_GRAPH), obs, settings)
    assert line.endswith(" · ready in ~1m40s (1m32s–1m48s), from 3 runs"), line


URL = "http://127.0.0.1:30000/health"
LOG_READY = "ready: The server is fired up and ready to roll! (line 32)"


def test_every_transition_is_one_json_event_with_t_event_and_its_fields() -> None:
    # GIVEN a refused probe and a phase, then an overdue capture, then a 200
    stats = {Phase.CUDA_GRAPH: PhaseStats(Phase.CUDA_GRAPH, 3, 110.0, 118.0, 119.0)}
    settings = Settings(budgets=budgets_from({}, stats), stats=stats)
    refused = Probe(Health.REFUSED, None, "connection refused", 0.0)
    state, first = _step(WatchState(), _obs(0.0, probe=refused), settings)
    state, overdue = _step(state, _obs(1180.0, silence=120.0), settings)
    state, last = _step(state, _obs(1181.5, probe=Probe(Health.READY, 200, "ok", 0.0)), settings)
    # WHEN they are written as JSON THEN each has `t`, `event`, its own fields and the text line
    assert [t.to_json() for t in (*first, *overdue, *last)] == [
        {
            "t": 0.0,
            "event": "health",
            "health": "refused",
            "status": None,
            "text": "health: connection refused (not listening yet)",
        },
        {"t": 0.0, "event": "phase", "phase": "cuda_graph", "line": 12, "text": "phase: cuda_graph (line 12)"},
        {
            "t": 1180.0,
            "event": "overdue",
            "phase": "cuda_graph",
            "in_phase_s": 1180.0,
            "median_s": 110.0,
            "p90_s": 118.0,
            "text": "overdue: 19m40s in cuda_graph, successful runs take 1m50s (p90 1m58s)",
        },
        {"t": 1181.5, "event": "health", "health": "ready", "status": 200, "text": "health: 200 ready"},
        {
            "t": 1181.5,
            "event": "outcome",
            "verdict": "ready",
            "confidence": "high",
            "exit_code": 0,
            "log_says_ready": None,
            "text": "ready: health 200 ready after 19m42s",
        },
    ]


def test_a_log_that_says_ready_ends_it_once_worded_when_no_url_is_watched() -> None:
    # GIVEN no --url WHEN the log says ready THEN ready, said once (was `ready: ready: …`)
    state, said = _step(WatchState(), _obs(4.0, judgement=_judged(Verdict.READY, Phase.READY, LOG_READY)), Settings())
    assert _texts(said)[-1] == "[+   4.0s] ready: The server is fired up and ready to roll! (line 32)"
    assert state.outcome is not None and _code(state) is ExitCode.OK


def test_with_a_url_a_log_that_says_ready_is_not_ready_while_the_url_refuses_and_the_outcome_says_both() -> None:
    settings = Settings(budgets=Budgets(stall_after_s=60), timeout_s=10.0, health_url=URL)
    log_ready = _judged(Verdict.READY, Phase.READY, LOG_READY)
    refused = Probe(Health.REFUSED, None, "connection refused", 0.0)
    state, _ = _step(WatchState(), _obs(1.0, probe=refused), settings)
    # GIVEN the log says ready before the URL was asked again: not ready, nothing said yet
    state, said = _step(state, _obs(2.0, judgement=log_ready), settings)
    assert (_texts(said), state.outcome) == (["[+   2.0s] phase: ready (line 12)"], None)
    # WHEN the URL, asked after the ready line, still refuses THEN not ready, and both are said
    state, said = _step(state, _obs(2.1, judgement=log_ready, probe=refused), settings)
    assert _texts(said) == [
        f"[+   2.1s] not ready: {URL}: connection refused (not listening yet), "
        "though the log says ready: The server is fired up and ready to roll! (line 32)"
    ]
    assert said[0].to_json()["event"] == "ready_unconfirmed" and state.outcome is None
    state, said = _step(state, _obs(5.0, judgement=log_ready, probe=refused), settings)
    assert (said, state.outcome) == ((), None)  # said once
    # AND at --timeout the outcome keeps both sides
    state, said = _step(state, _obs(10.0, judgement=log_ready), settings)
    assert _texts(said) == [
        "[+  10.0s] still starting after 10s (in ready): --timeout; "
        f"{URL}: connection refused (not listening yet), "
        "though the log says ready: The server is fired up and ready to roll! (line 32)"
    ]
    assert state.outcome is not None and _code(state) is ExitCode.STARTING
    assert said[0].to_json()["log_says_ready"] == "The server is fired up and ready to roll! (line 32)"


def test_with_a_url_a_log_that_says_ready_ends_ready_once_the_url_answers_200() -> None:
    settings = Settings(budgets=Budgets(stall_after_s=60), health_url=URL)
    log_ready = _judged(Verdict.READY, Phase.READY, LOG_READY)
    failing = Probe(Health.NO_ANSWER, None, "timed out", 2.0)
    state, _ = _step(WatchState(), _obs(1.0, judgement=log_ready, probe=failing), settings)
    state, said = _step(state, _obs(3.0, judgement=log_ready, probe=Probe(Health.READY, 200, "ok", 0.0)), settings)
    assert _texts(said) == ["[+   3.0s] health: 200 ready", "[+   3.0s] ready: health 200 ready after 3s"]
    assert state.outcome is not None and state.outcome.verdict is Verdict.READY


def test_an_interrupt_ends_it_still_starting() -> None:
    state = interrupted(WatchState(phase=Phase.CUDA_GRAPH), 7.25, Settings())
    said = outcome_transition(state, 7.25, Settings(), confidence="high", exit_code=_code(state))
    assert said.to_json() == {
        "t": 7.25,
        "event": "outcome",
        "verdict": "progressing",
        "confidence": "high",
        "exit_code": 5,
        "log_says_ready": None,
        "text": "interrupted",
    }
    assert state.outcome is not None and _code(state) is ExitCode.STARTING


SCHEDULER_TRACEBACK = (
    "[2025-06-02 09:14:01 TP0] Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=61.20 GB",
    "[2025-06-02 09:14:07 TP0] Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2311, in run_scheduler_process',
    "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)",
    '  File "/sgl-workspace/sglang/python/sglang/srt/mem_cache/memory_pool.py", line 412, in _create_buffers',
    "    self.k_buffer = [",
)
EXCEPTION_LINE = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity"


def _watched(*batches: tuple[float, tuple[str, ...]], ended_at: float | None = None) -> list[str]:
    """The transitions of a watch fed these batches of lines (arrival second, texts), one tick per second
    from the first batch until the watch ends (or 20 s)."""
    ingest = Ingest(load_packs(builtin=True), reference=datetime(2025, 6, 2, 9, 14, 8))
    state, said, number, pending = WatchState(), [], 0, list(batches)
    settings = Settings()
    for tick in range(20):
        now = float(tick)
        while pending and pending[0][0] <= now:
            arrived, texts = pending.pop(0)
            ingest.feed([Line(number + i + 1, text, 0) for i, text in enumerate(texts)], arrived=arrived)
            number += len(texts)
        ended = ended_at is not None and now >= ended_at
        obs = ingest.observe(now, since=0.0, budgets=settings.budgets, input_ended=ended)
        state, step_said = _step(state, obs, settings)
        said += _texts(step_said)
        if state.outcome is not None:
            return said
    return said


def test_a_traceback_whose_exception_line_comes_a_tick_later_is_judged_on_that_line() -> None:
    # GIVEN a live log whose scheduler traceback arrives without its exception line (still being written)
    # WHEN the exception line arrives two seconds later
    said = _watched((0.0, SCHEDULER_TRACEBACK), (2.0, (EXCEPTION_LINE,)))
    # THEN the watch waited for it, and the outcome names the exception, not the header or a frame
    assert said[-1].startswith("[+   2.0s] crashed: ")
    assert "torch.OutOfMemoryError: CUDA out of memory" in said[-1]


def test_a_traceback_that_stays_cut_decides_once_the_grace_is_spent_or_the_log_ends() -> None:
    # GIVEN the same traceback, and no exception line ever comes while the log stays open
    said = _watched((0.0, SCHEDULER_TRACEBACK))
    # THEN the open traceback decides once the grace (5 s) is spent: TP0 crashed while loading weights
    assert said[-1].startswith("[+   5.0s] crashed: TP0 crashed during weight_load: ")
    # AND a log that ends (a closed pipe) is judged at once, without the grace
    ended = _watched((0.0, SCHEDULER_TRACEBACK), ended_at=1.0)
    assert ended[-1].startswith("[+   1.0s] crashed: TP0 crashed during weight_load: ")
