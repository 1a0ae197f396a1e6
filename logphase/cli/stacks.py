"""`logphase stacks`: every rank's Python stack, merged STAT-style; which rank is the odd one, where."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import click

from logphase.cli.common import FORMATS, load_all_packs, patterns_option, use_colour
from logphase.errors import ExitCode, InputError, UsageError
from logphase.report.formats import OutputFormat, pick
from logphase.stacks import pyspy
from logphase.stacks.dumps import looks_like_json, parse_dumps_in_text, parse_json_text, rank_from_file_name
from logphase.stacks.model import ProcessSnapshot, StacksReport
from logphase.stacks.stalls import summarize

_OPENERS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}


def _open_text(path: str) -> IO[str]:
    """The dump as text; a binary file is refused from the first bytes of the same read."""
    if path == "-":
        return sys.stdin
    from logphase.logs.reader import SNIFF_BYTES, refuse_binary  # here: a live snapshot needs none of it

    opener = _OPENERS.get(Path(path).suffix, open)
    try:
        raw = opener(path, "rb")  # type: ignore[operator]
        buffered = raw if hasattr(raw, "peek") else io.BufferedReader(raw)
        try:
            head = buffered.peek(SNIFF_BYTES)[:SNIFF_BYTES]
        except (OSError, EOFError, lzma.LZMAError):
            head = b""  # the read says what is wrong
        try:
            refuse_binary(path, head)
        except InputError:
            buffered.close()
            raise
        return io.TextIOWrapper(buffered, encoding="utf-8", errors="replace")
    except IsADirectoryError as exc:
        raise InputError(f"{path} is a directory", hint="give the dump files inside it") from exc
    except FileNotFoundError as exc:
        raise InputError(f"{path} does not exist", hint="check the path") from exc
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}", hint="check the path and its permissions") from exc


def read_dump_file(path: str) -> list[ProcessSnapshot]:
    """JSON (py-spy or logphase) is read whole; text (logs, faulthandler, py-spy, pystack) streams."""
    stream = _open_text(path)
    try:
        head = stream.read(4096)
        if looks_like_json(head):
            text = head + stream.read()
            try:
                return _with_source(parse_json_text(text), path)
            except ValueError:
                return _with_source(parse_dumps_in_text(text.splitlines()), path)

        def lines() -> Iterator[str]:
            rest = stream.readline()
            yield from (head + rest).splitlines()
            yield from stream

        return _with_source(parse_dumps_in_text(lines()), path)
    except (OSError, EOFError, lzma.LZMAError) as exc:
        raise InputError(f"cannot read {path}: {exc}", hint="is the file complete?") from exc
    finally:
        if stream is not sys.stdin:
            stream.close()


def _with_source(snapshots: list[ProcessSnapshot], path: str) -> list[ProcessSnapshot]:
    from dataclasses import replace

    name = "stdin" if path == "-" else Path(path).name
    if len(snapshots) == 1 and snapshots[0].rank is None:
        # one process saved as `pyspy-rank1.json`: py-spy's JSON and a bare faulthandler dump name no rank
        snapshots = [replace(snapshots[0], rank=rank_from_file_name(name))]
    return [s if s.source == "py-spy" and s.host else replace(s, source=f"{s.source} ({name})") for s in snapshots]


@click.command()
@click.option(
    "--pid",
    "pids",
    type=int,
    multiple=True,
    help="A launcher, torchrun, SGLang's main process or any rank; repeatable.",
)
@click.option(
    "--all", "all_processes", is_flag=True, help="Every Python process of this user whose command line matches --match."
)
@click.option("--match", "match", metavar="REGEX", help="With --all: the command-line regex (default: any).")
@click.option(
    "--from",
    "dump_files",
    multiple=True,
    metavar="FILE",
    help="Read dumps instead of live processes: faulthandler, "
    "py-spy text or JSON, pystack, logs containing them, `logphase stacks --format json` output; repeatable.",
)
@click.option("--samples", type=click.IntRange(1, 100), default=1, show_default=True, help="Snapshots per process.")
@click.option(
    "--interval",
    "interval_s",
    type=click.FloatRange(0, 600),
    default=1.0,
    show_default=True,
    help="Seconds between samples.",
)
@click.option(
    "--threads", type=click.Choice(["main", "all"]), default="main", show_default=True, help="Threads to merge."
)
@click.option("--native", is_flag=True, help="Include native frames (py-spy --native; retried without it on failure).")
@click.option("--nonblocking", is_flag=True, help="Do not pause the targets while reading them (py-spy --nonblocking).")
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(0.05, 600),
    default=10.0,
    show_default=True,
    help="Seconds one py-spy may take before it is killed.",
)
@click.option("--format", "output_format", type=FORMATS, default="table", show_default=True, help="Report format.")
@click.option("--py-spy", "py_spy_path", metavar="PATH", help="The py-spy binary (default: PATH, then next to Python).")
@patterns_option
def stacks(
    pids: tuple[int, ...],
    all_processes: bool,
    match: str | None,
    dump_files: tuple[str, ...],
    samples: int,
    interval_s: float,
    threads: str,
    native: bool,
    nonblocking: bool,
    timeout_s: float,
    output_format: OutputFormat,
    py_spy_path: str | None,
    pattern_paths: tuple[Path, ...],
) -> None:
    """Snapshot the Python stacks of every rank of a server (or read dumps), merge them into one
    tree, and name the odd rank and where the rest wait.

    \b
    logphase stacks --pid 1234                     live, from any process of the server
    logphase stacks --pid 1234 --samples 3         tell working ranks from frozen ones
    logphase stacks --all --match 'sglang::'       every matching Python process
    logphase stacks --from node0.json --from node1.json   post-mortem / many nodes

    Exit: 0 no rank looks stuck, 4 stuck or odd ranks found, 3 nothing could be read.
    """
    sources = sum(bool(x) for x in (pids, all_processes, dump_files))
    if sources != 1:
        raise UsageError("give exactly one of --pid, --all or --from", hint="see `logphase stacks --help`")
    if match is not None and not all_processes:
        raise UsageError("--match goes with --all", hint="logphase stacks --all --match 'sglang::'")
    if native and nonblocking:
        raise UsageError(
            "--native cannot be combined with --nonblocking", hint="py-spy must pause a process to unwind native frames"
        )
    packs = load_all_packs(pattern_paths, line_rules=False)  # signatures only: a snapshot waits on it

    skew: float | None = None
    if dump_files:
        snapshots: list[ProcessSnapshot] = []
        for path in dump_files:
            snapshots.extend(read_dump_file(path))
        samples, interval_s = 1, 0.0
    else:
        py_spy = pyspy.find_py_spy(py_spy_path)
        if pids:
            procs: list[pyspy.ProcInfo] = []
            seen: set[int] = set()
            for pid in pids:
                for info in pyspy.discover_tree(pid):
                    if info.pid not in seen:
                        seen.add(info.pid)
                        procs.append(info)
        else:
            procs = pyspy.discover_matching(match or ".")
            if not procs:
                raise UsageError(
                    f"no Python process of this user matches {match or '.'!r}", hint="check with `ps -eo pid,args`"
                )
        skipped = [p for p in procs if not p.python]
        if skipped:
            names = ", ".join(sorted({p.comm for p in skipped}))
            click.echo(f"logphase: skipping {len(skipped)} non-Python process(es): {names}", err=True)
        snapshots, skew = pyspy.snapshot(
            procs,
            py_spy=py_spy,
            native=native,
            nonblocking=nonblocking,
            timeout_s=timeout_s,
            samples=samples,
            interval_s=interval_s,
            host=socket.gethostname(),
        )
    report = summarize(
        snapshots,
        packs.signatures,
        threads=threads,
        samples=samples,
        interval_s=interval_s if samples > 1 else 0.0,
        skew_s=skew,
    )
    click.echo(pick(output_format, colour=use_colour()).stacks(report), nl=False)
    sys.exit(exit_code(report))


def exit_code(report: StacksReport) -> int:
    if report.readable == 0:
        click.echo("logphase: error: no process could be read", err=True)
        if report.processes:
            click.echo("  hint: see the `not read` table for each process' reason", err=True)
        else:
            click.echo(
                "  hint: no faulthandler, py-spy or pystack dump was found in the input; "
                "for a log with tracebacks use `logphase analyze`",
                err=True,
            )
        return int(ExitCode.CANNOT_RUN)
    return int(ExitCode.PROBLEM) if report.stuck else int(ExitCode.OK)
