"""`logphase stacks`: every rank's Python stack, merged STAT-style; which rank is the odd one, where."""

from __future__ import annotations

import io
import shlex
import socket
import sys
from dataclasses import replace
from pathlib import Path
from typing import cast

import click

from logphase.cli.common import FORMATS, PID, load_all_packs, patterns_option, seconds, terminal_width, use_colour
from logphase.cli.nodes import node_options, pick_transport
from logphase.errors import ExitCode, InputError, UsageError
from logphase.judging.stalls import summarize
from logphase.logs.reader import READ_ERRORS, LogSource, damaged, open_sources, read_lines
from logphase.nodes.stacks import collect_stacks, remote_stacks_command
from logphase.report.formats import OutputFormat, pick
from logphase.stacks import pyspy
from logphase.stacks.dumps import parse_dumps_in_lines, rank_from_file_name
from logphase.stacks.dumps_json import looks_like_json, parse_json_dump
from logphase.stacks.model import GpuReading, ProcessSnapshot, StacksReport
from logphase.stacks.nvml import one_reading, read_gpus

# A py-spy / logphase JSON dump is read whole: 512 processes of 50 frames are ~5 MB.
MAX_JSON_BYTES = 16 << 20


def read_dump_file(path: str) -> list[ProcessSnapshot]:
    """Dumps in a file or on stdin ('-'), opened as `analyze` opens logs: compression by magic
    bytes, tar members, binary files refused, lines of bounded length. JSON (py-spy or logphase)
    is read whole up to MAX_JSON_BYTES; text (logs, faulthandler, py-spy, pystack) streams."""
    return read_dump_file_with_gpus(path)[0]


def read_dump_file_with_gpus(path: str) -> tuple[list[ProcessSnapshot], list[GpuReading]]:
    """`read_dump_file`, with the GPU readings (NVML's) a saved `logphase stacks --format json` carries."""
    snapshots: list[ProcessSnapshot] = []
    readings: list[GpuReading] = []
    for source in open_sources([path], stdin=sys.stdin.buffer if path == "-" else None):
        read, gpus = _read_source(source)
        snapshots.extend(_with_source(read, source.name if path != "-" else "-"))
        readings.extend(gpus)
    return snapshots, readings


def _read_source(source: LogSource) -> tuple[list[ProcessSnapshot], list[GpuReading]]:
    stream = source.open_stream()
    buffered = stream if hasattr(stream, "peek") else io.BufferedReader(cast(io.RawIOBase, stream))
    try:
        head = cast(io.BufferedReader, buffered).peek(64)[:64]
    except READ_ERRORS:
        head = b""  # reading says what is wrong
    if not looks_like_json(head.decode("utf-8", errors="replace")):
        opened = replace(source, open_stream=lambda: buffered)
        return parse_dumps_in_lines(read_lines(opened)), []
    try:
        with buffered:
            data = buffered.read(MAX_JSON_BYTES + 1)
    except READ_ERRORS as exc:
        raise damaged(source, 0, exc) from None
    if len(data) > MAX_JSON_BYTES:
        raise InputError(
            f"{source.name}: a JSON dump over {MAX_JSON_BYTES >> 20} MB",
            hint="give one file per node: logphase stacks --pid PID --format json > node.json",
        )
    try:
        return parse_json_dump(data.decode("utf-8", errors="replace"))
    except (ValueError, TypeError, AttributeError, KeyError, RecursionError) as exc:
        raise InputError(
            f"{source.name}: JSON that is neither py-spy's `dump --json` nor `logphase stacks --format json` "
            f"({type(exc).__name__}: {' '.join(str(exc).split())})"[:400],
            hint="give the file py-spy or logphase wrote, unedited",
        ) from None


def _with_source(snapshots: list[ProcessSnapshot], path: str) -> list[ProcessSnapshot]:
    name = "stdin" if path == "-" else Path(path).name
    if len(snapshots) == 1 and snapshots[0].rank is None:
        # one process saved as `pyspy-rank1.json`: py-spy's JSON and a bare faulthandler dump name no rank
        snapshots = [replace(snapshots[0], rank=rank_from_file_name(name))]
    return [s if s.source == "py-spy" and s.host else replace(s, source=f"{s.source} ({name})") for s in snapshots]


