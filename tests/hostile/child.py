"""The CLI run in a child process under a 1 GiB address-space limit, its peak RSS and CPU noted at exit:
the coarse guards of the hostile tests (tests/hostile/test_hostile_inputs.py runs the same child)."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from tests.conftest import REPO

ADDRESS_SPACE = 1 << 30
MAX_RSS_MB = 200

# VmHWM: the child's own peak (ru_maxrss would keep the peak of the test process it was forked from).
_CHILD = (
    "import atexit, os, runpy, sys\n"
    "def note():\n"
    "    peak = next(l for l in open('/proc/self/status') if l.startswith('VmHWM:')).split()[1]\n"
    "    times = os.times()\n"
    "    open(os.environ['RSS_OUT'], 'w').write(f'{peak} {times.user + times.system}')\n"
    "atexit.register(note)\n"
    "sys.argv = ['logphase', *sys.argv[1:]]\n"
    "runpy.run_module('logphase', run_name='__main__')\n"
)


@dataclass(frozen=True)
class Ran:
    code: int
    stdout: str
    stderr: str
    rss_mb: float
    cpu_s: float


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def run_cli(args: list[str], cwd: Path, *, stdin: IO[bytes] | None = None, timeout: float = 120) -> Ran:
    notes = cwd / ".child-notes"
    notes.unlink(missing_ok=True)
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, *args],
        capture_output=True,
        cwd=cwd,
        stdin=stdin if stdin is not None else subprocess.DEVNULL,
        timeout=timeout,
        preexec_fn=_limit,
        env={**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "100", "RSS_OUT": str(notes)},
    )
    rss, cpu = notes.read_text().split() if notes.exists() else ("0", "0")
    return Ran(
        done.returncode,
        done.stdout.decode(errors="replace"),
        done.stderr.decode(errors="replace"),
        int(rss) / 1024,
        float(cpu),
    )


def assert_handled(ran: Ran, codes: tuple[int, ...]) -> None:
    """No traceback, an allowed exit code, a one-line error with a hint where it refused, bounded memory."""
    assert "Traceback (most recent call last)" not in ran.stderr, ran.stderr[-2000:]
    assert ran.code in codes, (ran.code, ran.stderr[-500:])
    if ran.code == 3:
        lines = ran.stderr.splitlines()
        error = next(i for i, line in enumerate(lines) if line.startswith("logphase: error: "))
        assert lines[error + 1].startswith("  hint: "), ran.stderr
    assert ran.rss_mb <= MAX_RSS_MB, f"{ran.rss_mb:.0f} MB"
