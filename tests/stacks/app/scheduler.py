"""Stand-in for sglang/srt/managers/scheduler.py: py-spy shows these frames as `... (scheduler.py:N)`."""

import os
import socket

import model_runner


def ready(rank: int) -> None:
    with open(os.path.join(os.environ["READY_DIR"], f"ready.{rank}"), "w") as handle:
        handle.write(str(os.getpid()))


def run_scheduler_process(rank: int, behaviour: str) -> None:
    if behaviour == "idle":
        event_loop_normal(rank)
    else:
        model_runner.load_model(rank, behaviour)


def event_loop_normal(rank: int) -> None:
    mine, _theirs = socket.socketpair()
    ready(rank)
    while True:
        recv_requests(mine)


def recv_requests(sock: socket.socket) -> bytes:
    return sock.recv(1)  # nobody ever sends: a real blocking recv
