"""`logphase stacks --slurm JOBID`: a real single-host Slurm (Debian's munge, slurmctld and slurmd on
localhost, started here), a batch job running the rank program, one srun step joining it. Debian's slurmd
is built without multiple-slurmd, so the cluster is one node with several ranks."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.stacks.conftest import APP, free_port, py_spy_path

from .conftest import REMOTE, skip_unless

pytestmark = [pytest.mark.live, pytest.mark.slow]

DAEMONS = ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "srun", "squeue", "scontrol", "scancel")


def slurm_missing() -> str | None:
    absent = [name for name in DAEMONS if shutil.which(name) is None and not Path(f"/usr/sbin/{name}").exists()]
    if absent:
        return f"Slurm not installed ({', '.join(absent)}; Debian: slurmd slurmctld slurm-client munge)"
    if os.geteuid() != 0:
        return "slurmd must run as root"
    return None if py_spy_path() else "py-spy is not installed"


def _exe(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


def _run(argv: list[str]) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True, timeout=30).stdout


@pytest.fixture
def slurm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[list[str]], str]]:
    """A running Slurm of one node; calling it submits a batch job of the rank program and returns its id
    once every rank is ready."""
    skip_unless(slurm_missing())
    folder = tmp_path / "slurm"
    for sub in ("munge", "ctld", "d", "log"):
        (folder / sub).mkdir(parents=True)
    (folder / "munge").chmod(0o700)
    # munged wants its socket's every parent folder open to all: pytest's tmp folders are not
    public = Path(tempfile.mkdtemp(prefix="logphase-munge-"))
    public.chmod(0o755)
    socket_path = public / "sock"
    node = socket.gethostname().split(".")[0]
    conf = folder / "slurm.conf"
    conf.write_text(
        f"ClusterName=logphase\nSlurmctldHost=localhost\nSlurmctldPort={free_port()}\nSlurmdPort={free_port()}\n"
        f"AuthType=auth/munge\nAuthInfo=socket={socket_path}\nCredType=cred/munge\nSlurmUser=root\n"
        f"StateSaveLocation={folder}/ctld\nSlurmdSpoolDir={folder}/d\nSlurmctldPidFile={folder}/ctld.pid\n"
        f"SlurmdPidFile={folder}/d.pid\nSlurmctldLogFile={folder}/log/ctld.log\nSlurmdLogFile={folder}/log/d.log\n"
        "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nSchedulerType=sched/builtin\n"
        "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\nMpiDefault=none\nReturnToService=2\n"
        f"NodeName={node} NodeHostname={socket.gethostname()} CPUs={os.cpu_count() or 1} RealMemory=1000 "
        "State=UNKNOWN\n"
        f"PartitionName=debug Nodes={node} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8\n"
    )
    monkeypatch.setenv("SLURM_CONF", str(conf))
    key = folder / "munge" / "munge.key"
    _run([_exe("mungekey"), "-c", "-f", "-k", str(key)])
    daemons = [
        subprocess.Popen(argv, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for argv in (
            [
                _exe("munged"),
                "-F",
                f"--key-file={key}",
                f"--socket={socket_path}",
                f"--pid-file={folder}/munge/pid",
                f"--log-file={folder}/munge/log",
                f"--seed-file={folder}/munge/seed",
            ],
        )
    ]
    jobs: list[str] = []
    pids: list[int] = []
    try:
        deadline = time.monotonic() + 10
        while not socket_path.exists():
            assert time.monotonic() < deadline, "munged did not start"
            time.sleep(0.05)
        for argv in ([_exe("slurmctld"), "-D", "-c", "-i"], [_exe("slurmd"), "-D", "-c"]):
            daemons.append(
                subprocess.Popen(argv, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            )
        deadline = time.monotonic() + 30
        while "idle" not in subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True).stdout:
            if time.monotonic() > deadline:
                skip_unless(f"Slurm did not come up in 30s: {(folder / 'log' / 'ctld.log').read_text()[-300:]}")
            time.sleep(0.2)

        def submit(ranks: list[str], *, log: str | None = None, ends: bool = False) -> str:
            if log is not None:
                return submit_log(log, ends=ends)
            ready = tmp_path / f"ready{len(jobs)}"
            ready.mkdir()
            spec = {
                "ranks": ranks,
                "title": "sglang::scheduler_TP{rank}",
                "ready_dir": str(ready),
                "port": free_port(),
                "barrier_size": 8,
            }
            script = tmp_path / f"job{len(jobs)}.sh"
            script.write_text(
                f"#!/bin/sh\necho $$ > {ready}/launcher\nexec {sys.executable} {APP / 'launch.py'} "
                f"'{json.dumps(spec)}'\n"
            )
            job = _run(["sbatch", "--parsable", "-N1", "-n1", "-o", str(tmp_path / "job.out"), str(script)]).strip()
            jobs.append(job)
            deadline = time.monotonic() + 60
            while len(list(ready.glob("ready.*"))) < len(ranks):
                assert time.monotonic() < deadline, f"job {job}: ranks not ready: {_run(['squeue'])}"
                time.sleep(0.1)
            pids.extend(int((ready / name).read_text()) for name in os.listdir(ready))
            time.sleep(0.3)
            return job

        def submit_log(text: str, *, ends: bool) -> str:
            """A job that prints `text` to its output (slurm-%j.out, as sbatch names it by default) and waits (or,
            with `ends`, ends: returned once Slurm says it completed)."""
            source = tmp_path / f"log{len(jobs)}.txt"
            source.write_text(text)
            script = tmp_path / f"job{len(jobs)}.sh"
            script.write_text(f"#!/bin/sh\ncat {source}\n" + ("" if ends else "exec sleep 3600\n"))
            output = str(tmp_path / "slurm-%j.out")
            job = _run(["sbatch", "--parsable", "-N1", "-n1", "-o", output, str(script)]).strip()
            jobs.append(job)
            written = Path(output.replace("%j", job))
            deadline = time.monotonic() + 60
            while not written.exists() or written.stat().st_size < len(text):
                assert time.monotonic() < deadline, f"job {job}: no output: {_run(['squeue'])}"
                time.sleep(0.1)
            while ends and "JobState=COMPLETED" not in _run(["scontrol", "show", "job", "-o", job]):
                assert time.monotonic() < deadline, f"job {job} did not complete: {_run(['squeue'])}"
                time.sleep(0.2)
            return job

        yield submit
    finally:
        for job in jobs:
            subprocess.run(["scancel", job], capture_output=True, check=False)
        time.sleep(0.5 if jobs else 0)
        for pid in _our_step_daemons(conf):  # slurmstepd outlives a killed slurmd: ours, by the conf they read
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for pid in pids:  # the job's processes, by their ids, in case scancel did not reach them
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for daemon in reversed(daemons):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(daemon.pid, signal.SIGKILL)
            daemon.wait(timeout=10)
        shutil.rmtree(public, ignore_errors=True)


def _our_step_daemons(conf: Path) -> list[int]:
    """The slurmstepd processes of this test's Slurm: they carry its SLURM_CONF in their environment."""
    mine = f"SLURM_CONF={conf}".encode()
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            if cmdline.read_bytes().startswith(b"slurmstepd") and mine in (cmdline.parent / "environ").read_bytes():
                found.append(int(cmdline.parent.name))
    return found


