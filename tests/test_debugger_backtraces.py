"""A native debugger's backtrace pasted as the log (realworld 1234: lldb attached to a rank hung in
ncclCommAbort): lldb's `thread backtrace all` (lldb.llvm.org/use/formatting.html: the thread-stop-format line
`thread #N{, name = '…'}{, stop reason = …}`, `* ` on the selected thread, then each frame in the default frame-format
`frame #N: <pc> <module>`<function-with-args> + <decimal offset>{ at file:line}`, innermost first) and gdb's
`thread apply all bt` (`Thread N (Thread 0x… (LWP n) "name"):`, then `#N  0x… in <symbol> (<args>) from <library>`)
are stacks like py-spy's: each thread a group whose native frames the anchors read (keyed `name (library)`), read
outside any failure's block because the thread line says a debugger printed them. One stack says where its thread
was, not whether it moved after: stalled, low confidence, and the frame that placed it is where the run stopped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from logphase import pipeline
from logphase.frames import DEBUGGER_THREAD, debugger_frame_key, native_frame_key
from logphase.packs.loading import load_packs
from logphase.stacks.dumps import parse_dumps_in_text
from tests.conftest import judge_text
from tests.equivalence.reports import AS_OF, analysed, plain

# lldb attached to a torch rank whose main thread waits in ProcessGroupNCCL::abort() for ncclCommAbort (torch 2.7
# names: libtorch_cuda.so's c10d, pybind11's binding in libtorch_python.so), another thread in NCCL's proxy
LLDB_DUMP = (
    "* thread #1, name = 'python', stop reason = signal SIGSTOP\n"
    "  * frame #0: 0x00007f3ac8d1e7f8 libc.so.6`__futex_abstimed_wait_common + 104\n"
    "    frame #1: 0x00007f3a9c2a1142 libstdc++.so.6`std::__atomic_futex_unsigned_base::_M_futex_wait_until_steady("
    "this=<unavailable>, __addr=0x00007f2a98000b00, __val=2147483648, __has_timeout=true) at futex.cc:217:18\n"
    "    frame #2: 0x00007f3a9e5b0b85 libtorch_cuda.so`c10d::ProcessGroupNCCL::waitForFutureOrTimeout("
    "std::future<bool>&, std::chrono::duration<long, std::ratio<1l, 1000l>> const&, bool) + 725\n"
    "    frame #3: 0x00007f3a9e5b1068 libtorch_cuda.so`c10d::ProcessGroupNCCL::abort() + 664\n"
    "    frame #4: 0x00007f3ab7c88edc libtorch_python.so`pybind11::cpp_function::dispatcher(_object*, _object*, "
    "_object*) + 908\n"
    "    frame #5: 0x000055d0c5a1b2c4 python3.12`cfunction_call + 52\n"
    "  thread #2, name = 'python', stop reason = signal SIGSTOP\n"
    "    frame #0: 0x00007f3ac8d9a3bf libc.so.6`__poll + 79\n"
    "    frame #1: 0x00007f3a8e41c2d1 libnccl.so.2`ncclProxyService(void*) + 321\n"
    "    frame #2: 0x00007f3ac8d21ac3 libc.so.6`start_thread + 755\n"
)
# the same stacks as gdb's `thread apply all bt` prints them (its C++ names demangled with their parameter types)
GDB_DUMP = (
    'Thread 2 (Thread 0x7f3a2bfff640 (LWP 4243) "python"):\n'
    "#0  0x00007f3ac8d9a3bf in poll () from /lib/x86_64-linux-gnu/libc.so.6\n"
    "#1  0x00007f3a8e41c2d1 in ncclProxyService(void*) () from /opt/venv/lib/python3.12/site-packages/nvidia/nccl/lib/"
    "libnccl.so.2\n"
    "#2  0x00007f3ac8d21ac3 in start_thread (arg=<optimized out>) at ./nptl/pthread_create.c:442\n"
    "\n"
    'Thread 1 (Thread 0x7f3ac8c7e740 (LWP 4242) "python"):\n'
    "#0  0x00007f3ac8d1e7f8 in __futex_abstimed_wait_common () from /lib/x86_64-linux-gnu/libc.so.6\n"
    "#1  0x00007f3a9e5b0b85 in c10d::ProcessGroupNCCL::waitForFutureOrTimeout(std::future<bool>&, "
    "std::chrono::duration<long, std::ratio<1l, 1000l> > const&, bool) () from "
    "/opt/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so\n"
    "#2  0x00007f3a9e5b1068 in c10d::ProcessGroupNCCL::abort() () from "
    "/opt/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so\n"
    "#3  0x00007f3ab7c88edc in pybind11::cpp_function::dispatcher(_object*, _object*, _object*) () from "
    "/opt/venv/lib/python3.12/site-packages/torch/lib/libtorch_python.so\n"
)


def _judge(tmp_path: Path, text: str) -> dict[str, Any]:
    return judge_text(tmp_path, text, "bt.log")


@pytest.mark.parametrize(
    ("line", "key"),
    [
        # lldb's frame-format: `frame #N: <pc> <module>`<name-with-args> + <decimal offset>`
        (
            "frame #3: 0x00007fb090db1068 libtorch_cuda.so`c10d::ProcessGroupNCCL::abort() + 664",
            "c10d::ProcessGroupNCCL::abort (libtorch_cuda.so)",
        ),
        # with debug info: the arguments' values in the name, ` at file:line:column` after it
        (
            "frame #1: 0x00007fb08faef142 libstdc++.so.6`std::__atomic_futex_unsigned_base::_M_futex_wait_until_steady("
            "this=<unavailable>, __ns=(__r = 711393434)) at futex.cc:217:18",
            "std::__atomic_futex_unsigned_base::_M_futex_wait_until_steady (libstdc++.so.6)",
        ),
        ("frame #0: 0x0000000100000e85 a.out`main + 4 at test.c:19", "main (a.out)"),
        ("frame #1: 0x0000000100000e40 a.out`start + 52", "start (a.out)"),
        # gdb with debug info: ` at file:line` after the arguments, no library
        ("#1  0x00006e38 in expand_macro (sym=0x2b600, data=...) at macro.c:242", "expand_macro ()"),
        # an address lldb could not name has no module nor symbol: no key
        ("frame #7: 0x00007fb0b7e29d90", None),
    ],
)
def test_a_debuggers_frame_line_gives_the_key_of_its_symbol(line: str, key: str | None) -> None:
    # GIVEN a frame line as lldb or gdb prints it WHEN keyed THEN `name (library)`, arguments and offset dropped
    assert native_frame_key(line) == key


@pytest.mark.parametrize(
    ("line", "key"),
    [
        ("    frame #3: 0x00007fb090db1068 libtorch_cuda.so`c10d::ProcessGroupNCCL::abort() + 664", True),
        ("  * frame #0: 0x00007fb0b7f0792d libc.so.6`syscall + 29", True),
        ("#2  0x00007f3a9e5b1068 in c10d::ProcessGroupNCCL::abort() () from /x/libtorch_cuda.so", True),
        ("    abort (torch/distributed/distributed_c10d.py:120)", False),
    ],
)
def test_a_backtraces_frame_is_read_under_its_indentation_and_selection_mark(line: str, key: bool) -> None:
    # GIVEN a frame line of lldb's backtrace (indented, `* ` on the selected frame) or gdb's WHEN keyed for a debugger
    # THEN keyed as the same line unindented is; a py-spy frame is none of a debugger's
    assert (debugger_frame_key(line) is not None) is key


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("  thread #16, name = 'python', stop reason = signal SIGSTOP", True),
        ("* thread #1, queue = 'com.apple.main-thread', stop reason = breakpoint 1.1", True),
        ("thread #1: tid = 0x2e03, stop reason = breakpoint 1.1", True),  # lldb's older thread-format
        ('Thread 2 (Thread 0x7f3a2bfff640 (LWP 4243) "python"):', True),
        ("Thread 7 (LWP 812):", True),
        ("thread #3 exited with status 0", False),
        ('Thread 3438121 (idle): "MainThread"', False),  # py-spy's
        ("Thread 0x00007fbaf7ff7640 (most recent call first):", False),  # faulthandler's
    ],
)
def test_a_debuggers_thread_line_is_known_by_its_own_shape(line: str, expected: bool) -> None:
    # GIVEN a line that begins with a thread's number WHEN asked whether a debugger's backtrace printed it
    # THEN lldb's thread-stop-format and gdb's `thread apply` header are; py-spy's and faulthandler's are not
    assert (DEBUGGER_THREAD.match(line) is not None) is expected


@pytest.mark.parametrize("dump", [LLDB_DUMP, GDB_DUMP], ids=["lldb", "gdb"])
def test_a_backtrace_pasted_alone_places_the_rank_in_the_group_it_tears_down(tmp_path: Path, dump: str) -> None:
    # GIVEN a paste that is one debugger backtrace of a rank whose main thread waits in ProcessGroupNCCL::abort()
    report = _judge(tmp_path, dump)
    # THEN a process group was made (its teardown proves no more: dist_init), the log ends there with no error
    # (stalled), at low confidence, placed by the abort frame; that frame is where the run stopped
    assert (report["verdict"], report["phase"], report["confidence"]) == ("stalled", "dist_init", "low")
    assert "placed by a stack's frames alone (`c10d::ProcessGroupNCCL::abort (libtorch_cuda.so)`" in report["reason"]
    assert "c10d::ProcessGroupNCCL::abort()" in report["root_cause"]["text"]
    # AND the fast path (which reads only the lines that may matter) gives the same report as reading every line
    log = tmp_path / "bt.log"
    packs = load_packs()
    assert analysed([log], packs, pipeline.Options(as_of=AS_OF, post_mortem=True, fast=True)) == plain([log], packs)


def test_a_debuggers_frames_without_their_thread_line_place_nothing(tmp_path: Path) -> None:
    # GIVEN lldb's frame lines with no thread line above them (a frame-shaped listing of anything)
    frames = "".join(line + "\n" for line in LLDB_DUMP.splitlines() if "frame #" in line)
    report = _judge(tmp_path, frames)
    # THEN nothing is placed: read outside a failure's text only under a debugger's thread line
    assert (report["verdict"], report["phase"]) == ("unknown", None)


@pytest.mark.parametrize("dump", [LLDB_DUMP, GDB_DUMP], ids=["lldb", "gdb"])
def test_a_backtrace_is_a_dump_of_native_threads(dump: str) -> None:
    # GIVEN the backtrace WHEN parsed as stack dumps THEN one process of two threads, their named frames native,
    # innermost first (the address lldb could not name is no frame)
    (snapshot,) = parse_dumps_in_text(dump.splitlines())
    threads = {thread.thread_id: thread for thread in snapshot.threads}
    assert sorted(threads) == ["1", "2"]
    main = threads["1"]
    assert all(frame.native for frame in main.frames)
    assert [frame.function for frame in main.frames].index("c10d::ProcessGroupNCCL::abort") > 0
    assert main.frames[0].function == "__futex_abstimed_wait_common"
    assert {frame.file for frame in main.frames} >= {"libtorch_cuda.so", "libc.so.6"}
