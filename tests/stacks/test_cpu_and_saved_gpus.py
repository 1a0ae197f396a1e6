"""CPU % per process (its /proc CPU time over the sampling window) in every format, and the GPU reading (NVML) kept
through `stacks --from` and weighed in the verdict: a rank whose kernels keep its GPU busy works (issue 30)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from logphase.cli import main
from logphase.judging.stalls import summarize
from logphase.stacks import pyspy
from logphase.stacks.model import ThreadStack
from logphase.stacks.nvml import read_gpus
from tests.conftest import FIXTURES
from tests.report.test_table_width import table_lines

from .fake_nvml import FakeGpu, FakeNvml
from .test_merge import CAPTURE, snap

# A real H200 (fixtures/real/gpu-h200-nvml/README.md): rank 0 (pid 486) spins kernels, 100 % SM, its Python
# thread in torch.cuda.synchronize; rank 1 (pid 487) blocks on a pipe, no kernel, 0 % SM.
H200 = FIXTURES / "real" / "gpu-h200-nvml" / "stacks.json"


def cli(*args: str, columns: int = 200) -> Result:
    return CliRunner().invoke(main, list(args), env={"COLUMNS": str(columns), "NO_COLOR": "1"}, catch_exceptions=False)


# --- CPU % at the edge ------------------------------------------------------------------------------------


def _one_sample(monkeypatch: pytest.MonkeyPatch, samples: int) -> Any:
    """Two ranks sampled with a clock and /proc of our own: TP0 uses 0.45 s of CPU a second, TP1 none."""
    thread = ThreadStack("1", "MainThread", (), main=True)
    monkeypatch.setattr(pyspy, "dump_all", lambda *a, **k: [pyspy.DumpResult(pid=p, threads=(thread,)) for p in (7, 8)])
    now = [100.0]
    waited: list[float] = []

    def sleep(seconds: float) -> None:
        waited.append(seconds)
        now[0] += seconds

    def read_cpu(pid: int) -> float:
        return 0.45 * (now[0] - 100.0) + 3.0 if pid == 7 else 1.0  # CPU seconds since its start

    procs = [
        pyspy.ProcInfo(
            pid=p, ppid=1, title="python", comm="python", state="S", uid=0, python=True, role="scheduler", rank=r
        )
        for p, r in ((7, "TP0"), (8, "TP1"))
    ]
    read, _ = pyspy.snapshot(
        procs, py_spy="py-spy", samples=samples, interval_s=1.0, clock=lambda: now[0], sleep=sleep, read_cpu=read_cpu
    )
    return read, waited


def test_one_sample_measures_cpu_over_a_window_of_at_least_half_a_second(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN two ranks, one on the CPU 45 % of the time, sampled once (the dump itself takes no time on this clock)
    read, waited = _one_sample(monkeypatch, samples=1)
    # THEN the window is stretched to CPU_WINDOW_S (clock ticks are 10 ms) and each rank's share is its CPU time
    # over it, in % of one core
    assert waited == [pyspy.CPU_WINDOW_S]
    assert [(s.rank, s.cpu_pct) for s in read] == [("TP0", 45.0), ("TP1", 0.0)]


def test_several_samples_measure_cpu_from_the_first_to_the_last(monkeypatch: pytest.MonkeyPatch) -> None:
    read, waited = _one_sample(monkeypatch, samples=3)
    # GIVEN three samples a second apart THEN no extra wait: the window is already 2 s
    assert waited == [1.0, 1.0, 0.0]
    assert [(s.rank, s.cpu_pct) for s in read] == [("TP0", 45.0), ("TP1", 0.0)]


def test_cpu_share_is_none_without_two_readings() -> None:
    assert pyspy.cpu_share(7, [(1.0, {7: 2.0})]) is None
    assert pyspy.cpu_share(7, [(1.0, {7: None}), (2.0, {7: 3.0})]) is None
    assert pyspy.cpu_share(7, [(1.0, {7: 2.0}), (3.0, {7: 3.0})]) == 50.0


# --- CPU % in every format --------------------------------------------------------------------------------


def _saved(tmp_path: Path) -> Path:
    """A `stacks --format json` document (docs/design.md §5), written by hand: two ranks with their CPU %."""
    frames = list(CAPTURE)  # innermost first, as py-spy prints them
    document = {
        "schema": "logphase.stacks/1",
        "processes": [
            {"pid": 11, "rank": "TP0", "cpu_pct": 97.4, "threads": [{"id": "11", "main": True, "frames": frames}]},
            {"pid": 12, "rank": "TP1", "cpu_pct": 0.0, "threads": [{"id": "12", "main": True, "frames": frames}]},
        ],
    }
    path = tmp_path / "saved.json"
    path.write_text(json.dumps(document))
    return path


def test_every_format_shows_each_process_cpu(tmp_path: Path) -> None:
    saved = str(_saved(tmp_path))
    # WHEN read back as a table THEN the group of both ranks shows each one's CPU %, in rank order
    table = table_lines(cli("stacks", "--from", saved).stdout)
    assert table[0].split() == ["group", "ranks", "n", "state", "motion", "cpu", "where", "inside"]
    assert "97%, 0%" in table[2]
    # AND markdown and the page show the same cell
    markdown = cli("stacks", "--from", saved, "--format", "markdown").stdout
    assert "| 97%, 0% |" in markdown
    assert "<td>97%, 0%</td>" in cli("stacks", "--from", saved, "--format", "html").stdout
    # AND the JSON has it per process and per group, and reads back the same
    data = json.loads(cli("stacks", "--from", saved, "--format", "json").stdout)
    assert [(p["rank"], p["cpu_pct"]) for p in data["processes"]] == [("TP0", 97.4), ("TP1", 0.0)]
    assert data["groups"][0]["cpu_pct"] == [97.4, 0.0]
    again = tmp_path / "again.json"
    again.write_text(json.dumps(data))
    read_back = json.loads(cli("stacks", "--from", str(again), "--format", "json").stdout)["processes"]
    assert [p["cpu_pct"] for p in read_back] == [97.4, 0.0]


def test_a_cpu_share_that_is_no_percentage_is_refused(tmp_path: Path) -> None:
    bad = json.loads(_saved(tmp_path).read_text())
    bad["processes"][0]["cpu_pct"] = "lots"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    result = cli("stacks", "--from", str(path))
    assert result.exit_code == 3
    assert "'cpu_pct' is a str, expected a percentage" in result.stderr


# --- the GPU reading through --from -----------------------------------------------------------------------


def test_from_a_saved_report_keeps_its_gpu_reading() -> None:
    # GIVEN the H200 run's saved report WHEN read back with --from as JSON
    saved = json.loads(H200.read_text())
    again = json.loads(cli("stacks", "--from", str(H200), "--format", "json").stdout)
    # THEN its GPUs are the reading it was saved with: the GPU, and each process named by its rank
    assert again["gpus"] == saved["gpus"]
    # AND the table shows the GPU section
    text = cli("stacks", "--from", str(H200)).stdout
    assert "GPUs (NVML, driver 580.159.04, process kernels over the last 2s):" in text.splitlines()
    rows = [line.split() for line in table_lines(text)]
    assert ["0", "486", "rank", "0", "busy", "(100%", "SM)", "0.8", "GiB"] in rows
    assert ["0", "487", "rank", "1", "idle", "(0%", "SM)", "2.5", "GiB"] in rows


def test_a_rank_whose_gpu_is_busy_is_working_in_the_verdict() -> None:
    # GIVEN the H200 run: rank 0's Python thread waits in synchronize, its kernels keep the GPU at 100 %
    result = cli("stacks", "--from", str(H200))
    rows = {line.split()[1] + " " + line.split()[2]: line for line in table_lines(result.stdout)[2:5]}
    # THEN rank 0 is working by its GPU's evidence; rank 1 (no kernel, blocked on a pipe) still waits, and is the
    # odd rank out; the headline says why rank 0 is not waiting for nothing
    assert "working (GPU busy)" in rows["rank 0"] and "waiting (idle)" in rows["rank 1"]
    first = result.stdout.splitlines()[0]
    assert first.startswith(
        "rank 0 waits for the GPU in synchronize (torch/cuda/__init__.py) (its kernels keep its GPU busy); rank 1 is"
    )
    assert first.endswith("— rank 1 is behind")
    assert result.exit_code == 4


def test_a_busy_gpu_in_a_collective_wait_is_no_progress(signatures: Any) -> None:
    # GIVEN four ranks in all_reduce, the same stack, their GPUs busy (NCCL's kernels busy-poll a hung collective)
    now = 1_000.0
    gpu = FakeGpu(
        utilisation=100,
        processes=[(10 + n, 1 << 30) for n in range(4)],
        samples=[(10 + n, int((now - 0.5) * 1_000_000), 100) for n in range(4)],
    )
    reading = read_gpus(FakeNvml(gpus=[gpu]), wall_clock=lambda: now, host=None)
    assert all(p.busy for p in reading.gpus[0].processes)
    ranks = [snap(10 + n, f"TP{n}", *CAPTURE, moving=False) for n in range(4)]
    # WHEN judged with the reading THEN still stuck: a busy GPU there is no progress
    report = summarize(ranks, signatures, samples=2, gpus=reading)
    assert report.stuck
    assert all(group.moving is not True for group in report.groups)


def test_the_h200_report_read_back_fits_80_columns() -> None:
    lines = table_lines(cli("stacks", "--from", str(H200), columns=80).stdout)
    assert len(lines) > 10
    assert [line for line in lines if len(line) > 80] == []
