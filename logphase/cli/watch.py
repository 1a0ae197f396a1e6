"""`logphase watch LOG`: follow a starting server's log (and its health URL) until ready, stalled or crashed."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import click

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
from logphase.cli.live_stacks import check_pid, take_stacks
from logphase.cli.runs import open_store, record, resolve_db
from logphase.logs.fast.caches import FastCaches
from logphase.report.formats import OutputFormat, pick
from logphase.stacks.model import StacksReport
from logphase.watch.health import parse_url
from logphase.watch.loop import WatchRequest
from logphase.watch.loop import watch as run_watch
from logphase.watch.state import Transition, format_clock


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
    began = time.monotonic()  # --timeout counts from here: loading the packs is part of it
    if pid is not None:
        check_pid(pid)
    packs = load_all_packs(pattern_paths)
    store_path = resolve_db(db_path)
    request = WatchRequest(
        log=log,
        packs=packs,
        store_path=store_path,
        health_url=parse_url(url) if url else None,
        pid=pid,
        timeout_s=timeout_s,
        stall_after_s=stall_after_s,
        interval_s=interval_s,
        record=record_run,
        caches=FastCaches.at(cache_folder()),  # as analyze: the scan plan and compiled scanners of a run before
        stdin=sys.stdin.buffer if log == "-" else None,
    )
    printer = _Printer(jsonl=output_format is WatchFormat.JSONL)
    ended = run_watch(
        request,
        printer,
        take_stacks=lambda stalled: take_stacks(stalled, packs),
        live_status=sys.stderr.isatty(),
        clock=lambda: time.monotonic() - began,
    )
    if ended.stacks is not None:
        _show_stacks(ended.stacks, use_colour(), printer, ended.outcome.t)
    if ended.run is not None:
        with open_store(store_path, create=True) as store:
            click.echo(record(store, ended.run), err=True)
    sys.exit(int(ended.report.exit_code))


def _show_stacks(report: StacksReport, colour: bool, printer: _Printer, t: float) -> None:
    """After a stall: every rank's stack, merged, and where they wait."""
    if printer.jsonl:
        printer.event({"t": round(t, 3), "event": "stacks", "text": report.summary, "stacks": report.to_json()})
        return
    click.echo(f"Stall point (stacks of {report.readable} processes): {report.summary}", err=True)
    click.echo(pick(OutputFormat.TABLE, colour=colour).stacks(report), nl=False)


def _width() -> int:
    """The status line must fit one row, or `\r` cannot rewrite it; a pty without a size says 0."""
    try:
        columns = os.get_terminal_size(sys.stderr.fileno()).columns
    except OSError:
        columns = 0
    return max(20, columns - 1) if columns > 0 else 159
