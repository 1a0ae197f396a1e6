"""GPU evidence (issue 30): the NVML reader over a stand-in NVML, the GPU processes named as the stacks name them, and
the GPU section in every format — or the note saying why there is none."""

from __future__ import annotations

import json
import sys
import threading

import pytest

from logphase.judging.stalls import summarize
from logphase.packs import load_packs
from logphase.report.formats import OutputFormat, pick
from logphase.stacks.model import Frame, GpuReading, ProcessSnapshot, StacksReport, ThreadStack
from logphase.stacks.nvml import read_gpus
from tests.stacks.fake_nvml import LIBRARY_NOT_FOUND, NOT_SUPPORTED, FakeGpu, FakeNvml

NOW = 1_000.0  # the wall clock the reader is given, in seconds
GiB = 1 << 30


def us(seconds: float) -> int:
    return int(seconds * 1_000_000)


def spinning_and_waiting(**changes: object) -> FakeGpu:
    """One GPU: pid 11 spins (two recent samples, 100 % and 90 % SM), pid 12 holds memory and runs nothing."""
    gpu = FakeGpu(
        utilisation=100,
        memory_used=4 * GiB,
        processes=[(12, 2 * GiB), (11, GiB // 2)],
        samples=[(11, us(NOW - 1.5), 100), (11, us(NOW - 0.5), 90)],
    )
    for name, value in changes.items():
        setattr(gpu, name, value)
    return gpu


def snapshot(pid: int, rank: str | None, function: str, host: str = "h") -> ProcessSnapshot:
    thread = ThreadStack("1", "MainThread", (Frame(function, "app.py", 3),), main=True)
    return ProcessSnapshot(pid=pid, rank=rank, host=host, threads=(thread,), source="py-spy")


def report_of(reading: GpuReading | None, host: str = "h") -> StacksReport:
    snaps = [snapshot(11, "rank 0", "spin", host), snapshot(12, "rank 1", "wait_for_peer", host)]
    return summarize(snaps, load_packs().signatures, gpus=reading)


# --- the reader ------------------------------------------------------------------------------------


def test_a_gpu_its_memory_and_each_process_busy_or_idle() -> None:
    # GIVEN NVML with one GPU on which pid 11 ran kernels in the last 2 s and pid 12 ran none
    nvml = FakeNvml(gpus=[spinning_and_waiting()])
    # WHEN the GPUs are read
    reading = read_gpus(nvml, wall_clock=lambda: NOW, host="h")
    # THEN the GPU is there as NVML says (the name given as bytes, as older pynvml does, decoded)
    assert (reading.driver, reading.nvml, reading.window_s, reading.note, reading.host) == (
        "580.159.04",
        "13.580.159.04",
        2.0,
        None,
        "h",
    )
    (gpu,) = reading.gpus
    assert (gpu.index, gpu.name, gpu.utilisation_pct, gpu.memory_used_bytes, gpu.error) == (
        0,
        "NVIDIA H200",
        100,
        4 * GiB,
        None,
    )
    # AND each process by pid: the spinning one's mean SM share, the waiting one's 0 (no sample: no kernel)
    assert [(p.pid, p.memory_bytes, p.sm_pct, p.busy) for p in gpu.processes] == [
        (11, GiB // 2, 95, True),
        (12, 2 * GiB, 0, False),
    ]
    # AND NVML is shut down after it
    assert nvml.calls == ["init", "shutdown"]


def test_samples_older_than_the_window_do_not_count() -> None:
    # GIVEN pid 11's only sample 3 s old, with a 2 s window
    nvml = FakeNvml(gpus=[spinning_and_waiting(samples=[(11, us(NOW - 3), 100), (12, us(NOW - 0.2), 40)])])
    reading = read_gpus(nvml, wall_clock=lambda: NOW)
    # THEN it ran no kernel in the window; pid 12's recent sample counts
    assert [(p.pid, p.sm_pct, p.busy) for p in reading.gpus[0].processes] == [(11, 0, False), (12, 40, True)]


def test_no_sample_at_all_is_every_process_idle() -> None:
    # GIVEN NVML's NOT_FOUND for the samples: no process ran a kernel since the time asked
    nvml = FakeNvml(gpus=[spinning_and_waiting(samples=[], utilisation=0)])
    (gpu,) = read_gpus(nvml, wall_clock=lambda: NOW).gpus
    assert [(p.pid, p.sm_pct, p.busy) for p in gpu.processes] == [(11, 0, False), (12, 0, False)]
    assert gpu.error is None


def test_per_process_utilisation_not_supported_is_unknown_and_said() -> None:
    # GIVEN a GPU that cannot tell per-process utilisation (NOT_SUPPORTED)
    nvml = FakeNvml(gpus=[spinning_and_waiting(samples_error=NOT_SUPPORTED)])
    (gpu,) = read_gpus(nvml, wall_clock=lambda: NOW).gpus
    # THEN neither process is called busy or idle, and the GPU's error says why
    assert [(p.pid, p.sm_pct, p.busy) for p in gpu.processes] == [(11, None, None), (12, None, None)]
    assert gpu.error == "per-process utilisation: Not Supported"


def test_a_gpu_that_cannot_be_reached_is_listed_with_why() -> None:
    # GIVEN two GPUs, the first lost
    nvml = FakeNvml(gpus=[FakeGpu(broken=NOT_SUPPORTED), spinning_and_waiting()])
    reading = read_gpus(nvml, wall_clock=lambda: NOW)
    assert [(g.index, g.name, g.error) for g in reading.gpus] == [
        (0, None, "not readable: Not Supported"),
        (1, "NVIDIA H200", None),
    ]


def test_no_driver_is_a_note_not_an_error() -> None:
    # GIVEN pynvml without libnvidia-ml.so (a machine with no NVIDIA driver)
    reading = read_gpus(FakeNvml(init_error=LIBRARY_NOT_FOUND))
    assert reading.gpus == ()
    assert reading.note == (
        "GPUs not read: NVML could not start (NVML Shared Library Not Found): no NVIDIA driver here?"
    )


def test_no_gpu_is_a_note() -> None:
    reading = read_gpus(FakeNvml(gpus=[]))
    assert (reading.gpus, reading.note) == ((), "GPUs not read: NVML sees no GPU on this machine")


def test_no_nvml_installed_is_a_note(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN no pynvml to import (None in sys.modules makes `import pynvml` fail as if not installed)
    monkeypatch.setitem(sys.modules, "pynvml", None)
    reading = read_gpus(host="h")
    assert reading.note == (
        "GPUs not read: NVML is not installed (pip install 'logphase[gpu]', which installs nvidia-ml-py)"
    )
    assert (reading.gpus, reading.host) == ((), "h")


def test_a_driver_that_does_not_answer_is_given_up() -> None:
    # GIVEN an NVML whose init blocks (a hung driver)
    stuck = threading.Event()
    try:
        reading = read_gpus(FakeNvml(hang=stuck), timeout_s=0.05)
    finally:
        stuck.set()  # the reader's thread ends
    assert reading.note == "GPUs not read: NVML did not answer within 0.05s (a hung driver looks like this)"


def test_a_bug_in_the_reading_is_not_hidden_as_a_note() -> None:
    # GIVEN an NVML answer the reader cannot use (no `pid`): a bug, not a GPU fact
    class Odd(FakeNvml):
        def nvmlDeviceGetComputeRunningProcesses(self, handle: FakeGpu) -> list[object]:  # type: ignore[override]
            return [object()]

    with pytest.raises(AttributeError):
        read_gpus(Odd(gpus=[spinning_and_waiting()]), wall_clock=lambda: NOW)


# --- named as the stacks name them ----------------------------------------------------------------------


def test_gpu_processes_are_named_by_the_ranks_of_their_pids() -> None:
    # GIVEN the reading of this host and the two ranks' stacks, and a third GPU process that is none of them
    gpu = spinning_and_waiting(processes=[(11, GiB // 2), (12, 2 * GiB), (99, GiB)])
    report = report_of(read_gpus(FakeNvml(gpus=[gpu]), wall_clock=lambda: NOW, host="h"))
    assert report.gpus is not None
    # THEN each is named by its pid's rank; the stranger stays unnamed
    assert [(p.pid, p.label, p.rank, p.busy) for p in report.gpus.gpus[0].processes] == [
        (11, "rank 0", "rank 0", True),
        (12, "rank 1", "rank 1", False),
        (99, None, None, False),
    ]
    assert not any(note.startswith("GPUs:") for note in report.notes)


def test_pids_of_another_host_are_not_matched_and_no_match_is_said() -> None:
    # GIVEN stacks read on host "other" and GPUs read on "h" (the same pids by chance)
    report = report_of(read_gpus(FakeNvml(gpus=[spinning_and_waiting()]), wall_clock=lambda: NOW, host="h"), "other")
    assert report.gpus is not None
    assert [p.label for p in report.gpus.gpus[0].processes] == [None, None]
    # THEN the notes say no GPU process is one of those read, and the likely why
    assert (
        "GPUs: none of the 2 processes NVML lists is one of the processes read (another job's, or pids of another "
        "namespace: a container without the host's)"
    ) in report.notes


# --- every format ---------------------------------------------------------------------------------------


@pytest.fixture
def read_report() -> StacksReport:
    return report_of(read_gpus(FakeNvml(gpus=[spinning_and_waiting()]), wall_clock=lambda: NOW, host="h"))


def test_the_table_shows_each_gpu_and_each_rank_on_it(read_report: StacksReport) -> None:
    text = pick(OutputFormat.TABLE, width=100).stacks(read_report)
    lines = [line.split() for line in text.splitlines()]
    assert "GPUs (NVML, driver 580.159.04, process kernels over the last 2s):" in text.splitlines()
    # the GPU row: index, model, busy, memory used of total, processes
    assert ["0", "NVIDIA", "H200", "100%", "4.0", "of", "139.8", "GiB", "2"] in lines
    # a row per process: gpu, pid, rank, kernels, memory
    assert ["0", "11", "rank", "0", "busy", "(95%", "SM)", "0.5", "GiB"] in lines
    assert ["0", "12", "rank", "1", "idle", "(0%", "SM)", "2.0", "GiB"] in lines


def test_markdown_html_and_json_show_the_same(read_report: StacksReport) -> None:
    markdown = pick(OutputFormat.MARKDOWN).stacks(read_report)
    assert "### GPUs" in markdown
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in markdown.splitlines() if line[:1] == "|"]
    assert ["0", "NVIDIA H200", "100%", "4.0 of 139.8 GiB", "2"] in rows
    assert ["0", "11", "rank 0", "busy (95% SM)", "0.5 GiB"] in rows
    html = pick(OutputFormat.HTML).stacks(read_report)
    assert '<section id="gpus"><h2>GPUs</h2>' in html
    assert "<td>11</td><td>rank 0</td><td>busy (95% SM)</td><td>0.5 GiB</td>" in html
    data = json.loads(pick(OutputFormat.JSON).stacks(read_report))
    assert data["schema"] == "logphase.stacks/1"
    assert data["gpus"]["driver"] == "580.159.04"
    (device,) = data["gpus"]["devices"]
    assert device["processes"] == [
        {"pid": 11, "label": "rank 0", "rank": "rank 0", "memory_bytes": GiB // 2, "sm_pct": 95, "busy": True},
        {"pid": 12, "label": "rank 1", "rank": "rank 1", "memory_bytes": 2 * GiB, "sm_pct": 0, "busy": False},
    ]


@pytest.mark.parametrize("choice", list(OutputFormat))
def test_every_format_says_why_there_are_no_gpus(choice: OutputFormat) -> None:
    # GIVEN a report whose GPUs could not be read
    report = report_of(read_gpus(FakeNvml(init_error=LIBRARY_NOT_FOUND)))
    text = pick(choice).stacks(report)
    # THEN each format says why (the line format: no room, it says the verdict only)
    if choice is OutputFormat.LINE:
        assert "GPUs" not in text
    else:
        assert "NVML could not start (NVML Shared Library Not Found): no NVIDIA driver here?" in text


@pytest.mark.parametrize("choice", list(OutputFormat))
def test_dumps_read_from_files_have_no_gpu_section(choice: OutputFormat) -> None:
    # GIVEN stacks not read live (no GPU reading asked)
    text = pick(choice).stacks(report_of(None))
    assert "GPU" not in text
    if choice is OutputFormat.JSON:
        assert json.loads(text)["gpus"] is None
