"""Fixtures for the stacks tests: real process trees (titled with setproctitle, blocking in named
functions) that are always killed at teardown, even when the test fails."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from logphase.packs import StallSignature, load_pack

APP = Path(__file__).resolve().parent / "app"
REPO = Path(__file__).resolve().parents[2]
STACKS_FIXTURES = REPO / "fixtures" / "stacks"
REALWORLD = REPO / "fixtures" / "realworld" / "stacks"


def py_spy_path() -> str | None:
    return shutil.which("py-spy") or (
        str(Path(sys.executable).parent / "py-spy") if (Path(sys.executable).parent / "py-spy").exists() else None
    )


requires_py_spy = pytest.mark.skipif(py_spy_path() is None, reason="py-spy is not installed")


@pytest.fixture(scope="session")
def signatures() -> tuple[StallSignature, ...]:
    return load_pack(REPO / "patterns" / "stacks.toml").signatures


@dataclass
class Server:
    launcher: subprocess.Popen[bytes]
    ready_dir: Path
    ranks: int

    @property
    def pid(self) -> int:
        return self.launcher.pid

    def rank_pids(self) -> dict[int, int]:
        return {int(p.suffix[1:]): int(p.read_text()) for p in self.ready_dir.glob("ready.*")}


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[Callable[..., Server]]:
    """start_server(["barrier", "barrier", "slow"], title=..., env_rank=..., extra=[...], wait_s=...)"""
    started: list[subprocess.Popen[bytes]] = []

    def start(
        ranks: list[str],
        *,
        title: str | None = "sglang::scheduler_TP{rank}",
        env_rank: bool = False,
        extra: tuple[str, ...] = (),
        wait_s: float = 20.0,
        settle_s: float = 0.3,
    ) -> Server:
        ready_dir = tmp_path / f"ready{len(started)}"
        ready_dir.mkdir()
        spec = {
            "ranks": ranks,
            "title": title,
            "env_rank": env_rank,
            "extra": list(extra),
            "ready_dir": str(ready_dir),
            "port": free_port(),
        }
        launcher = subprocess.Popen([sys.executable, str(APP / "launch.py"), json.dumps(spec)], start_new_session=True)
        started.append(launcher)
        server = Server(launcher=launcher, ready_dir=ready_dir, ranks=len(ranks))
        deadline = time.monotonic() + wait_s
        while len(list(ready_dir.glob("ready.*"))) < len(ranks):
            if launcher.poll() is not None:
                raise RuntimeError(f"the fake server exited with {launcher.returncode}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"ranks not ready after {wait_s}s: {sorted(p.name for p in ready_dir.iterdir())}")
            time.sleep(0.05)
        time.sleep(settle_s)  # from "ready" to inside the blocking call
        return server

    yield start
    for launcher in started:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(launcher.pid, signal.SIGKILL)  # the launcher leads its own session: the whole tree
        launcher.wait(timeout=10)
