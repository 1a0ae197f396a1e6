"""Stack frames as text: the one py-spy frame regex, the native (C/C++) backtrace lines, the path shortening
py-spy applies, and the one frame key `function (file)` that stall signatures and frame anchors are matched against.

Shared by the log matcher (frames inside tracebacks tell which phase a rank failed in) and the
stacks pipeline (dumps, classification), and kept free of both so that neither imports the other;
with them the test of a log line that may open a stack dump, so that the scan of a log without one
does not import the dump parser."""

from __future__ import annotations

import re

# `  File "/x/cuda_graph_runner.py", line 147, in __init__` (traceback) and
# `  File "/x/scheduler.py", line 510 in event_loop_overlap` (faulthandler)
PYTHON_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?:\d+|\?\?\?),? in (?P<function>[^\s"]+)')
# `    load_weights (sglang/srt/models/llama.py:410)` (py-spy text: four spaces, then the function,
# which may be a native C++ name with spaces and parentheses; the last `(…)` is the file). Exactly
# four: the `--locals` lines under a frame are indented further and must not read as frames.
PYSPY_FRAME = re.compile(r"^\s{4}(?P<function>\S(?:.*?\S)?) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)\s*$")
# py-spy's thread line above a thread's frames (src/dump.rs: `Thread {tid} ({status}): "{name}"`, without `: "{name}"`
# where the thread has none; the id the OS thread's, decimal, or `{:#X}` of Python's where py-spy has none). The
# dump parser takes any status; the matcher reads the frames under a line of py-spy's own (`PYSPY_STATUSES`) as one
# group, so that faulthandler's `Thread 0x… (most recent call first)` is never one.
PYSPY_THREAD = re.compile(
    r'^Thread (?P<tid>0[xX][0-9A-Fa-f]+|\d+) \((?P<status>idle|active\+gil|active|[^)]*)\)(?:: "(?P<name>.*)")?\s*$'
)
# py-spy's first line (src/dump.rs: `Process {pid}: {cmdline}`, the arguments joined by spaces: a title setproctitle
# wrote is its whole cmdline)
PYSPY_PROCESS = re.compile(r"^Process (?P<pid>\d+): ?(?P<cmd>.*?)\s*$")
# Rank names read from a process title.
SGLANG_SCHEDULER = re.compile(r"^sglang::scheduler(?P<tags>(?:_(?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+)*|_None)?\s*$")
VLLM_TITLE = re.compile(
    r"^(?:VLLM|\w+)::(?P<kind>Worker|EngineCore|APIServer|DPCoordinator)(?P<tags>(?:_\w+?\d+)*)\s*$"
)
VLLM_OLD_WORKER = re.compile(r"^VllmWorker(?:Process)?[-_ ]?(?P<rank>\d+)")
# stack_trace.rs `status_str`: not active, `idle`; active, `active`, and `active+gil` where it held the GIL
PYSPY_STATUSES = frozenset({"idle", "active", "active+gil"})


def is_pyspy_thread(line: str) -> bool:
    """Whether `line` is a thread line of py-spy's text dump (`Thread 3438121 (idle): "MainThread"`)."""
    found = PYSPY_THREAD.match(line)
    return found is not None and found["status"] in PYSPY_STATUSES


# A line that may open or belong to a stack dump (stacks/dumps.py's DumpParser looks at no other
# line while no dump is open); the fast path hands these to the matcher too, so each alternative is
# what an opener of the parser needs, no less: py-spy's and faulthandler's `Thread 0x…`/`Thread 123 (`,
# faulthandler's `Current thread 0x…`, pystack's `Traceback for thread 123`, py-spy's `Process 123:`, lldb's `thread #3`
# (a line that says `thread ` or `Process 2 using …` is read as any other).
TRIGGER = re.compile(
    r'File "|Thread (?:0[xX]|\d)|thread (?:0x|#?\d)|Process \d+:|Fatal Python error|Pyspy|Timeout \(|Stack \(most|'
    r"Extension modules|^\s{4}\S"
)
# A native (C/C++) frame line as its printer writes it, the symbol demangled (docs/design.md §6):
# c10's Backtrace (`frame #3: c10d::ProcessGroupNCCL::WorkNCCL::isCompleted() + 0xa0 (0x7fe0… in /x/libtorch_cuda.so)`),
# the glibc backtrace + dladdr form TensorRT-LLM's TllmException appends to its text (`%-3d %*p %s + %zd`:
# `5       0x7cb3c5baf5bd tensorrt_llm::…::KVCacheManager::allocatePools(bool) + 61`), gdb's
# (`#4  0x00007f… in ncclCommInitRank (…) from /x/libnccl.so.2`, or `… at file.c:242` where it has debug info: gdb's
# manual, Backtraces), glibc's backtrace_symbols_fd under Open MPI's index
# (`[host:pid] [13] /x/libmpi.so.40(MPI_Bcast+0x121)[0x7fc1…]`, its symbol mangled; MPI_Abort's stack print puts
# `func:` before it, ompi/runtime/ompi_mpi_abort.c), lldb's default frame-format (lldb.llvm.org/use/formatting.html:
# `frame #${frame.index}: ${frame.pc}{ ${module.file.basename}{`${function.name-with-args}{${function.pc-offset}}}}{ at
# file:line{:column}}{ [opt]}{ [artificial]}`: `frame #3: 0x00007fb0… libtorch_cuda.so`c10d::ProcessGroupNCCL::abort()
# + 664`, its offset decimal, its arguments' values in the name where it has debug info). A frame its printer could not
# name
# (`2  0x7f… /x/libtensorrt_llm.so(+0x728999) [0x7f…]`, `?? ()`) has no symbol and no key.
NATIVE_FRAME = re.compile(
    r"^frame #\d+: 0x[0-9a-f]+ (?P<module>[^\s`]+)`(?P<lldb>[^\s+].*?)(?: \+ \d+)?"
    r"(?: at [^\s:]+:\d+(?::\d+)?)?(?: \[opt\])?(?: \[artificial\])?\s*$"
    r"|^frame #\d+: (?P<c10>\S.*?) \+ 0x[0-9a-f]+ \((?:0x[0-9a-f]+ in (?P<lib>[^()\s]+)\))?"
    r"|^\d+ +0x[0-9a-f]+ (?P<tllm>[^\s/].*?) \+ \d+\s*$"
    r"|^#\d+ +0x[0-9a-f]+ in (?P<gdb>[^\s?].*?) \(.*?\)(?: from (?P<from>\S+)| at [^\s:]+:\d+)?\s*$"
    r"|^(?:\[[\w.-]+:\d+\] )?\[ ?\d+\] (?:func:)?(?P<binary>[^\s(\[:]+)"
    r"\((?P<glibc>[\w.$]+)[+-]0x[0-9a-f]+\) ?\[0x[0-9a-f]+\]"
)
# Open MPI's fatal signal handler (opal/util/stacktrace.c show_stackframe, for the signals of its `opal_signal`
# parameter: SIGABRT, SIGBUS, SIGFPE, SIGSEGV by default) writes `[host:pid] *** Process received signal ***`, the
# signal's lines, then each frame through opal_backtrace_print with the prefix `[host:pid] ` (HOSTFORMAT
# `[%s:%05d] `): `[%2d] ` and glibc's backtrace_symbols_fd text, `binary(symbol+0xoff)[0xaddr]` (`binary(+0xoff)
# [0xaddr]` or `binary[0xaddr]` where it has no symbol); then `*** End of error message ***`, and it raises the
# signal again. Its other callers pass no prefix (MPI_Abort's stack, `opal_abort_print_stack`, prints
# `[host:pid] [N] func:…`), so a frame with the prefix is the handler's: the process dies of the signal.
SIGNAL_HANDLER_FRAME = re.compile(
    r"^\[[\w.-]+:\d+\] \[ ?\d+\] [^\s(\[:]+(?:\([\w.$]*[+-]0x[0-9a-f]+\))? ?\[0x[0-9a-f]+\]"
)
# What the fast path hands the matcher for it (the frame's index after the prefix, its address at the end)
SIGNAL_HANDLER_TRIGGER = rb"\] \[[ \d]\d+\] [^\n]*\[0x[0-9a-f]+\]"
# An Itanium C++ ABI mangled name (backtrace_symbols prints symbols as the object file holds them) that names a
# function, nested or not, by source names alone: `_ZN12tensorrt_llm3mpi7MpiComm5bcastEPv…`. Templates,
# substitutions and operators are left as they are (a key that no anchor names).
MANGLED = re.compile(r"_Z(?:N[KVrRO]*(?P<std>St)?|L?)(?=\d)")
SOURCE_NAME = re.compile(r"(?P<length>\d+)")
STRUCTORS = re.compile(r"(?P<kind>[CD])[0-3]E")
INSTALL_ROOTS = ("/site-packages/", "/dist-packages/")
STDLIB_ROOT = re.compile(r"/lib/python3(?:\.\d+)?/(.*)$")


def short_path(path: str) -> str:
    """A full path shortened the way py-spy prints it: below `site-packages` for installed packages,
    below `lib/python3.X` for the standard library."""
    for root in INSTALL_ROOTS:
        if root in path:
            return path.rsplit(root, 1)[1]
    found = STDLIB_ROOT.search(path)
    return found.group(1) if found else path


def frame_key_of(function: str, file: str, *, native: bool = False) -> str:
    """`function (file)`, with py-spy ≥0.4's class qualifier dropped (`Popen._wait` → `_wait`) so
    that signatures match every py-spy version; native (C/C++) names are kept whole."""
    if "." in function and not native and not function.startswith("<"):
        function = function.rsplit(".", 1)[1] or function
    return f"{function} ({file})"


def frame_key(line: str) -> str | None:
    """The frame key of a traceback, faulthandler or py-spy frame line; None for other lines."""
    found = PYTHON_FRAME.match(line) or PYSPY_FRAME.match(line)
    if found is None:
        return None
    return frame_key_of(found.group("function"), short_path(found.group("file")))


def native_name(symbol: str) -> str:
    """A demangled C++ symbol without its parameter list, qualifiers and return type, as py-spy names a
    native frame: `void tensorrt_llm::common::check<cudaError>(cudaError, char const*) const` →
    `tensorrt_llm::common::check<cudaError>`."""
    text = symbol.strip().removesuffix(" const")
    if text.endswith(")"):
        depth = 0
        for at in range(len(text) - 1, -1, -1):
            char = text[at]
            if char == ")":
                depth += 1
            elif char == "(":
                depth -= 1
                if depth == 0:
                    text = text[:at]
                    break
    depth, start = 0, 0
    for at, char in enumerate(text):
        if char in "<(":
            depth += 1
        elif char in ">)":
            depth -= 1
        elif char == " " and depth == 0:
            start = at + 1  # what stands before the name at the top level is its return type
    return text[start:]


def demangled(symbol: str) -> str:
    """The qualified name a mangled function symbol names (`_ZNK12tensorrt_llm3mpi7MpiComm5bcastEPvm…` →
    `tensorrt_llm::mpi::MpiComm::bcast`: the Itanium C++ ABI's <nested-name> of <source-name>s, a constructor or
    destructor named by its class); the symbol as it is where it is none (C's `MPI_Bcast`) or takes more than that."""
    head = MANGLED.match(symbol)
    if head is None:
        return symbol
    nested = symbol.startswith("_ZN")
    names = ["std"] if head["std"] else []
    at = head.end()
    while True:
        length = SOURCE_NAME.match(symbol, at)
        if length is None:
            break
        at = length.end() + int(length["length"])
        if at > len(symbol):
            return symbol
        names.append(symbol[length.end() : at])
        if not nested:
            return names[0]
    structor = STRUCTORS.match(symbol, at)
    if structor is not None and names:
        names.append(("~" if structor["kind"] == "D" else "") + names[-1])
        at = structor.end() - 1
    if not names or not symbol.startswith("E", at):
        return symbol  # a template's arguments, a substitution, an operator: more than this reader takes apart
    return "::".join(names)


def native_frame_key(message: str) -> str | None:
    """The frame key `name (library)` of a native backtrace line (NATIVE_FRAME); None for other lines and for
    a frame whose printer gave no symbol. The library is its file name (TensorRT-LLM's trace prints none)."""
    parts = native_frame(message)
    return frame_key_of(*parts, native=True) if parts is not None else None


def native_frame(message: str) -> tuple[str, str] | None:
    """The name and library file name of a native backtrace line (NATIVE_FRAME), as native_frame_key keys them."""
    if message[:1] not in NATIVE_STARTS:
        return None
    found = NATIVE_FRAME.match(message)
    if found is None:
        return None
    glibc = found["glibc"]
    symbol = found["lldb"] or found["c10"] or found["tllm"] or found["gdb"] or demangled(glibc)
    name = native_name(symbol) if glibc is None else symbol
    if not name:
        return None
    library = found["module"] or found["lib"] or found["from"] or found["binary"] or ""
    return name, library.rsplit("/", 1)[-1]


# The first characters of a native frame line: the test before the regex, on every line of a traceback.
NATIVE_STARTS = frozenset("f#0123456789[")

# A native debugger's thread line, above that thread's backtrace (innermost frame first): lldb's thread-stop-format
# for `thread backtrace` (`thread #${thread.index}{, name = '${thread.name}'}{, queue = …}{, stop reason = …}`, older
# lldb `thread #1: tid = 0x2e03, …`; `* ` marks the selected thread; lldb.llvm.org/use/formatting.html) and gdb's
# `thread apply all bt` header (`Thread 2 (Thread 0x7f… (LWP 123) "python"):`, gdb/thread.c thread_apply_all_command:
# `Thread %s (%s):` with target_pid_to_str and the thread's name). Its frames (NATIVE_FRAME) are read in no failure's
# block, as py-spy's are under its thread line: a stack printed by a debugger attached to a live (or hung) process.
DEBUGGER_THREAD = re.compile(
    r"^\s*(?:\* )?thread #(?P<lldb>\d+)(?:, |: tid = |\s*$)"
    r'|^Thread (?P<gdb>\d+) \((?:Thread 0x[0-9a-f]+ \(LWP \d+\)|LWP \d+)(?: "(?P<name>[^"]*)")?\):\s*$'
)
# What the fast path hands the matcher for it (gdb's `Thread ` is a frame header's marker already)
DEBUGGER_THREAD_TRIGGER = rb"thread #\d"
LLDB_NAME = re.compile(r", name = '(?P<name>[^']*)'")
# What stands before a debugger's frame line in its backtrace: lldb indents it and marks the selected frame `* `
DEBUGGER_FRAME_LEAD = re.compile(r"^\s*(?:\* )?(?=frame #\d+: 0x|#\d+ )")


def debugger_frame(message: str) -> tuple[str, str] | None:
    """The name and library of a native frame line as a debugger's backtrace prints it (lldb's indented, its selected
    frame marked `* `), None for any other line."""
    lead = DEBUGGER_FRAME_LEAD.match(message)
    return native_frame(message[lead.end() :]) if lead is not None else None


def debugger_frame_key(message: str) -> str | None:
    """The frame key of debugger_frame's line."""
    parts = debugger_frame(message)
    return frame_key_of(*parts, native=True) if parts is not None else None


# C0 and C1 controls and DEL: a name a process chose (a thread, a function, its command line) must not
# drive the terminal the report is read on.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """`text` with every control character shown as its escape (`\\x1b`), tabs and newlines kept."""
    return _CONTROLS.sub(lambda found: f"\\x{ord(found.group()):02x}", text)


def may_open_dump(raw: str) -> bool:
    """Whether the dump parser, with no dump open, could take `raw` for the start of one: it tests
    TRIGGER on the line's last carriage-return part with its colour codes removed, so a line with
    colour codes may."""
    if "\x1b" in raw:
        return True
    return TRIGGER.search(raw.rstrip("\r\n").rsplit("\r", 1)[-1]) is not None


def role_and_tags_from_title(title: str) -> tuple[str | None, str | None]:
    """The role a process title (setproctitle / cmdline) tells, and the text of the rank tags it carries, which
    packs.rank_from_tags names: `sglang::scheduler_DP1_TP3_EP3` → ("scheduler", "_DP1_TP3_EP3"), `VLLM::Worker_TP1` →
    ("worker", "_TP1"), `VllmWorkerProcess-2` → ("worker", "TP2"); None where it names no rank."""
    title = title.strip()
    found = SGLANG_SCHEDULER.match(title)
    if found:
        tags = found.group("tags") or ""
        return "scheduler", (tags if tags not in ("", "_None") else None)
    if title.startswith("sglang::"):
        name = title[len("sglang::") :].split(":")[0].strip()
        return {"data_parallel_controller": "dp_controller"}.get(name, name) or None, None
    found = VLLM_TITLE.match(title)
    if found:
        kind = found.group("kind")
        role = {"Worker": "worker", "EngineCore": "engine_core", "APIServer": "api_server"}.get(kind, kind.lower())
        if kind == "EngineCore":  # `EngineCore_DP0` names the engine, not a rank
            return role, None
        return role, found.group("tags") or None
    found = VLLM_OLD_WORKER.match(title)
    if found:
        return "worker", f"TP{found.group('rank')}"
    if "resource_tracker" in title:
        return "resource_tracker", None
    if re.search(r"\bsglang[.]launch_server\b|\bsglang serve\b", title):
        return "main", None
    if re.search(r"\bvllm(?:[.]entrypoints| serve)\b", title):
        return "main", None
    if re.search(r"\btorchrun\b|torch[.]distributed[.](?:run|launch)\b", title):
        return "launcher", None
    return None, None
