"""The ssh transport: plain `ssh` to each host (BatchMode: never a prompt), the user's own ssh config."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from logphase.errors import InputError, UsageError
from logphase.nodes.transport import MAX_ANSWER_BYTES, NodeRun, last_words, remote_failure, run_each

# ssh exits 255 for its own errors; the rest is the remote command's status.
SSH_FAILED = 255
_SSH_REASONS = (
    ("permission denied", "auth"),
    ("host key verification failed", "auth: the host key is unknown or changed"),
    ("connection refused", "unreachable"),
    ("could not resolve hostname", "unreachable"),
    ("no route to host", "unreachable"),
    ("connection timed out", "timeout"),
    ("network is unreachable", "unreachable"),
)


def hosts_from(hosts: str | None, hostfile: str | None) -> list[str]:
    """`h1,h2` and a hostfile (one host a line, `#` comments; MPI's `host slots=8` keeps the host), in order,
    each once."""
    found: list[str] = []
    if hosts:
        found += [h.strip() for h in hosts.split(",") if h.strip()]
    if hostfile:
        try:
            text = Path(hostfile).read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise InputError(f"cannot read the hostfile {hostfile}: {exc.strerror}", hint="one host a line") from None
        for line in text.splitlines():
            words = line.split("#", 1)[0].split()
            if words:
                found.append(words[0])
    unique = list(dict.fromkeys(found))
    if not unique:
        raise UsageError("no host given", hint="--hosts node1,node2 or --hostfile FILE (one host a line)")
    bad = [h for h in unique if h.startswith("-")]
    if bad:
        raise UsageError(f"{bad[0]!r} is not a host name", hint="a host never starts with '-'")
    return unique


@dataclass(frozen=True)
class SshTransport:
    """`ssh -o BatchMode=yes HOST -- COMMAND` on each host; `config` is an ssh config file (`ssh -F`)."""

    hosts: tuple[str, ...]
    config: str | None = None
    connect_timeout_s: int = 10
    engine: str = "ssh"

    def argv(self, host: str, command: Sequence[str]) -> list[str]:
        argv = ["ssh", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={self.connect_timeout_s}"]
        if self.config:
            argv += ["-F", self.config]
        # the remote shell splits the command again: each word quoted once
        return [*argv, host, "--", shlex.join(command)]

    def run(
        self,
        command: Sequence[str],
        *,
        timeout_s: float,
        parallel: int,
        limit: int = MAX_ANSWER_BYTES,
        cut: bool = False,
    ) -> list[NodeRun]:
        runs = run_each(
            [(h, self.argv(h, command)) for h in self.hosts],
            timeout_s=timeout_s,
            parallel=parallel,
            limit=limit,
            cut=cut,
        )
        return [explain(run) for run in runs]


def explain(run: NodeRun) -> NodeRun:
    """Name what kept a host from answering: ssh's own failure (255), or the remote command's."""
    if run.failure is not None or run.returncode in (0, None):
        return run
    if run.returncode == SSH_FAILED:
        words = last_words(run.stderr)
        lowered = run.stderr.lower()
        kind = next((kind for needle, kind in _SSH_REASONS if needle in lowered), "ssh failed")
        return replace(run, failure=f"{kind}: {words}" if words else kind)
    said = remote_failure(run.stderr, run.returncode)
    return replace(run, failure=said) if said and not run.stdout.strip() else run
