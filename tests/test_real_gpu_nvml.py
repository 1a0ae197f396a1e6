"""A real H200 run (fixtures/real/gpu-h200-nvml, issue 30): one rank spinning CUDA kernels, one waiting on a pipe with
2 GiB on the same GPU. What logphase said there in each format, and what its NVML reader makes now of NVML's recorded
answers: the spinning rank's GPU busy, the waiting rank's idle."""

from __future__ import annotations

import csv
import json
from html.parser import HTMLParser
from typing import Any

import pytest

from logphase.judging.stalls import summarize
from logphase.packs import load_packs
from logphase.report.formats import OutputFormat, pick
from logphase.stacks.dumps_json import parse_json_text
from logphase.stacks.nvml import read_gpus
from tests.conftest import FIXTURES
from tests.stacks.fake_nvml import from_state

RUN = FIXTURES / "real" / "gpu-h200-nvml"
MiB = 1 << 20


def load(name: str) -> Any:
    return json.loads((RUN / name).read_text())


SUMMARY = load("summary.json")
SPIN, WAIT = SUMMARY["child_pids"]["spin"], SUMMARY["child_pids"]["wait"]


def by_pid(gpus: dict[str, Any]) -> dict[int, dict[str, Any]]:
    (device,) = gpus["devices"]
    return {process["pid"]: process for process in device["processes"]}


def test_the_run_was_on_an_h200_and_every_step_ran() -> None:
    versions = load("versions.json")
    assert versions["nvidia-smi --query-gpu"] == "NVIDIA H200, 580.159.04, 143771 MiB, 9.0"
    assert versions["nvidia-ml-py"] == "13.615.71"
    assert SUMMARY["status"] == "ok"
    # logphase stacks exits 4 there: rank 1 is odd (behind rank 0); the bundle is written
    assert {name: step["rc"] for name, step in SUMMARY["steps"].items()} == {
        "stacks.json": 4,
        "stacks.txt": 4,
        "stacks.md": 4,
        "stacks.html": 4,
        "bundle": 0,
        "nvidia-smi": 0,
        "nvidia-smi-apps": 0,
    }


@pytest.mark.parametrize("name", ["stacks.json", "bundle-stacks.json"])
def test_the_json_names_the_spinning_rank_busy_and_the_waiting_rank_idle(name: str) -> None:
    # GIVEN `logphase stacks --pid PARENT --format json` on the H200 (and the bundle's stacks.json)
    gpus = load(name)["gpus"]
    device = gpus["devices"][0]
    assert (device["name"], gpus["driver"], gpus["note"], device["error"]) == ("NVIDIA H200", "580.159.04", None, None)
    assert device["utilisation_pct"] == 100  # a kernel ran all of the last sample period
    processes = by_pid(gpus)
    # THEN the process spinning kernels is rank 0, busy; the one blocked on a pipe is rank 1, idle
    assert (processes[SPIN]["label"], processes[SPIN]["busy"]) == ("rank 0", True)
    assert processes[SPIN]["sm_pct"] >= 90
    assert (processes[WAIT]["label"], processes[WAIT]["busy"], processes[WAIT]["sm_pct"]) == ("rank 1", False, 0)


def test_gpu_memory_per_process_is_what_nvidia_smi_says() -> None:
    # GIVEN nvidia-smi's own list of compute apps, taken in the same run
    with (RUN / "nvidia-smi-apps.csv").open() as sheet:
        smi = {int(row["pid"]): row[" used_gpu_memory [MiB]"].strip() for row in csv.DictReader(sheet)}
    processes = by_pid(load("stacks.json")["gpus"])
    # THEN the same two pids, with the same memory (rank 1 holds its 2 GiB tensor, CUDA's context on top)
    assert set(smi) == set(processes) == {SPIN, WAIT}
    for pid, used in smi.items():
        assert f"{processes[pid]['memory_bytes'] // MiB} MiB" == used
    assert processes[WAIT]["memory_bytes"] > 2048 * MiB > processes[SPIN]["memory_bytes"]


def test_the_table_says_it_in_rows() -> None:
    rows = [line.split() for line in (RUN / "stacks.txt").read_text().splitlines()]
    assert ["0", "NVIDIA", "H200", "100%", "3.9", "of", "140.4", "GiB", "2"] in rows
    assert ["0", str(SPIN), "rank", "0", "busy", "(100%", "SM)", "0.8", "GiB"] in rows
    assert ["0", str(WAIT), "rank", "1", "idle", "(0%", "SM)", "2.5", "GiB"] in rows


def test_markdown_and_html_say_the_same() -> None:
    markdown = (RUN / "stacks.md").read_text()
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in markdown.splitlines() if line[:1] == "|"]
    assert ["0", str(SPIN), "rank 0", "busy (100% SM)", "0.8 GiB"] in cells
    assert ["0", str(WAIT), "rank 1", "idle (0% SM)", "2.5 GiB"] in cells

    class Rows(HTMLParser):
        """The text of each table row's cells."""

        def __init__(self) -> None:
            super().__init__()
            self.rows: list[list[str]] = []
            self.in_cell = False

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            if tag == "tr":
                self.rows.append([])
            self.in_cell = tag == "td"

        def handle_endtag(self, tag: str) -> None:
            self.in_cell = False

        def handle_data(self, data: str) -> None:
            if self.in_cell:
                self.rows[-1].append(data)

    parser = Rows()
    parser.feed((RUN / "stacks.html").read_text())
    assert ["0", str(SPIN), "rank 0", "busy (100% SM)", "0.8 GiB"] in parser.rows
    assert ["0", str(WAIT), "rank 1", "idle (0% SM)", "2.5 GiB"] in parser.rows


def test_the_reader_makes_the_same_of_nvmls_recorded_answers() -> None:
    # GIVEN NVML's answers in that run (read there with pynvml directly: one sample of rank 0's, 95 % SM, none of
    # rank 1's) and the stacks logphase took there, read back as `stacks --from` reads them
    state = load("nvml-state.json")
    reading = read_gpus(from_state(state), wall_clock=lambda: state["read_at"], host="vm")
    snapshots = parse_json_text((RUN / "stacks.json").read_text())
    # WHEN they are judged and shown together
    report = summarize(snapshots, load_packs().signatures, gpus=reading)
    assert report.gpus is not None
    # THEN rank 0 is busy and rank 1 idle, by the same pids
    (gpu,) = report.gpus.gpus
    assert [(p.pid, p.label, p.sm_pct, p.busy) for p in gpu.processes] == [
        (SPIN, "rank 0", 95, True),
        (WAIT, "rank 1", 0, False),
    ]
    assert (gpu.name, gpu.utilisation_pct, gpu.memory_used_bytes) == (
        "NVIDIA H200",
        100,
        state["devices"][0]["memory"]["used"],
    )
    rows = [line.split() for line in pick(OutputFormat.TABLE, width=100).stacks(report).splitlines()]
    assert ["0", str(SPIN), "rank", "0", "busy", "(95%", "SM)", "0.8", "GiB"] in rows
    assert ["0", str(WAIT), "rank", "1", "idle", "(0%", "SM)", "2.5", "GiB"] in rows


def test_the_stacks_alone_do_not_tell_the_spinning_rank_from_a_stuck_one() -> None:
    # what the GPU section adds: the stacks see rank 0 frozen in synchronize (a wait), as a hung kernel would be
    groups = {tuple(g["ranks"]): (g["state"], g["moving"]) for g in load("stacks.json")["groups"]}
    assert groups[("rank 0",)] == ("gpu_sync", False)
    assert groups[("rank 1",)] == ("unknown", False)
