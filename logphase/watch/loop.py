"""The live watch at its edge: follow the log, probe the URL, check the process, step the state machine, judge once."""

from __future__ import annotations

import os
import signal
import stat
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from types import FrameType
from typing import IO, Protocol

from logphase import pipeline
from logphase.baselines.fingerprint import ByteTap, identity_of
from logphase.baselines.records import RunRecord
from logphase.baselines.stats import phase_stats, successful_pool
from logphase.baselines.store import RunStore
from logphase.errors import StoreError
from logphase.judging.budgets import Budgets, budgets_from
from logphase.logs.fast.caches import FastCaches
from logphase.logs.follow import FOLLOW_POLL_S, follow_lines
from logphase.packs import PackSet
from logphase.phases import Phase, Verdict
from logphase.report.model import InputSummary, Report
from logphase.stacks.model import StacksReport
from logphase.stacks.pyspy import process_exists
from logphase.watch.health import HealthURL, probe
from logphase.watch.hooks import HookRun, Hooks, hook_environment, run_hook
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

# A health endpoint that takes longer than this to answer counts as "no answer".
PROBE_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class WatchRequest:
    """What to watch and how: `log` a path, or "-" for `stdin`."""

    log: str
    packs: PackSet
    store_path: Path  # the run store: baselines of this setup, once its fingerprint is known
    health_url: HealthURL | None = None
    pid: int | None = None
    timeout_s: float | None = None
    stall_after_s: float | None = None
    interval_s: float = 1.0
    record: bool = False  # the run's identity is taken (hashed as read) for the caller to record it
    caches: FastCaches = field(default_factory=FastCaches)
    stdin: IO[bytes] | None = None
    hooks: Hooks | None = None  # commands run on the outcome (ready, stall, crash), after the final report


class WatchOutput(Protocol):
    """Where the watch says things as they happen (the CLI prints them)."""

    def transitions(self, said: Iterable[Transition]) -> None: ...

    def note(self, t: float, text: str) -> None: ...

    def status(self, text: str) -> None: ...


@dataclass(frozen=True)
class WatchEnd:
    """How the watch ended: the run's report (judged once, as analyze judges the same lines), its
    record when asked for, the stacks taken at a stall, and the outcome as told."""

    report: Report
    run: RunRecord | None
    stacks: StacksReport | None
    outcome: Transition
    hook: HookRun | None = None  # the hook the outcome ran, and how it ended


