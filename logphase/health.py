"""The HTTP edge of `watch`: one GET of the server's health URL → refused, starting (503), ready (200), no answer."""

from __future__ import annotations

import http.client
import time
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import urlsplit

from logphase.errors import UsageError

# SGLang and vLLM both serve /health; a bare `http://host:port` means that.
DEFAULT_PATH = "/health"


class Health(StrEnum):
    """What a startup monitor can tell apart (sglang.md §4): nobody listens yet; listening but
    not ready (SGLang ≥0.4.10 answers 503 until its warmup request returned); ready; a listener
    that does not answer in time; anything else."""

    REFUSED = "refused"
    STARTING = "starting"
    READY = "ready"
    NO_ANSWER = "no answer"
    OTHER = "other"


@dataclass(frozen=True)
class HealthURL:
    scheme: str
    host: str
    port: int
    path: str

    def __str__(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}{self.path}"


@dataclass(frozen=True)
class Probe:
    health: Health
    status: int | None
    detail: str
    seconds: float

    @property
    def text(self) -> str:
        """`503 starting`, `connection refused`, …: for transition lines."""
        if self.health is Health.REFUSED:
            return "connection refused (not listening yet)"
        if self.health is Health.NO_ANSWER:
            return f"no answer within {self.seconds:.1f}s"
        if self.status is not None:
            word = {Health.STARTING: "starting or warming up", Health.READY: "ready"}.get(self.health, self.detail)
            return f"{self.status} {word}"
        return self.detail


def parse_url(text: str) -> HealthURL:
    """`http://127.0.0.1:30000` → its /health; `127.0.0.1:30000/health_generate` works too."""
    candidate = text if "://" in text else f"http://{text}"
    try:
        parts = urlsplit(candidate)
    except ValueError as exc:  # an unclosed `[` of an IPv6 address
        raise UsageError(
            f"--url {text!r} is not a URL: {exc}",
            hint="write it as http://HOST:PORT, an IPv6 host as http://[::1]:PORT",
        ) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(
            f"--url {text!r} is not an http(s) URL", hint="write it as http://HOST:PORT or http://HOST:PORT/health"
        )
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise UsageError(f"--url {text!r}: the port is not a number", hint="write it as http://HOST:PORT") from None
    path = parts.path if parts.path not in ("", "/") else DEFAULT_PATH
    if parts.query:
        path += f"?{parts.query}"
    return HealthURL(parts.scheme, parts.hostname, port, path)


def probe(url: HealthURL, timeout_s: float) -> Probe:
    """One GET. Never raises for what a starting server does; the body is not read beyond a little."""
    started = time.monotonic()
    connection_class = http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
    connection = connection_class(url.host, url.port, timeout=timeout_s)
    try:
        connection.request("GET", url.path, headers={"User-Agent": "logphase-watch"})
        response = connection.getresponse()
        response.read(4096)
        status = response.status
    except ConnectionRefusedError:
        return Probe(Health.REFUSED, None, "connection refused", time.monotonic() - started)
    except TimeoutError:
        return Probe(Health.NO_ANSWER, None, "timed out", time.monotonic() - started)
    except (ConnectionResetError, http.client.RemoteDisconnected, BrokenPipeError) as exc:
        # a listener that drops the connection before answering is not up yet
        return Probe(
            Health.NO_ANSWER, None, f"connection dropped: {exc.__class__.__name__}", time.monotonic() - started
        )
    except (OSError, http.client.HTTPException) as exc:
        return Probe(Health.OTHER, None, f"{exc.__class__.__name__}: {exc}", time.monotonic() - started)
    finally:
        connection.close()
    elapsed = time.monotonic() - started
    if status == 200:
        return Probe(Health.READY, status, "ok", elapsed)
    if status == 503:
        return Probe(Health.STARTING, status, "service unavailable", elapsed)
    return Probe(Health.OTHER, status, f"HTTP {status}", elapsed)
