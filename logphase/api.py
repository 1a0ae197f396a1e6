"""The library's door: analyse a run's logs, or take a server's stacks, from Python as the CLI does.

    >>> import logphase
    >>> report = logphase.analyze(["server.log"], post_mortem=True)
    >>> report.verdict, report.phase, report.exit_code
    (<Verdict.STALLED: 'stalled'>, <Phase.CUDA_GRAPH: 'cuda_graph'>, <ExitCode.PROBLEM: 4>)

The values are the CLI's own: a `Report` (frozen; `to_json()` is `analyze --format json`) and a
`StacksReport` (`to_json()` is `stacks --format json`). Nothing here reads the environment, prints or
keeps state between calls: the packs, the cache folder and the clock are arguments."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING

from logphase.errors import SnapshotError
from logphase.jobs import ONE_JOB, Jobs
from logphase.logs.reader import LogSource, open_sources
from logphase.packs import PackSet, load_packs
from logphase.report.model import Report

if TYPE_CHECKING:
    from logphase.flight_recorder import FlightReport
    from logphase.stacks.model import StacksReport


def open_run(
    logs: Sequence[str | Path], packs: PackSet, stdin: IO[bytes] | None = None
) -> tuple[list[LogSource], FlightReport | None]:
    """A run's inputs as `analyze` takes them: the logs opened (`-`: `stdin`), and the torch
    flight-recorder dumps among them read and judged (None without any)."""
    dump_paths: list[str] = []
    sources = open_sources([str(log) for log in logs], stdin=stdin, dumps=dump_paths, packs=packs)
    if not dump_paths:
        return sources, None
    from logphase.flight_recorder import judge_dumps, read_dumps  # only with dumps among the inputs

    return sources, judge_dumps(read_dumps(dump_paths))


def analyze(
    logs: Sequence[str | Path],
    *,
    post_mortem: bool | None = None,
    as_of: datetime | None = None,
    stall_after_s: float | None = None,
    stacks: StacksReport | None = None,
    packs: PackSet | None = None,
    jobs: Jobs = ONE_JOB,
    cache: Path | None = None,
) -> Report:
    """One run's logs (a log per node or rank; .gz/.bz2/.xz/.zst, tar archives; torch flight-recorder
    dumps among them) judged as `logphase analyze` judges them. `post_mortem`: None judges plain files
    live and archives finished, as the CLI does; `as_of`: now when None; `stacks`: a server's live
    stacks (`logphase.take_stacks(pid)`), judged with the logs; `packs`: the shipped ones when None;
    `cache`: a folder for the fast path's plans and scanners (None: none, nothing written)."""
    from logphase import pipeline

    packs = packs if packs is not None else load_packs()
    sources, flight = open_run(logs, packs)
    options = pipeline.Options(
        as_of=as_of if as_of is not None else datetime.now(),
        post_mortem=post_mortem if post_mortem is not None else all(source.finished for source in sources),
        flight=flight,
        stacks=stacks,
        stall_after_s=stall_after_s,
        jobs=jobs,
        caches=cache,
    )
    return pipeline.report(sources, packs, options)


def take_stacks(pid: int, *, samples: int = 2, interval_s: float = 0.5, packs: PackSet | None = None) -> StacksReport:
    """Every process of the server `pid` belongs to, sampled with py-spy `samples` times `interval_s`
    apart (two, half a second apart, tell a rank that moves from one that waits, at a second's cost),
    merged and judged as `logphase stacks --pid` does, with this machine's GPUs (NVML, where installed).
    Raises SnapshotError (py-spy missing or denied, no such process) with its remedy."""
    import socket

    from logphase.judging.stalls import summarize
    from logphase.stacks import pyspy
    from logphase.stacks.nvml import read_gpus

    packs = packs if packs is not None else load_packs()
    procs = pyspy.discover_tree(pid)
    if not procs:
        raise SnapshotError(f"no process {pid} to take stacks from", hint="is the server still running?")
    host = socket.gethostname()
    snapshots, skew = pyspy.snapshot(
        procs, py_spy=pyspy.find_py_spy(None), samples=samples, interval_s=interval_s, host=host
    )
    gpus = read_gpus(host=host)
    return summarize(snapshots, packs.signatures, samples=samples, interval_s=interval_s, skew_s=skew, gpus=gpus)