@click.command()
@click.option(
    "--pid",
    "pids",
    type=PID,
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
    type=seconds(0, 600),
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
    type=seconds(0.05, 600),
    default=10.0,
    show_default=True,
    help="Seconds one py-spy may take before it is killed.",
)
@click.option("--format", "output_format", type=FORMATS, default="table", show_default=True, help="Report format.")
@click.option("--py-spy", "py_spy_path", metavar="PATH", help="The py-spy binary (default: PATH, then next to Python).")
@node_options("these hosts", timeout_default="30, more with --samples")
@click.option(
    "--remote",
    "remote",
    default="logphase",
    show_default=True,
    metavar="COMMAND",
    help="With many nodes: the logphase command on each node.",
)
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
    hosts: str | None,
    hostfile: str | None,
    ssh_config: str | None,
    slurm_job: str | None,
    ray_address: str | None,
    k8s: bool,
    selector: str | None,
    namespace: str | None,
    container: str | None,
    remote: str,
    node_timeout_s: float | None,
    parallel: int,
    pattern_paths: tuple[Path, ...],
) -> None:
    """Snapshot the Python stacks of every rank of a server (or read dumps), merge them into one
    tree, and name the odd rank and where the rest wait.

    \b
    logphase stacks --pid 1234                     live, from any process of the server
    logphase stacks --pid 1234 --samples 3         tell working ranks from frozen ones
    logphase stacks --all --match 'sglang::'       every matching Python process
    logphase stacks --from node0.json --from node1.json   post-mortem / many nodes
    logphase stacks --hosts node1,node2 --match 'sglang::'   every node, through ssh
    logphase stacks --slurm 4242 --match 'sglang::'          every node of a Slurm job
    logphase stacks --ray --match RayWorkerWrapper           vLLM's Ray workers on every node
    logphase stacks --k8s -l app=sglang -n serving --pid 1   every pod of a selector

    Exit: 0 no rank looks stuck, 4 stuck or odd ranks found, 3 nothing could be read.
    """
    transport = pick_transport(hosts, hostfile, ssh_config, slurm_job, ray_address, k8s, selector, namespace, container)
    if transport is not None and dump_files:
        raise UsageError("--from reads files here; it does not go with many nodes", hint="drop --from")
    sources = sum(bool(x) for x in (pids, all_processes, dump_files))
    if transport is None and sources != 1:
        raise UsageError("give exactly one of --pid, --all or --from", hint="see `logphase stacks --help`")
    if transport is None and match is not None and not all_processes:
        raise UsageError("--match goes with --all", hint="logphase stacks --all --match 'sglang::'")
    if native and nonblocking:
        raise UsageError(
            "--native cannot be combined with --nonblocking", hint="py-spy must pause a process to unwind native frames"
        )
    packs = load_all_packs(pattern_paths, line_rules=False)  # signatures only: a snapshot waits on it

    skew: float | None = None
    gpus: GpuReading | None = None  # this machine's GPUs, read with its live stacks (or saved with them)
    gpu_notes: list[str] = []
    if transport is not None:
        # each node runs its own `logphase stacks` over its own processes (--pid there, else --all)
        command = remote_stacks_command(
            shlex.split(remote) or ["logphase"],
            pids=pids,
            match=match,
            samples=samples,
            interval_s=interval_s,
            timeout_s=timeout_s,
            native=native,
            nonblocking=nonblocking,
        )
        wait_s = node_timeout_s or 30.0 + (samples - 1) * interval_s + timeout_s * samples
        snapshots, skew = collect_stacks(transport, command, timeout_s=wait_s, parallel=parallel)
    elif dump_files:
        snapshots = []
        readings: list[GpuReading] = []
        for path in dump_files:
            read, saved = read_dump_file_with_gpus(path)
            snapshots.extend(read)
            readings.extend(saved)
        gpus, gpu_notes = one_reading(readings)
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
        host = socket.gethostname()
        snapshots, skew = pyspy.snapshot(
            procs,
            py_spy=py_spy,
            native=native,
            nonblocking=nonblocking,
            timeout_s=timeout_s,
            samples=samples,
            interval_s=interval_s,
            host=host,
        )
        gpus = read_gpus(host=host)
    report = summarize(
        snapshots,
        packs.signatures,
        threads=threads,
        samples=samples,
        interval_s=interval_s if samples > 1 else 0.0,
        skew_s=skew,
        by_node=transport is not None,
        gpus=gpus,
        notes=gpu_notes,
    )
    click.echo(pick(output_format, colour=use_colour(), width=terminal_width()).stacks(report), nl=False)
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
