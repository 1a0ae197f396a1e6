"""The setup a log was started with (model, parallelism, speculative draft, GPUs, NCCL), read from its head."""

from __future__ import annotations

import hashlib
import io
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import IO, Any

from logphase.bounded import MAX_RANK, read_int
from logphase.logs.reader import CHUNK_BYTES, LogSource, read_lines
from logphase.logs.server_args import PrintedArgs, printed_args, shipped_server_args
from logphase.packs import ServerArgsFormat

# The setup lines (server_args, vLLM's config) come within the first few dozen lines; 2000 leaves
# room for warnings, NCCL_DEBUG chatter and a banner, and bounds the cost on huge logs.
HEAD_LINES = 2000
# Bytes of each source kept for the fingerprint while the analysis streams it: 2000 lines of
# a chatty log, not more (server_args alone can be 8 KB).
HEAD_BYTES = 1 << 20
# Content identity of a log file instance: its first bytes carry the start time of the run (and
# server_args alone is a few KB), so the same path with the same head is the same run, even when the
# log grew since it was recorded. A shorter log is identified by its whole content.
HEAD_HASH_BYTES = 2048

VLLM_VERSION = re.compile(
    r"\b(?:vLLM API server version |vLLM server version |LLM engine \(v)(?P<version>\d+\.\d+[\w.+-]*)"
)
NCCL_VERSION = re.compile(r"\b(?:NCCL version:? |using nccl==)(?P<version>\d+\.\d+\.\d+)")
# `Config file not found at …/E=256,N=256,device_name=NVIDIA_H200,dtype=fp8_w8a8.json` (fused MoE
# kernel configs of SGLang and vLLM name the GPU this way) and `nvidia-smi -L` lines.
DEVICE_NAME = re.compile(r"\bdevice_name=(?P<name>[A-Za-z][\w-]*?)(?:,|\.json|\s|$)")
SMI_GPU = re.compile(r"^GPU (?P<index>\d+): (?P<name>[^(]+?) \(UUID: GPU-")
SIZES = ("tp_size", "pp_size", "dp_size", "ep_size")


@dataclass(frozen=True)
class Fingerprint:
    """What makes two runs comparable. Unknown facts are None; `key` says which facts must match."""

    system: str | None = None
    version: str | None = None
    model_path: str | None = None
    tp_size: int | None = None
    pp_size: int | None = None
    dp_size: int | None = None
    ep_size: int | None = None
    speculative_algorithm: str | None = None
    draft_model_path: str | None = None
    gpu_name: str | None = None
    gpu_count: int | None = None
    nccl_version: str | None = None

    @property
    def key(self) -> str:
        """The setup, without software versions: an upgrade of SGLang or NCCL keeps its baselines
        (the versions are recorded and shown next to the comparison)."""
        parts = [
            self.system,
            self.model_path,
            self.tp_size,
            self.pp_size,
            self.dp_size,
            self.ep_size,
            self.speculative_algorithm,
            self.draft_model_path,
            self.gpu_name,
            self.gpu_count,
        ]
        return "|".join("" if part is None else str(part) for part in parts)

    @property
    def known(self) -> bool:
        return self.model_path is not None

    def to_json(self) -> dict[str, Any]:
        return {field.name: getattr(self, field.name) for field in fields(self)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Fingerprint:
        names = {field.name for field in fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in names})

    def describe(self) -> str:
        """`Qwen3-235B TP8 EAGLE3 on 8× NVIDIA H200` — short, for tables and summaries."""
        if not self.known:  # no model named: what the log does say (`torch, NCCL 2.28.9`)
            said = [self.system or "", f"NCCL {self.nccl_version}" if self.nccl_version else ""]
            return ", ".join(part for part in said if part) + " (no model named)" if any(said) else "unknown setup"
        assert self.model_path is not None
        parts = [self.model_path.rstrip("/").rsplit("/", 1)[-1]]
        for name, size in (("TP", self.tp_size), ("PP", self.pp_size), ("DP", self.dp_size), ("EP", self.ep_size)):
            if size is not None and (size > 1 or name == "TP"):
                parts.append(f"{name}{size}")
        if self.speculative_algorithm:
            parts.append(self.speculative_algorithm)
        if self.gpu_name:
            parts.append(f"on {self.gpu_count}× {self.gpu_name}" if self.gpu_count else f"on {self.gpu_name}")
        return " ".join(parts)