def stacks(*args: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    result = run_cli("stacks", *args, "--remote", REMOTE, "--match", "sglang::scheduler", "--format", "json")
    return result.exit_code, json.loads(result.stdout)


def test_the_stuck_rank_is_named_with_its_node(slurm) -> None:  # type: ignore[no-untyped-def]
    # GIVEN a job whose ranks wait in a barrier but rank 2, still loading its weights
    job = slurm(["barrier", "barrier", "slow", "barrier"])
    # WHEN its stacks are taken through one srun step that joins the job
    code, data = stacks("--slurm", job, "--node-timeout", "60")
    # THEN the culprit is rank 2 on the job's node
    node = socket.gethostname().split(".")[0]
    assert data["culprit_ranks"] == [f"{node}:TP2"]
    assert {p["host"] for p in data["processes"]} == {node}
    assert code == 4


def test_an_unknown_job_is_said(slurm) -> None:  # type: ignore[no-untyped-def]
    # GIVEN a running Slurm WHEN the stacks of a job it does not know are asked for THEN it says so: exit 3
    result = run_cli("stacks", "--slurm", "999999", "--remote", REMOTE)
    assert result.exit_code == 3
    assert "no such job: Slurm knows no running job 999999" in result.stderr


def test_the_stuck_rank_is_named_from_the_job_output(slurm) -> None:  # type: ignore[no-untyped-def]
    # GIVEN a job whose output (sbatch -o slurm-%j.out) is an SGLang log whose ranks reached weight_load but TP3's,
    # which stops in dist_init
    from .test_logs_ssh import node_log

    job = slurm([], log=node_log({0: True, 1: True, 2: True, 3: False}, node_rank=None))
    # WHEN the job's logs are judged: its StdOut from scontrol, %j expanded, read in a step on its batch host
    result = run_cli("analyze", "--slurm", job, "--post-mortem", "--format", "json")
    data = json.loads(result.stdout)
    # THEN the one node's ranks are named as the server names them, and TP3 is the culprit
    node = socket.gethostname().split(".")[0]
    assert data["culprit_ranks"] == ["TP3"]
    [entry] = data["nodes"]["nodes"]
    assert entry["node"] == node
    assert [Path(log["path"]).name for log in entry["logs"]] == [f"slurm-{job}.out"]
    assert result.exit_code == 4


def test_analyze_of_an_unknown_job_is_said(slurm) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("analyze", "--slurm", "999999")
    assert result.exit_code == 3
    assert "no such job: Slurm knows no job 999999" in result.stderr


def test_a_job_that_ended_is_read_here(slurm) -> None:  # type: ignore[no-untyped-def]
    # GIVEN a job that printed its SGLang log and completed (scontrol still knows it; no node to step into)
    from .test_logs_ssh import node_log

    job = slurm([], log=node_log({0: True, 1: False}, node_rank=None), ends=True)
    # WHEN its logs are judged
    result = run_cli("analyze", "--slurm", job, "--post-mortem", "--format", "json")
    data = json.loads(result.stdout)
    # THEN its output file is read on this machine (its file system is the node's here), and said so
    [entry] = data["nodes"]["nodes"]
    assert entry["node"] == "here"
    assert entry["notes"] == [f"job {job} is completed: its output read on this machine"]
    assert data["culprit_ranks"] == ["TP1"]
    assert result.exit_code == 4
