"""This machine's server processes and py-spy: find the processes of a server in /proc, name their roles and
ranks, and run `py-spy dump --json` on each of them, in parallel, each under a timeout.

Safety: targets are never signalled. A py-spy that overruns its timeout is killed through its own
process group (py-spy starts in a new session), never the target's; ptrace-seized targets resume
when their tracer dies."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from logphase.bounded import rank_label
from logphase.errors import SnapshotError
from logphase.frames import printable
from logphase.stacks.dumps import role_and_rank_from_title
from logphase.stacks.dumps_json import snapshots_from_pyspy_json
from logphase.stacks.model import ProcessSnapshot, ThreadStack

PTRACE_HINT = (
    "py-spy needs ptrace: run as root, or `sysctl kernel.yama.ptrace_scope=0`; in Docker start the "
    "container with `--cap-add SYS_PTRACE`; in Kubernetes add "
    "`securityContext.capabilities.add: [SYS_PTRACE]` to the container"
)
INSTALL_HINT = "install it with `pip install py-spy` (or pass --py-spy PATH)"
PYTHON_EXE = re.compile(r"^(?:python|pypy)[\d.]*(?:-dbg|d|m)?$")
HELPER_ROLES = frozenset({"resource_tracker"})


@dataclass(frozen=True)
class ProcInfo:
    """What /proc tells about one process."""

    pid: int
    ppid: int | None
    title: str
    comm: str
    state: str  # R S D Z T ...
    uid: int | None
    python: bool
    role: str | None
    rank: str | None
    env_rank: str | None = None


# --- /proc ---------------------------------------------------------------------------------------

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
# A process on the CPU this share of the time between its first and last sample is working.
BUSY_SHARE = 0.2
# The shortest window a process's CPU % is measured over: /proc counts CPU time in clock ticks (10 ms at
# 100 Hz), so one py-spy dump (tens of ms) alone would give a share in steps of 10 % or more.
CPU_WINDOW_S = 0.5


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def process_exists(pid: int) -> bool:
    """Whether a process with this pid exists (of any user; a zombie too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: it exists
    return True


def read_stat(pid: int, proc: Path = Path("/proc")) -> tuple[str, str, int] | None:
    """(comm, state, ppid) from /proc/PID/stat, None if the process is gone."""
    raw = _read(proc / str(pid) / "stat")
    if raw is None:
        return None
    text = raw.decode("utf-8", "replace")
    open_paren, close_paren = text.find("("), text.rfind(")")
    rest = text[close_paren + 2 :].split()
    if open_paren < 0 or close_paren < 0 or len(rest) < 2:
        return None
    return text[open_paren + 1 : close_paren], rest[0], int(rest[1])


def read_cpu_seconds(pid: int, proc: Path = Path("/proc")) -> float | None:
    """User + system CPU time of a process (/proc/PID/stat fields 14 and 15), None if it is gone."""
    raw = _read(proc / str(pid) / "stat")
    if raw is None:
        return None
    rest = raw.decode("utf-8", "replace").rsplit(")", 1)[-1].split()
    try:
        return (int(rest[11]) + int(rest[12])) / CLOCK_TICKS
    except (IndexError, ValueError):
        return None


def read_environ(pid: int, proc: Path = Path("/proc")) -> dict[str, str]:
    raw = _read(proc / str(pid) / "environ") or b""
    env: dict[str, str] = {}
    for item in raw.split(b"\0"):
        if b"=" in item:
            key, _, value = item.partition(b"=")
            env[key.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
    return env


def is_python(pid: int, argv0: str, proc: Path = Path("/proc")) -> bool:
    try:
        exe = os.readlink(proc / str(pid) / "exe")
    except OSError:
        exe = ""
    for candidate in (exe, argv0):
        name = os.path.basename(candidate.split(" ")[0]) if candidate else ""
        if name and PYTHON_EXE.match(name):
            return True
    if exe and os.path.basename(exe) in {"nvcc", "ninja", "cc1plus", "gcc", "g++", "sh", "bash", "dash", "ptxas"}:
        return False
    maps = _read(proc / str(pid) / "maps")
    return bool(maps and (b"libpython" in maps or b"/python3" in maps))


def read_proc(pid: int, proc: Path = Path("/proc")) -> ProcInfo | None:
    stat = read_stat(pid, proc)
    if stat is None:
        return None
    comm, state, ppid = stat
    raw = _read(proc / str(pid) / "cmdline") or b""
    argv = [part.decode("utf-8", "replace") for part in raw.split(b"\0") if part]
    title = printable(" ".join(argv).strip())
    try:
        uid: int | None = (proc / str(pid)).stat().st_uid
    except OSError:
        uid = None
    python = state != "Z" and is_python(pid, argv[0] if argv else "", proc)
    role, rank = role_and_rank_from_title(title) if title else (None, None)
    env_rank = None
    if python:
        env = read_environ(pid, proc)
        env_rank = rank_label(env.get("RANK")) or rank_label(env.get("LOCAL_RANK"), "local_rank")
        if rank is None and env_rank is not None and role not in ("launcher", "main", "engine_core", "api_server"):
            rank = env_rank
            role = role or "worker"
    return ProcInfo(
        pid=pid,
        ppid=ppid or None,
        title=title or f"[{comm}]",
        comm=comm,
        state=state,
        uid=uid,
        python=python,
        role=role,
        rank=rank,
        env_rank=env_rank,
    )


def all_pids(proc: Path = Path("/proc")) -> list[int]:
    return sorted(int(entry.name) for entry in proc.iterdir() if entry.name.isdigit())


def children_map(proc: Path = Path("/proc")) -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for pid in all_pids(proc):
        stat = read_stat(pid, proc)
        if stat is not None:
            children.setdefault(stat[2], []).append(pid)
    return children


def discover_tree(root_pid: int, proc: Path = Path("/proc"), exclude: Iterable[int] = ()) -> list[ProcInfo]:
    """The server a pid belongs to: from a rank, walk up to the process that launched the ranks (the
    first ancestor that is not itself a rank, DP controller or vLLM engine core), then take it and all
    its descendants. From a launcher, torchrun or SGLang's main process, its subtree."""
    start = read_proc(root_pid, proc)
    if start is None:
        raise SnapshotError(f"no process {root_pid}", hint="check the pid with `ps -ef`; it may have exited")
    top = start
    for _ in range(8):
        if not (top.rank or top.role in ("scheduler", "worker", "dp_controller", "engine_core")):
            break
        parent = read_proc(top.ppid, proc) if top.ppid and top.ppid > 1 else None
        if parent is None or not parent.python:
            break
        top = parent
    skip = set(exclude) | {os.getpid()}
    children = children_map(proc)
    found: list[ProcInfo] = []
    queue = [top.pid]
    seen: set[int] = set()
    while queue:
        pid = queue.pop(0)
        if pid in seen or pid in skip:
            continue
        seen.add(pid)
        info = top if pid == top.pid else read_proc(pid, proc)
        if info is None:
            continue
        found.append(info)
        queue.extend(sorted(children.get(pid, [])))
    return found


def discover_matching(pattern: str, proc: Path = Path("/proc"), uid: int | None = None) -> list[ProcInfo]:
    """Every Python process of this user whose command line (title) matches the regex."""
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise SnapshotError(f"--match {pattern!r} is not a valid regex: {exc}", hint="use Python `re` syntax") from exc
    uid = os.getuid() if uid is None else uid
    me = os.getpid()
    found = []
    for pid in all_pids(proc):
        if pid == me:
            continue
        info = read_proc(pid, proc)
        if info is None or info.uid != uid or not info.python or not compiled.search(info.title):
            continue
        found.append(info)
    return found


# --- py-spy --------------------------------------------------------------------------------------


def find_py_spy(explicit: str | None = None) -> str:
    """py-spy from --py-spy, PATH, or next to this Python (a virtualenv's bin/)."""
    if explicit:
        if os.path.isfile(explicit) and os.access(explicit, os.X_OK):
            return explicit
        raise SnapshotError(f"py-spy not found at {explicit}", hint=INSTALL_HINT)
    found = shutil.which("py-spy")
    if found:
        return found
    beside = Path(sys.executable).parent / "py-spy"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    raise SnapshotError("py-spy is not installed (not on PATH)", hint=INSTALL_HINT)


@dataclass(frozen=True)
class DumpResult:
    pid: int
    threads: tuple[ThreadStack, ...] = ()
    error: str | None = None
    denied: bool = False
    started: float = 0.0
    ended: float = 0.0
    native_failed: bool = False


def _error_text(stderr: str, returncode: int | None) -> tuple[str, bool]:
    """(one-line error, permission denied?) from py-spy's stderr."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    useful = next((line for line in lines if line.startswith("Error:")), lines[0] if lines else "")
    lowered = stderr.lower()
    if "permission denied" in lowered or "operation not permitted" in lowered or "os error 1)" in lowered:
        return "permission denied (ptrace)", True
    if "failed to find python version" in lowered or "failed to get process executable name" in lowered:
        return "not a Python process, or it exited", False
    if "failed to open process" in lowered or "no such process" in lowered:
        return "the process exited", False
    text = useful.removeprefix("Error:").strip() or f"py-spy exited with status {returncode}"
    return text[:200], False


def run_py_spy(
    py_spy: str,
    pid: int,
    *,
    native: bool = False,
    nonblocking: bool = False,
    timeout_s: float = 10.0,
    clock: Callable[[], float] = time.monotonic,
) -> DumpResult:
    """One `py-spy dump --json`; on --native failure, once more without it. py-spy runs in its own
    session: on timeout its whole process group is killed, the target is never touched."""
    command = [py_spy, "dump", "--json", "--pid", str(pid)]
    if native:
        command.append("--native")
    if nonblocking:
        command.append("--nonblocking")
    started = clock()
    try:
        child = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        return DumpResult(pid=pid, error=f"cannot run py-spy: {exc.strerror}", started=started, ended=clock())
    try:
        stdout, stderr = child.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        kill_group(child.pid)
        child.communicate()
        ended = clock()
        error = f"py-spy did not finish within {timeout_s:g}s (killed; the target was not touched)"
        state = read_stat(pid)
        if state is not None and state[1] in ("T", "t"):
            error += f"; the target is in state {state[1]} (stopped)"
        return DumpResult(pid=pid, error=error, started=started, ended=ended)
    ended = clock()
    if child.returncode != 0:
        message, denied = _error_text(stderr.decode("utf-8", "replace"), child.returncode)
        if native and not denied:
            retry = run_py_spy(py_spy, pid, native=False, nonblocking=nonblocking, timeout_s=timeout_s, clock=clock)
            return replace(retry, started=started, native_failed=True)
        return DumpResult(pid=pid, error=message, denied=denied, started=started, ended=ended)
    try:
        threads = json.loads(stdout.decode("utf-8", "replace"))
        snaps = snapshots_from_pyspy_json(threads, pid)
    except (ValueError, TypeError, AttributeError):
        return DumpResult(pid=pid, error="py-spy printed no readable JSON", started=started, ended=ended)
    stacks = next((s.threads for s in snaps if s.pid == pid), snaps[0].threads if snaps else ())
    return DumpResult(pid=pid, threads=stacks, started=started, ended=ended)


def kill_group(pgid: int) -> None:
    """Kill py-spy's own process group (it was started with start_new_session=True: pgid == its pid)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def dump_all(
    py_spy: str,
    pids: Sequence[int],
    *,
    native: bool = False,
    nonblocking: bool = False,
    timeout_s: float = 10.0,
    clock: Callable[[], float] = time.monotonic,
) -> list[DumpResult]:
    """All pids at once, one py-spy each (a start barrier keeps the captures close together)."""
    if not pids:
        return []
    workers = min(len(pids), 64)
    barrier = threading.Barrier(workers) if workers == len(pids) else None

    def one(pid: int) -> DumpResult:
        if barrier is not None:
            with contextlib.suppress(threading.BrokenBarrierError):
                barrier.wait(timeout=5)
        return run_py_spy(py_spy, pid, native=native, nonblocking=nonblocking, timeout_s=timeout_s, clock=clock)

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="py-spy") as pool:
        return list(pool.map(one, pids))


