"""Benchmark `logphase stacks` on live trees of 1, 8 and 32 ranks against `py-spy dump --subprocesses`
and a serial loop of plain `py-spy dump`, and report the capture skew (first to last rank captured).

Targets (issue 3): 32 ranks within 1.5x the wall time of `py-spy dump --subprocesses`; skew < 100 ms."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
APP = REPO / "tests" / "stacks" / "app"
SIZES = (1, 8, 32)
REPEATS = 3


def _py_spy() -> str:
    found = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(found).exists():
        raise SystemExit("bench_stacks: py-spy is not installed")
    return found


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_tree(ranks: int, workdir: Path) -> tuple[subprocess.Popen[bytes], list[int]]:
    ready = workdir / f"ready-{ranks}"
    ready.mkdir()
    spec = {
        "ranks": ["slow"] * ranks,
        "title": "sglang::scheduler_TP{rank}",
        "ready_dir": str(ready),
        "port": _free_port(),
    }
    launcher = subprocess.Popen([sys.executable, str(APP / "launch.py"), json.dumps(spec)], start_new_session=True)
    deadline = time.monotonic() + 120
    while len(list(ready.glob("ready.*"))) < ranks:
        if time.monotonic() > deadline or launcher.poll() is not None:
            stop_tree(launcher)
            raise SystemExit(f"bench_stacks: the {ranks}-rank tree did not start")
        time.sleep(0.05)
    time.sleep(0.5)
    return launcher, sorted(int(p.read_text()) for p in ready.glob("ready.*"))


def stop_tree(launcher: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(launcher.pid, signal.SIGKILL)
    launcher.wait()


def time_logphase_inprocess(pid: int, py_spy: str) -> tuple[float, float | None, str]:
    from logphase.judging.stalls import summarize
    from logphase.packs import load_pack
    from logphase.report.formats.json import JsonFormat
    from logphase.stacks import pyspy

    signatures = load_pack(REPO / "patterns" / "stacks.toml").signatures
    started = time.perf_counter()
    procs = pyspy.discover_tree(pid)
    snaps, skew = pyspy.snapshot(procs, py_spy=py_spy, timeout_s=30)
    report = summarize(snaps, signatures, skew_s=skew)
    JsonFormat().stacks(report)
    return time.perf_counter() - started, skew, report.summary


def time_logphase_cli(pid: int) -> float | None:
    logphase = Path(sys.executable).parent / "logphase"
    started = time.perf_counter()
    done = subprocess.run(
        [str(logphase), "stacks", "--pid", str(pid), "--format", "json"], capture_output=True, timeout=120
    )
    elapsed = time.perf_counter() - started
    return elapsed if done.returncode in (0, 4) else None


def time_subprocesses(pid: int, py_spy: str) -> float:
    started = time.perf_counter()
    subprocess.run([py_spy, "dump", "--subprocesses", "--pid", str(pid)], capture_output=True, timeout=300)
    return time.perf_counter() - started


def time_serial(pids: list[int], py_spy: str) -> tuple[float, float]:
    started = time.perf_counter()
    middles = []
    for pid in pids:
        begin = time.perf_counter()
        subprocess.run([py_spy, "dump", "--pid", str(pid)], capture_output=True, timeout=60)
        middles.append((begin + time.perf_counter()) / 2)
    return time.perf_counter() - started, max(middles) - min(middles)


@dataclass(frozen=True)
class Row:
    """The medians at one tree size."""

    ranks: int
    logphase_s: float
    logphase_cli_s: float | None
    pyspy_subprocesses_s: float
    pyspy_serial_s: float
    skew_ms: float
    serial_skew_ms: float
    summary: str

    @property
    def ratio_vs_subprocesses(self) -> float:
        return self.logphase_s / self.pyspy_subprocesses_s


def main() -> None:
    py_spy = _py_spy()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="bench-stacks-") as tmp:
        for ranks in SIZES:
            launcher, pids = start_tree(ranks, Path(tmp))
            try:
                ours, skews, clis, subs, serials, serial_skews = [], [], [], [], [], []
                summary = ""
                for _ in range(REPEATS):
                    wall, skew, summary = time_logphase_inprocess(launcher.pid, py_spy)
                    ours.append(wall)
                    skews.append(skew or 0.0)
                    cli = time_logphase_cli(launcher.pid)
                    if cli is not None:
                        clis.append(cli)
                    subs.append(time_subprocesses(launcher.pid, py_spy))
                    serial, serial_skew = time_serial(pids, py_spy)
                    serials.append(serial)
                    serial_skews.append(serial_skew)
            finally:
                stop_tree(launcher)
            median = statistics.median
            rows.append(
                Row(
                    ranks,
                    median(ours),
                    median(clis) if clis else None,
                    median(subs),
                    median(serials),
                    median(skews) * 1000,
                    median(serial_skews) * 1000,
                    summary,
                )
            )
    header = (
        f"{'ranks':>5}  {'logphase':>9}  {'(cli)':>7}  {'--subprocesses':>14}  {'serial':>7}  "
        f"{'ratio':>5}  {'skew':>8}  {'serial skew':>11}"
    )
    print("bench_stacks: wall seconds, median of", REPEATS)
    print(header)
    for row in rows:
        cli_text = f"{row.logphase_cli_s:.3f}" if row.logphase_cli_s is not None else "failed"
        print(
            f"{row.ranks:>5}  {row.logphase_s:>9.3f}  {cli_text:>7}  {row.pyspy_subprocesses_s:>14.3f}  "
            f"{row.pyspy_serial_s:>7.3f}  {row.ratio_vs_subprocesses:>5.2f}  {row.skew_ms:>6.1f}ms  "
            f"{row.serial_skew_ms:>9.1f}ms"
        )
    biggest = rows[-1]
    ok_ratio = biggest.ratio_vs_subprocesses <= 1.5
    ok_skew = biggest.skew_ms < 100
    print(
        f"targets at {biggest.ranks} ranks: ratio {biggest.ratio_vs_subprocesses:.2f} (<= 1.5: "
        f"{'met' if ok_ratio else 'MISSED'}), skew {biggest.skew_ms:.1f} ms "
        f"(< 100: {'met' if ok_skew else 'MISSED'})"
    )


if __name__ == "__main__":
    main()
