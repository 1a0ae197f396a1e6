"""logphase: is a multi-GPU LLM server hung or still starting — and if hung, where?

`logphase.analyze(logs, ...)` and `logphase.take_stacks(pid, ...)` are the library's door (logphase/api.py),
imported on first use: `import logphase` (and the CLI's start-up) costs nothing more."""

from typing import Any

__version__ = "0.1.0"
__all__ = ["__version__", "analyze", "take_stacks"]


def __getattr__(name: str) -> Any:
    if name in ("analyze", "take_stacks"):
        from logphase import api

        return getattr(api, name)
    raise AttributeError(f"module 'logphase' has no attribute {name!r}")
