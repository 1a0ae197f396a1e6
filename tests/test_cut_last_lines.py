"""A paste cut while the program printed a step's line (issue 25): the log's last line, which no rule reads, begins
the text every line of a rule starts with (its leading literal) and ends inside it. Written from TGI's router format
(router/src/logging.rs: `<RFC 3339 stamp>  INFO text_generation_router: <file>:<line>: <message>`, `Warming up model`
before the Warmup RPC) and the launcher's."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import judge_text

_STARTED = [
    "2023-07-14T01:44:48.433000Z  INFO text_generation_launcher: Starting shard 0",
    "2023-07-14T01:45:00.257293Z  INFO text_generation_launcher: Shard 0 ready in 11.823529818s",
    "2023-07-14T01:45:00.352230Z  INFO text_generation_launcher: Starting Webserver",
]
_ROUTER = "2023-07-14T01:45:01.248137Z  INFO text_generation_router: router/src/main.rs:212: "


def test_a_last_line_cut_inside_the_routers_warming_up_places_the_warmup_at_low_confidence(tmp_path: Path) -> None:
    # GIVEN a TGI start whose paste ends inside the router's `Warming up model` (`Warming u`)
    text = "\n".join([*_STARTED, _ROUTER + "Warming u"]) + "\n"
    # WHEN judged
    report = judge_text(tmp_path, text)
    # THEN the run reached the warmup, said at low confidence, naming the cut line and the text it was cut from
    assert report["phase"] == "warmup"
    assert report["confidence"] == "low"
    assert "cut inside `Warming up model`" in report["reason"]
    assert "line 4" in report["reason"]


def test_a_cut_that_holds_no_whole_word_of_the_lead_or_stands_before_other_lines_places_nothing(
    tmp_path: Path,
) -> None:
    # GIVEN the same start ending in `Warmin` (no whole word), and one whose `Warming u` line is followed by the
    # launcher's next line (a line in the middle of a log is no paste's cut)
    (tmp_path / "short").mkdir()
    (tmp_path / "middle").mkdir()
    short = "\n".join([*_STARTED, _ROUTER + "Warmin"]) + "\n"
    middle = "\n".join(
        [
            *_STARTED,
            _ROUTER + "Warming u",
            "2023-07-14T01:45:02.000000Z  INFO text_generation_launcher: Waiting for shard to be ready... rank=0",
        ]
    )
    # WHEN each is judged
    reports = [judge_text(tmp_path / "short", short), judge_text(tmp_path / "middle", middle + "\n")]
    # THEN neither placed the warmup: the webserver's start is the furthest step a line says
    assert [report["phase"] for report in reports] == ["http_start", "http_start"]


def test_a_cut_inside_a_line_of_a_step_a_whole_line_placed_adds_no_step_and_is_quoted(tmp_path: Path) -> None:
    # GIVEN a shard waiting (the launcher's `Waiting for shard to be ready... rank=0`), and the same log with the paste
    # cut inside that line printed again
    lines = [
        "2024-06-28T11:29:18.100000Z  INFO shard-manager: text_generation_launcher: Starting shard rank=0",
        "2024-06-28T11:29:28.227565Z  INFO shard-manager: text_generation_launcher: Waiting for shard to be ready... "
        "rank=0",
    ]
    cut = "2024-06-28T11:29:28.329419Z  INFO shard-manager: text_generation_launcher: Waiting for shard to be"
    (tmp_path / "whole").mkdir()
    (tmp_path / "cut").mkdir()
    # WHEN both are judged
    whole = judge_text(tmp_path / "whole", "\n".join(lines) + "\n")
    after = judge_text(tmp_path / "cut", "\n".join([*lines, cut]) + "\n")
    # THEN the cut line adds no step (the same phase and verdict, nothing says a cut placed the step), and it is the
    # run's last line of that step, quoted as the cause (realworld 663's label quotes the cut line)
    assert after["phase"] == whole["phase"] == "weight_load"
    assert after["verdict"] == whole["verdict"]
    assert after["root_cause"]["line"] == 3
    assert "cut inside" not in after["reason"]


_VLLM = "(EngineCore pid=258) INFO 04-24 10:{} [{}] {}"


def test_a_last_line_cut_past_its_rules_lead_is_read_as_that_rule_where_its_regex_can_still_match(
    tmp_path: Path,
) -> None:
    # GIVEN a vLLM V1 compile (vllm/compilation/backends.py: `Using cache directory: %s for vLLM's torch.compile`,
    # `Compiling a graph for compile range %s takes %.2f s`; monitor.py: `torch.compile took %.2f s in total`), then
    # a second graph's cache line cut inside its path
    lines = [
        _VLLM.format("21:03", "gpu_model_runner.py:4820", "Model loading took 18.47 GiB memory and 10.99 seconds"),
        _VLLM.format(
            "21:10",
            "backends.py:1051",
            "Using cache directory: /root/.cache/vllm/torch_compile_cache/c7/rank_0_0/bb for vLLM's torch.compile",
        ),
        _VLLM.format("21:30", "backends.py:390", "Compiling a graph for compile range (1, 2048) takes 19.40 s"),
        _VLLM.format("21:32", "monitor.py:48", "torch.compile took 28.20 s in total"),
        _VLLM.format("22:26", "backends.py:1051", "Using cache directory: /root/.cache/vllm/torch_compile_cache/c7/ra"),
    ]
    # WHEN judged
    report = judge_text(tmp_path, "\n".join(lines) + "\n")
    # THEN the run is compiling and the cut line, a compile's begin, is its last step
    assert report["phase"] == "compile"
    assert report["root_cause"]["line"] == 5


def test_a_cut_list_item_is_the_last_step_and_a_cut_that_repeats_a_line_or_a_bar_tick_is_not(tmp_path: Path) -> None:
    # GIVEN vLLM's platform probe (vllm/platforms/__init__.py: `Checking if %s platform is available.`) cut inside the
    # next platform's name; the same probe cut inside the very line printed before it; and a capture bar cut inside
    # its description after a whole tick
    probe = "DEBUG 05-15 10:52:42 [__init__.py:{}] {}"
    head = [
        probe.format(52, "Checking if CUDA platform is available."),
        probe.format(72, "Confirmed CUDA platform is available."),
        probe.format(158, "Checking if CPU platform is available."),
    ]
    bar = "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):  {}%|███▉      | {}/51 [00:07<00:10,  2.83it/s]"
    texts = {
        "other": [*head, probe.format(180, "Checking if Neuron")],
        "again": [*head, probe.format(158, "Checking if CPU pla")],
        "bar": [
            "INFO 05-15 10:53:00 [gpu_model_runner.py:2000] Model loading took 1.2 GiB and 3.1 seconds",
            bar.format(39, 20),
            bar.format(41, 21),
            "Capturing CUDA graphs (mixed prefill-decode,",
        ],
    }
    reports = {}
    for name, lines in texts.items():
        (tmp_path / name).mkdir()
        # WHEN each is judged
        reports[name] = judge_text(tmp_path / name, "\n".join(lines) + "\n")
    # THEN the cut next item is quoted; a cut repeat of the line before leaves that line; a cut tick leaves the tick
    assert reports["other"]["root_cause"]["line"] == 4
    assert reports["again"]["root_cause"]["line"] == 3
    assert reports["bar"]["root_cause"]["line"] == 3
