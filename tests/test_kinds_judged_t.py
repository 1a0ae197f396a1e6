"""Kinds of input the fresh-t batch's read logs were misjudged on, each written from the format the system prints in
its released source (the pack's rule or anchor cites it): frames that place a failure's step, and the line that
states it."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import judge_text, root_text

SITE = "/usr/local/lib/python3.12/dist-packages"


def _frame(path: str, line: int, function: str, source: str, prefix: str = "") -> str:
    return f'{prefix}  File "{SITE}/{path}", line {line}, in {function}\n{prefix}    {source}\n'


def test_a_kv_connector_failing_to_register_the_kv_caches_crashed_in_kv_cache(tmp_path: Path) -> None:
    # GIVEN an engine core's logged traceback cut above its header: NixlConnector's register_kv_caches (called only by
    # the model runner's initialize_kv_cache) -> nixl's register_memory -> the backend's error, then the process's
    # own traceback through run_engine_core, cut
    prefix = "(EngineCore_0 pid=532339) ERROR 08-07 04:48:56 [core.py:684] "
    report = judge_text(
        tmp_path,
        _frame(
            "vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py",
            816,
            "register_kv_caches",
            "self.nixl_wrapper.register_memory(descs)",
            prefix,
        )
        + _frame("nixl/_api.py", 266, "register_memory", "self.agent.registerMem(reg_descs, handle_list)", prefix)
        + f"{prefix}nixl._bindings.nixlBackendError: NIXL_ERR_BACKEND\n"
        "(EngineCore_0 pid=532339) Process EngineCore_0:\n"
        "(EngineCore_0 pid=532339) Traceback (most recent call last):\n"
        + _frame("vllm/v1/engine/core.py", 688, "run_engine_core", "raise e", "(EngineCore_0 pid=532339) "),
    )
    # WHEN judged THEN it crashed allocating and registering the KV cache, on the backend's error
    assert (report["verdict"], report["phase"]) == ("crashed", "kv_cache")
    assert root_text(report).endswith("nixl._bindings.nixlBackendError: NIXL_ERR_BACKEND")


def test_a_kv_connector_loading_kv_for_a_request_is_not_placed_in_kv_cache(tmp_path: Path) -> None:
    # GIVEN the same connector's frame for a request's KV load (start_load_kv), which a served request runs
    report = judge_text(
        tmp_path,
        "Traceback (most recent call last):\n"
        + _frame(
            "vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py",
            1093,
            "start_load_kv",
            "self._read_blocks_for_req(req_id, meta)",
        )
        + "KeyError: 'engine-1'\n",
    )
    # WHEN judged THEN the KV cache's step is not what it says
    assert report["phase"] != "kv_cache"


def test_a_request_handler_traceback_through_uvicorn_crashed_serving(tmp_path: Path) -> None:
    # GIVEN uvicorn's per-request task (h11_impl's RequestResponseCycle.run_asgi) -> fastapi -> starlette's middleware,
    # the paste cut inside the next frame's path
    report = judge_text(
        tmp_path,
        "Traceback (most recent call last):\n"
        + _frame("uvicorn/protocols/http/h11_impl.py", 403, "run_asgi", "result = await app(  # type: ignore")
        + _frame("fastapi/applications.py", 1054, "__call__", "await super().__call__(scope, receive, send)")
        + _frame("starlette/middleware/errors.py", 165, "__call__", "await self.app(scope, receive, _send)")
        + '  File "/usr/loca',
    )
    # WHEN judged THEN it crashed answering a request
    assert (report["verdict"], report["phase"]) == ("crashed", "serving")


def test_uvicorns_lifespan_start_up_is_not_a_request(tmp_path: Path) -> None:
    # GIVEN the lifespan's start-up (lifespan/on.py main), which runs before the port opens
    report = judge_text(
        tmp_path,
        "Traceback (most recent call last):\n"
        + _frame("uvicorn/lifespan/on.py", 86, "main", "await app(scope, self.receive, self.send)")
        + "RuntimeError: startup failed\n",
    )
    # WHEN judged THEN no request was served
    assert report["phase"] != "serving"


def _padded_frame(width: int, function: str, source: str) -> str:
    """A frame line exactly `width` long (its path padded), then its source line."""
    head, tail = '  File "', f'", line 60, in {function}'
    path = "/usr/local/lib/python3.10/site-packages/" + "p" * (width - len(head) - len(tail) - 47) + "/mod.py"
    line = head + path + tail
    assert len(line) == width
    return f"{line}\n    {source}\n"


def test_traceback_frames_of_the_longest_length_are_no_hard_wrapped_paste(tmp_path: Path) -> None:
    # GIVEN a traceback whose two longest lines are whole frame lines of one length, each followed by its source line
    # (indented deeper), and shorter frames between them
    report = judge_text(
        tmp_path,
        "Traceback (most recent call last):\n"
        + _frame("uvicorn/protocols/http/h11_impl.py", 403, "run_asgi", "result = await app(scope)")
        + _padded_frame(119, "__call__", "return await self.app(scope, receive, send)")
        + _frame("starlette/applications.py", 113, "__call__", "await self.middleware_stack(scope, receive, send)")
        + _padded_frame(119, "wrapped_app", "await app(scope, receive, sender)")
        + "ValueError: bad image\n",
    )
    # WHEN judged THEN no line was joined to the next (no hard-wrap note) and the exception line is the cause
    assert not any("hard-wrapped" in note for note in report["notes"])
    assert root_text(report) == "ValueError: bad image"


def test_a_frame_line_the_paste_cut_inside_its_name_is_still_joined(tmp_path: Path) -> None:
    # GIVEN a paste hard-wrapped at 96 columns: two frame lines cut inside their function's name, the rest at the margin
    cut_a = _padded_frame(100, "register_kv_caches", "x").splitlines()[0]
    cut_b = _padded_frame(100, "initialize_kv_cache", "x").splitlines()[0]
    text = (
        "Traceback (most recent call last):\n"
        f"{cut_a[:96]}\n{cut_a[96:]}\n    self.nixl_wrapper.register_memory(descs)\n"
        f"{cut_b[:96]}\n{cut_b[96:]}\n    self.register(kv_caches)\n"
        "RuntimeError: NIXL_ERR_BACKEND\n"
    )
    assert max(len(line) for line in text.splitlines()) == 96
    report = judge_text(tmp_path, text)
    # WHEN judged THEN the cut lines were joined (the note says so)
    assert any("hard-wrapped" in note for note in report["notes"])


def test_an_executor_failing_to_create_its_nccl_communicator_crashed_in_dist_init(tmp_path: Path) -> None:
    # GIVEN TensorRT-LLM's worker line for a failed executor whose error is a TllmException, its `(file:line)` and its
    # trace (tllmException.cpp: `%-3d %*p %s + %zd`) through NcclCommunicator::createComm, cut
    report = judge_text(
        tmp_path,
        "[11/18/2025-09:33:30] [TRT-LLM] [RANK 0] [I] Starting TensorRT-LLM init.\n"
        "[11/18/2025-09:33:30] [TRT-LLM] [RANK 0] [E] Failed to initialize executor on rank 0: [TensorRT-LLM][ERROR] "
        "Assertion failed: Failed, NCCL error ../tensorrt_llm/runtime/ncclCommunicator.cpp:90 'invalid usage (run with "
        "NCCL_DEBUG=WARN for details)'\n"
        " (../tensorrt_llm/runtime/ncclCommunicator.cpp:90)\n"
        "1       0x7a14a782a0f4 tensorrt_llm::common::throwRuntimeError(char const*, int, char const*) + 76\n"
        "2       0x7a14577171ec tensorrt_llm::runtime::NcclCommunicator::createComm(int, int, "
        "tensorrt_llm::mpi::MpiComm const&) + 316\n"
        "3       0x7a14a7bd0e3e torch_ext::NcclCommunicatorO",
    )
    # WHEN judged THEN rank 0 crashed making its communicator, on the executor's line
    assert (report["verdict"], report["phase"]) == ("crashed", "dist_init")
    assert "Failed to initialize executor on rank 0" in root_text(report)


def test_a_survivors_communicator_rebuild_is_no_start_up(tmp_path: Path) -> None:
    # GIVEN the same runtime's exception whose trace runs createComm under abortAndReinit (fault tolerance's rebuild
    # after a rank failed)
    report = judge_text(
        tmp_path,
        "RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: NCCL error during ncclCommInitRankConfig: unhandled "
        "system error (../tensorrt_llm/runtime/ncclCommunicator.cpp:412)\n"
        "1       0x7a14a782a0f4 tensorrt_llm::common::throwRuntimeError(char const*, int, char const*) + 76\n"
        "2       0x7a14577171ec tensorrt_llm::runtime::NcclCommunicator::createComm(std::vector<int, "
        "std::allocator<int> > const&, int, tensorrt_llm::runtime::NcclUniqueIdRendezvousComm const&, unsigned long, "
        "std::chrono::duration<long, std::ratio<1l, 1000l> >) + 316\n"
        "3       0x7a14577181ec tensorrt_llm::runtime::NcclCommunicator::abortAndReinit(std::vector<int, "
        "std::allocator<int> > const&, unsigned long) + 988\n",
    )
    # WHEN judged THEN it is not placed in the ranks' start-up set-up
    assert report["phase"] != "dist_init"


def test_frames_of_the_longest_length_in_inline_code_are_no_hard_wrapped_paste(tmp_path: Path) -> None:
    # GIVEN the same traceback with each line put in markdown's inline code by hand (`` `line` ``)
    lines = (
        "Traceback (most recent call last):\n"
        + _padded_frame(119, "__call__", "return await self.app(scope, receive, send)")
        + _frame("starlette/applications.py", 113, "__call__", "await self.middleware_stack(scope, receive, send)")
        + _padded_frame(119, "wrapped_app", "await app(scope, receive, sender)")
        + "ValueError: bad image\n"
    ).splitlines()
    report = judge_text(tmp_path, "".join(f"`{line}`\n" for line in lines))
    # WHEN judged THEN no line was joined to the next and the exception line is the cause
    assert not any("hard-wrapped" in note for note in report["notes"])
    assert root_text(report) == "ValueError: bad image"
