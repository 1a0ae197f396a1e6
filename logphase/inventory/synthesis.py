"""A log line from a template: placeholders filled with plausible values, the system's real prefix added.

The line is what the system would print at that call, so the packs can be asked how they read it."""

from __future__ import annotations

import re
import string

from logphase.inventory.store import InventoryEntry
from logphase.inventory.templates import WORDY

FORMATTER = string.Formatter()
INT_NAME = re.compile(
    r"(?:rank|size|num|count|port|len|world|idx|index|step|_id$|^n_|^i$|^n$|tp|pp|dp|gpu|device|pid|version|code)", re.I
)
# fields whose values real logs show (shared/reference, the wheels' own dicts): SGLang's graph backend
# name (`cuda graph` to 0.5.10, `CUDA graph` after), its capture names, captured batch sizes
NAMED_VALUES: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = (
    (re.compile(r"graph_backend"), ("cuda graph", "CUDA graph")),
    (re.compile(r"capture_name"), ("target decode",)),
    (re.compile(r"capture_bs$"), ("[1, 2, 4, 8]",)),
)
BOOL_NAME = re.compile(r"(?:^|[._])(?:is_|has_|enabled?\b|soft\b|use_)", re.I)
FLOAT_NAME = re.compile(
    r"(?:time|secs|seconds|elapsed|duration|mem|gb|gib|ratio|fraction|util|took|speed|throughput)", re.I
)
VLLM_LEVELS = {"debug": "DEBUG", "info": "INFO", "warning": "WARNING", "error": "ERROR", "critical": "CRITICAL"}
TORCH_LEVELS = {"debug": "I", "info": "I", "warning": "W", "error": "E", "critical": "E"}
BAR = ": 100%|██████████| 2/2 [00:01<00:00,  1.50it/s]"


def fill_value(name: str, spec: str, conversion: str | None, untyped: str | None = None, choice: int = 0) -> str:
    """A value a field of this name and format spec plausibly prints; `!r` quotes only text.
    `untyped` overrides the guess for a field whose spec and name tell no type; `choice` picks among
    the values real logs print for a known field name (NAMED_VALUES)."""
    for pattern, values in NAMED_VALUES:
        if pattern.search(name):
            return values[min(choice, len(values) - 1)]
    if BOOL_NAME.search(name):
        return "False"
    if spec.endswith("d") or spec.endswith(","):
        value = "2"
    elif spec.endswith(("f", "g", "e", "%")):
        digits = re.search(r"\.(\d+)", spec)
        value = format(1.5, f".{digits.group(1) if digits else 2}f")
    elif untyped is not None:  # a variant: the name's guess (a float for `timeout`) may be wrong
        value = untyped
    elif FLOAT_NAME.search(name):
        value = "1.50"
    elif INT_NAME.search(name) or not name:
        value = "2"
    else:
        value = "x"
    return f"'{value}'" if conversion == "r" and not value[0].isdigit() else value


def fill(text: str, untyped: str | None = None, choice: int = 0) -> str:
    """A template's first worded line with every field filled; a template that is not valid format
    syntax (a stray brace in the source) is used as it is."""
    try:
        parts = list(FORMATTER.parse(text))
    except ValueError:
        return first_line(text)
    filled = []
    for literal, name, spec, conversion in parts:
        filled.append(literal)
        if name is None:
            continue
        if not name and not "".join(filled).strip():
            continue  # a nameless field before any text is a caller's tag (vLLM's `%sCompiling …`), often empty
        filled.append(fill_value(name, spec or "", conversion, untyped, choice))
    return first_line("".join(filled))


def first_line(text: str) -> str:
    """The first line with words: a multi-line message's continuation lines carry no prefix."""
    for line in text.splitlines():
        if WORDY.search(line):
            return line.strip()
    return text.strip()


def synthesise_variants(entry: InventoryEntry) -> list[str]:
    """The line with its fields guessed from their names and specs, then with every field of no
    known type a number, then a word: a rule that reads one of them reads the template."""
    lines = [synthesise(entry, untyped, choice) for choice in (0, 1) for untyped in (None, "2", "x")]
    return list(dict.fromkeys(lines))


def synthesise(entry: InventoryEntry, untyped: str | None = None, choice: int = 0) -> str:
    """The line the system prints for this template, with its prefix."""
    message = fill(entry.text, untyped, choice)
    base = entry.file.rsplit("/", 1)[-1]
    if entry.kind == "raise":
        return f"{entry.level}: {message}"  # the exception line that ends the traceback
    if entry.kind == "tqdm":
        return message + BAR
    if entry.kind == "print":
        return message
    if entry.kind == "native":
        return f"[rank0]:[E1201 10:00:00.000000000 {base}:100] {message}"
    if entry.system == "sglang":
        return f"[2025-01-01 10:00:00 TP0] {message}"
    if entry.system == "vllm":
        return f"{VLLM_LEVELS.get(entry.level, 'INFO')} 01-01 10:00:00 [{base}:{entry.line}] {message}"
    if entry.system == "torch":
        path = entry.file.removeprefix("torch/")
        return f"{TORCH_LEVELS.get(entry.level, 'I')}1201 10:00:00.000000 1234 {path}:{entry.line}] {message}"
    return message
