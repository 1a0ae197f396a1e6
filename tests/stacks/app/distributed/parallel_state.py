"""Stand-in for sglang's distributed/parallel_state.py (py-spy names it `distributed/parallel_state.py`)."""

import datetime
import os
import socket


def barrier() -> None:
    """Wait until every rank arrived (the launcher's barrier server answers only then)."""
    sock = socket.create_connection(("127.0.0.1", int(os.environ["BARRIER_PORT"])))
    sock.sendall(b"arrived")
    sock.recv(2)


def init_gloo(rank: int) -> None:
    import torch.distributed as dist

    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{os.environ['MASTER_PORT']}",
        rank=rank,
        world_size=int(os.environ["WORLD_SIZE"]),
        timeout=datetime.timedelta(seconds=120),
    )
