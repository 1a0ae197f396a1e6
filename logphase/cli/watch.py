"""`logphase watch LOG`: follow a starting server's log (and its health URL) until ready, stalled or crashed."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from types import FrameType

import click

from logphase import pipeline
from logphase.baselines.stats import phase_stats, successful_pool
from logphase.cli.common import (
    PID,
    cache_folder,
    db_option,
    load_all_packs,
    patterns_option,
    seconds,
    stall_after_option,
    use_colour,
)
from logphase.cli.live_stacks import check_pid, exists, take_stacks
from logphase.cli.runs import open_store, record, resolve_db
from logphase.errors import StoreError
from logphase.fingerprint import HEAD_HASH_BYTES, LogIdentity, combine_digests, head_digest
from logphase.health import parse_url, probe
from logphase.judging.budgets import Budgets, budgets_from
from logphase.logs.fast.caches import FastCaches
from logphase.logs.follow import FOLLOW_POLL_S, follow_lines
from logphase.phases import Phase, Verdict
from logphase.report.formats import OutputFormat, pick
from logphase.report.model import InputSummary
from logphase.stacks.model import StacksReport
from logphase.watching import (
    Ingest,
    Observation,
    Settings,
    Transition,
    WatchState,
    format_clock,
    interrupted,
    outcome_transition,
    status_line,
    step,
)

# A health endpoint that takes longer than this to answer counts as "no answer".
PROBE_TIMEOUT_S = 2.0


class WatchFormat(StrEnum):
    """How transitions are written on stdout: a line of text each, or one JSON object per line."""

    TEXT = "text"
    JSONL = "jsonl"


@dataclass
class _Printer:
    """Where what the watch says goes: transitions (phase, health, overdue, outcome) on stdout, as
    text or JSON lines, so `| tee` and `> file` keep them; notes and the live status line on stderr.
    A status line left on the terminal is cleared before anything else is written."""

    jsonl: bool
    status_shown: bool = False

    def transitions(self, said: Iterable[Transition]) -> None:
        for transition in said:
            self.clear_status()
            click.echo(json.dumps(transition.to_json(), ensure_ascii=False) if self.jsonl else str(transition))

    def event(self, payload: Mapping[str, object]) -> None:
        self.clear_status()
        click.echo(json.dumps(payload, ensure_ascii=False))

    def note(self, t: float, text: str) -> None:
        self.clear_status()
        click.echo(f"[{format_clock(t)}] {text}", err=True)

    def status(self, text: str) -> None:
        click.echo("\r\x1b[K" + text[: _width()], nl=False, err=True)
        self.status_shown = True

    def clear_status(self) -> None:
        if self.status_shown:
            click.echo("\r\x1b[K", nl=False, err=True)
            self.status_shown = False


@click.command()
@click.argument("log")
@click.option(
    "--url", "url", metavar="HEALTH_URL", help="Poll this health URL too (http://HOST:PORT means its /health)."
)
@click.option(
    "--pid",
    "pid",
    type=PID,
    help="The server's main process: its exit is a crash; on a stall, its ranks' stacks are taken.",
)
@click.option(
    "--timeout",
    "timeout_s",
    type=seconds(0, low_open=True),
    metavar="S",
    help="Give up after S seconds (exit 5).",
)
@stall_after_option
@click.option("--record", "record_run", is_flag=True, help="Record the finished run in the run store.")
@click.option(
    "--interval",
    "interval_s",
    type=seconds(0.05, 600),
    default=1.0,
    show_default=True,
    metavar="S",
    help="Seconds between health probes and status updates.",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(WatchFormat, case_sensitive=False),
    default=WatchFormat.TEXT,
    show_default=True,
    help="Transitions on stdout as lines of text, or one JSON event per line (jsonl).",
)
@db_option
@patterns_option
def watch(
    log: str,
    url: str | None,
    pid: int | None,
    timeout_s: float | None,
    stall_after_s: float | None,
    record_run: bool,
    interval_s: float,
    output_format: WatchFormat,
    db_path: Path | None,
    pattern_paths: tuple[Path, ...],
) -> None:
    """Follow a starting server's log and tell, live, whether it is ready, still starting, stalled
    or crashed. Rotation and truncation are handled; '-' reads standard input, e.g.
    `kubectl logs -f POD | logphase watch -`.

    With --url, the health endpoint tells apart: connection refused (not listening yet), 503
    (starting or warming up), 200 (ready), no answer; only the URL can say ready then. Phase and
    health changes and the outcome go to stdout (--format jsonl: one JSON event per line); notes,
    and on a terminal one status line updated in place, go to stderr.

    Exit: 0 ready, 4 crashed or stalled, 5 --timeout (or an interrupt) ended it first, 3 unreadable
    input or no such --pid.
    """
    clock = time.monotonic
    began = clock()  # --timeout counts from here: loading the packs is part of it
    if pid is not None:
        check_pid(pid)
    packs = load_all_packs(pattern_paths)
    health_url = parse_url(url) if url else None
    tty = sys.stderr.isatty()
    colour = use_colour()
    store_path = resolve_db(db_path)
    printer = _Printer(jsonl=output_format is WatchFormat.JSONL)
    # as analyze: the scan plan and compiled scanners of a run before
    caches = FastCaches.at(cache_folder())
    ingest = Ingest(packs, reference=datetime.now(), name=log if log != "-" else "<stdin>", caches=caches)
    settings = Settings(
        budgets=Budgets(stall_after_s=stall_after_s),
        timeout_s=timeout_s,
        pid=pid,
        health_url=str(health_url) if health_url is not None else None,
    )
    state = WatchState()
    digest = hashlib.sha256()
    head = bytearray()
    read_bytes = 0

    def note(text: str) -> None:
        printer.note(clock() - began, text)

    def unwrapped(text: str) -> None:
        note(text)  # what the follower assumed (the log's envelopes), said now and in the final report
        ingest.note(text)

    def on_bytes(data: bytes) -> None:
        nonlocal read_bytes
        read_bytes += len(data)
        digest.update(data)
        if len(head) < HEAD_HASH_BYTES:
            head.extend(data[: HEAD_HASH_BYTES - len(head)])

    catching_up = log != "-"
    modified = _mtime(log)
    setup: tuple[str | None, str | None] | None = None
    next_probe = 0.0
    next_status = 0.0
    poll_s = min(FOLLOW_POLL_S, interval_s)
    follower = follow_lines(
        log,
        stop=lambda: state.outcome is not None,
        poll_s=poll_s,
        stdin=sys.stdin.buffer if log == "-" else None,
        on_bytes=on_bytes,
        on_note=note,
        on_envelopes=unwrapped,
    )
    observation: Observation | None = None
    restore_sigterm = _sigterm_interrupts()
    try:
        ended = True
        for batch in follower:
            now = clock() - began
            if batch:
                # lines read while catching up on an existing file arrived when it was last written
                arrived = now if not catching_up or modified is None else now - max(0.0, time.time() - modified)
                ingest.feed(batch, arrived)
            else:
                catching_up = False
            system = ingest.timeline().system
            key = ingest.fingerprint.fingerprint(system).key if ingest.fingerprint.args else None
            if (key, system) != setup:
                setup = (key, system)
                settings = _with_baselines(settings, packs.budgets(system), key, store_path, note)
            probed = None
            if health_url is not None and now >= next_probe:
                # never past --timeout: the probe gets the time left, at most PROBE_TIMEOUT_S
                left = PROBE_TIMEOUT_S if timeout_s is None else min(PROBE_TIMEOUT_S, timeout_s - now)
                if left > 0:
                    probed = probe(health_url, left)
                next_probe = clock() - began + interval_s
            observation = ingest.observe(
                clock() - began,
                since=0.0,
                budgets=settings.budgets,
                probe=probed,
                process_alive=_alive(pid) if pid is not None else None,
            )
            log_ready = state.log_ready
            state, said = step(state, observation, settings)
            printer.transitions(said)
            if state.outcome is not None:
                ended = False
                break
            if state.log_ready is not None and log_ready is None:
                next_probe = 0.0  # the log says ready: ask the URL now, not an interval later
            if tty and now >= next_status:
                printer.status(status_line(state, observation, settings))
                next_status = now + min(interval_s, 1.0)
        if ended and state.outcome is None:
            ingest.end()
            now = clock() - began
            observation = ingest.observe(now, since=0.0, budgets=settings.budgets, input_ended=True)
            state, said = step(state, observation, settings)
            printer.transitions(said)
    except KeyboardInterrupt:
        state = interrupted(state, clock() - began, settings)
    finally:
        restore_sigterm()
        follower.close()
    outcome = state.outcome
    assert outcome is not None
    stacks = take_stacks(pid, packs) if outcome.verdict is Verdict.STALLED and pid is not None else None
    # the final report judges the run once, the watch's decision weighed in: its verdict, confidence
    # and exit code are those analyze gives the same lines
    ingest.end()
    as_of = ingest.log_now(clock() - began) or datetime.now()
    name = str(Path(log).resolve()) if log != "-" else "<stdin>"
    inputs = [InputSummary(name, ingest.lines, read_bytes)]
    last_write = datetime.fromtimestamp(modified) if modified is not None else None
    options = pipeline.Options(as_of=as_of, post_mortem=ended, live=outcome, stacks=stacks, stall_after_s=stall_after_s)
    identity = _identity(ingest, digest.hexdigest(), bytes(head)) if record_run else None
    report, run = pipeline.assemble(
        inputs, ingest.scan_result(), packs, options, identity=identity, last_activity=last_write
    )
    code = report.exit_code
    told = outcome_transition(state, clock() - began, settings, confidence=report.confidence, exit_code=code)
    printer.transitions([told])
    if stacks is not None:
        _show_stacks(stacks, colour, printer, clock() - began)
    if run is not None:
        with open_store(store_path, create=True) as store:
            click.echo(record(store, run), err=True)
    sys.exit(int(code))


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
        with open_store(store_path, create=False) as store:
            pool = successful_pool(store.matching(key))
    except StoreError as error:
        note(f"run store not used: {error.message}")
        return settings
    stats = phase_stats(pool)
    if pool:
        note(f"baselines: {len(pool)} successful run(s) of this setup")
    budgets = budgets_from(defaults, stats, stall_after_s=stall_after_s)
    return replace(settings, budgets=budgets, stats=stats, pool=tuple(pool))


def _show_stacks(report: StacksReport, colour: bool, printer: _Printer, t: float) -> None:
    """After a stall: every rank's stack, merged, and where they wait."""
    if printer.jsonl:
        printer.event({"t": round(t, 3), "event": "stacks", "text": report.summary, "stacks": report.to_json()})
        return
    click.echo(f"Stall point (stacks of {report.readable} processes): {report.summary}", err=True)
    click.echo(pick(OutputFormat.TABLE, colour=colour).stacks(report), nl=False)


def _identity(ingest: Ingest, content: str, head: bytes) -> LogIdentity:
    """The followed log's identity from what the watch read of it (no second read)."""
    timeline = ingest.timeline()
    return LogIdentity(
        content_hash=combine_digests([content]),
        head_hash=combine_digests([head_digest(head, content)]),
        fingerprint=ingest.fingerprint.fingerprint(timeline.system, timeline.version),
    )


def _alive(pid: int) -> bool:
    """Whether the process still runs; a zombie (exited, not yet reaped by its parent) does not."""
    if not exists(pid):
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[-1].split()
        return not fields or fields[0] != b"Z"
    except OSError:
        return True


def _mtime(log: str) -> float | None:
    if log == "-":
        return None
    try:
        return os.stat(log).st_mtime
    except OSError:
        return None


def _width() -> int:
    """The status line must fit one row, or `\r` cannot rewrite it; a pty without a size says 0."""
    try:
        columns = os.get_terminal_size(sys.stderr.fileno()).columns
    except OSError:
        columns = 0
    return max(20, columns - 1) if columns > 0 else 159
