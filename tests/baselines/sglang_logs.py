"""Writes SGLang TP2 startup logs with chosen phase durations, for baseline tests (exact times)."""

from __future__ import annotations

from datetime import datetime, timedelta

RANKS = ("TP0", "TP1")
SERVER_ARGS = (
    "server_args=ServerArgs(model_path='/models/Qwen3-32B', tokenizer_path='/models/Qwen3-32B', "
    "tp_size=2, pp_size=1, dp_size=1, ep_size=1, speculative_algorithm=None, port=30000)"
)
# seconds from the start of a run to the start of CUDA-graph capture
CAPTURE_STARTS_AFTER = 80
# after the capture: uvicorn starts 1 s later, warmup polls /model_info at +2 s
WARMUP_S = 20


def startup_log(start: datetime, capture_s: float, *, until_s: float | None = None, bars_every_s: float = 10) -> str:
    """A run that begins at `start` and captures CUDA graphs for `capture_s` seconds, then warms up
    for WARMUP_S and is ready. `until_s`: the log stops that many seconds into the capture
    (the last bar update is at the last multiple of `bars_every_s` before it)."""
    out: list[str] = []

    def at(seconds: float, message: str, rank: str | None = None) -> None:
        stamp = (start + timedelta(seconds=seconds)).strftime("%Y-%m-%d %H:%M:%S")
        out.append(f"[{stamp}{' ' + rank if rank else ''}] {message}")

    def each(seconds: float, message: str) -> None:
        for rank in RANKS:
            at(seconds, message, rank)

    at(0, SERVER_ARGS)
    at(1, "Using default HuggingFace chat template with detected content format: string")
    each(2, "Init torch distributed begin.")
    at(3, "sglang is using nccl==2.21.5", "TP0")
    each(12, "Init torch distributed ends. mem usage=0.50 GB")
    each(13, "Load weight begin. avail mem=78.00 GB")
    each(73, "Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=60.00 GB, mem usage=18.00 GB.")
    each(74, "KV Cache is allocated. #tokens: 200000, K size: 8.00 GB, V size: 8.00 GB")
    each(75, "Memory pool end. avail mem=40.00 GB")
    begin = CAPTURE_STARTS_AFTER
    each(begin, "Capture cuda graph begin. This can take up to several minutes. avail mem=40.00 GB")
    end = begin + (capture_s if until_s is None else until_s)
    steps = int((end - begin) // bars_every_s)
    total = int(capture_s // bars_every_s) + 1
    for step in range(1, steps + 1):
        seconds = begin + step * bars_every_s
        if seconds >= begin + capture_s:
            break
        at(seconds, f"capture step {step}", "TP1")  # an unmatched stamped line: the bar below has no stamp
        out.append(
            f"Capturing batches (bs={256 >> step} avail_mem=39.00 GB):  50%|#####     | "
            f"{step}/{total} [00:10<00:10,  0.10it/s]"
        )
    if until_s is not None:
        return "\n".join(out) + "\n"
    done = begin + capture_s
    each(done, f"Capture cuda graph end. Time elapsed: {capture_s:.2f} s. mem usage=1.00 GB. avail mem=38.00 GB.")
    at(
        done,
        "max_total_num_tokens=200000, chunked_prefill_size=8192, max_prefill_tokens=16384, "
        "max_running_requests=2048, context_len=32768",
        "TP0",
    )
    at(done + 1, "INFO:     Started server process [4242]")
    at(done + 1, "INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)")
    at(done + 2, 'INFO:     127.0.0.1:50000 - "GET /model_info HTTP/1.1" 200 OK')
    at(done + 2 + WARMUP_S, 'INFO:     127.0.0.1:50002 - "POST /generate HTTP/1.1" 200 OK')
    at(done + 2 + WARMUP_S, "The server is fired up and ready to roll!")
    return "\n".join(out) + "\n"
