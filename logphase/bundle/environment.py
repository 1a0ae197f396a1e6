"""What this machine runs (an edge: reads installed packages, the platform, and runs `nvidia-smi`)."""

from __future__ import annotations

import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata

from logphase import __version__

# The packages a startup problem of an LLM server depends on, as pip names them.
PACKAGES = (
    "torch",
    "sglang",
    "vllm",
    "nvidia-nccl-cu12",
    "nvidia-nccl-cu13",
    "nvidia-nccl-cu11",
    "flashinfer-python",
    "triton",
    "transformers",
    "py-spy",
)
NVIDIA_SMI_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class SmiOutput:
    """`nvidia-smi`'s output, or why there is none."""

    text: str | None
    missing: str | None = None


def runtime() -> dict[str, str]:
    return {"logphase": __version__, "python": sys.version.split()[0], "platform": platform.platform()}


def installed_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str | None]:
    """Each package's installed version as pip sees it (None: not installed here)."""
    versions: dict[str, str | None] = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def nvidia_smi(binary: str = "nvidia-smi", timeout_s: float | None = None) -> SmiOutput:
    """`nvidia-smi` (driver, CUDA version, GPUs, their memory and processes) when it is installed."""
    timeout_s = NVIDIA_SMI_TIMEOUT_S if timeout_s is None else timeout_s
    found = shutil.which(binary)
    if found is None:
        return SmiOutput(None, f"{binary} is not installed on the machine that made the bundle")
    try:
        done = subprocess.run([found], capture_output=True, timeout=timeout_s, check=False, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return SmiOutput(None, f"{binary} did not answer within {timeout_s:g}s (a hung driver looks like this)")
    except OSError as exc:
        return SmiOutput(None, f"{binary} could not run: {exc.strerror}")
    text = done.stdout.decode("utf-8", "replace")
    if done.returncode != 0:
        error = (done.stderr.decode("utf-8", "replace").strip() or text.strip()).splitlines()
        return SmiOutput(None, f"{binary} failed (exit {done.returncode}): {error[0] if error else ''}".rstrip(": "))
    return SmiOutput(text)
