"""Memory bounded by construction (issue 29): decompressors with a window limit and a ratio guard, a
bar's update without a newline in watch, a pipe read as fast as it is written, a log of many ranks,
flight-recorder dumps of many ranks, many members or many process groups.
Each hostile command runs in a child under a 1 GiB address-space limit, its peak RSS a coarse guard."""

from __future__ import annotations

import json
import lzma
import os
import pickle
import struct
import threading
import zlib
from pathlib import Path
from typing import Any

import pytest
import zstandard

from logphase.flight_recorder import MAX_DUMP_BYTES, MAX_GROUPS, NAMED_RANKS
from logphase.logs.follow import follow_lines
from logphase.logs.reader import DECODER_MEMORY, MAX_RATIO
from logphase.logs.timeline import MAX_RANKS
from tests.conftest import FIXTURES
from tests.hostile.child import assert_handled, run_cli


def _xz_declaring(code: int) -> bytes:
    """A small xz stream whose block header declares the LZMA2 dictionary `code` encodes
    ((2 | code & 1) << (code // 2 + 11) bytes: 34 is 512 MiB, 37 is 1.5 GiB), its CRC made good."""
    data = bytearray(lzma.compress(b"INFO hello\n" * 100, filters=[{"id": lzma.FILTER_LZMA2, "dict_size": 1 << 12}]))
    size = (data[12] + 1) * 4  # the block header follows the 12-byte stream header
    header = data[12 : 12 + size]
    at = header.index(0x21)  # the LZMA2 filter id, its properties' size (1), then the dictionary byte
    header[at + 2] = code
    header[-4:] = struct.pack("<I", zlib.crc32(bytes(header[:-4])))
    data[12 : 12 + size] = header
    return bytes(data)


@pytest.mark.slow
@pytest.mark.parametrize(("code", "declared"), [(34, "512 MiB"), (37, "1.5 GiB")])
def test_an_xz_declaring_a_huge_dictionary_is_refused(tmp_path: Path, code: int, declared: str) -> None:
    # GIVEN an 88-byte .xz whose header asks for a dictionary of `declared`
    log = tmp_path / "big-dictionary.log.xz"
    log.write_bytes(_xz_declaring(code))
    # WHEN analyzed THEN refused as needing more than the decoder's memory, not a MemoryError
    ran = run_cli(["analyze", "--post-mortem", str(log)], tmp_path)
    assert_handled(ran, (3,))
    assert f"needs over {DECODER_MEMORY >> 20} MB of memory to unpack" in ran.stderr


@pytest.mark.slow
def test_a_zstd_bomb_is_refused_within_bounded_memory(tmp_path: Path) -> None:
    # GIVEN a 7 KB .zst of 220 MB of zeros (one frame)
    compressor = zstandard.ZstdCompressor(level=19).compressobj()
    data = b"".join([compressor.compress(bytes(1 << 20)) for _ in range(220)] + [compressor.flush()])
    log = tmp_path / "bomb.log.zst"
    log.write_bytes(data)
    # WHEN analyzed THEN the ratio guard refuses it, and the child's peak stays under the bound
    ran = run_cli(["analyze", "--post-mortem", str(log)], tmp_path)
    assert_handled(ran, (3,))
    assert f"unpacks to over {MAX_RATIO} times its size" in ran.stderr


@pytest.mark.slow
def test_watch_bounds_a_bar_update_without_a_newline(tmp_path: Path) -> None:
    # GIVEN a log whose second line is a `\r` and then 200 MB without a newline
    log = tmp_path / "bar.log"
    with log.open("wb") as out:
        out.write(b"[2025-01-01 00:00:00] start\n\r")
        for _ in range(200):
            out.write(b"x" * (1 << 20))
    # WHEN watched THEN it ends at its deadline within the memory bound
    ran = run_cli(["watch", str(log), "--timeout", "10"], tmp_path)
    assert_handled(ran, (0, 3, 4, 5, 6))


@pytest.mark.slow
def test_patterns_from_dev_zero_are_not_read_whole(tmp_path: Path) -> None:
    ran = run_cli(["patterns", "list", "--patterns", "/dev/zero"], tmp_path)
    assert_handled(ran, (2, 3))


