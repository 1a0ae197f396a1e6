"""`logphase bundle LOG...`: one .tar.gz for a bug report — logs, analysis, stacks, versions, redacted."""

from __future__ import annotations

import os
import socket
import time
from datetime import datetime
from pathlib import Path

import click

from logphase.bundle import environment
from logphase.bundle.archive import input_paths, write_tar_gz
from logphase.bundle.build import BundleRequest, collect, output_name
from logphase.bundle.live import find_processes, take_stacks
from logphase.cli.common import (
    PID,
    FiniteFloatRange,
    jobs_from,
    jobs_option,
    load_all_packs,
    parse_as_of,
    patterns_option,
)
from logphase.cli.stacks import read_dump_file
from logphase.outputs import check_output
from logphase.stacks.model import ProcessSnapshot

# A terabyte: a larger --cut-over keeps every log whole, as this does.
MAX_CUT_OVER_MB = float(1 << 20)


@click.command()
@click.argument("logs", nargs=-1, required=True)
@click.option(
    "--pid", "pids", type=PID, multiple=True, help="Add live stacks of this server (any of its processes); repeatable."
)
@click.option(
    "--from",
    "dump_files",
    multiple=True,
    metavar="DUMP",
    help="Add a stack dump (py-spy, faulthandler, pystack, `logphase stacks --format json`); repeatable.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    help="The bundle file [default: logphase-bundle-DATE-TIME.tar.gz].",
)
@click.option(
    "--force", is_flag=True, help="Replace the file -o names when it exists (never an input, a folder or a device)."
)
@click.option("--no-redact", is_flag=True, help="Keep IPs, host names, tokens and user names as the logs have them.")
@click.option(
    "--cut-over",
    "cut_over_mb",
    type=FiniteFloatRange(min=0, max=MAX_CUT_OVER_MB, min_open=True),
    default=4.0,
    show_default=True,
    metavar="MB",
    help="Logs larger than this are cut to what the report needs (line numbers kept).",
)
@click.option("--post-mortem/--live", default=None, help="As for `logphase analyze`.")
@click.option("--as-of", "as_of_text", metavar="TIME", help="As for `logphase analyze`.")
@click.option("--py-spy", "py_spy_path", metavar="PATH", help="The py-spy binary (default: PATH, then next to Python).")
@jobs_option
@patterns_option
def bundle(
    logs: tuple[str, ...],
    pids: tuple[int, ...],
    dump_files: tuple[str, ...],
    output: Path | None,
    force: bool,
    no_redact: bool,
    cut_over_mb: float,
    post_mortem: bool | None,
    as_of_text: str | None,
    py_spy_path: str | None,
    pattern_paths: tuple[Path, ...],
    jobs: int | None,
) -> None:
    """One .tar.gz for a bug report, redacted.

    It holds the logs (cut when huge, line numbers kept), the analysis as JSON and as markdown
    ready for a GitHub issue, live stacks (--pid) and dumps (--from, torch flight-recorder dumps
    among the logs), and versions (logphase, Python, the log's, pip's, nvidia-smi). IPs, host
    names, tokens and user names are redacted unless --no-redact; the bundle's README says what
    was cut and redacted.

    \b
    logphase bundle server.log                       -> logphase-bundle-DATE-TIME.tar.gz
    logphase bundle node*.log --pid 1234 -o hang.tar.gz

    The bundle is never written over one of its inputs, a folder or a device, and replaces an
    existing file only with --force; it is written beside -o and renamed into place when complete.

    Exit: 0 the bundle was written; 2 -o names an input, or an existing file without --force;
    3 it could not be written (nothing is left at -o, and what was there is untouched).
    """
    made = datetime.now().replace(microsecond=0)
    path = output if output is not None else Path(output_name(made))
    inputs = input_paths(logs, dump_files, pattern_paths)
    check_output(path, inputs=inputs, force=force)
    as_of = parse_as_of(as_of_text) if as_of_text else made
    processes = find_processes(pids) if pids else None  # a pid that does not exist: an error, before any work
    dump_snapshots: list[ProcessSnapshot] = []
    for dump in dump_files:
        dump_snapshots.extend(read_dump_file(dump))
    packs = load_all_packs(pattern_paths)
    host = socket.gethostname()
    live = take_stacks(processes, py_spy_path=py_spy_path, timeout_s=10.0, host=host) if processes is not None else None
    request = BundleRequest(
        logs=logs,
        cwd=Path.cwd(),
        as_of=as_of,
        post_mortem=post_mortem,
        redact=not no_redact,
        cut_over_bytes=int(cut_over_mb * (1 << 20)),
        live=live,
        dump_files=dump_files,
        dump_snapshots=dump_snapshots,
        host=host,
        nvidia_smi=environment.nvidia_smi(),
        jobs=jobs_from(jobs),
    )
    made_bundle = collect(request, packs)
    top = path.name.removesuffix(".tar.gz").removesuffix(".tgz")
    size = write_tar_gz(path, top, made_bundle.members, time.time(), inputs=inputs, force=force)
    redacted = sum(occurrences for _, occurrences in made_bundle.redacted.values())
    how = "not redacted" if no_redact else f"{redacted} value{'s' if redacted != 1 else ''} redacted"
    cut = f", {made_bundle.cut_logs} log{'s' if made_bundle.cut_logs != 1 else ''} cut" if made_bundle.cut_logs else ""
    click.echo(f"{os.fspath(path)}: {size:,} bytes, {len(made_bundle.members)} files, {how}{cut}")
    click.echo("  see README.md inside for what it holds; check it before you share it", err=True)
