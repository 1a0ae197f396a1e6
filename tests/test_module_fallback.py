"""The fallback for a known system's line no rule reads (issue 25, item 3): the logger's source file in its prefix (pack
`[[module]]`) places it in a start-up phase, at low confidence, never as a failure, an end or a ready server. Logs
written from vLLM's logger formats (patterns/vllm.toml `vllm.prefix.log`: `LEVEL MM-DD HH:MM:SS file.py:N] ` before
0.8, `… [file.py:N] ` after it, behind `(VllmWorker rank=N pid=N) `), with messages no rule reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from logphase.errors import PackError
from logphase.logs.matcher import explain
from logphase.packs import load_packs
from logphase.phases import SUCCESS_VERDICTS, Verdict
from tests.conftest import judge_text
from tests.equivalence import reports

TERMINAL = {Verdict.CRASHED.value, Verdict.ABORTED.value, Verdict.TIMEOUT.value, Verdict.FINISHED.value}
TERMINAL |= {verdict.value for verdict in SUCCESS_VERDICTS}

# vLLM 0.6.3's V0 engine (llm_engine.py's engine line, read by a rule), then weight_utils.py's download note, which no
# rule reads (download_weights_from_hf, 0.4.3-0.33.0)
V0_LOG = (
    "INFO 11-05 14:02:10 llm_engine.py:237] Initializing an LLM engine (v0.6.3) with config: model='facebook/opt-125m',"
    " speculative_config=None, tokenizer='facebook/opt-125m', tensor_parallel_size=2\n"
    "INFO 11-05 14:02:12 weight_utils.py:243] No model.safetensors.index.json found in local cache.\n"
)
# vLLM 0.8's V1 worker: rank assigned, model loaded (rules), then the decorated model's first call starts compiling
# (decorators.py, a DEBUG line no rule reads)
V1_LOG = (
    "(VllmWorker rank=0 pid=4242) INFO 04-07 19:40:10 [parallel_state.py:957] rank 0 in world size 1 is assigned as"
    " DP rank 0, PP rank 0, TP rank 0\n"
    "(VllmWorker rank=0 pid=4242) INFO 04-07 19:40:12 [gpu_model_runner.py:1329] Starting to load model"
    " meta-llama/Llama-3.1-8B...\n"
    "(VllmWorker rank=0 pid=4242) INFO 04-07 19:40:40 [gpu_model_runner.py:1347] Model loading took 14.99 GiB and"
    " 28.100000 seconds\n"
    "(VllmWorker rank=0 pid=4242) DEBUG 04-07 19:40:41 [decorators.py:203] Start compiling function <code object"
    ' forward at 0x7f3a2c1b2f50, file "/usr/lib/python3/site-packages/vllm/model_executor/models/llama.py", line 340>\n'
)


def test_a_v0_line_no_rule_reads_is_placed_by_its_logger_module_at_low_confidence(tmp_path: Path) -> None:
    # GIVEN a vLLM 0.6 log whose last line, weight_utils.py's, no rule reads
    assert not explain(V0_LOG.splitlines()[1], load_packs(check_examples=False)).matches
    # WHEN judged post-mortem
    report = judge_text(tmp_path, V0_LOG)
    # THEN the run is in weight_load, placed by the module, stalled where the log ends, at low confidence
    assert report["phase"] == "weight_load"
    assert report["verdict"] == "stalled"
    assert report["confidence"] == "low"
    assert report["reason"].endswith(
        "weight_load placed by its logger's module weight_utils.py (line 2), no rule read it"
    )
    assert report["root_cause"]["line"] == 2


def test_a_v1_worker_line_no_rule_reads_places_its_rank_by_its_module(tmp_path: Path) -> None:
    # GIVEN a vLLM 0.8 worker's log that ends on decorators.py's compile line, which no rule reads
    assert not explain(V1_LOG.splitlines()[3], load_packs(check_examples=False)).matches
    # WHEN judged post-mortem
    report = judge_text(tmp_path, V1_LOG)
    # THEN rank 0 is in compile, after the weight load the rules read, at low confidence, and the reason says why
    assert (report["phase"], report["furthest_phase"], report["verdict"]) == ("compile", "compile", "stalled")
    assert report["confidence"] == "low"
    assert "compile placed by its logger's module decorators.py (line 4), no rule read it" in report["reason"]
    assert [(row["phase"], row["rank"]) for row in report["phases"]] == [
        ("dist_init", "rank 0"),
        ("weight_load", "rank 0"),
        ("compile", "rank 0"),
    ]


def test_a_line_a_rule_reads_is_never_the_fallback_and_keeps_its_confidence(tmp_path: Path) -> None:
    # GIVEN the same worker's log without the compile line: every line is a rule's
    text = "".join(V1_LOG.splitlines(keepends=True)[:3])
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN nothing is said of a module, and the confidence is not the fallback's
    assert report["phase"] == "weight_load"
    assert "logger's module" not in report["reason"]
    assert report["confidence"] != "low"


@pytest.mark.parametrize(
    "line",
    [
        # an ERROR of a module that logs in the KV cache's sizing (v1/core/kv_cache_utils.py)
        "(VllmWorker rank=0 pid=4242) ERROR 04-07 19:40:45 [kv_cache_utils.py:700] The KV cache pool is smaller than"
        " one request of max_model_len tokens",
        # an ERROR of the V1 model runner that names a CUDA graph (gpu_model_runner.py's capture words)
        "(VllmWorker rank=0 pid=4242) ERROR 04-07 19:40:45 [gpu_model_runner.py:1900] CUDA graph pool for batch size 8"
        " is larger than expected",
    ],
)
def test_a_fallback_line_never_yields_a_terminal_verdict(tmp_path: Path, line: str) -> None:
    # GIVEN a log whose only line is an ERROR no rule reads, of a module the vLLM pack maps
    assert not explain(line, load_packs(check_examples=False)).matches
    # WHEN judged post-mortem
    report = judge_text(tmp_path, line + "\n")
    # THEN it places the run at most: never crashed, aborted, timed out, finished or ready, and no failure is its cause
    assert report["verdict"] not in TERMINAL
    assert report["verdict"] == "stalled"
    assert report["phase"] in ("kv_cache", "cuda_graph")
    assert report["confidence"] == "low"
    assert report["root_cause"]["rule"].startswith("fallback.")


def test_the_fast_path_reads_a_fallback_line_past_the_head_as_the_plain_path(tmp_path: Path) -> None:
    # GIVEN a vLLM log longer than its head (500 lines, read in full by both paths): weight_utils.py lines a rule
    # reads (the head teaches their template), then other modules' noise, then one weight_utils.py line no rule
    # reads on the same template, then more noise
    def stamp(second: int) -> str:
        return f"{9 + second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}"

    lines = [
        f"INFO 03-11 {stamp(n)} [weight_utils.py:243] Using model weights format ['*.safetensors']" for n in range(600)
    ]
    lines += [f"INFO 03-11 {stamp(600 + n)} [metrics.py:100] some periodic noise {n}" for n in range(800)]
    lines.append(
        f"INFO 03-11 {stamp(1400)} [weight_utils.py:244] Loaded sparse attention config from /models/m/sparse.json"
    )
    lines += [f"INFO 03-11 {stamp(1401 + n)} [metrics.py:100] some periodic noise {n}" for n in range(800)]
    log = tmp_path / "long.log"
    log.write_text("\n".join(lines) + "\n")
    packs = load_packs(check_examples=False)
    # WHEN read by the plain path and by the fast path
    plain, fast = reports.plain([log], packs), reports.fast([log], packs)
    # THEN the reports are the same, and both end the weight load at the unread line
    assert fast == plain
    assert '"end_line": 1401' in plain


PACK = """
[pack]
name = "demo"
schema = 1
systems = ["demo"]

