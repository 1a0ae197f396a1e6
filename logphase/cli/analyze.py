"""`logphase analyze LOG...`: phase timeline, verdict and root cause of one run's logs."""

from __future__ import annotations

import contextlib
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

from logphase import pipeline
from logphase.api import open_run
from logphase.cli.common import (
    FORMATS,
    PHASES,
    PID,
    cache_folder,
    db_option,
    jobs_from,
    jobs_option,
    load_all_packs,
    parse_as_of,
    parse_moment,
    patterns_option,
    stall_after_option,
    terminal_width,
    use_colour,
)
from logphase.cli.live_stacks import check_pid, take_stacks
from logphase.cli.nodes import node_options, pick_transport
from logphase.cli.progress import progress_on_stderr
from logphase.errors import InputError, StoreError, UsageError
from logphase.phases import Phase
from logphase.report.formats import OutputFormat, pick

if TYPE_CHECKING:  # types only: a plain `analyze` imports neither the run store nor the dump reader
    from logphase.baselines.store import RunStore
    from logphase.logs.reader import LogSource
    from logphase.nodes.logs import Collection
    from logphase.packs import PackSet
    from logphase.report.model import Report
    from logphase.scan.view import LineView


@click.command()
@click.argument("logs", nargs=-1)
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
@click.option(
    "--rank",
    "ranks",
    multiple=True,
    metavar="RANK",
    help="Show the lines of RANK (as the server names it: TP3, 'DP0 TP3', 'rank 3'; TP3 is also 'DP0 TP3'; "
    "main: the untagged process); repeatable.",
)
@click.option("--phase", "phases", type=PHASES, multiple=True, help="Show the lines of a phase; repeatable.")
@click.option(
    "--since", "since_text", metavar="TIME", help="Show the lines from TIME on (a date and time, or HH:MM[:SS])."
)
@click.option("--until", "until_text", metavar="TIME", help="Show the lines up to TIME.")
@click.option("--tail", "tail", type=click.IntRange(min=1), metavar="N", help="Show the last N lines chosen.")
@click.option(
    "-C",
    "--context",
    "context",
    type=click.IntRange(min=0),
    default=0,
    metavar="N",
    help="Show N lines around each line chosen.",
)
@node_options("their logs")
@click.option(
    "--log-path",
    "log_paths",
    multiple=True,
    metavar="PATH",
    help="With many nodes: the log's path on each node (a glob; Slurm's %j %N %n %t expanded); repeatable. "
    "Default: Slurm's job output, each pod's `kubectl logs`, Ray's worker logs.",
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
    ranks: tuple[str, ...] = (),
    phases: tuple[Phase, ...] = (),
    since_text: str | None = None,
    until_text: str | None = None,
    tail: int | None = None,
    context: int = 0,
    hosts: str | None = None,
    hostfile: str | None = None,
    ssh_config: str | None = None,
    slurm_job: str | None = None,
    ray_address: str | None = None,
    k8s: bool = False,
    selector: str | None = None,
    namespace: str | None = None,
    container: str | None = None,
    node_timeout_s: float | None = None,
    parallel: int = 32,
    log_paths: tuple[str, ...] = (),
) -> None:
    """Which phase each rank reached, whether the server is ready, progressing, stalled or crashed,
    and the line that explains it.

    LOG is a file, '-' for standard input, a .gz/.bz2/.xz/.zst file or a tar archive (each member
    a log). Several logs (one per node or per rank) are analysed as one run. Torch flight-recorder
    dumps given with them (one per rank, named <prefix><rank>) tell which rank never joined the
    collective the others wait in.

    With --pid, the running server's ranks are sampled with py-spy and their stacks judged with the
    logs: where each rank waits, and the odd rank out as the culprit where the logs name none.

    --rank, --phase, --since, --until, --tail and -C print the lines behind the verdict instead of the
    report, grep's way: `path:line  rank  what it counts as  the line` (the verdict on stderr, in one line).
    --format line prints the verdict in one line: `verdict | phase | rank | reason | path:line`.

    With --hosts, --slurm, --ray or --k8s the logs are collected from every node of the cluster through
    its engine (a log's path on each host, a Slurm job's output files, Ray's worker logs, `kubectl logs`
    of each pod), each node's clock measured as they are read, and judged as one run; a node that gave
    none is named with why.

    \b
    Examples:
      logphase analyze server.log
      logphase analyze --hosts node0,node1 --log-path '/var/log/sglang/*.log'
      logphase analyze --slurm 4242
      logphase analyze --k8s -l app=sglang -n serving
      logphase analyze server.log --rank TP3 --tail 20
      logphase analyze server.log --phase cuda_graph --since 10:01 -C 2
      logphase analyze server.log --format line

    Exit: 0 ready, 4 stalled/crashed/aborted/timeout, 5 still starting, 6 unknown (or a success the
    evidence does not carry), 3 unreadable input or no such --pid.
    """
    transport = pick_transport(hosts, hostfile, ssh_config, slurm_job, ray_address, k8s, selector, namespace, container)
    if transport is None and log_paths:
        raise UsageError("--log-path goes with many nodes", hint="--hosts h1,h2 --log-path PATH (or give LOG here)")
    if transport is not None and (logs or pid is not None):
        raise UsageError(
            "LOG and --pid are of this machine; they do not go with many nodes", hint="drop them, or the engine"
        )
    if transport is None and not logs:
        raise UsageError("no LOG given", hint="logphase analyze server.log (or --hosts/--slurm/--ray/--k8s)")
    if pid is not None:
        check_pid(pid)
    cache = cache_folder()
    packs = load_all_packs(pattern_paths)
    with contextlib.ExitStack() as kept:  # the nodes' logs, saved here, are read until the report is out
        nodes: Collection | None = None
        if transport is None:
            sources, flight = open_run(logs, packs, stdin=sys.stdin.buffer if "-" in logs else None)
        else:
            import tempfile  # only for many nodes: a one-file run never imports it (nor shutil, bz2, lzma)

            from logphase.nodes.logs import collect_logs, sources_of  # the engines: only with many nodes

            folder = Path(kept.enter_context(tempfile.TemporaryDirectory(prefix="logphase-nodes-")))
            nodes = collect_logs(transport, log_paths, folder, timeout_s=node_timeout_s or 60.0, parallel=parallel)
            if not any(node.judged for node in nodes.nodes):
                for line in nodes.lines():
                    click.echo(f"logphase: {line}", err=True)
                raise InputError("no node gave a log", hint=NO_NODE_HINT)
            (sources, nodes), flight = sources_of(nodes, packs), None
        _judge(
            sources,
            packs,
            output_format,
            pipeline.Options(
                as_of=parse_as_of(as_of_text),
                post_mortem=post_mortem if post_mortem is not None else all(source.finished for source in sources),
                baseline=baseline_ref,
                flight=flight,
                stall_after_s=stall_after_s,
                jobs=jobs_from(jobs),
                caches=cache,
                tap=_line_view(packs, [s.name for s in sources], ranks, phases, since_text, until_text, tail, context),
                nodes=nodes,
            ),
            pid=pid,
            record_run=record_run,
            db_path=db_path,
        )