def watch(
    request: WatchRequest,
    output: WatchOutput,
    *,
    take_stacks: Callable[[int], StacksReport | None],
    live_status: bool = False,
    clock: Callable[[], float],
) -> WatchEnd:
    """Follow the log until the state machine has its outcome (ready, stalled, crashed, --timeout, the
    input ended, an interrupt), then judge the run once through the pipeline with the watch's decision
    weighed in. `take_stacks` is called on a stall when a pid is given; `live_status`: one status line
    (output.status) at most every second. `clock`: seconds since the watch began (the caller's start:
    loading the packs counts towards --timeout)."""
    log, packs = request.log, request.packs
    ingest = Ingest(packs, reference=datetime.now(), name=log if log != "-" else "<stdin>", caches=request.caches)
    settings = Settings(
        budgets=Budgets(stall_after_s=request.stall_after_s),
        timeout_s=request.timeout_s,
        pid=request.pid,
        health_url=str(request.health_url) if request.health_url is not None else None,
    )
    state = WatchState()
    taken = ByteTap()  # what the watch read of the log: its identity, with no second read

    def note(text: str) -> None:
        output.note(clock(), text)

    def unwrapped(text: str) -> None:
        note(text)  # what the follower assumed (the log's envelopes), said now and in the final report
        ingest.note(text)

    catching_up = log != "-" and _regular(log)  # a pipe's lines arrive as they are written
    modified = _mtime(log)
    setup: tuple[str | None, str | None] | None = None
    next_probe = 0.0
    next_status = 0.0
    follower = follow_lines(
        log,
        stop=lambda: state.outcome is not None,
        poll_s=min(FOLLOW_POLL_S, request.interval_s),
        stdin=request.stdin if log == "-" else None,
        on_bytes=taken.add,
        on_note=note,
        on_envelopes=unwrapped,
        packs=packs,
    )
    observation: Observation | None = None
    restore_sigterm = _sigterm_interrupts()
    try:
        ended = True
        for batch in follower:
            now = clock()
            if batch and catching_up:
                # lines of an existing file were written before now: timed by the log's own clock, as analyze
                # judges the file (by its mtime where its stamps cannot say)
                written = datetime.fromtimestamp(modified) if modified is not None else None
                ingest.feed(batch, now, wall=datetime.now(), modified=written)
                if _unread(log, taken.size) and (request.timeout_s is None or now < request.timeout_s):
                    continue  # more of the file is there: no verdict on a part of it
            elif batch:
                ingest.feed(batch, now)
            else:
                catching_up = False
            system = ingest.timeline().system
            key = ingest.fingerprint.fingerprint(system).key if ingest.fingerprint.args else None
            if (key, system) != setup:
                setup = (key, system)
                settings = _with_baselines(settings, packs.budgets(system), key, request.store_path, note)
            probed = None
            if request.health_url is not None and now >= next_probe:
                # never past --timeout: the probe gets the time left, at most PROBE_TIMEOUT_S
                timeout_s = request.timeout_s
                left = PROBE_TIMEOUT_S if timeout_s is None else min(PROBE_TIMEOUT_S, timeout_s - now)
                if left > 0:
                    probed = probe(request.health_url, left)
                next_probe = clock() + request.interval_s
            pid = request.pid
            observation = ingest.observe(
                clock(),
                since=0.0,
                budgets=settings.budgets,
                probe=probed,
                process_alive=_alive(pid) if pid is not None else None,
            )
            log_ready = state.log_ready
            state, said = step(state, observation, settings)
            output.transitions(said)
            if state.outcome is not None:
                ended = False
                break
            if state.log_ready is not None and log_ready is None:
                next_probe = 0.0  # the log says ready: ask the URL now, not an interval later
            if live_status and now >= next_status:
                output.status(status_line(state, observation, settings))
                next_status = now + min(request.interval_s, 1.0)
        if ended and state.outcome is None:
            ingest.end()
            observation = ingest.observe(clock(), since=0.0, budgets=settings.budgets, input_ended=True)
            state, said = step(state, observation, settings)
            output.transitions(said)
    except KeyboardInterrupt:
        state = interrupted(state, clock(), settings)
    finally:
        restore_sigterm()
        follower.close()
    outcome = state.outcome
    assert outcome is not None
    stacks = take_stacks(request.pid) if outcome.verdict is Verdict.STALLED and request.pid is not None else None
    # the final report judges the run once, the watch's decision weighed in: its verdict, confidence
    # and exit code are those analyze gives the same lines
    ingest.end()
    as_of = ingest.log_now(clock()) or datetime.now()
    name = str(Path(log).resolve()) if log != "-" else "<stdin>"
    inputs = [InputSummary(name, ingest.lines, taken.size)]
    last_write = datetime.fromtimestamp(modified) if modified is not None else None
    options = pipeline.Options(
        as_of=as_of, post_mortem=ended, live=outcome, stacks=stacks, stall_after_s=request.stall_after_s
    )
    timeline = ingest.timeline()
    fingerprint = ingest.fingerprint.fingerprint(timeline.system, timeline.version)
    identity = identity_of([taken], fingerprint) if request.record else None
    report, run = pipeline.assemble(
        inputs, ingest.scan_result(), packs, options, identity=identity, last_activity=last_write
    )
    told = outcome_transition(state, clock(), settings, confidence=report.confidence, exit_code=report.exit_code)
    output.transitions([told])
    hook = _run_hook(request.hooks, report)
    if hook is not None:
        output.note(clock(), hook.said)
    return WatchEnd(report, run, stacks, told, hook)


def _run_hook(hooks: Hooks | None, report: Report) -> HookRun | None:
    """The outcome's hook, run with the report's verdict, phase, rank and reason in its environment."""
    chosen = hooks.command_for(report.verdict) if hooks is not None else None
    if hooks is None or chosen is None:
        return None
    option, command = chosen
    return run_hook(option, command, hook_environment(report, hooks.environment), hooks.timeout_s)


def _sigterm_interrupts() -> Callable[[], None]:
    """SIGTERM (kill, docker stop, timeout(1)) ends the watch as Ctrl-C does: said, and the run
    recorded. Returns what puts the previous handler back (only the main thread handles signals)."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)

    def restore() -> None:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)

    return restore


def _with_baselines(
    settings: Settings, defaults: Mapping[Phase, float], key: str | None, store_path: Path, note: Callable[[str], None]
) -> Settings:
    """Budgets and ETA from successful recorded runs of this setup, once its fingerprint is known."""
    stall_after_s = settings.budgets.stall_after_s
    settings = replace(settings, budgets=Budgets(defaults, stall_after_s=stall_after_s))
    if key is None or not store_path.exists():
        return settings
    try:
        with RunStore.open(store_path, create=False) as store:
            pool = successful_pool(store.matching(key))
    except StoreError as error:
        note(f"run store not used: {error.message}")
        return settings
    stats = phase_stats(pool)
    if pool:
        note(f"baselines: {len(pool)} successful run(s) of this setup")
    budgets = budgets_from(defaults, stats, stall_after_s=stall_after_s)
    return replace(settings, budgets=budgets, stats=stats, pool=tuple(pool))


def _alive(pid: int) -> bool:
    """Whether the process still runs; a zombie (exited, not yet reaped by its parent) does not."""
    if not process_exists(pid):
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[-1].split()
        return not fields or fields[0] != b"Z"
    except OSError:
        return True


def _regular(log: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(log).st_mode)
    except OSError:
        return False


def _unread(log: str, read: int) -> bool:
    """Whether the followed file holds more bytes than were read of it."""
    try:
        return os.stat(log).st_size > read
    except OSError:
        return False


def _mtime(log: str) -> float | None:
    if log == "-":
        return None
    try:
        return os.stat(log).st_mtime
    except OSError:
        return None
