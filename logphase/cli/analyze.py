"""`logphase analyze LOG...`: phase timeline, verdict and root cause of one run's logs."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from logphase import pipeline
from logphase.api import open_run
from logphase.cli.common import (
    FORMATS,
    PID,
    cache_folder,
    db_option,
    jobs_from,
    jobs_option,
    load_all_packs,
    parse_as_of,
    patterns_option,
    stall_after_option,
    terminal_width,
    use_colour,
)
from logphase.cli.live_stacks import check_pid, take_stacks
from logphase.cli.progress import progress_on_stderr
from logphase.errors import StoreError
from logphase.report.formats import OutputFormat, pick

if TYPE_CHECKING:  # types only: a plain `analyze` imports neither the run store nor the dump reader
    from logphase.baselines.store import RunStore


@click.command()
@click.argument("logs", nargs=-1, required=True)
@click.option("--format", "output_format", type=FORMATS, default="table", show_default=True, help="Report format.")
@click.option(
    "--post-mortem/--live",
    default=None,
    help="Judge a finished log (a log that ends mid-startup is stalled) or a live one against now. "
    "Default: live for plain files, post-mortem for stdin and archives.",
)
@click.option("--as-of", "as_of_text", metavar="TIME", help="Judge as if it were TIME ('YYYY-MM-DD HH:MM:SS', local).")
@click.option(
    "--baseline",
    "baseline_ref",
    metavar="REF",
    help="Compare with an earlier run: a run id (logphase runs list), 'auto' (recorded runs of the same setup) "
    "or the path of an earlier log.",
)
@click.option("--record", "record_run", is_flag=True, help="Record this run in the run store (see logphase runs).")
@click.option(
    "--pid",
    "pid",
    type=PID,
    help="The running server's main process: its ranks' live stacks are judged with the logs "
    "(where each rank waits, the odd ranks out).",
)
@stall_after_option
@jobs_option
@db_option
@patterns_option
def analyze(
    logs: tuple[str, ...],
    output_format: OutputFormat,
    post_mortem: bool | None,
    as_of_text: str | None,
    baseline_ref: str | None,
    record_run: bool,
    pid: int | None,
    stall_after_s: float | None,
    db_path: Path | None,
    pattern_paths: tuple[Path, ...],
    jobs: int | None,
) -> None:
    """Which phase each rank reached, whether the server is ready, progressing, stalled or crashed,
    and the line that explains it.

    LOG is a file, '-' for standard input, a .gz/.bz2/.xz/.zst file or a tar archive (each member
    a log). Several logs (one per node or per rank) are analysed as one run. Torch flight-recorder
    dumps given with them (one per rank, named <prefix><rank>) tell which rank never joined the
    collective the others wait in.

    With --pid, the running server's ranks are sampled with py-spy and their stacks judged with the
    logs: where each rank waits, and the odd rank out as the culprit where the logs name none.

    Exit: 0 ready, 4 stalled/crashed/aborted/timeout, 5 still starting, 6 unknown (or a success the
    evidence does not carry), 3 unreadable input or no such --pid.
    """
    if pid is not None:
        check_pid(pid)
    cache = cache_folder()
    packs = load_all_packs(pattern_paths)
    sources, flight = open_run(logs, packs, stdin=sys.stdin.buffer if "-" in logs else None)
    as_of = parse_as_of(as_of_text)
    if post_mortem is None:
        post_mortem = all(source.finished for source in sources)
    store: RunStore | None = None
    store_error: StoreError | None = None
    if baseline_ref is not None or record_run:
        from logphase.cli.runs import open_store_for  # the run store (SQLite): only these two open it

        store, store_error = open_store_for(db_path, ref=baseline_ref, record=record_run)
    try:
        options = pipeline.Options(
            as_of=as_of,
            post_mortem=post_mortem,
            baseline=baseline_ref,
            store=store,
            store_error=store_error,
            flight=flight,
            stacks=take_stacks(pid, packs) if pid is not None else None,
            stall_after_s=stall_after_s,
            jobs=jobs_from(jobs),
            caches=cache,
        )
        with progress_on_stderr(sources):
            if record_run and store is not None:
                report, run = pipeline.run(sources, packs, options)
            else:
                report, run = pipeline.report(sources, packs, options), None
        if run is not None and store is not None:
            from logphase.cli.runs import record

            click.echo(record(store, run), err=True)
    finally:
        if store is not None:
            store.close()
    click.echo(pick(output_format, colour=use_colour(), width=terminal_width()).analysis(report), nl=False)
    sys.exit(int(report.exit_code))
