"""A traceback that ends in a library's timeout class ends a wait that passed its deadline (stop 45, kind D2: a timeout
read as a crash where a request's or a call's timeout raises an exception). The classes are the libraries' own, as
CPython prints them (`module.qualname: message`): httpx 0.29 / httpcore 1.0.9 `_exceptions.py`, aiohttp 3.14
`client_exceptions.py`, Ray 2.60 `exceptions.py`, requests 2.34 and urllib3 2.8 `exceptions.py`, openai's exported
`APITimeoutError`, CPython < 3.10's `socket.timeout`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_json

# (the exception line a traceback ends in, the same library's failure that is no timeout)
TIMEOUTS = (
    ("httpx.ReadTimeout: timed out", "httpx.ConnectError: [Errno 111] Connection refused"),
    (
        "httpcore.ReadTimeout: timed out",
        "httpcore.RemoteProtocolError: Server disconnected without sending a response.",
    ),
    (
        "aiohttp.client_exceptions.ServerTimeoutError: Timeout on reading data from socket",
        "aiohttp.client_exceptions.ServerDisconnectedError: Server disconnected",
    ),
    (
        "ray.exceptions.GetTimeoutError: Get timed out: some object(s) not ready.",
        "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.",
    ),
    (
        "requests.exceptions.ReadTimeout: HTTPConnectionPool(host='localhost', port=30000): Read timed out. "
        "(read timeout=600)",
        "requests.exceptions.ConnectionError: HTTPConnectionPool(host='localhost', port=30000): Max retries exceeded "
        "with url: /health",
    ),
    (
        "urllib3.exceptions.ReadTimeoutError: HTTPConnectionPool(host='localhost', port=8000): Read timed out.",
        "urllib3.exceptions.NewConnectionError: <urllib3.connection.HTTPConnection object at 0x7f2c>: Failed to "
        "establish a new connection: [Errno 111] Connection refused",
    ),
    ("openai.APITimeoutError: Request timed out.", "openai.APIConnectionError: Connection error."),
)


def _analyze(tmp_path: Path, exception_line: str) -> dict[str, Any]:
    # an SGLang server that served, then a client's traceback (a benchmark's request through the library)
    lines = [
        "[2025-09-10 08:00:00] The server is fired up and ready to roll!",
        "[2025-09-10 08:00:05 TP0] Decode batch. #running-req: 8, #token: 4096, token usage: 0.02, cuda graph: True,"
        " gen throughput (token/s): 812.40, #queue-req: 0",
        "Traceback (most recent call last):",
        '  File "/opt/bench/bench_serving.py", line 412, in send_request',
        "    response = client.post(url, json=payload, timeout=600)",
        exception_line,
    ]
    log = tmp_path / "run.log"
    log.write_text("\n".join(lines) + "\n")
    _, report = run_json("analyze", "--post-mortem", str(log))
    return report


@pytest.mark.parametrize(("timeout_line", "failure_line"), TIMEOUTS)
def test_a_traceback_ending_in_a_librarys_timeout_is_a_timeout_and_its_other_failures_a_crash(
    tmp_path: Path, timeout_line: str, failure_line: str
) -> None:
    # GIVEN the same traceback ending in one library's timeout class, and in another failure of the same library
    timed_out = _analyze(tmp_path, timeout_line)
    failed = _analyze(tmp_path, failure_line)
    # THEN the timeout is a timeout, caused at its exception line; the other failure a crash at its own
    assert (timed_out["verdict"], timed_out["root_cause"]["line"]) == ("timeout", 6)
    assert (failed["verdict"], failed["root_cause"]["line"]) == ("crashed", 6)
