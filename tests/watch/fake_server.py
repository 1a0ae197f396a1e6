"""A stand-in SGLang server for watch tests: writes SGLang-style startup lines over time and serves
/health on 127.0.0.1 as SGLang does — refused until uvicorn starts, 503 while warming up, 200 when
ready. Scenarios: `ready`, `stall` (stops writing mid CUDA-graph capture, never listens), `crash`
(a scheduler exception, then exits 1).

    python fake_server.py LOG PORT_FILE SCENARIO [--step S] [--stdout] [--gate FILE]

The port is bound at once (so the test knows it) but only listened on at `Started server process`:
until then a connection is refused, exactly like a server whose uvicorn is not up yet."""

from __future__ import annotations

import argparse
import os
import socket
import sys
import threading
import time
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import IO, Any

STATUS = {"code": 503}


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        code = STATUS["code"]
        body = b"{}" if code == 200 else b"starting"
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:  # the test reads the log file, not this
        pass


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("log")
    parser.add_argument("port_file")
    parser.add_argument("scenario", choices=["ready", "stall", "crash"])
    parser.add_argument("--step", type=float, default=0.05, help="seconds between groups of lines")
    parser.add_argument("--stdout", action="store_true", help="write the log to stdout instead of LOG")
    parser.add_argument("--gate", help="start writing only once this file exists")
    args = parser.parse_args()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler, bind_and_activate=False)
    server.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.server_bind()
    port = server.server_address[1]
    with open(args.port_file + ".tmp", "w") as handle:
        handle.write(str(port))
    os.replace(args.port_file + ".tmp", args.port_file)

    while args.gate and not os.path.exists(args.gate):
        time.sleep(0.01)
    out: IO[str] = sys.stdout if args.stdout else open(args.log, "a", buffering=1)  # noqa: SIM115

    def emit(*lines: str) -> None:
        stamp = datetime.now().strftime("%Y-%m-%d %H:%M:%S")
        for line in lines:
            out.write(line.replace("{ts}", stamp) + "\n")
        out.flush()
        time.sleep(args.step)

    ranks = ("TP0", "TP1")

    def each(template: str) -> None:
        emit(*(template.replace("{rank}", rank) for rank in ranks))

    emit(
        "[{ts}] server_args=ServerArgs(model_path='/models/fake-7b', tokenizer_path='/models/fake-7b', "
        "tp_size=2, pp_size=1, dp_size=1, ep_size=1, speculative_algorithm=None, port=30000)"
    )
    emit("[{ts}] Using default HuggingFace chat template with detected content format: string")
    each("[{ts} {rank}] Init torch distributed begin.")
    emit("[{ts} TP0] sglang is using nccl==2.21.5")
    each("[{ts} {rank}] Init torch distributed ends. mem usage=0.10 GB")
    each("[{ts} {rank}] Load weight begin. avail mem=78.00 GB")
    for done in range(3):
        emit(
            f"Loading safetensors checkpoint shards: {done * 50:3d}% Completed | {done}/2 [00:0{done}<00:01,  1.20it/s]"
        )
    each(
        "[{ts} {rank}] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=64.00 GB, "
        "mem usage=14.00 GB."
    )
    each("[{ts} {rank}] KV Cache is allocated. #tokens: 100000, K size: 10.00 GB, V size: 10.00 GB")
    each("[{ts} {rank}] Memory pool end. avail mem=40.00 GB")
    each("[{ts} {rank}] Capture cuda graph begin. This can take up to several minutes. avail mem=40.00 GB")
    bar = ""
    for done in range(5):
        if args.scenario != "ready" and done == 2:
            break
        progress = f"{done * 25:3d}%|##   | {done}/4 [00:0{done}<00:01,  2.00it/s]"
        bar += f"\rCapturing batches (bs={8 >> done} avail_mem=39.00 GB): {progress}"
        out.write(bar[bar.rfind("\r") :])
        out.flush()
        time.sleep(args.step)
    if args.scenario == "stall":
        out.flush()
        while True:  # hung in capture: alive, silent, never listening
            time.sleep(60)
    if args.scenario == "crash":
        emit(
            "",
            "[{ts} TP1] Scheduler hit an exception: Traceback (most recent call last):",
            '  File "/sgl/managers/scheduler.py", line 2300, in run_scheduler_process',
            "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)",
            "RuntimeError: CUDA error: out of memory",
            "",
            "[{ts}] Received sigquit from a child process. It usually means the child failed.",
        )
        return 1
    out.write("\n")
    each("[{ts} {rank}] Capture cuda graph end. Time elapsed: 2.00 s. mem usage=1.00 GB. avail mem=38.00 GB.")
    emit(
        "[{ts} TP0] max_total_num_tokens=100000, chunked_prefill_size=8192, max_prefill_tokens=16384, "
        "max_running_requests=2048, context_len=8192, available_gpu_mem=38.00 GB"
    )
    server.server_activate()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    emit(
        f"[{{ts}}] INFO:     Started server process [{os.getpid()}]",
        "[{ts}] INFO:     Waiting for application startup.",
    )
    emit("[{ts}] INFO:     Application startup complete.")
    emit(f"[{{ts}}] INFO:     Uvicorn running on http://127.0.0.1:{port} (Press CTRL+C to quit)")
    emit('[{ts}] INFO:     127.0.0.1:41234 - "GET /model_info HTTP/1.1" 200 OK')
    time.sleep(args.step * 10)  # warming up: /health answers 503 meanwhile
    emit(
        "[{ts} TP0] Prefill batch, #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00, "
        "#running-req: 0, #queue-req: 0"
    )
    emit('[{ts}] INFO:     127.0.0.1:41236 - "POST /generate HTTP/1.1" 200 OK')
    STATUS["code"] = 200
    emit("[{ts}] The server is fired up and ready to roll!")
    while True:  # serving until the test stops it
        time.sleep(60)


if __name__ == "__main__":
    sys.exit(main())
