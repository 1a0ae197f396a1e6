"""`ray job submit`'s own lines (ray/dashboard/modules/job/cli.py, ray 2.40.0), behind the driver's logger prefix
`%(asctime)s\t%(levelname)s %(filename)s:%(lineno)s -- ` with cli_logger's level names (SUCC, WARN, ERR): the job
server's address, the job taken, its logs tailed, and how the job ended (succeeded, stopped, failed)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import judge_text, root_text

ADDRESS = "2024-12-24 13:10:01,906\tINFO cli.py:41 -- Job submission server address: http://127.0.0.1:8265"
RULE = "2024-12-24 13:10:02,118\tSUCC cli.py:64 -- " + "-" * 55
SUBMITTED = [
    ADDRESS,
    "",
    RULE,
    "2024-12-24 13:10:02,118\tSUCC cli.py:65 -- Job 'raysubmit_nSWpvu9ifM1t1FEi' submitted successfully",
    RULE,
    "",
    "2024-12-24 13:10:02,119\tINFO cli.py:291 -- Next steps",
    "2024-12-24 13:10:02,119\tINFO cli.py:292 --   Query the logs of the job:",
    "2024-12-24 13:10:02,119\tINFO cli.py:294 --     ray job logs raysubmit_nSWpvu9ifM1t1FEi",
    "",
    "2024-12-24 13:10:02,321\tINFO cli.py:310 -- Tailing logs until the job exits (disable with --no-wait):",
]


def _judge(tmp_path: Path, lines: list[str]) -> dict[str, object]:
    return judge_text(tmp_path, "\n".join(lines) + "\n")


def test_the_job_server_address_alone_is_the_jobs_launch_placed_by_its_module(tmp_path: Path) -> None:
    # GIVEN only the line every `ray job` command prints first (_get_sdk_client's labeled value)
    report = _judge(tmp_path, [ADDRESS])
    # THEN launch, at low confidence: the job CLI's module placed it, no rule read it
    assert (report["phase"], report["verdict"], report["confidence"]) == ("launch", "stalled", "low")
    assert str(report["reason"]).endswith("launch placed by its logger's module cli.py (line 1), no rule read it")


def test_a_submitted_job_whose_logs_are_tailed_is_in_its_launch(tmp_path: Path) -> None:
    # GIVEN the submit's lines up to the tail of the entrypoint's logs
    report = _judge(tmp_path, SUBMITTED)
    # THEN the job is in launch, said by the tail line (a rule's, not the module's)
    assert (report["system"], report["phase"], report["verdict"]) == ("ray", "launch", "stalled")
    assert report["confidence"] != "low"
    assert "Tailing logs until the job exits" in root_text(report)


def test_a_job_that_succeeded_finished(tmp_path: Path) -> None:
    # GIVEN the submit, the entrypoint's output, then _log_job_status's success between dash rules
    end = "2024-12-24 13:23:11,705\tSUCC cli.py:65 -- Job 'raysubmit_nSWpvu9ifM1t1FEi' succeeded"
    report = _judge(tmp_path, [*SUBMITTED, "hello from the entrypoint", RULE, end, RULE])
    # THEN the job finished, as the CLI's end line says
    assert report["verdict"] == "finished"
    assert str(report["reason"]).startswith(
        "the job finished, as its own end line says: Job 'raysubmit_nSWpvu9ifM1t1FEi' succeeded"
    )


def test_a_job_that_was_stopped_is_aborted(tmp_path: Path) -> None:
    # GIVEN the submit, then the CLI's word that `ray job stop` stopped the job (its entrypoint sent SIGTERM)
    end = "2024-12-24 13:23:11,705\tWARN cli.py:82 -- Job 'raysubmit_nSWpvu9ifM1t1FEi' was stopped"
    report = _judge(tmp_path, [*SUBMITTED, end])
    # THEN aborted in the job's launch, the stop the cause
    assert (report["phase"], report["verdict"]) == ("launch", "aborted")
    assert "was stopped" in root_text(report)


def test_a_job_that_failed_crashed_and_its_entrypoints_exception_is_the_cause(tmp_path: Path) -> None:
    # GIVEN the submit, the entrypoint's traceback, then the CLI's `failed` and its status message
    failed = [
        "Traceback (most recent call last):",
        '  File "/tmp/job/train.py", line 3, in <module>',
        "    raise RuntimeError('boom')",
        "RuntimeError: boom",
        "2024-12-24 13:23:11,705\tERR cli.py:71 -- " + "-" * 39,
        "2024-12-24 13:23:11,705\tERR cli.py:72 -- Job 'raysubmit_nSWpvu9ifM1t1FEi' failed",
        "2024-12-24 13:23:11,705\tERR cli.py:73 -- " + "-" * 39,
        "2024-12-24 13:23:11,706\tINFO cli.py:86 -- Status message: Job entrypoint command failed with exit code 1",
    ]
    report = _judge(tmp_path, [*SUBMITTED, *failed])
    # THEN crashed, the entrypoint's exception line the cause (the CLI's `failed` is its consequence)
    assert report["verdict"] == "crashed"
    assert root_text(report) == "RuntimeError: boom"
