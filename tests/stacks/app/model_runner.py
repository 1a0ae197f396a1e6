"""Stand-in for model_runner.py: weight loading, a barrier after it, CUDA-graph capture over gloo."""

import time

import scheduler
from distributed import parallel_state


def load_model(rank: int, behaviour: str) -> None:
    if behaviour == "slow":
        load_weights(rank)
    elif behaviour == "busy":
        load_weights_busy(rank)
    elif behaviour == "barrier":
        scheduler.ready(rank)
        parallel_state.barrier()
    elif behaviour in ("gloo", "gloo-slow"):
        parallel_state.init_gloo(rank)
        if behaviour == "gloo-slow":
            load_weights(rank)
        else:
            import cuda_graph_runner

            cuda_graph_runner.capture(rank)
    else:
        raise SystemExit(f"unknown behaviour {behaviour}")


def load_weights(rank: int) -> None:
    scheduler.ready(rank)
    shard_reader(600)


def shard_reader(seconds: float) -> None:
    time.sleep(seconds)


def load_weights_busy(rank: int) -> None:
    scheduler.ready(rank)
    deadline = time.time() + 600
    while time.time() < deadline:
        for shard in range(50):
            read_shard(shard % 9 + 1)


def read_shard(depth: int) -> int:
    if depth:
        return read_shard(depth - 1) + 1
    return sum(range(3000))
