"""Native backtrace frames pasted with no error text around them (issue 25, kind D): Open MPI's fatal signal handler
(opal/util/stacktrace.c show_stackframe) writes `[host:pid] *** Process received signal ***`, `Signal: <name> (<n>)`,
`Signal code: …`, `Failing at address: …`, then each frame as opal_backtrace_print does with the prefix `[host:pid] `
(HOSTFORMAT `[%s:%05d] `): `[%2d] ` and glibc's backtrace_symbols_fd text `binary(symbol+0xoff)[0xaddr]`, the symbol
as the object file holds it (mangled); `*** End of error message ***`; then it raises the signal again with the
default action, so the process dies of it (docs/design.md §1: aborted, a fatal signal). Its other callers print no
`[host:pid] ` before the index (MPI_Abort's stack: `[host:pid] [N] func:…`)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from logphase.frames import SIGNAL_HANDLER_FRAME, demangled, native_frame_key
from logphase.logs.matcher import CUT_TRACEBACK, SourceMatcher
from logphase.logs.reader import Line
from logphase.packs.loading import load_packs
from tests.conftest import judge_text, root_text
from tests.equivalence.reports import fast, plain

HOST = "[gpu-node-7:04211] "
HEADER = (
    f"{HOST}*** Process received signal ***\n"
    f"{HOST}Signal: Segmentation fault (11)\n"
    f"{HOST}Signal code: Address not mapped (1)\n"
    f"{HOST}Failing at address: 0x10\n"
)
# KVCacheManager::allocatePools (mangled, as backtrace_symbols prints it): made once, where the KV cache is sized
KV_POOLS_FRAMES = (
    f"{HOST}[ 0] /lib/x86_64-linux-gnu/libc.so.6(+0x42520)[0x7f3a2c842520]\n"
    f"{HOST}[ 1] /opt/trtllm/libtensorrt_llm.so("
    "_ZN12tensorrt_llm13batch_manager16kv_cache_manager14KVCacheManager13allocatePoolsEb+0x3d)[0x7f3a1c0a13fd]\n"
    f"{HOST}[ 2] /lib/x86_64-linux-gnu/libmpi.so.40(MPI_Bcast+0x121)[0x7fc1ff32d881]\n"
)
FOOTER = f"{HOST}*** End of error message ***\n"


@pytest.mark.parametrize(
    ("line", "key"),
    [
        (f"{HOST}[13] /lib/x86_64-linux-gnu/libmpi.so.40(MPI_Bcast+0x121)[0x7fc1ff32d881]", "MPI_Bcast (libmpi.so.40)"),
        (
            f"{HOST}[14] /x/libtensorrt_llm.so(_ZNK12tensorrt_llm3mpi7MpiComm5bcastEPvmNS0_7MpiTypeEi+0x47)[0x7fc2]",
            "tensorrt_llm::mpi::MpiComm::bcast (libtensorrt_llm.so)",
        ),
        # opal_backtrace_print with no prefix (MPI_Abort's fallback) writes the same frame after the index
        ("[ 3] /lib/x86_64-linux-gnu/libmpi.so.40(PMPI_Barrier+0x4e)[0x7f01]", "PMPI_Barrier (libmpi.so.40)"),
        # no symbol (dladdr found none): no key
        (f"{HOST}[ 0] /lib/x86_64-linux-gnu/libc.so.6(+0x42520)[0x7f3a2c842520]", None),
        # MPI_Abort's own stack print (`[%s:%05d] [%d] func:%s`, ompi/runtime/ompi_mpi_abort.c): a frame all the same
        (f"{HOST}[2] func:/lib/libmpi.so.40(PMPI_Abort+0x8c)[0x7f9c]", "PMPI_Abort (libmpi.so.40)"),
    ],
)
def test_a_backtrace_symbols_frame_under_open_mpis_index_is_keyed_by_its_symbol(line: str, key: str | None) -> None:
    # GIVEN a frame line as Open MPI's opal_backtrace_print writes it; WHEN keyed; THEN its function and library
    assert native_frame_key(line) == key


@pytest.mark.parametrize(
    ("symbol", "name"),
    [
        (
            "_ZN12tensorrt_llm8executor8Executor4Impl19leaderRecvReqThreadEv",
            "tensorrt_llm::executor::Executor::Impl::leaderRecvReqThread",
        ),
        ("_ZNK12tensorrt_llm3mpi7MpiComm5bcastEPvmNS0_7MpiTypeEi", "tensorrt_llm::mpi::MpiComm::bcast"),
        ("_ZNSt6thread6_StateD2Ev", "std::thread::_State::~_State"),
        ("_ZN3FooC1Ev", "Foo::Foo"),
        ("_Z6launchv", "launch"),
        ("MPI_Bcast", "MPI_Bcast"),  # C: not mangled
        ("_ZN3FooIiE3barEv", "_ZN3FooIiE3barEv"),  # a template's arguments: kept as it is
        ("_ZN99shortE", "_ZN99shortE"),  # a length past the symbol's end: not a name
    ],
)
def test_a_mangled_function_symbol_reads_as_its_qualified_name(symbol: str, name: str) -> None:
    # GIVEN a symbol as an object file holds it (Itanium C++ ABI); WHEN demangled; THEN the name the source gave it
    assert demangled(symbol) == name


def test_the_handlers_frame_shape_needs_its_host_prefix() -> None:
    # GIVEN frames with and without `[host:pid] ` before the index, and MPI_Abort's `func:` form
    # THEN only the handler's own shape is its frame
    assert SIGNAL_HANDLER_FRAME.match(f"{HOST}[ 8] /lib/libopen-pal.so.40(ompi_sync_wait_mt+0xbd)[0x7fc1ff24c38d]")
    assert SIGNAL_HANDLER_FRAME.match(f"{HOST}[ 0] /lib/x86_64-linux-gnu/libc.so.6(+0x42520)[0x7f3a2c842520]")
    assert not SIGNAL_HANDLER_FRAME.match("[ 8] /lib/libopen-pal.so.40(ompi_sync_wait_mt+0xbd)[0x7fc1ff24c38d]")
    assert not SIGNAL_HANDLER_FRAME.match(f"{HOST}[2] func:/lib/libmpi.so.40(PMPI_Abort+0x8c)[0x7f9c]")


def test_the_handlers_whole_output_is_a_fatal_signal_placed_by_its_frames(tmp_path: Path) -> None:
    # GIVEN Open MPI's whole handler output, a frame in the KV-cache pools' allocation
    report = judge_text(tmp_path, HEADER + KV_POOLS_FRAMES + FOOTER)
    # THEN aborted (the handler raises the signal again), in kv_cache, the header the cause
    assert (report["verdict"], report["phase"]) == ("aborted", "kv_cache")
    assert root_text(report) == "[gpu-node-7:04211] *** Process received signal ***"


def test_frames_cut_below_the_handlers_header_are_its_fatal_signal_at_the_first_frame(tmp_path: Path) -> None:
    # GIVEN a paste of the handler's frames only (its header above the excerpt), the last frame cut mid-path
    text = KV_POOLS_FRAMES + f"{HOST}[ 3] /opt/trtllm/libtensorrt_"
    report = judge_text(tmp_path, text)
    # THEN aborted in kv_cache, the first frame the cause, the cut header a doubt and the confidence not high
    assert (report["verdict"], report["phase"]) == ("aborted", "kv_cache")
    assert root_text(report) == KV_POOLS_FRAMES.splitlines()[0]
    assert any("signal handler's frames whose header is not in it" in d for d in report["evidence"]["against"])
    assert report["confidence"] in ("low", "medium")


def test_the_handlers_frames_are_read_where_another_line_ends_them() -> None:
    # GIVEN a matcher fed two handler frames with no block open, then a line of another writer (mpirun's notice)
    matcher = SourceMatcher(load_packs(check_examples=False), reference=datetime(2025, 1, 1))
    lines = [*KV_POOLS_FRAMES.splitlines()[:2], "Primary job  terminated normally, but 1 process returned"]
    events = [event for number, text in enumerate(lines, 1) for event in matcher.match_line(Line(number, text, 0))]
    # THEN the run, once ended, is the handler's fatal signal at its first frame, marked cut
    cut = [event for event in events if CUT_TRACEBACK in event.captures]
    assert [(event.line, event.kind.value, event.captures[CUT_TRACEBACK]) for event in cut] == [(1, "fatal", "handler")]


def test_frames_without_the_handlers_prefix_are_no_failure(tmp_path: Path) -> None:
    # GIVEN the same frames as opal_backtrace_print writes them with no prefix (not the signal handler's) alone
    text = "".join(line.removeprefix(HOST) + "\n" for line in KV_POOLS_FRAMES.splitlines())
    report = judge_text(tmp_path, text)
    # THEN nothing failed by them
    assert report["verdict"] not in ("aborted", "crashed")


def test_the_handlers_frames_in_a_long_log_read_the_same_on_the_fast_path(tmp_path: Path) -> None:
    # GIVEN a log long enough for the fast path, the handler's frames (no header) between unread lines
    lines = "".join(f"[2025-01-01 00:00:{n % 60:02d}] step {n}\n" for n in range(1100))
    log = tmp_path / "long.log"
    log.write_text(lines + KV_POOLS_FRAMES + lines)
    packs = load_packs(check_examples=False)
    # WHEN read by both paths; THEN one report, and it is the handler's fatal signal in kv_cache
    report = plain([log], packs)
    assert fast([log], packs) == report
    assert '"verdict": "aborted"' in report and '"phase": "kv_cache"' in report
