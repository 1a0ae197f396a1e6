"""`logphase watch LOG`: follow a starting server's log (and its health URL) until ready, stalled or crashed."""

from __future__ import annotations

import hashlib
import os
import socket
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import click

from logphase import pipeline
from logphase.baselines.stats import phase_stats, successful_pool
from logphase.baselines.store import RunStore
from logphase.cli.common import load_all_packs, patterns_option, use_colour
from logphase.cli.runs import db_option, record, resolve_db
from logphase.errors import LogphaseError, StoreError
from logphase.fingerprint import HEAD_HASH_BYTES, LogIdentity, combine_digests, head_digest
from logphase.health import parse_url, probe
from logphase.judging.budgets import Budgets, budgets_from
from logphase.judging.evidence import WatchVerdict
from logphase.logs.follow import FOLLOW_POLL_S, follow_lines
from logphase.packs import PackSet
from logphase.phases import Phase, Verdict
from logphase.report.formats import OutputFormat, pick
from logphase.report.model import InputSummary
from logphase.stacks import pyspy
from logphase.stacks.stalls import summarize
from logphase.watching import Ingest, Observation, Outcome, Settings, Transition, WatchState, status_line, step

# A health endpoint that takes longer than this to answer counts as "no answer".
PROBE_TIMEOUT_S = 2.0


@click.command()
@click.argument("log")
@click.option(
    "--url", "url", metavar="HEALTH_URL", help="Poll this health URL too (http://HOST:PORT means its /health)."
)
@click.option(
    "--pid",
    "pid",
    type=int,
    help="The server's main process: its exit is a crash; on a stall, its ranks' stacks are taken.",
)
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(min=0, min_open=True),
    metavar="S",
    help="Give up after S seconds (exit 5).",
)
@click.option(
    "--stall-after",
    "stall_after_s",
    type=click.FloatRange(min=0, min_open=True),
    metavar="S",
    help="Stalled after S seconds without progress, in any phase (instead of learned or pack budgets).",
)
@click.option("--record", "record_run", is_flag=True, help="Record the finished run in the run store.")
@click.option(
    "--interval",
    "interval_s",
    type=click.FloatRange(min=0.05, max=600),
    default=1.0,
    show_default=True,
    metavar="S",
    help="Seconds between health probes and status updates.",
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
    db_path: Path | None,
    pattern_paths: tuple[Path, ...],
) -> None:
    """Follow a growing log (rotation and truncation handled; '-' for standard input, e.g.
    `kubectl logs -f POD | logphase watch -`) and tell, live, whether the server is ready,
    still starting, stalled or crashed.

    With --url, the health endpoint tells apart: connection refused (not listening yet), 503
    (starting or warming up), 200 (ready), no answer. On a terminal one status line updates in
    place; otherwise one line per transition.

    Exit: 0 ready, 4 crashed or stalled, 5 --timeout ended it first, 3 unreadable input.
    """
    packs = load_all_packs(pattern_paths)
    health_url = parse_url(url) if url else None
    tty = sys.stderr.isatty()
    colour = use_colour()
    store_path = resolve_db(db_path)
    clock = time.monotonic
    began = clock()
    ingest = Ingest(packs, reference=datetime.now())
    settings = Settings(budgets=Budgets(stall_after_s=stall_after_s), timeout_s=timeout_s, pid=pid)
    state = WatchState()
    digest = hashlib.sha256()
    head = bytearray()
    read_bytes = 0
    live_status = False

    def say(transitions: tuple[Transition, ...] | list[Transition]) -> None:
        nonlocal live_status
        for transition in transitions:
            if live_status:
                click.echo("\r\x1b[K", nl=False, err=True)
                live_status = False
            click.echo(str(transition), err=True)

    def note(text: str) -> None:
        say([Transition(clock() - began, text)])

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
                probed = probe(health_url, PROBE_TIMEOUT_S)
                next_probe = clock() - began + interval_s
            observation = ingest.observe(
                now,
                since=0.0,
                budgets=settings.budgets,
                probe=probed,
                process_alive=_alive(pid) if pid is not None else None,
            )
            state, said = step(state, observation, settings)
            say(said)
            if state.outcome is not None:
                ended = False
                break
            if tty and now >= next_status:
                click.echo("\r\x1b[K" + status_line(state, observation, settings)[: _width()], nl=False, err=True)
                live_status = True
                next_status = now + min(interval_s, 1.0)
        if ended and state.outcome is None:
            ingest.end()
            now = clock() - began
            observation = ingest.observe(now, since=0.0, budgets=settings.budgets, input_ended=True)
            state, said = step(state, observation, settings)
            say(said)
    except KeyboardInterrupt:
        state = replace(state, outcome=Outcome(Verdict.PROGRESSING, "interrupted"))
        say([Transition(clock() - began, "interrupted")])
    finally:
        follower.close()
    outcome = state.outcome
    assert outcome is not None
    if outcome.stalled and pid is not None:
        _stacks_at_stall(pid, packs, colour)
    if record_run:
        ingest.end()
        as_of = ingest.log_now(clock() - began) or datetime.now()
        name = str(Path(log).resolve()) if log != "-" else "<stdin>"
        inputs = [InputSummary(name, ingest.lines, read_bytes)]
        identity = _identity(ingest, digest.hexdigest(), bytes(head))
        last_write = datetime.fromtimestamp(modified) if modified is not None else None
        options = pipeline.Options(
            as_of=as_of, post_mortem=ended, watched=WatchVerdict(outcome.verdict, outcome.message)
        )
        _, run = pipeline.assemble(
            inputs, ingest.scan_result(), packs, options, identity=identity, last_activity=last_write
        )
        with RunStore.open(store_path, create=True) as store:
            click.echo(record(store, run), err=True)
    sys.exit(int(outcome.exit_code))


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


def _stacks_at_stall(pid: int, packs: PackSet, colour: bool) -> None:
    """Before exiting on a stall: every rank's stack, merged, and where they wait."""
    try:
        py_spy = pyspy.find_py_spy(None)
        procs = pyspy.discover_tree(pid)
        if not procs:
            click.echo(f"logphase: no process {pid} to take stacks from", err=True)
            return
        snapshots, skew = pyspy.snapshot(procs, py_spy=py_spy, samples=2, interval_s=0.5, host=socket.gethostname())
    except LogphaseError as error:
        click.echo(f"logphase: stacks not taken: {error.message}", err=True)
        if error.hint:
            click.echo(f"  hint: {error.hint}", err=True)
        return
    report = summarize(snapshots, packs.signatures, samples=2, interval_s=0.5, skew_s=skew)
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
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
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