def test_a_poll_reads_all_that_waits_in_the_pipe() -> None:
    # GIVEN a pipe that 4 MB of lines are written into as fast as it takes them
    read_end, write_end = os.pipe()
    line = b"[2025-01-01 00:00:00 TP0] Decode batch. #running-req: 1, #token: 100\n"
    lines = (4 << 20) // len(line)

    def write() -> None:
        with os.fdopen(write_end, "wb", buffering=0) as out:
            for _ in range(lines // 100):
                out.write(line * 100)

    writer = threading.Thread(target=write)
    writer.start()
    # WHEN followed with a poll of 10 s THEN it is read in a few batches (one 64 KB read a poll was
    # 64 batches and 16 s of sleep), each line once
    with os.fdopen(read_end, "rb", buffering=0) as stream:
        batches = [len(b) for b in follow_lines("-", lambda: False, 10.0, stdin=stream) if b]
    writer.join()
    assert sum(batches) == lines // 100 * 100
    assert len(batches) < 16, batches


def _ranks_log(folder: Path, ranks: int) -> Path:
    """One weight-load line from each of `ranks` ranks."""
    log = folder / "ranks.log"
    with log.open("w") as out:
        for rank in range(ranks):
            out.write(f"[2026-11-04 09:30:{rank % 60:02d} TP{rank}] Load weight begin. avail mem=138.66 GB\n")
    return log


@pytest.fixture(scope="module")
def many_ranks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _ranks_log(tmp_path_factory.mktemp("ranks"), 200_000)


@pytest.fixture(scope="module")
def tenth_cpu_s(tmp_path_factory: pytest.TempPathFactory) -> float:
    """The CPU seconds of the same log with a tenth of the ranks, on this machine, now."""
    folder = tmp_path_factory.mktemp("tenth")
    ran = run_cli(["analyze", "--post-mortem", str(_ranks_log(folder, 20_000)), "--format", "json"], folder)
    assert_handled(ran, (4,))
    return ran.cpu_s


@pytest.mark.slow
@pytest.mark.parametrize("output", ["table", "json", "markdown", "html"])
def test_a_log_of_200000_ranks_stays_bounded(tmp_path: Path, many_ranks: Path, tenth_cpu_s: float, output: str) -> None:
    # WHEN 200,000 ranks' weight-load lines are analyzed in each format
    ran = run_cli(["analyze", "--post-mortem", str(many_ranks), "--format", output], tmp_path, timeout=300)
    # THEN a stall within 200 MB, every rank counted and those past the ones followed said; and the CPU grows
    # with the lines, not with ranks × ranks: ten times the ranks take at most 15 times the CPU of a tenth on
    # this machine (a bound on growth, not on a machine's speed: `make bench` measures that)
    assert_handled(ran, (4,))
    assert ran.cpu_s <= 15 * tenth_cpu_s, (ran.cpu_s, tenth_cpu_s)
    left_out = 200_000 - MAX_RANKS
    if output == "json":
        report = json.loads(ran.stdout)
        assert (len(report["ranks"]), len(report["rank_states"])) == (200_000, MAX_RANKS)
        assert report["ranks_not_followed"] == left_out
    else:
        assert "200000 ranks (TP[0-199999])" in ran.stdout
        assert f"{left_out} more ranks after the first {MAX_RANKS} are counted, not followed" in ran.stdout


def _dump(groups: dict[str, str], status: dict[Any, Any], entries: int = 20) -> bytes:
    """A flight-recorder dump as torch pickles it: `groups` maps a process group to its ranks (a JSON string)."""
    frames = [{"name": f"step{i}", "filename": f"/job/train{i}.py", "line": i} for i in range(12)]
    listed = [
        {
            "collective_seq_id": seq,
            "process_group": (pg, f"pg{pg}"),
            "profiling_name": "nccl:all_reduce",
            "state": "completed",
            "input_sizes": [[1024]],
            "frames": frames,
            "is_p2p": False,
        }
        for pg in groups
        for seq in range(1, entries + 1)
    ]
    config = {pg: {"name": pg, "desc": f"pg{pg}", "ranks": ranks} for pg, ranks in groups.items()}
    return pickle.dumps({"version": "2.10", "pg_config": config, "pg_status": status, "entries": listed}, protocol=4)


@pytest.mark.slow
def test_4096_flight_recorder_dumps_stay_bounded(tmp_path: Path) -> None:
    # GIVEN one dump from each of 4,096 ranks of one group, every rank listing all 4,096 members
    members = json.dumps(list(range(4096)))
    status = {"0": {"last_enqueued_collective": 20, "last_completed_collective": 19}}
    paths = []
    for rank in range(4096):
        path = tmp_path / f"fr-rank-{rank}"
        path.write_bytes(_dump({"0": members}, status))
        paths.append(str(path))
    # WHEN analyzed THEN judged within the memory bound: #20 is in flight on every rank, nobody missing
    ran = run_cli(["analyze", "--format", "json", *paths], tmp_path, timeout=300)
    assert_handled(ran, (6,))
    (group,) = json.loads(ran.stdout)["flight_recorder"]["groups"]
    assert (group["rank_count"], group["pending"]["seq"], group["missing_ranks"]) == (4096, 20, [])


@pytest.mark.slow
def test_a_dump_of_three_groups_of_many_ranks_stays_bounded(tmp_path: Path) -> None:
    # GIVEN rank 0's dump of three groups of 700,000 ranks (a million's list alone is over MAX_DUMP_BYTES),
    # #2 in flight in each; no other rank's dump
    members = json.dumps(list(range(700_000)))
    status = {pg: {"last_enqueued_collective": 2, "last_completed_collective": 1} for pg in ("0", "1", "2")}
    log = tmp_path / "fr-rank-0"
    log.write_bytes(_dump(dict.fromkeys(("0", "1", "2"), members), status, entries=2))
    # WHEN analyzed THEN within the bound, each group counting its members and naming the first of those without a dump
    ran = run_cli(["analyze", "--format", "json", str(log)], tmp_path, timeout=300)
    assert_handled(ran, (6,))
    groups = json.loads(ran.stdout)["flight_recorder"]["groups"]
    assert [g["rank_count"] for g in groups] == [700_000] * 3
    assert [len(g["ranks"]) for g in groups] == [NAMED_RANKS] * 3
    assert groups[0]["ranks_without_dump"][:2] == ["rank 1", "rank 2"]
    assert all(g["more_ranks_without_dump"] == 699_999 - NAMED_RANKS for g in groups)
    assert f"and {699_999 - NAMED_RANKS} more ranks" in groups[0]["summary"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("keys", "refused"),
    [
        (4_000_000, "over 16 MB, too big for a flight-recorder dump"),  # 28 MB
        (2_000_000, "MB that unpacks to more than a flight-recorder dump is read to"),  # 14 MB: 4 M objects
        (500_000, None),  # 3.4 MB: read
    ],
)
def test_a_dump_of_millions_of_process_groups_stays_bounded(tmp_path: Path, keys: int, refused: str | None) -> None:
    # GIVEN a dump whose `pg_status` holds `keys` process groups, each an empty dict (a byte or two a
    # dict: what unpacks to the most objects a byte)
    log = tmp_path / "fr-rank-0"
    log.write_bytes(_dump({}, {pg: {} for pg in range(keys)}, entries=0))
    # WHEN analyzed THEN refused as too big (its bytes, or what they unpack to), the hint naming the
    # buffer's size, or read with its first MAX_GROUPS groups; within the bound either way
    ran = run_cli(["analyze", "--format", "json", str(log)], tmp_path, timeout=300)
    if refused is not None:
        assert_handled(ran, (3,))
        assert refused in ran.stderr and "TORCH_FR_BUFFER_SIZE" in ran.stderr
    else:
        assert_handled(ran, (6,))
        assert len(json.loads(ran.stdout)["flight_recorder"]["groups"]) == MAX_GROUPS


def _real_shaped(entries: int) -> bytes:
    """A dump of `entries` collectives over four process groups, each entry as the real two-GPU hang's
    first one (its 7 frames, 26 fields; strings memoised as torch pickles them): ~260 bytes an entry."""
    real = pickle.loads((FIXTURES / "real" / "gpu-h200x2" / "fr" / "fr-rank-0").read_bytes())
    template = real["entries"][0]
    groups = [("0", "default_pg"), ("1", "tp"), ("2", "dp"), ("3", "pp")]
    listed = [
        {
            **template,
            "record_id": n,
            "collective_seq_id": n // 4 + 1,
            "pg_id": n % 4,
            "process_group": groups[n % 4],
            "frames": [dict(frame) for frame in template["frames"]],
        }
        for n in range(entries)
    ]
    last = entries // 4
    real["pg_config"] = {pg: {"name": pg, "desc": desc, "ranks": "[0, 1]"} for pg, desc in groups}
    real["pg_status"] = {
        pg: {"last_enqueued_collective": last, "last_completed_collective": last - 1} for pg, _ in groups
    }
    real["entries"] = listed
    return pickle.dumps(real, protocol=2)


@pytest.mark.slow
def test_a_real_dump_past_the_old_6_mb_bound_is_read(tmp_path: Path) -> None:
    # GIVEN a dump of 40,000 entries shaped as torch writes them (~9.9 MiB; refused over 6 MiB before)
    log = tmp_path / "fr-rank-0"
    log.write_bytes(_real_shaped(40_000))
    assert 9 << 20 < log.stat().st_size < MAX_DUMP_BYTES
    # WHEN analyzed THEN read within the bound: each group's last collective is the one in flight
    ran = run_cli(["analyze", "--format", "json", str(log)], tmp_path, timeout=300)
    assert_handled(ran, (6,))
    groups = json.loads(ran.stdout)["flight_recorder"]["groups"]
    assert [(g["pg"], g["pending"]["seq"], g["pending"]["state"]) for g in groups] == [
        (pg, 10_000, "completed") for pg in ("0", "1", "2", "3")
    ]
