"""A stand-in for pynvml, given to logphase's NVML reader instead of the module: GPUs as plain data, or the state a
real run recorded (`nvml-state.json` of fixtures/real/gpu-h200-nvml), answered through pynvml's names."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

NOT_SUPPORTED, NOT_FOUND, LIBRARY_NOT_FOUND = 3, 6, 12
MESSAGES = {NOT_SUPPORTED: "Not Supported", NOT_FOUND: "Not Found", LIBRARY_NOT_FOUND: "NVML Shared Library Not Found"}


class FakeNVMLError(Exception):
    """pynvml's NVMLError: a `value` (nvmlReturn_t) and the library's words for it."""

    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value

    def __str__(self) -> str:
        return MESSAGES.get(self.value, f"NVML Error with code {self.value}")


@dataclass
class FakeGpu:
    name: str = "NVIDIA H200"
    uuid: str = "GPU-00000000-0000-0000-0000-000000000000"
    utilisation: int = 0
    memory_total: int = 150_109_880_320
    memory_used: int = 0
    processes: Sequence[tuple[int, int | None]] = ()  # (pid, bytes)
    samples: Sequence[tuple[int, int, int]] = ()  # (pid, time stamp in µs, SM %)
    samples_error: int | None = None  # nvmlDeviceGetProcessUtilization raises this code instead
    broken: int | None = None  # nvmlDeviceGetHandleByIndex raises this code


@dataclass
class FakeNvml:
    """pynvml's names over `gpus`; `init_error`: nvmlInit raises this code (no driver); `hang`: nvmlInit blocks."""

    gpus: Sequence[FakeGpu] = ()
    driver: str = "580.159.04"
    version: str = "13.580.159.04"
    init_error: int | None = None
    hang: Any = None  # a threading.Event nvmlInit waits on
    calls: list[str] = field(default_factory=list)
    NVMLError: type[Exception] = FakeNVMLError

    def nvmlInit(self) -> None:
        self.calls.append("init")
        if self.hang is not None:
            self.hang.wait()
        if self.init_error is not None:
            raise FakeNVMLError(self.init_error)

    def nvmlShutdown(self) -> None:
        self.calls.append("shutdown")

    def nvmlSystemGetDriverVersion(self) -> str:
        return self.driver

    def nvmlSystemGetNVMLVersion(self) -> str:
        return self.version

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeGpu:
        gpu = self.gpus[index]
        if gpu.broken is not None:
            raise FakeNVMLError(gpu.broken)
        return gpu

    def nvmlDeviceGetName(self, handle: FakeGpu) -> bytes:
        return handle.name.encode()  # older pynvml gave bytes

    def nvmlDeviceGetUUID(self, handle: FakeGpu) -> str:
        return handle.uuid

    def nvmlDeviceGetUtilizationRates(self, handle: FakeGpu) -> SimpleNamespace:
        return SimpleNamespace(gpu=handle.utilisation, memory=0)

    def nvmlDeviceGetMemoryInfo(self, handle: FakeGpu) -> SimpleNamespace:
        free = handle.memory_total - handle.memory_used
        return SimpleNamespace(total=handle.memory_total, used=handle.memory_used, free=free)

    def nvmlDeviceGetComputeRunningProcesses(self, handle: FakeGpu) -> list[SimpleNamespace]:
        return [SimpleNamespace(pid=pid, usedGpuMemory=size) for pid, size in handle.processes]

    def nvmlDeviceGetProcessUtilization(self, handle: FakeGpu, timeStamp: int) -> list[SimpleNamespace]:
        # NVML answers NOT_FOUND when no sample is newer than the time stamp
        if handle.samples_error is not None:
            raise FakeNVMLError(handle.samples_error)
        newer = [s for s in handle.samples if s[1] > timeStamp]
        if not newer:
            raise FakeNVMLError(NOT_FOUND)
        return [SimpleNamespace(pid=pid, timeStamp=stamp, smUtil=sm, memUtil=0) for pid, stamp, sm in newer]


def from_state(state: dict[str, Any]) -> FakeNvml:
    """The NVML a real run saw (the capture script's `nvml-state.json`), answering as it answered."""
    gpus = []
    for device in state["devices"]:
        samples = device["process_samples"]
        gpus.append(
            FakeGpu(
                name=device["name"],
                uuid=device["uuid"],
                utilisation=device["utilization"]["gpu"],
                memory_total=device["memory"]["total"],
                memory_used=device["memory"]["used"],
                processes=[(p["pid"], p["usedGpuMemory"]) for p in device["compute_processes"]],
                samples=[] if isinstance(samples, dict) else [(s["pid"], s["timeStamp"], s["smUtil"]) for s in samples],
                samples_error=samples["code"] if isinstance(samples, dict) and samples["code"] != NOT_FOUND else None,
            )
        )
    return FakeNvml(gpus=gpus, driver=state["driver"], version=state["nvml"])
