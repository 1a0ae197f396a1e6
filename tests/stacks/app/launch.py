"""A stand-in for `python -m sglang.launch_server`: starts one process per rank and waits for them.

usage: launch.py SPEC_JSON — {"ranks": ["idle", "barrier", ...], "title": "sglang::scheduler_TP{rank}",
"env_rank": false, "extra": ["sleep", "zombie"], "ready_dir": "...", "port": 0, "barrier_size": 8} (the
ranks the barrier waits for, default all of them: more stand for the ranks of other nodes)"""

import json
import os
import socket
import subprocess
import sys
import threading

import setproctitle

HERE = os.path.dirname(os.path.abspath(__file__))


def barrier_server(listener: socket.socket, expected: int) -> None:
    """A real barrier: every rank connects and blocks in recv until all `expected` ranks arrived."""
    arrived = []
    while True:
        conn, _ = listener.accept()
        arrived.append(conn)
        if len(arrived) == expected:
            for c in arrived:
                c.sendall(b"go")


def main() -> None:
    spec = json.loads(sys.argv[1])
    setproctitle.setproctitle(f"python3 -m sglang.launch_server --model-path fake --tp {len(spec['ranks'])}")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    threading.Thread(
        target=barrier_server, args=(listener, spec.get("barrier_size") or len(spec["ranks"])), daemon=True
    ).start()
    children = []
    for rank, behaviour in enumerate(spec["ranks"]):
        env = dict(os.environ)
        env.update(
            BARRIER_PORT=str(listener.getsockname()[1]),
            READY_DIR=spec["ready_dir"],
            WORLD_SIZE=str(len(spec["ranks"])),
            MASTER_PORT=str(spec.get("port", 0)),
            TITLE=spec.get("title") or "",
        )
        if spec.get("env_rank"):
            env.update(RANK=str(rank), LOCAL_RANK=str(rank))
        children.append(
            subprocess.Popen([sys.executable, os.path.join(HERE, "rank.py"), str(rank), behaviour], env=env)
        )
    extra = spec.get("extra", [])
    if "sleep" in extra:
        children.append(subprocess.Popen(["sleep", "600"]))
    if "zombie" in extra:
        os.spawnv(os.P_NOWAIT, "/bin/true", ["true"])  # never waited for: stays a zombie
    for child in children:
        child.wait()


if __name__ == "__main__":
    main()
