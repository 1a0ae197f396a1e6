"""The one frame key: log lines (tracebacks, faulthandler, py-spy) and parsed stack frames give the
same `function (file)` for the same frame, so one signature matches both."""

from __future__ import annotations

import pytest

from logphase.frames import frame_key, frame_key_of, native_frame_key, native_name, short_path
from logphase.stacks.dumps import parse_frame_text


@pytest.mark.parametrize(
    ("line", "key"),
    [
        # a traceback line of an installed package: the path below dist-packages, as py-spy prints it
        (
            'File "/usr/lib/python3/dist-packages/sglang/srt/model_executor/model_runner.py", line 2, in load_model',
            "load_model (sglang/srt/model_executor/model_runner.py)",
        ),
        # faulthandler (no comma) in the standard library
        ('  File "/usr/lib/python3.10/threading.py", line 320 in wait', "wait (threading.py)"),
        # py-spy ≥0.4 qualifies methods; the key drops the class so older and newer dumps match alike
        ("    Popen._wait (subprocess.py:1959)", "_wait (subprocess.py)"),
        ("    <module> (rank.py:12)", "<module> (rank.py)"),
        # a `--locals` line, indented further, is not a frame
        ("        self (Popen): <Popen at 0x7f>", None),
        ("Load weight begin. avail mem=21.63 GB", None),
    ],
)
def test_a_frame_line_gives_its_key(line: str, key: str | None) -> None:
    assert frame_key(line) == key


def test_a_parsed_frame_and_its_line_have_the_same_key() -> None:
    # GIVEN a py-spy frame as a dump prints it
    text = "all_reduce (torch/distributed/distributed_c10d.py:2501)"
    frame = parse_frame_text(text)
    assert frame is not None
    # WHEN keyed from the Frame (stacks) and from the line (logs) THEN the keys agree
    assert frame_key_of(frame.function, frame.file, native=frame.native) == frame_key("    " + text)
    assert frame_key("    " + text) == "all_reduce (torch/distributed/distributed_c10d.py)"


def test_a_native_frame_keeps_its_qualified_name() -> None:
    # GIVEN a C++ frame of a --native dump WHEN keyed THEN `c10d::…` is not cut at a dot
    assert frame_key_of("c10d::ProcessGroupNCCL.wait", "libtorch_cuda.so", native=True) == (
        "c10d::ProcessGroupNCCL.wait (libtorch_cuda.so)"
    )


def test_short_path_keeps_a_path_outside_python_as_is() -> None:
    assert short_path("/work/app/train.py") == "/work/app/train.py"
    assert short_path("/opt/venv/lib/python3.12/site-packages/vllm/worker.py") == "vllm/worker.py"


@pytest.mark.parametrize(
    ("line", "key"),
    [
        # c10's Backtrace: `frame #N: <symbol> + 0x<offset> (0x<address> in <library>)`
        (
            "frame #4: c10d::ProcessGroupNCCL::getNCCLComm(std::string const&, c10::Device&, c10d::OpType, int, bool)"
            " + 0x1c2 (0x7f10a2b3c4d5 in /opt/venv/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so)",
            "c10d::ProcessGroupNCCL::getNCCLComm (libtorch_cuda.so)",
        ),
        # TensorRT-LLM's TllmException trace, `%-3d %*p %s + %zd`: no library printed with a symbol
        (
            "3       0x7f2200aa10ff"
            " tensorrt_llm::batch_manager::kv_cache_manager::BlockManager::allocatePools(bool) + 40",
            "tensorrt_llm::batch_manager::kv_cache_manager::BlockManager::allocatePools ()",
        ),
        # a return type and template arguments: the name is what stands between them and the parameters
        (
            "1       0x7f2200aa1000"
            " void tensorrt_llm::common::check<cudaError>(cudaError, char const*, char const*, int) + 88",
            "tensorrt_llm::common::check<cudaError> ()",
        ),
        # gdb: `#N  0x<address> in <symbol> (<arguments>) from <library>`
        (
            "#2  0x00007f55d1e0a1b2 in ncclCommInitRank (comm=0x7ffd, nranks=8, rank=3) from /usr/lib/libnccl.so.2",
            "ncclCommInitRank (libnccl.so.2)",
        ),
        # a frame its printer could not name (backtrace_symbols' `lib(+offset) [address]`) has no key
        ("2       0x7f2200aa2000 /x/libtensorrt_llm.so(+0x7289) [0x7f2200aa2000]", None),
        ("#5  0x00007f55d1e0a1b2 in ?? () from /usr/lib/libcuda.so.1", None),
        # a line that only mentions an address is no frame
        ("3 GPUs found, comm 0x7f2200aa10ff rank 0 nranks 8", None),
        ("frame #0: cut before its offset", None),
    ],
)
def test_a_native_frame_line_gives_the_key_of_its_symbol(line: str, key: str | None) -> None:
    # GIVEN a native backtrace line as its printer writes it WHEN keyed THEN `name (library)`, parameters dropped
    assert native_frame_key(line) == key


def test_a_native_name_keeps_parentheses_that_are_part_of_the_name() -> None:
    # GIVEN symbols with `operator()` and an anonymous namespace WHEN named THEN only the parameter list goes
    assert native_name("std::_Function_handler<void (), Foo>::operator()(std::_Any_data const&) const") == (
        "std::_Function_handler<void (), Foo>::operator()"
    )
    assert native_name("(anonymous namespace)::run(int)") == "(anonymous namespace)::run"