NO_NODE_HINT = "each node's reason is above; --log-path names the files, --node-timeout the wait"


def _judge(
    sources: list[LogSource],
    packs: PackSet,
    output_format: OutputFormat,
    options: pipeline.Options,
    *,
    pid: int | None,
    record_run: bool,
    db_path: Path | None,
) -> NoReturn:
    """The run's sources judged, the report printed; exits with the report's code."""
    tap, baseline_ref = options.tap, options.baseline
    if tap is not None and output_format is OutputFormat.HTML:
        raise UsageError(
            "the lines behind the verdict have no html form", hint="use --format table, json, markdown or line"
        )
    store: RunStore | None = None
    store_error: StoreError | None = None
    if baseline_ref is not None or record_run:
        from logphase.cli.runs import open_store_for  # the run store (SQLite): only these two open it

        store, store_error = open_store_for(db_path, ref=baseline_ref, record=record_run)
    try:
        options = replace(
            options,
            store=store,
            store_error=store_error,
            stacks=take_stacks(pid, packs) if pid is not None else None,
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
    if tap is not None and output_format is not OutputFormat.LINE:
        _print_view(tap, report, output_format)
    else:
        click.echo(pick(output_format, colour=use_colour(), width=terminal_width()).analysis(report), nl=False)
    sys.exit(int(report.exit_code))


def _line_view(
    packs: PackSet,
    names: list[str],
    ranks: tuple[str, ...],
    phases: tuple[Phase, ...],
    since_text: str | None,
    until_text: str | None,
    tail: int | None,
    context: int,
) -> LineView | None:
    """The tap that keeps the lines behind the verdict, when any option asks for them."""
    if not (ranks or phases or since_text or until_text or tail is not None or context):
        return None
    from logphase.scan.view import LineView, Selection

    selection = Selection(
        ranks=ranks,
        phases=phases,
        since=parse_moment("--since", since_text) if since_text else None,
        until=parse_moment("--until", until_text) if until_text else None,
        tail=tail,
        context=context,
    )
    return LineView(packs, names, selection)


def _print_view(tap: LineView, report: Report, output_format: OutputFormat) -> None:
    from logphase.report.formats.line import report_line
    from logphase.report.view import view_json, view_markdown, view_text

    view = tap.view()
    if output_format is OutputFormat.JSON:
        click.echo(view_json(view, report), nl=False)
        return
    if output_format is OutputFormat.MARKDOWN:
        click.echo(view_markdown(view, report), nl=False)
        return
    click.echo(view_text(view), nl=False)
    if not view.hits:
        click.echo(f"logphase: no line of {view.read} read was chosen", err=True)
    click.echo(report_line(report), nl=False, err=True)
