"""Benchmark the many-node log collection through ssh (issue 28): 64 simulated hosts on loopback (sshd listening
on 127.0.1.1–64, a throw-away key, each host its own Host entry), each node's log read with `logphase analyze
--hosts`'s collection (nodes/logs.py), against one host's. Bound: 64 hosts ≤ 3 × one host's wall time.

Needs root (sshd) and Debian's openssh-server; says so and skips where they are missing. The log is the real
SGLang two-node log of fixtures/ (node 0), repeated to ~1 MB, at one path on every host."""

from __future__ import annotations

import os
import resource
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

HOSTS = 64
BOUND = 3.0
LOG = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "sglang" / "two-node-tp16-node0.log"
SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


def missing() -> str | None:
    if not Path(SSHD).exists() or shutil.which("ssh") is None:
        return "sshd/ssh not installed (Debian: openssh-server)"
    if os.geteuid() != 0:
        return "sshd needs root here"
    return None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def loopback_hosts(folder: Path, count: int) -> Iterator[Path]:
    """One sshd on 127.0.1.1…count (a port of its own), and an ssh config naming them h00, h01, …"""
    for name in ("id", "host"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(folder / name)], check=True)
    (folder / "authorized_keys").write_text((folder / "id.pub").read_text())
    port = free_port()
    (folder / "ssh_config").write_text(
        "".join(
            f"Host h{n:02d}\n  HostName 127.0.1.{n + 1}\n  Port {port}\n  User root\n  IdentityFile {folder}/id\n"
            "  IdentitiesOnly yes\n  UserKnownHostsFile /dev/null\n  StrictHostKeyChecking no\n  LogLevel ERROR\n"
            for n in range(count)
        )
    )
    Path("/run/sshd").mkdir(exist_ok=True)
    daemons = []
    try:
        # OpenSSH listens on at most 16 addresses a daemon (MAX_LISTEN_SOCKS): a daemon for each 16 hosts
        for first in range(0, count, 16):
            conf = folder / f"sshd-{first}.conf"
            listen = "".join(f"ListenAddress 127.0.1.{n + 1}:{port}\n" for n in range(first, min(first + 16, count)))
            conf.write_text(
                f"{listen}HostKey {folder}/host\nAuthorizedKeysFile {folder}/authorized_keys\n"
                f"PidFile {folder}/sshd-{first}.pid\nStrictModes no\nUsePAM no\nPermitRootLogin yes\n"
                "PasswordAuthentication no\nKbdInteractiveAuthentication no\nMaxStartups 256\n"
            )
            sshd = subprocess.Popen([SSHD, "-D", "-e", "-f", str(conf)], start_new_session=True, stderr=subprocess.PIPE)
            daemons.append(sshd)
            wait_for(sshd, f"127.0.1.{first + 1}", port)
        yield folder / "ssh_config"
    finally:
        for sshd in daemons:
            sshd.kill()
            sshd.wait()


def wait_for(sshd: subprocess.Popen[bytes], address: str, port: int) -> None:
    deadline = time.monotonic() + 15
    while True:
        try:
            with socket.create_connection((address, port), timeout=0.5):
                return
        except OSError:
            if time.monotonic() > deadline or sshd.poll() is not None:
                said = (
                    sshd.stderr.read().decode(errors="replace")[-300:]
                    if sshd.poll() is not None and sshd.stderr
                    else ""
                )
                raise SystemExit(f"bench_ssh: sshd did not start: {said}") from None
            time.sleep(0.05)


def collect(config: Path, hosts: int, path: str, parallel: int, out: Path) -> tuple[float, int, float]:
    """One collection's wall time, how many nodes gave their log (every host here reads the one file: the
    collection judges it once, as a shared file system's, and counts each node's copy), and the CPU seconds this
    side took (this process and its ssh clients; each host's sshd and script are the node's)."""
    from logphase.nodes.logs import collect_logs
    from logphase.nodes.ssh import SshTransport

    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    transport = SshTransport(hosts=tuple(f"h{n:02d}" for n in range(hosts)), config=str(config))
    started, cpu = time.perf_counter(), _cpu()
    collection = collect_logs(transport, [path], out, timeout_s=120.0, parallel=parallel)
    wall = time.perf_counter() - started
    return wall, sum(1 for node in collection.nodes if node.files), _cpu() - cpu


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def client_cpu_per_connection(config: Path) -> float:
    """CPU seconds the ssh client alone takes for one connection that runs `true` (the rest runs on the node)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for _ in range(5):
        subprocess.run(["ssh", "-F", str(config), "h00", "true"], check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) / 5


def main() -> None:
    why = missing()
    if why is not None:
        print(f"bench_ssh: not run: {why}")
        return
    with tempfile.TemporaryDirectory(prefix="bench-ssh-") as tmp:
        folder = Path(tmp)
        text = LOG.read_text()
        logs = {"small": folder / "small.log", "1 MB": folder / "big.log"}
        logs["small"].write_text(text)
        logs["1 MB"].write_text(text * max(1, (1 << 20) // len(text)))
        rows = []
        with loopback_hosts(folder, HOSTS) as config:
            collect(config, 1, str(logs["small"]), 1, folder / "out")  # warm: the first ssh reads what later ones reuse
            cpu = client_cpu_per_connection(config)
            load = os.getloadavg()[0]
            for log in logs.values():
                one = [collect(config, 1, str(log), 1, folder / "out")[0] for _ in range(5)]
                runs = [collect(config, HOSTS, str(log), 32, folder / "out") for _ in range(3)]
                walls, cpu_here = [wall for wall, _, _ in runs], statistics.median(c for _, _, c in runs)
                rows.append((log.stat().st_size / 1e6, one, walls, min(n for _, n, _ in runs), cpu_here))
            load_after = os.getloadavg()[0]
    print(
        f"bench_ssh: {HOSTS} hosts on loopback (127.0.1.1-{HOSTS}, an sshd for each 16), each one's log read through "
        f"ssh by `analyze --hosts`'s collection, --parallel 32 (the default); {os.cpu_count()} cores shared with "
        f"other sessions, load average {load:.1f} before and {load_after:.1f} after; the ssh client alone "
        f"{cpu * 1000:.0f} ms CPU a connection"
    )
    print("")
    print(
        "| log | 1 host: wall s (median of 5) | 64 hosts: wall s (median of 3) | 64 hosts ÷ 1 host | nodes read "
        "| CPU s on this side, 64 hosts |"
    )
    print("|---|---|---|---|---|---|")
    worst = 0.0
    for size, one, many, given, cpu_here in rows:
        single, median = statistics.median(one), statistics.median(many)
        worst = max(worst, median / single)
        print(
            f"| {size:.2f} MB | {single:.2f} ({', '.join(f'{w:.2f}' for w in one)}) | "
            f"{median:.2f} ({', '.join(f'{w:.2f}' for w in many)}) | {median / single:.1f} | {given} of {HOSTS} "
            f"| {cpu_here:.1f} |"
        )
    print("")
    print(
        f"  {'within' if worst <= BOUND else 'OVER'} the bound (64 hosts ≤ {BOUND:g} × one host's time): {worst:.1f}×"
    )


if __name__ == "__main__":
    main()
