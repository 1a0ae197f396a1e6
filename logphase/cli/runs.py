"""`logphase runs add|list|show|rm`: the store of recorded runs that baselines compare against."""

from __future__ import annotations

import sys
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import click

from logphase import pipeline
from logphase.baselines.records import RunRecord
from logphase.baselines.store import RunFilter, RunStore, storable
from logphase.cli.common import (
    FORMATS,
    db_option,
    default_db_path,
    load_all_packs,
    parse_as_of,
    patterns_option,
    store_lock_timeout,
    terminal_width,
)
from logphase.errors import StoreError, UsageError
from logphase.logs.reader import open_sources
from logphase.report.formats import OutputFormat, pick

# A run id as SQLite stores it (a signed 64-bit integer): a larger number names no run.
RUN_ID = click.IntRange(1, (1 << 63) - 1)


def resolve_db(db_path: Path | None) -> Path:
    return db_path if db_path is not None else default_db_path()


def open_store(path: Path, *, create: bool) -> RunStore:
    """The run store at `path`, waiting for others' locks as long as --lock-timeout says."""
    return RunStore.open(path, create=create, lock_timeout_s=store_lock_timeout())


def open_store_for(db_path: Path | None, *, ref: str | None, record: bool) -> tuple[RunStore | None, StoreError | None]:
    """The store a command needs: created to record into; else only an existing one. A REF that is
    a path does not need the store (it only adds successful runs), so its error is returned, not raised."""
    path = resolve_db(db_path)
    if record:
        return open_store(path, create=True), None
    needed = ref is not None and pipeline.reference_kind(ref) != "path"
    if not needed and not path.exists():
        return None, None
    try:
        return open_store(path, create=False), None
    except StoreError as error:
        if needed:
            raise
        return None, error


def record(store: RunStore, run: RunRecord) -> str:
    """Store a run; the one line that says so (stderr)."""
    return record_all(store, [run])[0]


def record_all(store: RunStore, runs: list[RunRecord]) -> list[str]:
    """Store runs in one transaction (all or none); a line for each that says so (stderr)."""
    # said as stored: a number SQLite cannot hold is unknown; the logs by where they are, from any folder
    runs = [storable(replace(run, paths=tuple(absolute(path) for path in run.paths))) for run in runs]
    added = store.add_all(runs, recorded_at=datetime.now().replace(microsecond=0))
    return [
        f"{'recorded' if created else 'updated'} run {run_id}: {run.verdict.value}"
        + (f" (labelled {run.label})" if run.label else "")
        + f", {run.fingerprint.describe()}"
        for run, (run_id, created) in zip(runs, added, strict=True)
    ]


def absolute(path: str) -> str:
    """A log's path as it is on this machine (absolute, links resolved), so that a run recorded from one
    folder is found from another; an archive member (`ARCHIVE:MEMBER`) by its archive's; `<stdin>` as it is."""
    candidate = Path(path)
    if candidate.exists():
        return str(candidate.resolve())
    for at in range(len(path)):  # the first `:` after which the rest is the member (a member may hold `:`)
        if path[at] == ":" and at and Path(path[:at]).is_file():
            return f"{Path(path[:at]).resolve()}{path[at:]}"
    return path


@click.group()
def runs() -> None:
    """Recorded runs: what `analyze --baseline` and `watch` compare a run with.

    \b
    logphase runs add hung.log --label hung     record a finished run
    logphase runs list                           every recorded run, newest first
    logphase runs list --outcome hung --limit 5  the last five labelled (or judged) hung
    logphase runs show 3                         one run, phase by phase
    logphase runs rm 3                           forget it
    """


