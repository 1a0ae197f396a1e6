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