[[prefix]]
id = "demo.prefix"
regex = '^(?P<level>INFO|ERROR) (?:(?P<file>[\\w.]+):(?P<line>\\d+)\\] )?'
examples = ["INFO loader.py:3] weights loaded"]
{extra}
[[module]]
id = "demo.module.loader"
prefixes = ["{prefix}"]
file = "{file}"
phase = "{phase}"
source = "demo 1.0 loader.py"
"""


def _refusal(
    tmp_path: Path, *, phase: str = "weight_load", prefix: str = "demo.prefix", file: str = "loader.py"
) -> str:
    path = tmp_path / "demo.toml"
    bare = '[[prefix]]\nid = "demo.bare"\nregex = \'^DEMO \'\nexamples = ["DEMO x"]\n'
    extra = bare if prefix == "demo.bare" else ""
    path.write_text(PACK.format(phase=phase, prefix=prefix, file=file, extra=extra))
    with pytest.raises(PackError) as caught:
        load_packs([path], builtin=False)
    return str(caught.value)


@pytest.mark.parametrize("phase", ["http_start", "warmup", "ready", "serving"])
def test_a_module_entry_may_not_place_a_line_past_the_start(tmp_path: Path, phase: str) -> None:
    # GIVEN a pack whose module entry names a phase the main process reports (the server up, or going up)
    # WHEN it is loaded
    error = _refusal(tmp_path, phase=phase)
    # THEN it is refused by name: a fallback never says the server is up
    assert f"unknown start-up phase {phase!r}" in error


def test_a_module_entry_reads_only_a_prefix_of_its_own_pack_that_names_a_file(tmp_path: Path) -> None:
    # GIVEN module entries naming another pack's prefix, a prefix without a `file` group, a path for a file name
    # WHEN each is loaded
    # THEN each is refused, saying what is wrong
    assert "'vllm.prefix.log' is no [[prefix]] of this pack" in _refusal(tmp_path, prefix="vllm.prefix.log")
    assert "'demo.bare' has no `file` group" in _refusal(tmp_path, prefix="demo.bare")
    assert "is not a source file's name" in _refusal(tmp_path, file="model_loader/loader.py")


def test_every_shipped_module_entry_names_a_start_up_phase_and_a_file_of_its_prefixes() -> None:
    # GIVEN the shipped packs
    packs = load_packs(check_examples=False)
    hints = [hint for pack in packs.packs for hint in pack.modules]
    # THEN each module entry places lines in a start-up step before the HTTP server, of a Python or C/C++ source file
    # (c10's prefixes name `ProcessGroupNCCL.cpp`), and says where the released source logs it
    assert hints
    for hint in hints:
        assert hint.phase.value in (
            "launch",
            "tokenizer",
            "dist_init",
            "weight_load",
            "kv_cache",
            "draft_init",
            "compile",
            "cuda_graph",
        ), hint.id
        assert hint.file.endswith((".py", ".cpp", ".cc", ".h", ".hpp")) and "/" not in hint.file, hint.id
        # the released package the file is in: the system's own, or DeepSpeed's for the torch pack's DeepSpeed logger
        package = "deepspeed" if hint.prefixes == ("torch.prefix.deepspeed",) else hint.system
        assert hint.source.startswith(f"{package}/"), hint.id
