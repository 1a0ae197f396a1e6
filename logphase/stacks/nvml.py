"""This machine's GPUs through NVML (the optional `nvidia-ml-py`, imported as `pynvml`): utilisation, memory and the
compute processes on each, with how busy each process kept its GPU; the only module that calls NVML.

No NVML, no driver or no GPU is a note in the reading, never an error: the stacks are worth having without it."""

from __future__ import annotations

import contextlib
import importlib
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar, cast

from logphase.stacks.model import Gpu, GpuProcess, GpuReading

INSTALL_HINT = "pip install 'logphase[gpu]', which installs nvidia-ml-py"
# Per-process utilisation is read from samples this far back: NVML samples every 1/6 s to 1 s.
WINDOW_S = 2.0
# NVML calls into the driver, which can hang (a GPU fallen off the bus): the reading is then given up.
TIMEOUT_S = 10.0
# nvmlReturn_t NVML_ERROR_NOT_FOUND: no per-process sample since the time asked, i.e. no process ran a kernel.
NOT_FOUND = 6

T = TypeVar("T")


class Nvml(Protocol):
    """The part of pynvml's API read here; a test's stand-in implements the same names."""

    NVMLError: type[Exception]

    def nvmlInit(self) -> None: ...
    def nvmlShutdown(self) -> None: ...
    def nvmlSystemGetDriverVersion(self) -> str | bytes: ...
    def nvmlSystemGetNVMLVersion(self) -> str | bytes: ...
    def nvmlDeviceGetCount(self) -> int: ...
    def nvmlDeviceGetHandleByIndex(self, index: int) -> Any: ...
    def nvmlDeviceGetName(self, handle: Any) -> str | bytes: ...
    def nvmlDeviceGetUUID(self, handle: Any) -> str | bytes: ...
    def nvmlDeviceGetUtilizationRates(self, handle: Any) -> Any: ...  # .gpu, .memory (percent)
    def nvmlDeviceGetMemoryInfo(self, handle: Any) -> Any: ...  # .total, .used, .free (bytes)
    def nvmlDeviceGetComputeRunningProcesses(self, handle: Any) -> Sequence[Any]: ...  # .pid, .usedGpuMemory
    def nvmlDeviceGetProcessUtilization(self, handle: Any, timeStamp: int) -> Sequence[Any]: ...  # .pid, .smUtil