@runs.command("add")
@click.argument("logs", nargs=-1, required=True)
@click.option(
    "--label", help="Outcome to record instead of the verdict, e.g. hung (a ready run labelled hung is not a baseline)."
)
@click.option("--together", is_flag=True, help="The LOGs are one run (one log per node or rank), not one run each.")
@click.option(
    "--as-of", "as_of_text", metavar="TIME", help="Date year-less timestamps as of TIME ('YYYY-MM-DD HH:MM:SS')."
)
@db_option
@patterns_option
def add(
    logs: tuple[str, ...],
    label: str | None,
    together: bool,
    as_of_text: str | None,
    db_path: Path | None,
    pattern_paths: tuple[Path, ...],
) -> None:
    """Analyse finished logs and record each as a run (a tar archive is one run of its members).
    The same log recorded twice is one run; recording it again updates it (and its label)."""
    if label is not None and not label.strip():
        raise UsageError("--label is empty", hint="give a word such as hung, ready or oom")
    packs = load_all_packs(pattern_paths)
    as_of = parse_as_of(as_of_text)
    groups = [list(logs)] if together else [[log] for log in logs]
    # read every log before touching the store: a typo in the third path records nothing
    stdin = sys.stdin.buffer if "-" in logs else None
    options = pipeline.Options(as_of=as_of, post_mortem=True, label=label)
    analysed = [pipeline.run(open_sources(group, stdin=stdin, packs=packs), packs, options)[1] for group in groups]
    # and record them in one transaction: a run the store cannot take records none
    with open_store(resolve_db(db_path), create=True) as store:
        for line in record_all(store, analysed):
            click.echo(line, err=True)


@runs.command("list")
@click.option("--outcome", metavar="WORD", help="Only runs whose verdict or label is WORD (stalled, ready, hung…).")
@click.option("--label", metavar="WORD", help="Only runs labelled WORD.")
@click.option("--system", metavar="NAME", help="Only runs of this server (sglang, vllm…).")
@click.option("--model", metavar="TEXT", help="Only runs whose model path holds TEXT (any case).")
@click.option("--limit", type=click.IntRange(1, 1 << 31), metavar="N", help="Only the N newest.")
@click.option("--format", "output_format", type=FORMATS, default="table", show_default=True, help="Output format.")
@db_option
def list_runs(
    outcome: str | None,
    label: str | None,
    system: str | None,
    model: str | None,
    limit: int | None,
    output_format: OutputFormat,
    db_path: Path | None,
) -> None:
    """Recorded runs, newest first; the options keep those that match all of them."""
    path = resolve_db(db_path)
    records: list[RunRecord] = []
    unreadable: list[str] = []
    chosen = RunFilter(outcome=outcome, label=label, system=system, model=model, limit=limit)
    if path.exists():
        with open_store(path, create=False) as store:
            records = store.listed(chosen)
            unreadable = store.unreadable
    for note in unreadable:
        click.echo(f"logphase: note: {note}", err=True)
    click.echo(pick(output_format, width=terminal_width()).runs(records, db=path if path.exists() else None), nl=False)
    if not records:
        if unreadable:
            click.echo(f"no readable runs ({path})", err=True)
        elif replace(chosen, limit=None) != RunFilter() and path.exists():
            click.echo(f"no recorded run matches ({path})", err=True)
        else:
            click.echo(f"no runs recorded yet ({path})", err=True)


@runs.command("show")
@click.argument("run_id", type=RUN_ID)
@click.option("--format", "output_format", type=FORMATS, default="table", show_default=True, help="Output format.")
@db_option
def show(run_id: int, output_format: OutputFormat, db_path: Path | None) -> None:
    """One run: its setup, outcome, where it stopped and how long each phase took."""
    with open_store(resolve_db(db_path), create=False) as store:
        run = store.get(run_id)
    click.echo(pick(output_format, width=terminal_width()).run(run), nl=False)


@runs.command("rm")
@click.argument("run_ids", type=RUN_ID, nargs=-1, required=True)
@db_option
def remove(run_ids: tuple[int, ...], db_path: Path | None) -> None:
    """Forget recorded runs."""
    with open_store(resolve_db(db_path), create=False) as store:
        for run_id in run_ids:
            store.remove(run_id)
            click.echo(f"removed run {run_id}", err=True)
