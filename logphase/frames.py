"""One stack-frame line of a traceback or a dump → `function (file)`, the key stall signatures read.

Shared by the log matcher (frames inside tracebacks tell which phase a rank failed in) and kept
free of both pipelines so that neither imports the other."""

from __future__ import annotations

import re

# `  File "/x/cuda_graph_runner.py", line 147, in __init__` (traceback) and
# `  File "/x/scheduler.py", line 510 in event_loop_overlap` (faulthandler)
PYTHON_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?:\d+|\?\?\?),? in (?P<function>[^\s"]+)')
# `    load_weights (sglang/srt/models/llama.py:410)` (py-spy text)
PYSPY_FRAME = re.compile(r"^\s{2,}(?P<function>[\w.<>]+) \((?P<file>[^()]+?)(?::\d+)?\)\s*$")
INSTALL_ROOTS = ("/site-packages/", "/dist-packages/")


def frame_key(line: str) -> str | None:
    """`function (file)` for a frame line, with installed paths shortened as py-spy prints them."""
    found = PYTHON_FRAME.match(line) or PYSPY_FRAME.match(line)
    if found is None:
        return None
    path = found.group("file")
    for root in INSTALL_ROOTS:
        if root in path:
            path = path.rsplit(root, 1)[1]
            break
    function = found.group("function")
    if "." in function and not function.startswith("<"):
        function = function.rsplit(".", 1)[1]  # py-spy ≥0.4 qualifies methods: Popen._wait → _wait
    return f"{function} ({path})"
