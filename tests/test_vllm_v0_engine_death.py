"""vLLM V0's multiprocessing front end telling that its engine process is gone (issue 25): the MQ client's
`RuntimeError('Engine process (pid N) died.')` (engine/multiprocessing/client.py `_set_errored` logs
`logger.exception(repr(e))`, 0.7.3, 0.8.5) and the OpenAI server's `Engine process failed to start` (entrypoints/
openai/api_server.py, 0.6.3.post1 .. 0.8.5). Each is the cause only where no line of the engine's own says why."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import judge_text, root_text

_SERVING = [
    "INFO 02-05 01:10:00 api_server.py:912] vLLM API server version 0.7.3",
    "INFO 02-05 01:10:01 api_server.py:209] Started engine process with PID 76",
    "INFO 02-05 01:19:55 engine.py:275] Added request chatcmpl-0f1e2d3c4b5a69788796a5b4c3d2e1f0.",
]


def test_the_mq_clients_dead_engine_process_is_the_cause_where_nothing_above_says_why(tmp_path: Path) -> None:
    # GIVEN a V0 server taking a request, then the MQ client's heartbeat loop logging the dead engine process
    # (`logger.exception(repr(e))`: the repr, then `NoneType: None` with no exception being handled) and the
    # launcher giving up on the dead engine when the request's 500 is answered
    died = "RuntimeError('Engine process (pid 76) died.')"
    text = [
        *_SERVING,
        f"ERROR 02-05 01:21:05 client.py:300] {died}",
        "ERROR 02-05 01:21:05 client.py:300] NoneType: None",
        "CRITICAL 02-05 01:21:10 launcher.py:101] MQLLMEngine is already dead, terminating server process",
    ]
    # WHEN judged
    report = judge_text(tmp_path, "\n".join(text) + "\n")
    # THEN the server crashed while serving, and the dead engine process is the cause (it came first)
    assert report["verdict"] == "crashed"
    assert report["phase"] == "serving"
    assert root_text(report).endswith(died)


def test_the_servers_failed_to_start_is_the_cause_only_where_the_engines_traceback_is_missing(
    tmp_path: Path,
) -> None:
    # GIVEN the OpenAI server's start-up raising `RuntimeError: Engine process failed to start. See stack trace for
    # the root cause.` (0.7.3), once alone, and once after the spawned engine process's own traceback (CPython's
    # multiprocessing `Process SpawnProcess-1:` header, then the traceback ending in torch's out-of-memory error)
    server_tail = [
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/api_server.py", line 233, in '
        "build_async_engine_client_from_engine_args",
        '    raise RuntimeError("Engine process failed to start. See stack "',
        "RuntimeError: Engine process failed to start. See stack trace for the root cause.",
    ]
    oom = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
        "79.10 GiB"
    )
    engine_tail = [
        "Process SpawnProcess-1:",
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.12/multiprocessing/process.py", line 314, in _bootstrap',
        "    self.run()",
        oom,
    ]
    head = _SERVING[:2]
    (tmp_path / "alone").mkdir()
    (tmp_path / "after").mkdir()
    # WHEN each is judged
    alone = judge_text(tmp_path / "alone", "\n".join([*head, *server_tail]) + "\n")
    after = judge_text(tmp_path / "after", "\n".join([*head, *engine_tail, *server_tail]) + "\n")
    # THEN both crashed; alone, the server's line is the cause; after the engine's traceback, the engine's error is
    assert alone["verdict"] == after["verdict"] == "crashed"
    assert root_text(alone) == "RuntimeError: Engine process failed to start. See stack trace for the root cause."
    assert root_text(after) == oom


def test_a_quoted_source_line_of_the_messages_is_no_failure(tmp_path: Path) -> None:
    # GIVEN a V0 server that took a request, and a traceback of another, survived error whose frames quote the
    # raise statements' source lines (four spaces, then the string)
    text = [
        *_SERVING,
        '                            f"Engine process (pid {self._engine_process.pid}) "',
        '    raise RuntimeError("Engine process failed to start. See stack "',
    ]
    # WHEN judged
    report = judge_text(tmp_path, "\n".join(text) + "\n")
    # THEN no failure is read
    assert report["verdict"] not in {"crashed", "aborted", "timeout"}
    assert report["root_cause"] is None or "Engine process" not in root_text(report)