def read_gpus(
    nvml: Nvml | None = None,
    *,
    window_s: float = WINDOW_S,
    timeout_s: float = TIMEOUT_S,
    wall_clock: Callable[[], float] = time.time,
    host: str | None = None,
) -> GpuReading:
    """Every GPU of this machine as NVML sees it now (`nvml`: pynvml when None). What stops the reading (no
    nvidia-ml-py, no driver, no GPU, a driver that does not answer within `timeout_s`) is its note."""
    if nvml is None:
        try:
            nvml = cast(Nvml, importlib.import_module("pynvml"))
        except ImportError:
            return GpuReading(note=f"GPUs not read: NVML is not installed ({INSTALL_HINT})", host=host)
    read: list[GpuReading] = []
    failed: list[BaseException] = []

    def work(api: Nvml) -> None:
        try:
            read.append(_read(api, window_s, wall_clock, host))
        except BaseException as error:  # re-raised below, in the caller's thread
            failed.append(error)

    # a daemon thread: a hung driver call is left behind, not waited for
    worker = threading.Thread(target=work, args=(nvml,), name="nvml", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if failed:
        raise failed[0]
    if not read:
        return GpuReading(
            note=f"GPUs not read: NVML did not answer within {timeout_s:g}s (a hung driver looks like this)", host=host
        )
    return read[0]


def _read(nvml: Nvml, window_s: float, wall_clock: Callable[[], float], host: str | None) -> GpuReading:
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as error:
        # pynvml says "NVML Shared Library Not Found" or "Driver Not Loaded" on a machine without one
        return GpuReading(note=f"GPUs not read: NVML could not start ({error}): no NVIDIA driver here?", host=host)
    try:
        driver = _attempt(nvml, lambda: _text(nvml.nvmlSystemGetDriverVersion()), [])
        version = _attempt(nvml, lambda: _text(nvml.nvmlSystemGetNVMLVersion()), [])
        try:
            count = nvml.nvmlDeviceGetCount()
        except nvml.NVMLError as error:
            return GpuReading(
                driver=driver, nvml=version, note=f"GPUs not read: NVML could not count them ({error})", host=host
            )
        # NVML's sample time stamps are microseconds of the wall clock
        since = int((wall_clock() - window_s) * 1_000_000)
        gpus = tuple(_gpu(nvml, index, since) for index in range(count))
    finally:
        with contextlib.suppress(nvml.NVMLError):
            nvml.nvmlShutdown()
    note = None if gpus else "GPUs not read: NVML sees no GPU on this machine"
    return GpuReading(gpus=gpus, driver=driver, nvml=version, window_s=window_s, note=note, host=host)


def _gpu(nvml: Nvml, index: int, since_us: int) -> Gpu:
    """One GPU; each thing NVML cannot tell of it (not supported, no permission) is named in `error`."""
    try:
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
    except nvml.NVMLError as error:
        return Gpu(index=index, error=f"not readable: {error}")
    errors: list[str] = []
    name = _attempt(nvml, lambda: _text(nvml.nvmlDeviceGetName(handle)), errors, "name")
    uuid = _attempt(nvml, lambda: _text(nvml.nvmlDeviceGetUUID(handle)), errors, "uuid")
    rates = _attempt(nvml, lambda: nvml.nvmlDeviceGetUtilizationRates(handle), errors, "utilisation")
    memory = _attempt(nvml, lambda: nvml.nvmlDeviceGetMemoryInfo(handle), errors, "memory")
    running = _attempt(nvml, lambda: list(nvml.nvmlDeviceGetComputeRunningProcesses(handle)), errors, "processes")
    shares = _process_shares(nvml, handle, since_us, errors) if running else {}
    processes = tuple(
        GpuProcess(
            pid=int(p.pid),
            memory_bytes=int(p.usedGpuMemory) if p.usedGpuMemory is not None else None,
            sm_pct=shares.get(int(p.pid), 0) if shares is not None else None,
        )
        for p in sorted(running or [], key=lambda p: int(p.pid))
    )
    return Gpu(
        index=index,
        name=name,
        uuid=uuid,
        utilisation_pct=int(rates.gpu) if rates is not None else None,
        memory_used_bytes=int(memory.used) if memory is not None else None,
        memory_total_bytes=int(memory.total) if memory is not None else None,
        processes=processes,
        error="; ".join(errors) or None,
    )


def _process_shares(nvml: Nvml, handle: Any, since_us: int, errors: list[str]) -> dict[int, int] | None:
    """Each process's mean SM utilisation over its samples since `since_us` ({}: no process ran a kernel there;
    a process without a sample ran none); None when NVML cannot tell (not supported, no permission)."""
    try:
        samples = nvml.nvmlDeviceGetProcessUtilization(handle, since_us)
    except nvml.NVMLError as error:
        if getattr(error, "value", None) == NOT_FOUND:
            return {}
        errors.append(f"per-process utilisation: {error}")
        return None
    by_pid: dict[int, list[int]] = {}
    for sample in samples:
        if int(sample.timeStamp) >= since_us:
            by_pid.setdefault(int(sample.pid), []).append(int(sample.smUtil))
    return {pid: round(sum(values) / len(values)) for pid, values in by_pid.items()}


def _attempt(nvml: Nvml, call: Callable[[], T], errors: list[str], what: str = "") -> T | None:
    try:
        return call()
    except nvml.NVMLError as error:
        if what:
            errors.append(f"{what}: {error}")
        return None


def _text(value: str | bytes) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def one_reading(readings: Sequence[GpuReading]) -> tuple[GpuReading | None, list[str]]:
    """The GPU reading a report shows of saved ones (`stacks --from` files): the first; the others said in notes,
    as a report names the GPUs of one machine."""
    if not readings:
        return None, []
    first = readings[0]
    notes = [
        f"GPUs of {reading.host or 'another reading'} left out: a report shows one machine's GPUs ({first.host or '?'})"
        for reading in readings[1:]
        if reading.gpus
    ]
    return first, notes
