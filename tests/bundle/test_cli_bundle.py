"""`logphase bundle`: real files in, one .tar.gz out — its members, the analysis in it, cuts, redaction, errors."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, run_cli

DEMO = FIXTURES / "logs" / "sglang" / "eagle3-tp8-warmup-health-503.log"
DEMO_NAME = DEMO.name
AS_OF = "2026-04-21 09:30:00"
# The demo log's two client addresses (the health checks); 127.0.0.1 and 0.0.0.0 are kept
DEMO_ADDRESSES = re.compile(r"10\.0\.12\.7|10\.244\.3\.1")
GPU2 = FIXTURES / "real" / "gpu-h200x2"


def members(path: Path) -> dict[str, bytes]:
    """The bundle's files by their name inside its folder."""
    with tarfile.open(path, "r:gz") as archive:
        out = {}
        for member in archive.getmembers():
            extracted = archive.extractfile(member)
            assert extracted is not None
            top, _, name = member.name.partition("/")
            assert top == path.name.removesuffix(".tar.gz")
            out[name] = extracted.read()
        return out


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder holding a copy of the demo log, made the current folder."""
    folder = tmp_path / "work"
    folder.mkdir()
    shutil.copy(DEMO, folder / DEMO_NAME)
    monkeypatch.chdir(folder)
    return folder


def analyze_json(*args: str) -> dict[str, Any]:
    result = run_cli("analyze", *args, "--format", "json")
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_bundle_of_the_demo_log(work: Path) -> None:
    # GIVEN the demo log WHEN bundled
    result = run_cli("bundle", DEMO_NAME, "-o", "report.tar.gz", "--as-of", AS_OF)
    # THEN exit 0, one line naming the file, and the bundle's files
    assert result.exit_code == 0, result.stderr
    size = (work / "report.tar.gz").stat().st_size
    assert result.stdout.startswith(f"report.tar.gz: {size:,} bytes, 5 files, ")
    files = members(work / "report.tar.gz")
    assert list(files) == ["README.md", "analysis.md", "analysis.json", "versions.json", f"logs/{DEMO_NAME}"]
    # the analysis is `analyze --format json` of the same log, with the two addresses replaced
    bundled = files["analysis.json"].decode()
    expected = json.dumps(analyze_json(DEMO_NAME, "--as-of", AS_OF), indent=2, ensure_ascii=False)
    assert DEMO_ADDRESSES.search(bundled) is None
    assert re.sub(r"\[ip-\d+\]", "IP", bundled.strip()) == DEMO_ADDRESSES.sub("IP", expected)
    # the log keeps its 392 lines; each address is one placeholder in the log and in the analysis
    log = files[f"logs/{DEMO_NAME}"].decode()
    original = DEMO.read_bytes().decode()  # not read_text(): that turns progress bars' \r into line breaks
    assert log.count("\n") == original.count("\n") == 392
    assert DEMO_ADDRESSES.search(log) is None
    assert "127.0.0.1:47190" in log and "host='0.0.0.0'" in log
    last = json.loads(bundled)["last_line"]
    assert last["line"] == 392 and log.split("\n")[391] == last["text"]
    # versions: the runtime, what the log says, what pip has
    versions = json.loads(files["versions.json"])
    assert versions["runtime"]["python"] == sys.version.split()[0]
    assert (versions["log"]["system"], versions["log"]["tp_size"], versions["log"]["speculative_algorithm"]) == (
        "sglang",
        8,
        "EAGLE3",
    )
    assert set(versions["pip"]) >= {"torch", "sglang", "vllm"}
    # the README lists every file and the addresses redacted (2 values)
    readme = files["README.md"].decode()
    for name in files:
        assert f"| {name} |" in readme
    assert re.search(r"^\| ip \| 2 \| \d+ \|", readme, re.MULTILINE)
    assert "Nothing: every log is in whole." in readme


def test_the_markdown_is_the_analyze_markdown_and_names_no_absolute_path(tmp_path: Path, work: Path) -> None:
    # GIVEN the demo log given by its absolute path, outside the working folder
    elsewhere = tmp_path / "logs" / "node0"
    elsewhere.mkdir(parents=True)
    shutil.copy(DEMO, elsewhere / DEMO_NAME)
    # WHEN bundled without redaction
    result = run_cli("bundle", str(elsewhere / DEMO_NAME), "-o", "b.tar.gz", "--as-of", AS_OF, "--no-redact")
    assert result.exit_code == 0, result.stderr
    files = members(work / "b.tar.gz")
    # THEN the markdown is analyze's for the log named by its file name; no file holds a local path
    markdown = files["analysis.md"].decode()
    assert markdown == run_cli("analyze", DEMO_NAME, "--format", "markdown", "--as-of", AS_OF).stdout
    assert f"· {DEMO_NAME}: 392 lines ·" in markdown
    for name, data in files.items():
        assert str(tmp_path).encode() not in data, name
    # and --no-redact keeps the log as it was, addresses and all
    assert files[f"logs/{DEMO_NAME}"] == DEMO.read_bytes()
    assert "Nothing (`--no-redact`)" in files["README.md"].decode()


def test_a_log_inside_the_working_folder_is_named_relative_to_it(work: Path) -> None:
    # GIVEN the log in a subfolder of the working folder, given by its absolute path
    (work / "node1").mkdir()
    shutil.copy(DEMO, work / "node1" / "server.log")
    result = run_cli("bundle", str(work / "node1" / "server.log"), "-o", "b.tar.gz", "--as-of", AS_OF)
    assert result.exit_code == 0, result.stderr
    files = members(work / "b.tar.gz")
    # THEN its relative path names it in the analysis and in the bundle
    assert json.loads(files["analysis.json"])["inputs"][0]["path"] == "node1/server.log"
    assert "logs/node1/server.log" in files


def big_log(path: Path) -> int:
    """The demo's startup, 20,000 lines of health checks with a scheduler's death (a traceback of 16
    lines) at line 10,000: ~1.5 MB. Returns the line of the exception."""
    startup = DEMO.read_bytes().decode().split("\n")[:260]
    death = (
        (FIXTURES / "logs" / "sglang" / "scheduler-died-sigkill-weight-load.log")
        .read_bytes()
        .decode()
        .split("\n")[63:79]
    )
    lines = list(startup)
    number = len(lines)
    while len(lines) < 20_000:
        if len(lines) == 9_999:
            lines.extend(death)
            continue
        number += 1
        lines.append(f'[2026-04-21 09:16:20] INFO:     10.0.12.7:{1024 + number % 60000} - "GET /health HTTP/1.1" 503')
    path.write_text("\n".join(lines[:20_000]) + "\n")
    return 10_015


@pytest.mark.slow
def test_a_big_log_is_cut_with_its_line_numbers_kept(work: Path) -> None:
    # GIVEN a ~1.5 MB log whose scheduler died at line 10,015 (its traceback opens at 10,000)
    exception = big_log(work / "big.log")
    original = (work / "big.log").read_bytes().decode().split("\n")
    # WHEN bundled with logs over 0.5 MB cut
    result = run_cli("bundle", "big.log", "-o", "b.tar.gz", "--cut-over", "0.5", "--post-mortem")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.rstrip().endswith(", 1 log cut")
    files = members(work / "b.tar.gz")
    assert "logs/big.log" not in files
    excerpt = files["logs/big.log.excerpt"].decode().split("\n")
    analysis = json.loads(files["analysis.json"])
    # THEN the root cause is the exception line, and the excerpt shows it under its own number
    assert analysis["root_cause"]["line"] == exception
    assert analysis["inputs"][0]["lines"] == 20_000
    by_number = {int(line[:5]): line[7:] for line in excerpt if line[:5].strip().isdigit()}
    assert by_number[exception].startswith("RuntimeError: Rank 6 scheduler died during initialization")
    # the head (1–1000), 30 lines around the traceback (10,000–10,015) and the tail (19,001–20,000)
    for number in [1, 1000, 9_970, 10_000, 10_045, 19_001, 20_000]:
        assert by_number[number] == DEMO_ADDRESSES.sub("[ip-1]", original[number - 1]), number
    assert 1500 not in by_number and 15_000 not in by_number
    assert "....  [lines 1001–" in "\n".join(excerpt)
    assert len(excerpt) < 2200
    readme = files["README.md"].decode()
    cut = next(line for line in readme.splitlines() if line.startswith("- logs/big.log.excerpt (original "))
    assert cut.startswith(
        f"- logs/big.log.excerpt (original {(work / 'big.log').stat().st_size / (1 << 20):.1f} MB): kept "
    )
    assert " of 20,000 lines: 1–1000, 9970–" in cut and cut.endswith(", 19001–20000")


def test_flight_recorder_dumps_among_the_logs_go_in_as_they_are(work: Path) -> None:
    # GIVEN the real two-GPU hang: the capture's log and both ranks' flight-recorder dumps (pickles)
    dumps = [GPU2 / "fr" / "fr-rank-0", GPU2 / "fr" / "fr-rank-1"]
    result = run_cli("bundle", str(GPU2 / "capture-run.log"), *map(str, dumps), "-o", "b.tar.gz")
    assert result.exit_code == 0, result.stderr
    files = members(work / "b.tar.gz")
    # THEN the dumps are in, byte for byte, and the analysis names the rank missing from the collective
    assert files["dumps/fr-rank-0"] == dumps[0].read_bytes()
    assert files["dumps/fr-rank-1"] == dumps[1].read_bytes()
    flight = json.loads(files["analysis.json"])["flight_recorder"]
    assert flight["missing_ranks"] == ["rank 1"]
    assert [dump["path"] for dump in flight["dumps"]] == ["fr-rank-0", "fr-rank-1"]
    # AND no text the bundle wrote names a local folder (the pickles hold the capture machine's own
    # paths, under /work and /opt: nothing to redact, so kept byte for byte, and said so)
    for name, data in files.items():
        if not name.startswith("dumps/"):
            assert str(FIXTURES).encode() not in data, name
    assert "| dumps/fr-rank-0 | 1.7 KB | a torch flight-recorder dump (pickle, redacted in place) |" in (
        files["README.md"].decode()
    )


def test_stack_dumps_from_files_are_added(work: Path) -> None:
    # GIVEN py-spy's JSON dump of a server's processes
    dump = FIXTURES / "stacks" / "pyspy-subprocesses-idle.json"
    result = run_cli("bundle", DEMO_NAME, "--from", str(dump), "-o", "b.tar.gz", "--no-redact")
    assert result.exit_code == 0, result.stderr
    files = members(work / "b.tar.gz")
    # THEN the stacks report is the one `logphase stacks --from` gives, and the dump itself is in
    stacks = run_cli("stacks", "--from", str(dump), "--format", "json")
    assert json.loads(files["stacks.json"]) == json.loads(stacks.stdout)
    assert files[f"dumps/{dump.name}"] == dump.read_bytes()
    # AND the analysis judged the same stacks: they are in analysis.json, as `analyze --pid` puts them
    analysis = json.loads(files["analysis.json"])
    assert analysis["stacks"]["summary"] == json.loads(stacks.stdout)["summary"]


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """A Python process blocked in a named function, killed at teardown even when the test fails."""
    code = "import time\ndef wait_here_for_the_bundle():\n    time.sleep(120)\nwait_here_for_the_bundle()\n"
    process = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    time.sleep(0.5)  # into the sleep
    yield process
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)


@pytest.mark.live
def test_live_stacks_of_a_pid(work: Path, sleeper: subprocess.Popen[bytes]) -> None:
    # GIVEN a running Python process WHEN bundled with --pid
    result = run_cli("bundle", DEMO_NAME, "--pid", str(sleeper.pid), "-o", "b.tar.gz")
    assert result.exit_code == 0, result.stderr
    files = members(work / "b.tar.gz")
    readme = files["README.md"].decode()
    # THEN its stack is in stacks.json — or, where py-spy may not attach, the README says why
    if "permission denied" in readme:
        assert "stacks.json" not in files
        assert "- no live stacks: permission denied reading 1 process with py-spy" in readme
    else:
        stacks = json.loads(files["stacks.json"])
        (process,) = stacks["processes"]
        assert process["pid"] == sleeper.pid and process["error"] is None
        assert "wait_here_for_the_bundle" in files["stacks.json"].decode()
        assert "| stacks.json |" in readme
        # AND this machine's GPUs (NVML), or the README says why they were not read
        gpus = stacks["gpus"]
        assert gpus["source"] == "nvml" and bool(gpus["devices"]) != bool(gpus["note"])
        assert gpus["note"] is None or f"- {gpus['note']}" in readme
        # AND the analysis holds the same stacks (it said `stacks: null` beside a stacks.json once)
        assert json.loads(files["analysis.json"])["stacks"]["processes"][0]["pid"] == sleeper.pid


def fake_py_spy(folder: Path, stderr: str) -> Path:
    fake = folder / "py-spy"
    fake.write_text(f"#!/bin/sh\necho '{stderr}' >&2\nexit 1\n")
    fake.chmod(0o755)
    return fake


@pytest.mark.parametrize(
    ("stderr", "note"),
    [
        (
            "Error: Permission Denied: Try running again with elevated permissions",
            "- no live stacks: permission denied reading 1 process with py-spy (",
        ),
        ("Error: Failed to open process - check if it is running.", ": the process exited"),
    ],
)
def test_stacks_that_cannot_be_had_are_said_in_the_readme(
    tmp_path: Path, work: Path, sleeper: subprocess.Popen[bytes], stderr: str, note: str
) -> None:
    # GIVEN py-spy denied by ptrace, or the process gone by the time py-spy looks
    fake = fake_py_spy(tmp_path, stderr)
    result = run_cli("bundle", DEMO_NAME, "--pid", str(sleeper.pid), "--py-spy", str(fake), "-o", "b.tar.gz")
    # THEN the bundle is still written, and its README says why there are no stacks
    assert result.exit_code == 0, result.stderr
    readme = members(work / "b.tar.gz")["README.md"].decode()
    assert note in readme


def test_a_pid_that_does_not_exist_is_an_error_and_writes_nothing(work: Path) -> None:
    # GIVEN the pid of a process that has exited
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    # WHEN bundled THEN the house form, exit 3, and no file
    result = run_cli("bundle", DEMO_NAME, "--pid", str(gone.pid), "-o", "b.tar.gz")
    assert (result.exit_code, result.stderr.splitlines()[0]) == (3, f"logphase: error: no process {gone.pid}")
    assert result.stderr.splitlines()[1].startswith("  hint: ")
    assert sorted(p.name for p in work.iterdir()) == [DEMO_NAME]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.log", "-o", "b.tar.gz"], "logphase: error: missing.log: no such file"),
        ([DEMO_NAME, "-o", "no/such/folder/b.tar.gz"], "logphase: error: no/such/folder: no such folder"),
        ([DEMO_NAME, "-o", "."], "logphase: error: .: is a directory"),
        (["-", "-o", "b.tar.gz"], "logphase: error: a bundle cannot read standard input"),
    ],
)
def test_errors_are_in_the_house_form_and_leave_no_file(work: Path, args: list[str], message: str) -> None:
    # GIVEN a missing log, an output folder that does not exist, a folder as output, stdin
    result = run_cli("bundle", *args)
    # THEN one error line and a hint, exit 3 (2 for stdin, a usage error), nothing written
    assert result.exit_code == (2 if args[0] == "-" else 3)
    assert result.stderr.splitlines()[0] == message
    assert result.stderr.splitlines()[1].startswith("  hint: ")
    assert sorted(p.name for p in work.iterdir()) == [DEMO_NAME]


def test_an_unwritable_output_folder_is_an_error(tmp_path: Path, work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a folder this user may not write in (root writes everywhere: the refusal the kernel
    # would give another user is made here)
    locked = tmp_path / "locked"
    locked.mkdir()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: False if Path(path) == locked else real_access(path, mode))
    result = run_cli("bundle", DEMO_NAME, "-o", str(locked / "b.tar.gz"))
    # THEN the house form, exit 3, nothing in it
    assert (result.exit_code, result.stderr.splitlines()[0]) == (3, f"logphase: error: {locked}: not writable")
    assert list(locked.iterdir()) == []


def test_a_log_that_breaks_while_read_leaves_no_partial_bundle(work: Path) -> None:
    # GIVEN a compressed log cut in the middle (a download that stopped)
    import gzip

    whole = gzip.compress(DEMO.read_bytes())
    (work / "cut.log.gz").write_bytes(whole[: len(whole) // 2])
    (work / "b.tar.gz").write_bytes(b"an earlier bundle")
    # WHEN bundled THEN exit 3 in the house form; the earlier file at -o is untouched, no temporary file is left
    result = run_cli("bundle", "cut.log.gz", "-o", "b.tar.gz", "--force")
    assert result.exit_code == 3
    assert result.stderr.startswith("logphase: error: cut.log.gz: the file ends early or is damaged")
    assert (work / "b.tar.gz").read_bytes() == b"an earlier bundle"
    assert sorted(p.name for p in work.iterdir()) == sorted([DEMO_NAME, "cut.log.gz", "b.tar.gz"])


def test_without_o_the_bundle_is_named_by_the_time(work: Path) -> None:
    # GIVEN no -o WHEN bundled THEN logphase-bundle-YYYYmmdd-HHMMSS.tar.gz in the working folder
    result = run_cli("bundle", DEMO_NAME)
    assert result.exit_code == 0, result.stderr
    (made,) = [p.name for p in work.iterdir() if p.name != DEMO_NAME]
    assert re.fullmatch(r"logphase-bundle-\d{8}-\d{6}\.tar\.gz", made)
    assert result.stdout.startswith(f"{made}: ")


def test_a_host_is_one_placeholder_in_every_file(work: Path) -> None:
    # GIVEN a log whose NCCL lines name their host (`gpu-h100-07:pid:tid [dev]`) and its address
    log = FIXTURES / "logs" / "sglang" / "nccl-info-tp8-rank5-missing-init-complete.log"
    shutil.copy(log, work / "nccl.log")
    # WHEN bundled
    result = run_cli("bundle", "nccl.log", "-o", "b.tar.gz", "--as-of", AS_OF)
    assert result.exit_code == 0, result.stderr
    files = members(work / "b.tar.gz")
    # THEN neither is left anywhere; the log and the analysis use the same placeholders
    for name, data in files.items():
        assert b"gpu-h100-07" not in data and b"10.20.3.17" not in data, name
    expected = json.dumps(analyze_json("nccl.log", "--as-of", AS_OF), indent=2, ensure_ascii=False)
    assert files["analysis.json"].decode().strip() == expected.replace("gpu-h100-07", "[host-1]").replace(
        "10.20.3.17", "[ip-1]"
    )
    bundled_log = files["logs/nccl.log"].decode().split("\n")
    original = log.read_bytes().decode().split("\n")
    assert (
        bundled_log[26]
        == "[host-1]:51236:51236 [6] NCCL INFO Bootstrap : Using eth0:[ip-1]<0>"
        == original[26].replace("gpu-h100-07", "[host-1]").replace("10.20.3.17", "[ip-1]")
    )
    assert re.search(r"^\| host \| 1 \| 16\d \|", files["README.md"].decode(), re.MULTILINE)


def fake_nvidia_smi(folder: Path, script: str, monkeypatch: pytest.MonkeyPatch) -> None:
    folder.mkdir()
    fake = folder / "nvidia-smi"
    fake.write_text(f"#!/bin/sh\n{script}\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")


def test_nvidia_smi_output_goes_in_when_it_is_installed(
    tmp_path: Path, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN an nvidia-smi on PATH
    text = "| NVIDIA-SMI 570.86.15    Driver Version: 570.86.15    CUDA Version: 12.8 |\n|   0  NVIDIA H200  On |\n"
    fake_nvidia_smi(tmp_path / "bin", f"printf '{text}'", monkeypatch)
    # WHEN bundled THEN its output is a file of the bundle, and versions.json points at it
    result = run_cli("bundle", DEMO_NAME, "-o", "b.tar.gz")
    assert result.exit_code == 0, result.stderr
    files = members(work / "b.tar.gz")
    assert files["nvidia-smi.txt"].decode() == text
    assert json.loads(files["versions.json"])["nvidia_smi"] == "nvidia-smi.txt"
    assert "nvidia-smi:" not in files["README.md"].decode()


@pytest.mark.parametrize(
    ("script", "note"),
    [
        (
            "echo 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.'; exit 9",
            "- nvidia-smi: nvidia-smi failed (exit 9): "
            "NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.",
        ),
        ("exec sleep 30", "- nvidia-smi: nvidia-smi did not answer within 0.5s (a hung driver looks like this)"),
    ],
)
def test_an_nvidia_smi_that_fails_or_hangs_is_said(
    tmp_path: Path, work: Path, monkeypatch: pytest.MonkeyPatch, script: str, note: str
) -> None:
    # GIVEN an nvidia-smi that cannot reach the driver, or one that hangs
    from logphase.bundle import environment

    monkeypatch.setattr(environment, "NVIDIA_SMI_TIMEOUT_S", 0.5)
    fake_nvidia_smi(tmp_path / "bin", script, monkeypatch)
    # WHEN bundled THEN the bundle is written without it, and its README says why
    result = run_cli("bundle", DEMO_NAME, "-o", "b.tar.gz")
    assert result.exit_code == 0, result.stderr
    files = members(work / "b.tar.gz")
    assert "nvidia-smi.txt" not in files
    assert note in files["README.md"].decode().splitlines()


def test_an_archive_of_logs_goes_in_member_by_member(work: Path) -> None:
    # GIVEN a .tar.gz holding one log per node, and a gzipped log beside it
    import gzip

    with tarfile.open(work / "nodes.tar.gz", "w:gz") as archive:
        archive.add(DEMO, arcname="node0/server.log")
        archive.add(FIXTURES / "logs" / "sglang" / "tp8-ready-serving.log", arcname="node1/server.log")
    (work / "extra.log.gz").write_bytes(gzip.compress(DEMO.read_bytes()))
    # WHEN bundled
    result = run_cli("bundle", "nodes.tar.gz", "extra.log.gz", "-o", "b.tar.gz", "--no-redact")
    assert result.exit_code == 0, result.stderr
    files = members(work / "b.tar.gz")
    # THEN each member is a log of its own under the archive's name, the gzipped one decompressed
    logs = sorted(name for name in files if name.startswith("logs/"))
    assert logs == ["logs/extra.log", "logs/nodes.tar.gz/node0/server.log", "logs/nodes.tar.gz/node1/server.log"]
    assert files["logs/extra.log"] == DEMO.read_bytes()
    assert [i["path"] for i in json.loads(files["analysis.json"])["inputs"]] == [
        "nodes.tar.gz:node0/server.log",
        "nodes.tar.gz:node1/server.log",
        "extra.log.gz",
    ]