@dataclass
class FingerprintCollector:
    """Feed a log's lines in order; `fingerprint()` at any time. Pure, incremental (watch feeds it
    line by line), and done after HEAD_LINES lines. `formats` are the packs' `[[server_args]]`."""

    formats: tuple[ServerArgsFormat, ...] = field(default_factory=shipped_server_args)
    seen: int = 0
    system: str | None = None
    version: str | None = None
    args_format: ServerArgsFormat | None = None  # the format whose line gave `args`
    args: dict[str, str] | None = None
    nested: dict[str, dict[str, str]] = field(default_factory=dict)  # `speculative_config` → its keys
    nccl_version: str | None = None
    gpu_name: str | None = None
    smi_gpus: dict[int, str] | None = None

    @property
    def done(self) -> bool:
        return self.seen >= HEAD_LINES

    def feed(self, text: str) -> None:
        if self.done:
            return
        self.seen += 1
        if self.args_format is None or self.args_format.repeats:
            self._setup_line(text)
        if self.nccl_version is None and ("CCL" in text or "ccl" in text) and (found := NCCL_VERSION.search(text)):
            self.nccl_version = found["version"]
        if self.version is None and "LLM" in text and (found := VLLM_VERSION.search(text)):
            self.version = found["version"]
        if self.gpu_name is None and "device_name=" in text and (found := DEVICE_NAME.search(text)):
            self.gpu_name = found["name"].replace("_", " ")
        if (
            text.startswith("GPU ")
            and (found := SMI_GPU.match(text))
            and (index := read_int(found["index"])) is not None
        ):
            self.smi_gpus = {**(self.smi_gpus or {}), index: found["name"].strip()}

    def feed_all(self, lines: Iterable[str]) -> FingerprintCollector:
        for text in lines:
            if self.done:
                break
            self.feed(text)
        return self

    def _setup_line(self, text: str) -> None:
        """The first server-arguments line sets the system; a format that `repeats` goes on adding
        the keys not seen yet (vLLM prints its CLI's non-default args, then the engine config)."""
        printed = printed_args(text, self.formats if self.args_format is None else (self.args_format,))
        if printed is None:
            return
        self.args_format, self.system = printed.format, printed.format.system
        self.args = {**printed.args, **(self.args or {})}
        for name, values in printed.nested.items():
            self.nested.setdefault(name, values)

    def _fact(self, fact: str) -> str | None:
        """A setup fact from the printed keys the format names for it, first found wins."""
        if self.args_format is None:
            return None
        return PrintedArgs(self.args_format, self.args or {}, self.nested).value(fact)

    def fingerprint(self, system: str | None = None, version: str | None = None) -> Fingerprint:
        """`system` and `version` from the timeline (the pattern packs know them better) win."""
        model = self._fact("model_path")
        algorithm = self._fact("speculative_algorithm")
        sizes = [_int(self._fact(name)) for name in SIZES]
        if model is not None:
            # a version that does not print a size runs without that kind of parallelism
            sizes = [1 if size is None else size for size in sizes]
            flag = self.args_format.expert_parallel_flag if self.args_format else None
            if flag and (self.args or {}).get(flag) == "True" and self._fact("ep_size") is None:
                sizes[3] = (sizes[0] or 1) * (sizes[2] or 1)  # the flag's EP spans TP × DP
        gpus = self.smi_gpus or {}
        gpu_name = self.gpu_name or (next(iter(gpus.values())) if gpus else None)
        return Fingerprint(
            system=system or self.system,
            version=version or self.version,
            model_path=model,
            tp_size=sizes[0],
            pp_size=sizes[1],
            dp_size=sizes[2],
            ep_size=sizes[3],
            speculative_algorithm=algorithm.upper() if algorithm else None,
            draft_model_path=self._fact("draft_model_path"),
            gpu_name=gpu_name,
            gpu_count=len(gpus) if gpus else None,
            nccl_version=self.nccl_version,
        )


