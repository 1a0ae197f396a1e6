"""The inventory's file edge: read release wheels (zips) for the extractor; read and write the data files."""

from __future__ import annotations

import functools
import re
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from importlib import resources
from pathlib import Path
from typing import BinaryIO

from logphase.errors import InputError, UsageError
from logphase.inventory.scope import NATIVE_LIBRARIES, NATIVE_MESSAGE, in_scope, release_of_wheel, system_of_wheel
from logphase.inventory.store import InventoryEntry, decode, encode, merge_releases
from logphase.inventory.templates import Template, extract_templates
from logphase.outputs import OutputError, check_output, write_atomically

SYSTEMS = ("sglang", "vllm", "torch")

# printable runs in a shared library: C string literals
PRINTABLE_RUN = re.compile(rb"[\x20-\x7e]{24,400}")
CHUNK = 1 << 25


def wheel_templates(path: Path, system: str) -> Iterator[Template]:
    """Every template of the wheel's in-scope Python files (and, for torch, its libraries' strings)."""
    with zipfile.ZipFile(path) as wheel:
        for member in sorted(wheel.namelist()):
            if in_scope(system, member):
                source = wheel.read(member).decode("utf-8", errors="replace")
                yield from extract_templates(source, member)
            elif NATIVE_LIBRARIES.search(member):
                with wheel.open(member) as library:
                    yield from native_templates(iter(lambda: library.read(CHUNK), b""), member)


def native_templates(chunks: Iterable[bytes], file: str) -> Iterator[Template]:
    """C++ messages of the distributed runtime among a library's strings: a sentence (a capital or
    `[` first, a space inside) that names c10d, NCCL, a watchdog or a timeout. The library (a GiB for
    libtorch_cuda.so) is read in chunks; a string cut by a chunk's end is carried into the next."""
    seen: set[str] = set()
    carry = b""
    for chunk in chunks:
        data = carry + chunk
        cut = max(data.rfind(b"\0"), 0)
        data, carry = data[:cut], data[cut:]
        yield from _native_strings(data, file, seen)
    yield from _native_strings(carry, file, seen)


def _native_strings(data: bytes, file: str, seen: set[str]) -> Iterator[Template]:
    for found in PRINTABLE_RUN.finditer(data):
        text = found.group().decode("ascii").strip()
        if text in seen or " " not in text or not (text[0].isupper() or text[0] == "["):
            continue
        if NATIVE_MESSAGE.search(text):
            seen.add(text)
            yield Template("native", "native", text, file, 0)  # fmt `{}` fields are format fields


def data_path(directory: Path, system: str) -> Path:
    return directory / f"{system}.jsonl.gz"


def builtin_inventory_dir() -> Path:
    """The data shipped with the packs: `patterns/inventory/`."""
    root = resources.files("logphase.patterns")
    return Path(str(root)) / "inventory"


def read_inventory(directory: Path, systems: tuple[str, ...] = SYSTEMS) -> list[InventoryEntry]:
    """Every entry of the systems' data files present in `directory`."""
    entries: list[InventoryEntry] = []
    for system in systems:
        path = data_path(directory, system)
        if path.exists():
            entries.extend(decode(system, path.read_bytes()))
    return entries


def build_inventory(wheels: list[Path], out: Path, *, force: bool = False) -> dict[str, int]:
    """Extract every wheel, merge by system, write one data file per system → templates per system.
    A system's file is rewritten from the wheels given: pass every release of it at once. Each file is
    checked before any wheel is read (never an input, a folder or a device; an existing one only with
    `force`) and written beside itself, then renamed into place."""
    systems: dict[Path, str] = {}
    for wheel in wheels:
        system = system_of_wheel(wheel.name)
        if system is None:
            raise UsageError(f"{wheel.name}: not a wheel of {', '.join(SYSTEMS)}")
        systems[wheel] = system
    if out.exists() and not out.is_dir():
        raise OutputError(f"{out}: not a folder", hint=f"name a folder for the data files with {OPTION}")
    inputs = [str(wheel) for wheel in wheels]
    if out.is_dir():  # else made once the wheels are read
        for system in set(systems.values()):
            check_output(data_path(out, system), inputs=inputs, force=force, option=OPTION)
    found: dict[str, dict[str, list[Template]]] = {}
    for wheel, system in systems.items():
        try:
            templates = list(wheel_templates(wheel, system))
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, OSError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc) or type(exc).__name__
            raise InputError(
                f"{wheel}: cannot read the wheel: {reason}",
                hint="give the .whl files as `pip download --no-deps PKG==VER` saves them, whole",
            ) from None
        found.setdefault(system, {})[release_of_wheel(wheel.name)] = templates
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(
            f"{out}: cannot make the folder: {exc.strerror}", hint=f"write elsewhere with {OPTION}"
        ) from None
    counts = {}
    for system, by_release in found.items():
        entries = merge_releases(system, by_release)
        data = encode(entries)
        write_atomically(
            data_path(out, system), functools.partial(_write, data), inputs=inputs, force=force, option=OPTION
        )
        counts[system] = len(entries)
    return counts


OPTION = "--out FOLDER"


def _write(data: bytes, raw: BinaryIO) -> None:
    raw.write(data)
