"""A paste cut inside a logger's record after its prefix said an error level (stop 45, kind D2: a crash read as a
stall where the error line goes unread): the program logged an error as the excerpt ended, its words beyond it. The
formats are the loggers' own: dynamo's tracing records (`<RFC 3339 stamp> ERROR <module>.<function>: <message>`), Ray's
driver format (`%(asctime)s %(levelname)s %(filename)s:%(lineno)s -- %(message)s`, ray/_private/ray_constants.py
LOGGER_FORMAT) and vLLM's (`%(levelname)s %(asctime)s [%(filename)s:%(lineno)d] %(message)s`)."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from logphase.logs.matcher import cut_error_level
from logphase.packs.loading import load_packs
from tests.equivalence import reports
from tests.test_cut_headers import _against, _judge, _root

PACKS = load_packs(check_examples=False)

# whole records of the three formats, each at an error level
WHOLE_RECORDS = (
    "2025-11-05T01:56:54.292138Z ERROR scheduler.run_scheduler_process: Scheduler hit an exception",
    "2025-03-30 18:54:49,299 ERROR serialization.py:462 -- Failed to unpickle serialized exception",
    "ERROR 06-15 13:57:57 [core.py:517] EngineCore encountered a fatal error.",
)


def test_a_tracing_record_cut_after_its_error_level_ends_a_crashed_start(tmp_path: Path) -> None:
    # GIVEN two SGLang ranks behind dynamo's tracing format that ended their CUDA-graph capture, then an ERROR record
    # of the scheduler cut inside its target where the paste ends
    report = _judge(
        tmp_path,
        "2025-11-05T01:56:54.281615Z  INFO model_runner.init_device_graphs: Capture cuda graph end. Time elapsed: "
        "12.80 s. mem usage=4.69 GB. avail mem=20.31 GB.   \n"
        "2025-11-05T01:56:54.282043Z  INFO model_runner.init_device_graphs: Capture cuda graph end. Time elapsed: "
        "11.11 s. mem usage=4.69 GB. avail mem=20.31 GB.   \n"
        "2025-11-05T01:56:54.290150Z  INFO kv_events.__init__: Starting ZMQ publisher thread   \n"
        "2025-11-05T01:56:54.292138Z ERROR scheduler.run_sch\n",
    )
    # THEN crashed, the cut record the cause, and the confidence says its message is not in the log
    assert report["verdict"] == "crashed"
    assert _root(report)["line"] == 4
    assert "ERROR scheduler.run_sch" in str(_root(report)["text"])
    assert any("record logged at ERROR (line 4), cut before its message" in doubt for doubt in _against(report))


def test_a_ray_driver_record_cut_before_its_separator_ends_a_crashed_load(tmp_path: Path) -> None:
    # GIVEN vLLM's shard bar filled on a Ray cluster, then the driver's ERROR record cut before ` -- `
    report = _judge(
        tmp_path,
        "Loading safetensors checkpoint shards:  99% Completed | 161/162 [01:02<00:00,  1.72it/s]\n"
        "Loading safetensors checkpoint shards: 100% Completed | 162/162 [01:02<00:00,  2.59it/s]\n"
        "(RayWorkerWrapper pid=546) \n"
        "2025-03-30 18:54:49,299 ERROR serialization.py:462\n",
    )
    # THEN crashed during the weight load, the cut record the cause
    assert (report["verdict"], report["phase"]) == ("crashed", "weight_load")
    assert (_root(report)["line"], _root(report)["text"]) == (4, "2025-03-30 18:54:49,299 ERROR serialization.py:462")


def test_a_whole_error_prefix_whose_message_is_cut_inside_a_failures_lead_is_that_failure(tmp_path: Path) -> None:
    # GIVEN vLLM's V0 workers on a Ray cluster profiling memory, then a worker's ERROR record of worker_base's
    # `Error executing method %r. This might cause deadlock in distributed execution.` cut inside its first words
    report = _judge(
        tmp_path,
        "(RayWorkerWrapper pid=1463574, ip=192.168.10.60) INFO 03-27 10:29:01 [worker.py:267] Memory profiling takes "
        "4.26 seconds [repeated 30x across cluster]\n"
        "(RayWorkerWrapper pid=206994, ip=192.168.10.25) ERROR 03-27 10:29:13 [worker_base.py:620] Error executing "
        "metho\n",
    )
    # THEN crashed, the cut record the cause, its confidence saying the record is cut
    assert report["verdict"] == "crashed"
    assert _root(report)["line"] == 2
    assert any("record logged at ERROR (line 2), cut before its message" in doubt for doubt in _against(report))


def test_a_message_cut_inside_a_failures_lead_under_an_info_prefix_is_no_failure(tmp_path: Path) -> None:
    # GIVEN the same cut words logged at INFO
    report = _judge(
        tmp_path,
        "(RayWorkerWrapper pid=1463574, ip=192.168.10.60) INFO 03-27 10:29:01 [worker.py:267] Memory profiling takes "
        "4.26 seconds [repeated 30x across cluster]\n"
        "(RayWorkerWrapper pid=206994, ip=192.168.10.25) INFO 03-27 10:29:13 [worker_base.py:620] Error executing "
        "metho\n",
    )
    # THEN no failure: the level does not say one was logged
    assert report["verdict"] == "stalled"


def test_a_cut_error_record_after_a_stated_failure_leaves_that_failure_the_cause(tmp_path: Path) -> None:
    # GIVEN a vLLM engine's stated failure, then a record of the same format cut inside its stamp
    report = _judge(
        tmp_path,
        "INFO 06-15 13:57:50 [core.py:58] Initializing a V1 LLM engine (v0.9.1) with config: model='Qwen/Qwen3-8B'\n"
        "ERROR 06-15 13:57:57 [core.py:517] EngineCore failed to start.\n"
        "ERROR 06-15 13:57:57 [core.py:517] RuntimeError: CUDA error: out of memory\n"
        "ERROR 06-15 13:5\n",
    )
    # THEN crashed with the stated failure the cause, not the cut record
    assert report["verdict"] == "crashed"
    assert _root(report)["line"] == 3


def test_a_record_cut_after_an_info_level_is_no_failure(tmp_path: Path) -> None:
    # GIVEN the same Ray driver record cut alike, at INFO
    report = _judge(
        tmp_path,
        "Loading safetensors checkpoint shards:  50% Completed | 81/162 [00:31<00:31,  2.59it/s]\n"
        "2025-03-30 18:54:49,299 INFO worker.py:1810\n",
    )
    # THEN the log ends during the weight load with no error
    assert (report["verdict"], report["phase"]) == ("stalled", "weight_load")


def test_an_error_record_cut_mid_log_is_not_the_end(tmp_path: Path) -> None:
    # GIVEN a cut ERROR record with the load's bar going on after it
    report = _judge(
        tmp_path,
        "Loading safetensors checkpoint shards:  50% Completed | 81/162 [00:31<00:31,  2.59it/s]\n"
        "2025-03-30 18:54:49,299 ERROR serialization.py:462\n"
        "Loading safetensors checkpoint shards:  51% Completed | 82/162 [00:31<00:30,  2.59it/s]\n",
    )
    # THEN no crash: only the paste's last line can be cut by its end
    assert report["verdict"] == "stalled"


def test_whole_records_and_cut_levels_are_no_cut_error_record() -> None:
    # GIVEN whole records at an error level, whatever their message, and records cut inside their level word
    for text in (*WHOLE_RECORDS, "2025-03-30 18:54:49,299 ERR", "ERRO", "2025-11-05T01:56:54.292138Z ERROR"):
        # THEN none is a cut error record
        assert cut_error_level(PACKS, text) is None, text


@given(st.sampled_from(WHOLE_RECORDS), st.integers(min_value=0, max_value=200))
def test_any_cut_inside_a_records_prefix_after_its_level_is_an_error_record(record: str, seed: int) -> None:
    # GIVEN a whole record of an error level, cut anywhere after its level's word and before its prefix could end (a
    # vLLM record cut right after its stamp is a whole prefix of an older format of vLLM, with no message)
    level = record.index("ERROR") + len("ERROR")
    separator = {WHOLE_RECORDS[0]: ": ", WHOLE_RECORDS[1]: " -- ", WHOLE_RECORDS[2]: " ["}[record]
    message = record.index(separator) + len(separator)
    end = level + 1 + seed % (message - level - 2)
    # WHEN the cut text is read as a last line
    # THEN it is a record cut after the error level; the same cut of the same record at INFO is not
    assert cut_error_level(PACKS, record[:end]) == "ERROR", record[:end]
    assert cut_error_level(PACKS, record[:end].replace("ERROR", " INFO")) is None


def test_the_fast_path_reads_a_cut_error_record_ending_a_long_log_as_the_plain_path_does(tmp_path: Path) -> None:
    # GIVEN a long log (past the head the plain path reads alone) of shard bar lines, ending in a cut Ray record
    bar = "Loading safetensors checkpoint shards: {pct:>3}% Completed | {done}/700 [00:{sec:02d}<00:30,  2.05it/s]"
    lines = [bar.format(pct=done * 100 // 700, done=done, sec=done % 60) for done in range(1, 501)]
    lines.append("2025-03-30 18:54:49,299 ERROR serialization.py:462")
    log = tmp_path / "server.log"
    log.write_text("\n".join(lines) + "\n")
    # WHEN read by the fast path and by the plain path
    fast = reports.fast([log], PACKS)
    # THEN the same report: crashed at the cut record
    assert fast == reports.plain([log], PACKS)
    report = json.loads(fast)
    assert (report["verdict"], report["root_cause"]["line"]) == ("crashed", 501)