def fingerprint_of_lines(
    lines: Iterable[str],
    system: str | None = None,
    version: str | None = None,
    formats: tuple[ServerArgsFormat, ...] | None = None,
) -> Fingerprint:
    collector = FingerprintCollector() if formats is None else FingerprintCollector(formats=formats)
    return collector.feed_all(lines).fingerprint(system, version)


def _int(text: str | None) -> int | None:
    return read_int(text, MAX_RANK)  # a parallel size: at most as many as there are ranks


# --- identity of a run's logs, collected while the analysis reads them -------------------------------


@dataclass(frozen=True)
class LogIdentity:
    """What identifies the logs of one run: a hash of their content (the same log recorded twice is
    one run), a hash of each one's head (a log that grew since), and the fingerprint."""

    content_hash: str
    head_hash: str
    fingerprint: Fingerprint


class ByteTap:
    """One log's bytes as they are read: their count, their hash and their head, for its identity and
    setup with no second read (analyze taps each source's stream, watch what it follows)."""

    def __init__(self) -> None:
        self.size = 0
        self.digest = hashlib.sha256()
        self.head = bytearray()

    def add(self, data: bytes) -> None:
        self.size += len(data)
        self.digest.update(data)
        room = HEAD_BYTES - len(self.head)
        if room > 0:
            self.head += data[:room]


def identity_of(taps: Sequence[ByteTap], fingerprint: Fingerprint) -> LogIdentity:
    """A run's identity from its logs' taps, whatever order they were given in."""
    content = [tap.digest.hexdigest() for tap in taps]
    return LogIdentity(
        content_hash=combine_digests(content),
        head_hash=combine_digests(
            head_digest(bytes(tap.head), whole) for tap, whole in zip(taps, content, strict=True)
        ),
        fingerprint=fingerprint,
    )


class SourceTap:
    """Wraps sources so that the one pass of the analysis also hashes them and keeps their heads:
    no second read, so stdin and archives work too."""

    def __init__(self, sources: Sequence[LogSource], formats: tuple[ServerArgsFormat, ...] | None = None) -> None:
        self.sources = list(sources)
        self.formats = shipped_server_args() if formats is None else formats
        self._taps = [ByteTap() for _ in self.sources]
        for index, source in enumerate(self.sources):
            source.open_stream = self._tapped(source.open_stream, index)

    def _tapped(self, opener: Callable[[], IO[bytes]], index: int) -> Callable[[], IO[bytes]]:
        def open_tapped() -> IO[bytes]:
            # a source opened again (a second pass) starts its hash again
            self._taps[index] = ByteTap()
            return _TeeStream(opener(), self._taps[index])  # type: ignore[return-value]

        return open_tapped

    def identity(self, system: str | None = None, version: str | None = None) -> LogIdentity:
        collector = FingerprintCollector(formats=self.formats)
        for tap in self._taps:
            head = bytes(tap.head)
            head_source = LogSource(name="<head>", open_stream=lambda head=head: io.BytesIO(head))  # type: ignore[misc]
            collector.seen = 0  # each source's head counts on its own
            collector.feed_all(line.text for line in read_lines(head_source))
        return identity_of(self._taps, collector.fingerprint(system, version))


def head_digest(head: bytes, content_digest: str) -> str:
    """The hash of a log's first HEAD_HASH_BYTES; a shorter log's is its content hash."""
    if len(head) < HEAD_HASH_BYTES:
        return content_digest
    return hashlib.sha256(head[:HEAD_HASH_BYTES]).hexdigest()


def combine_digests(digests: Iterable[str]) -> str:
    """One hash for a run of several logs, whatever order they were given in."""
    ordered = sorted(digests)
    if len(ordered) == 1:
        return ordered[0]
    return hashlib.sha256("\n".join(ordered).encode()).hexdigest()


class _TeeStream(io.RawIOBase):
    def __init__(self, inner: IO[bytes], tap: ByteTap) -> None:
        self._inner, self._tap = inner, tap

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        data = self._inner.read(size if size is not None and size >= 0 else CHUNK_BYTES)
        self._tap.add(data)
        return data

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._inner.seek(offset, whence)

    def close(self) -> None:
        self._inner.close()
        super().close()
