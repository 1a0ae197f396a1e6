"""The reader: every container and encoding a log arrives in, read as the same clean lines."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import tarfile
from pathlib import Path

import pytest
import zstandard

from logphase.errors import InputError
from logphase.logs.reader import MAX_LINE_BYTES, Line, open_sources, read_lines

LOG = b"[2025-06-01 10:00:00 TP0] Load weight begin. avail mem=70.00 GB\n[2025-06-01 10:00:05 TP0] Load weight end.\n"


def texts(paths: list[str], stdin: io.BufferedIOBase | None = None) -> list[tuple[str, int, str]]:
    sources = open_sources(paths, stdin=stdin)  # type: ignore[arg-type]
    return [(sources[line.source].name, line.number, line.text) for s in sources for line in read_lines(s)]


@pytest.mark.parametrize(
    ("suffix", "compress"),
    [
        (".log", lambda b: b),
        (".log.gz", gzip.compress),
        (".log.bz2", bz2.compress),
        (".log.xz", lzma.compress),
        (".log.zst", lambda b: zstandard.ZstdCompressor().compress(b)),
    ],
)
def test_every_compression_reads_the_same_lines(tmp_path: Path, suffix: str, compress: object) -> None:
    # GIVEN the same log plain and compressed (detected by magic bytes, not the name)
    path = tmp_path / f"server{suffix}"
    path.write_bytes(compress(LOG))  # type: ignore[operator]
    # WHEN read THEN the lines are identical
    assert [t[1:] for t in texts([str(path)])] == [
        (1, "[2025-06-01 10:00:00 TP0] Load weight begin. avail mem=70.00 GB"),
        (2, "[2025-06-01 10:00:05 TP0] Load weight end."),
    ]


def test_tar_members_are_sources_of_their_own(tmp_path: Path) -> None:
    # GIVEN a tar.gz with one log per node
    archive = tmp_path / "logs.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, data in (("node0.log", b"a\nb\n"), ("node1.log", b"c\n")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    # WHEN read THEN each member keeps its own line numbers and name
    assert texts([str(archive)]) == [
        (f"{archive}:node0.log", 1, "a"),
        (f"{archive}:node0.log", 2, "b"),
        (f"{archive}:node1.log", 1, "c"),
    ]


def test_stdin_is_read_and_may_be_compressed() -> None:
    # GIVEN a gzip stream on stdin WHEN read THEN it is decompressed
    stdin = io.BufferedReader(io.BytesIO(gzip.compress(b"x\ny\n")))
    assert texts(["-"], stdin=stdin) == [("<stdin>", 1, "x"), ("<stdin>", 2, "y")]


def test_carriage_returns_split_progress_updates_on_one_line_number(tmp_path: Path) -> None:
    # GIVEN a tqdm bar rewritten with \r on one physical line, then a CRLF line
    path = tmp_path / "bar.log"
    path.write_bytes(b"Capturing batches:   0%| | 0/4\rCapturing batches:  50%| | 2/4\r\nnext\r\n")
    # WHEN read THEN each update is a line of its own, numbered as the physical line
    assert [t[1:] for t in texts([str(path)])] == [
        (1, "Capturing batches:   0%| | 0/4"),
        (1, "Capturing batches:  50%| | 2/4"),
        (2, "next"),
    ]


def test_ansi_invalid_utf8_and_container_prefixes_are_cleaned(tmp_path: Path) -> None:
    # GIVEN colour codes and a broken UTF-8 byte in a plain log, a docker-compose log and a Kubernetes
    # CRI log (an envelope is decided per source: logphase/logs/envelope.py)
    plain, compose, cri = tmp_path / "plain.log", tmp_path / "compose.log", tmp_path / "cri.log"
    plain.write_bytes(b"\x1b[32mINFO\x1b[0m ready\nbad \xff byte\n")
    compose.write_bytes(b"sglang-1  | [2025-06-01 10:00:00 TP0] Init torch distributed begin.\n")
    cri.write_bytes(b"2025-06-01T10:00:00.123456789Z stdout F [2025-06-01 10:00:00] msg\n")
    # WHEN read THEN the text is what the server wrote
    assert [t[2] for t in texts([str(plain), str(compose), str(cri)])] == [
        "INFO ready",
        "bad \ufffd byte",
        "[2025-06-01 10:00:00 TP0] Init torch distributed begin.",
        "[2025-06-01 10:00:00] msg",
    ]


def test_a_huge_line_is_cut_not_loaded(tmp_path: Path) -> None:
    # GIVEN a 5 MB line between two short ones
    path = tmp_path / "huge.log"
    path.write_bytes(b"first\n" + b"x" * 5_000_000 + b"\nlast\n")
    # WHEN read THEN the long line keeps its head and the line count stays exact
    sources = open_sources([str(path)])
    lines = list(read_lines(sources[0]))
    assert [(line.number, len(line.text)) for line in lines] == [(1, 5), (2, MAX_LINE_BYTES), (3, 4)]
    assert sources[0].truncated_lines == 1


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: d / "missing.log", "no such file"),
        (lambda d: d, "is a directory"),
    ],
)
def test_unusable_paths_are_clear_errors(tmp_path: Path, make: object, message: str) -> None:
    # GIVEN a path that is not a readable log WHEN opened THEN an InputError says why, with a hint
    with pytest.raises(InputError) as error:
        open_sources([str(make(tmp_path))])  # type: ignore[operator]
    assert message in error.value.message
    assert error.value.hint


def test_a_truncated_gzip_fails_after_what_it_could_read(tmp_path: Path) -> None:
    # GIVEN a .gz cut in the middle
    data = gzip.compress(b"".join(b"line %d\n" % i for i in range(20000)))
    path = tmp_path / "cut.log.gz"
    path.write_bytes(data[: len(data) // 2])
    # WHEN read THEN the lines before the damage come out, then an InputError with a hint
    lines: list[Line] = []
    with pytest.raises(InputError) as error:
        for line in read_lines(open_sources([str(path)])[0]):
            lines.append(line)
    assert lines and lines[0].text == "line 0"
    assert "ends early or is damaged" in error.value.message


def test_a_bar_glued_to_the_next_log_line_is_split(tmp_path: Path) -> None:
    # GIVEN a tqdm bar that never wrote its newline before TP1's next log line (real: issue 001)
    path = tmp_path / "glued.log"
    path.write_bytes(b"  0%|    | 0/13 [00:00<?, ?it/s][2025-03-08 12:29:21 TP1] Capture cuda graph begin.\n")
    # WHEN read THEN both are lines of their own on the same physical line
    assert [t[1:] for t in texts([str(path)])] == [
        (1, "  0%|    | 0/13 [00:00<?, ?it/s]"),
        (1, "[2025-03-08 12:29:21 TP1] Capture cuda graph begin."),
    ]


@pytest.mark.parametrize(
    "log_line",
    [
        "[E ProcessGroupNCCL.cpp:458] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=96120, "
        "OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 25624887 milliseconds before timing out.",
        "[rank0]:[W1209 11:24:53.753104426 compiler_depend.ts:28] Warning: an example warning (function operator())",
        "[E1218 20:27:21.426871257 ProcessGroupNCCL.cpp:607] [Rank 0] Some NCCL operations have failed or timed out.",
        "W0529 15:43:30.844000 15110 site-packages/torch/distributed/elastic/multiprocessing/api.py:897] Sending "
        "process 15188 closing signal SIGTERM",
    ],
)
def test_a_bar_glued_to_a_torch_line_is_split(tmp_path: Path, log_line: str) -> None:
    # GIVEN a training bar with its postfix that never wrote its newline before torch's c10, glog or `[rankN]:`
    # line (ref 2.1's prefixes; real: realworld 454, 159 and 357)
    bar = "Epoch 0:   6%|██      | 32040/500150 [6:28:43<94:39:17,  1.37it/s, loss=2.6, global_step=3.2e+4]"
    path = tmp_path / "glued.log"
    path.write_text(bar + log_line + "\n")
    # WHEN read THEN both are lines of their own on the same physical line
    assert [t[1:] for t in texts([str(path)])] == [(1, bar), (1, log_line)]


SPLITTER_PARTS = [b"plain line %d" % i for i in range(50)] + [
    b"bar 10%|##| 1/5\rbar 20%|##| 2/5",
    b"\x1b[32mgreen\x1b[0m",
    b"\xef\xbf\xbd[36m(WorkerDict pid=1)\xef\xbf\xbd[0m lost escape",
    b"\xef\xbf\xbd[1mbold, its reset on another line",
    b"#033[1;36m(VllmWorker rank=1 pid=7)#033[0;0m written escape",
    b"^[[36m(RayWorkerWrapper pid=1)^[[0m caret escape",
    b"svc  | compose line",
    b"2026-01-01T00:00:00Z stdout F k8s line",
    b"bad \xff utf8",
    b"",
    b"x" * 70000,
    b"caf\xc3\xa9",
]


def test_followed_lines_in_bulk_are_the_lines_one_by_one() -> None:
    # GIVEN random mixes of plain lines and lines that need care (bars, colour, container prefixes,
    # bad UTF-8, a runaway line), arriving in random pieces
    from random import Random

    from logphase.logs.follow import _LineSplitter

    rng = Random(20261129)
    for trial in range(300):
        data = b"\n".join(rng.choice(SPLITTER_PARTS) for _ in range(rng.randint(1, 60)))
        data += rng.choice([b"\n", b"", b"\npartial"])
        cuts = sorted(rng.sample(range(len(data) + 1), k=3))
        # WHEN the follower splits them (plain runs decoded in one go) and, for reference, line by line
        # (the same pieces: the envelopes are sniffed from the first whole lines that arrive)
        bulk, single = _LineSplitter(), _LineSplitter()
        single._plain_lines = lambda data, start, out, marks: (start, False)  # type: ignore[method-assign]
        got, expected = [], []
        for begin, end in zip([0, *cuts], [*cuts, len(data)], strict=True):
            got += bulk.feed(data[begin:end])
            expected += single.feed(data[begin:end])
        got += bulk.end_line()
        expected += single.end_line()
        # THEN the same lines, numbered the same
        assert [(line.number, line.text) for line in got] == [(line.number, line.text) for line in expected], trial