def _signature(threads: Sequence[ThreadStack]) -> tuple[tuple[str, ...], ...]:
    main = [t for t in threads if t.main]
    chosen = main or list(threads)
    return tuple(tuple(str(f) for f in t.frames) for t in chosen)


def snapshot(
    procs: Sequence[ProcInfo],
    *,
    py_spy: str,
    native: bool = False,
    nonblocking: bool = False,
    timeout_s: float = 10.0,
    samples: int = 1,
    interval_s: float = 1.0,
    host: str | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    read_cpu: Callable[[int], float | None] = read_cpu_seconds,
) -> tuple[list[ProcessSnapshot], float | None]:
    """Snapshot every Python process of `procs` `samples` times. Returns the snapshots (one per
    process, non-Python ones listed as skipped) and the skew: the longest time between the first
    and the last capture of one round (a capture is the middle of its py-spy run)."""
    targets = [p for p in procs if p.python and p.state != "Z" and p.role not in HELPER_ROLES]
    rounds: list[dict[int, DumpResult]] = []
    cpu: list[tuple[float, dict[int, float | None]]] = []  # per round: when, and each target's CPU time
    skew: float | None = None
    for index in range(max(1, samples)):
        if index:
            sleep(interval_s)
        cpu.append((clock(), {p.pid: read_cpu(p.pid) for p in targets}))
        results = dump_all(
            py_spy, [p.pid for p in targets], native=native, nonblocking=nonblocking, timeout_s=timeout_s, clock=clock
        )
        captured = [(r.started + r.ended) / 2 for r in results if r.threads]
        if len(captured) > 1:
            spread = max(captured) - min(captured)
            skew = spread if skew is None else max(skew, spread)
        elif captured and skew is None:
            skew = 0.0
        rounds.append({r.pid: r for r in results})
        if index == 0 and results and all(r.denied for r in results):
            raise SnapshotError(
                f"permission denied reading {len(results)} process{'es' if len(results) != 1 else ''} with py-spy",
                hint=PTRACE_HINT,
            )
    # the window's end: at least CPU_WINDOW_S after its start (a single sample's window is its dump and this wait)
    if cpu and targets:
        sleep(max(0.0, CPU_WINDOW_S - (clock() - cpu[0][0])))
        cpu.append((clock(), {p.pid: read_cpu(p.pid) for p in targets}))
    out: list[ProcessSnapshot] = []
    for info in procs:
        base = ProcessSnapshot(
            pid=info.pid, ppid=info.ppid, rank=info.rank, role=info.role, title=info.title, host=host, source="py-spy"
        )
        if info.state == "Z":
            out.append(replace(base, error="zombie: exited, not yet reaped by its parent"))
            continue
        if not info.python:
            out.append(replace(base, error=f"not a Python process ({info.comm}): skipped", skipped=True))
            continue
        if info.role in HELPER_ROLES:
            out.append(replace(base, error=f"{info.role.replace('_', ' ')}: skipped", skipped=True))
            continue
        results = [r[info.pid] for r in rounds if info.pid in r]
        good = [r for r in results if r.threads]
        if not good:
            last = results[-1] if results else None
            out.append(replace(base, error=(last.error if last else None) or "py-spy found no threads"))
            continue
        if len(results) > 1 and not results[-1].threads and read_cpu(info.pid) is None:
            # it exited while it was sampled: its last stacks say nothing of motion
            exited = f"exited during sampling (read in {len(good)} of {len(results)} samples)"
            out.append(replace(base, threads=good[-1].threads, error=exited))
            continue
        moving: bool | None = None
        busy: bool | None = None
        if len(good) > 1:
            moving = len({_signature(r.threads) for r in good}) > 1
            busy = _on_cpu(info.pid, cpu) or all(_main_active(r.threads) for r in good)
        error: str | None = None
        if len(good) < len(results):
            first_error = next(r.error for r in results if not r.threads)
            error = f"{len(results) - len(good)} of {len(results)} samples failed: {first_error}"
        out.append(
            replace(
                base, threads=good[-1].threads, moving=moving, busy=busy, error=error, cpu_pct=cpu_share(info.pid, cpu)
            )
        )
    return out, skew


