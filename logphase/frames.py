"""Stack frames as text: the one py-spy frame regex, the path shortening py-spy applies, and the one
frame key `function (file)` that stall signatures and frame anchors are matched against.

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
# A line that may open or belong to a stack dump (stacks/dumps.py's DumpParser looks at no other
# line while no dump is open); the fast path hands these to the matcher too.
TRIGGER = re.compile(
    r'File "|Thread |thread |Process \d|Fatal Python error|Pyspy|Timeout \(|Stack \(most|Extension modules|'
    r"^\s{4}\S"
)
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
