"""Live: real process trees (setproctitle titles, blocking in named functions, a gloo all_reduce one
rank never joins) snapshotted with py-spy; the odd rank is named; py-spy never harms a target."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from logphase.stacks import pyspy
from tests.conftest import run_cli

from .conftest import py_spy_path, requires_py_spy

pytestmark = [pytest.mark.live, requires_py_spy]


def stacks_json(*args: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    result = run_cli("stacks", *args, "--format", "json", "--timeout", "10")
    return result.exit_code, json.loads(result.stdout)


def test_names_the_rank_behind_a_barrier(start_server) -> None:  # type: ignore[no-untyped-def]
    server = start_server(["barrier", "barrier", "slow", "barrier"], extra=("sleep", "zombie"))
    code, data = stacks_json("--pid", str(server.pid))
    assert code == 4
    assert data["culprit_ranks"] == ["TP2"]
    assert data["summary"] == (
        "TP0, TP1, TP3 wait in barrier (distributed/parallel_state.py) inside load_model (model_runner.py); "
        "TP2 is still in load_weights (model_runner.py) (weight_load) (waiting: idle when sampled) — TP2 is behind"
    )
    by_rank = {p["rank"]: p for p in data["processes"] if p["rank"]}
    assert sorted(by_rank) == ["TP0", "TP1", "TP2", "TP3"]
    assert all(p["role"] == "scheduler" and p["title"].startswith("sglang::scheduler_TP") for p in by_rank.values())
    main = next(p for p in data["processes"] if p["pid"] == server.pid)
    assert main["role"] == "main" and main["error"] is None
    errors = sorted(p["error"] for p in data["processes"] if p["error"])
    assert errors == ["not a Python process (sleep): skipped", "zombie: exited, not yet reaped by its parent"]
    assert data["skew_s"] is not None and data["skew_s"] < 1.0


def test_from_any_rank_finds_the_whole_server(start_server) -> None:  # type: ignore[no-untyped-def]
    server = start_server(["idle", "idle", "idle"])
    rank_pid = server.rank_pids()[1]
    result = run_cli("stacks", "--pid", str(rank_pid))
    assert result.exit_code == 0
    assert result.stdout.splitlines()[0] == (
        "all ranks idle in the event loop: the server is up; look at the health check, not the server"
    )
    # the tree's frames carry the line their ranks are at (rank.py's own, the test app's)
    assert any(line.startswith("TP[0-2] (3)  <module> (rank.py:") for line in result.stdout.splitlines())


def test_all_match_finds_titled_processes(start_server) -> None:  # type: ignore[no-untyped-def]
    server = start_server(["idle", "slow"], title="sglang::scheduler_DP1_TP{rank}_EP{rank}")
    code, data = stacks_json("--all", "--match", r"^sglang::scheduler_DP1_TP\d_EP")
    ranks = sorted(p["rank"] for p in data["processes"])
    assert ranks == ["DP1 TP0 EP0", "DP1 TP1 EP1"]
    assert {p["pid"] for p in data["processes"]} == set(server.rank_pids().values())
    # one rank each in two places, neither in a collective, one sample: no odd one out to name
    assert data["summary"].startswith("ranks are split: DP1 TP0 EP0 is idle in recv_requests (scheduler.py)")
    assert code == 0


def test_samples_tell_a_working_rank_from_frozen_ones(start_server) -> None:  # type: ignore[no-untyped-def]
    server = start_server(["busy", "slow", "slow"])
    code, data = stacks_json("--pid", str(server.pid), "--samples", "3", "--interval", "0.2")
    moving = {p["rank"]: p["moving"] for p in data["processes"] if p["rank"]}
    assert moving == {"TP0": True, "TP1": False, "TP2": False}
    assert data["samples"] == 3 and data["interval_s"] == 0.2
    assert code == 4


@pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="torch cannot be imported (CPU build needed for gloo)"
)
def test_gloo_all_reduce_that_one_rank_never_joins(start_server) -> None:  # type: ignore[no-untyped-def]
    server = start_server(["gloo", "gloo", "gloo-slow", "gloo"], title=None, env_rank=True, wait_s=90, settle_s=1.0)
    code, data = stacks_json("--pid", str(server.pid))
    assert code == 4
    assert data["culprit_ranks"] == ["rank 2"]
    assert data["summary"] == (
        "rank 0, rank 1, rank 3 wait in all_reduce (torch.distributed) inside capture (cuda_graph_runner.py); "
        "rank 2 is still in load_weights (model_runner.py) (weight_load) (waiting: idle when sampled) "
        "— rank 2 is behind"
    )
    workers = [p for p in data["processes"] if p["rank"]]
    assert {p["role"] for p in workers} == {"worker"}


def _counter_target(tmp_path: Path) -> tuple[subprocess.Popen[bytes], Path]:
    counter = tmp_path / "counter"
    script = (
        "import sys, time\n"
        "def tick(path):\n"
        "    n = 0\n"
        "    while True:\n"
        "        n += 1\n"
        "        open(path, 'w').write(str(n))\n"
        "        time.sleep(0.01)\n"
        f"tick({str(counter)!r})\n"
    )
    target = subprocess.Popen([sys.executable, "-c", script])
    deadline = time.monotonic() + 10
    while not counter.exists() or not counter.read_text():
        assert time.monotonic() < deadline
        time.sleep(0.02)
    return target, counter


def _count(counter: Path) -> int:
    """The target rewrites its counter file: a read can land between truncate and write."""
    while not (text := counter.read_text().strip()):
        time.sleep(0.01)
    return int(text)


def test_an_overrunning_py_spy_is_killed_and_the_target_keeps_running(tmp_path: Path) -> None:
    # The "py-spy" samples the target in blocking mode (real ptrace stops) and never finishes on its own.
    real = py_spy_path()
    fake = tmp_path / "py-spy"
    pidfile = tmp_path / "recorder.pid"
    fake.write_text(
        "#!/bin/sh\n"
        f'"{real}" record --rate 200 --duration 60 --output {tmp_path}/out.svg --pid "$5" >/dev/null 2>&1 &\n'
        f"echo $! > {pidfile}\n"
        "sleep 60\n"
    )
    fake.chmod(0o755)
    target, counter = _counter_target(tmp_path)
    try:
        started = time.monotonic()
        result = pyspy.run_py_spy(str(fake), target.pid, timeout_s=1.0)
        assert time.monotonic() - started < 5
        assert result.error is not None and result.error.startswith("py-spy did not finish within 1s (killed")
        recorder = int(pidfile.read_text())
        time.sleep(0.2)
        assert not Path(f"/proc/{recorder}").exists() or pyspy.read_stat(recorder)[1] == "Z"  # type: ignore[index]
        state = pyspy.read_stat(target.pid)
        assert state is not None and state[1] not in ("T", "t")
        before = _count(counter)
        deadline = time.monotonic() + 3.0
        while _count(counter) <= before and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _count(counter) > before, "the target stopped counting"
        assert target.poll() is None
    finally:
        target.kill()
        target.wait()


def test_exited_and_non_python_processes_are_reported_per_process(tmp_path: Path) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    result = pyspy.run_py_spy(py_spy_path() or "py-spy", gone.pid, timeout_s=5)
    assert result.error in ("the process exited", "not a Python process, or it exited")
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        info = pyspy.read_proc(sleeper.pid)
        assert info is not None and not info.python
        snaps, _ = pyspy.snapshot([info], py_spy=py_spy_path() or "py-spy")
        assert snaps[0].skipped and snaps[0].error == "not a Python process (sleep): skipped"
    finally:
        sleeper.kill()
        sleeper.wait()


def test_native_frames(start_server) -> None:  # type: ignore[no-untyped-def]
    server = start_server(["slow"])
    _code, data = stacks_json("--pid", str(server.pid), "--native")
    (rank,) = [p for p in data["processes"] if p["rank"]]
    frames = next(t["frames"] for t in rank["threads"] if t["main"])
    assert any(f.startswith("shard_reader (model_runner.py") for f in frames)
    assert not any(f.startswith("0x") for f in frames)
    assert os.path.exists(f"/proc/{server.pid}")


def test_analyze_with_pid_judges_the_live_stacks_with_the_log(start_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # GIVEN a server whose TP2 is still loading weights while the others wait in a barrier, and its log,
    # which names no culprit (every rank began loading; none has said more)
    server = start_server(["barrier", "barrier", "slow", "barrier"])
    log = tmp_path / "server.log"
    log.write_text(
        "".join(f"[2025-03-08 12:29:13 TP{rank}] Load weight begin. avail mem=21.63 GB\n" for rank in range(4))
    )
    # WHEN analysed with its pid
    result = run_cli("analyze", str(log), "--pid", str(server.pid), "--post-mortem", "--format", "json")
    report = json.loads(result.stdout)
    # THEN the report holds the live stacks, and their odd rank out is the culprit, said in a note
    assert (report["verdict"], report["phase"], result.exit_code) == ("stalled", "weight_load", 4)
    assert report["stacks"]["culprit_ranks"] == ["TP2"]
    assert report["culprit_ranks"] == ["TP2"]
    assert "culprit ranks from the stacks: TP2" in report["notes"]


def test_analyze_with_a_pid_that_does_not_exist_is_refused_before_any_work(tmp_path: Path) -> None:
    # GIVEN a log and a pid no process has
    log = tmp_path / "server.log"
    log.write_text("[2025-03-08 12:29:13 TP0] Load weight begin. avail mem=21.63 GB\n")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    # WHEN analysed with it THEN exit 3, one line and a hint
    result = run_cli("analyze", str(log), "--pid", str(dead.pid))
    assert result.exit_code == 3
    assert result.stderr.splitlines()[0] == f"logphase: error: --pid {dead.pid}: no such process"


def test_the_library_takes_the_stacks_the_cli_takes(start_server) -> None:  # type: ignore[no-untyped-def]
    # GIVEN a server whose TP2 is behind a barrier the others wait in
    server = start_server(["barrier", "barrier", "slow", "barrier"])
    # WHEN its stacks are taken through the library
    import logphase

    report = logphase.take_stacks(server.pid)
    # THEN they name the same odd rank out as `logphase stacks --pid`
    assert report.culprit_ranks == ("TP2",)
    assert report.to_json()["culprit_ranks"] == ["TP2"]


def test_one_sample_tells_the_spinning_rank_from_the_waiting_ones(start_server) -> None:  # type: ignore[no-untyped-def]
    # GIVEN four ranks: TP0 spins on the CPU in its weight load, TP1-TP3 wait at a barrier
    server = start_server(["busy", "barrier", "barrier", "barrier"])
    # WHEN one sample is taken (no second one to compare)
    code, data = stacks_json("--pid", str(server.pid), "--samples", "1")
    # THEN py-spy's own marks judge: TP0 is working (on the CPU), the others are waiting (idle), and TP0 is the
    # rank the others wait for
    motion = {tuple(g["ranks"]): g["moving"] for g in data["groups"] if g["peer"]}
    assert motion == {("TP1", "TP2", "TP3"): False, ("TP0",): True}
    assert data["culprit_ranks"] == ["TP0"]
    assert data["summary"].endswith("(working: on the CPU when sampled) — TP0 is behind")
    table = run_cli("stacks", "--pid", str(server.pid), "--samples", "1").stdout
    assert {"waiting (idle)", "working (on CPU)"} <= {
        cell.strip() for line in table.splitlines() for cell in line.split("  ")
    }
    assert code == 4