def cpu_share(pid: int, cpu: Sequence[tuple[float, dict[int, float | None]]]) -> float | None:
    """The CPU time a process used between the first and the last reading, in % of one core (to 0.1);
    None where it was not read twice."""
    used = _cpu_fraction(pid, cpu)
    return None if used is None else round(100.0 * used, 1)


def _on_cpu(pid: int, cpu: Sequence[tuple[float, dict[int, float | None]]]) -> bool:
    """CPU time grew by BUSY_SHARE of the wall time between the first and the last sample."""
    used = _cpu_fraction(pid, cpu)
    return used is not None and used >= BUSY_SHARE


def _cpu_fraction(pid: int, cpu: Sequence[tuple[float, dict[int, float | None]]]) -> float | None:
    """CPU seconds a process used per wall second between its first and last reading; None: not read twice."""
    readings = [(when, seconds[pid]) for when, seconds in cpu if seconds.get(pid) is not None]
    if len(readings) < 2:
        return None
    (start, first), (end, last) = readings[0], readings[-1]
    assert first is not None and last is not None
    return max(0.0, last - first) / (end - start) if end > start else None


def _main_active(threads: Sequence[ThreadStack]) -> bool:
    """py-spy's own mark: the main thread was running, not waiting in a system call."""
    main = next((t for t in threads if t.main), None)
    return main is not None and main.active is True
