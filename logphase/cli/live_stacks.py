"""The running server at the CLI's edge: a pid that must exist, and its ranks' live stacks (py-spy),
for `analyze --pid` and `watch --pid`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from logphase.errors import LogphaseError
from logphase.packs import PackSet

if TYPE_CHECKING:  # types only: a plain `analyze` imports no stack model (start-up time)
    from logphase.stacks.model import StacksReport


def check_pid(pid: int) -> None:
    """A pid that does not exist is an error before any work (a typo, or the server is gone)."""
    from logphase.stacks.pyspy import process_exists  # only with --pid (start-up time)

    if not process_exists(pid):
        raise LogphaseError(
            f"--pid {pid}: no such process",
            hint="give the pid of the server's main process while it runs (ps -ef | grep -e sglang -e vllm)",
        )


def take_stacks(pid: int, packs: PackSet) -> StacksReport | None:
    """`logphase.take_stacks` (every process of the server's tree sampled, merged, judged as `logphase
    stacks --pid` does). What stops it (py-spy missing or denied, the server gone) is said on stderr with its
    hint, and the analysis goes on without stacks: the log's answer is still worth having."""
    from logphase.api import take_stacks as taken

    try:
        return taken(pid, packs=packs)
    except LogphaseError as error:
        click.echo(f"logphase: stacks not taken: {error.message}", err=True)
        if error.hint:
            click.echo(f"  hint: {error.hint}", err=True)
        return None
