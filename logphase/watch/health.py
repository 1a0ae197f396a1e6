"""The HTTP edge of `watch`: one GET of the server's health URL → refused, starting (503), ready (200), no answer."""

from __future__ import annotations

import ipaddress
import re
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import urlsplit

from logphase.errors import UsageError

# SGLang and vLLM both serve /health; a bare `http://host:port` means that.
DEFAULT_PATH = "/health"
# `HTTP/1.1 503 Service Unavailable`: the status is all a probe needs of the answer.
STATUS_LINE = re.compile(rb"HTTP/\d(?:\.\d)? (\d{3})\b")
MAX_HEAD_BYTES = 4096
# (family, address) as getaddrinfo gives them: what a connection needs of a name
Address = tuple[socket.AddressFamily, tuple[str, int] | tuple[str, int, int, int] | tuple[int, bytes]]


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
    if "://" not in text and not re.match(r"^(?:\[[^\]]*\]|[^/:]+):\d+(?:/|$)", text):
        # a bare word (`notaurl`, a path) is no server's address: without a scheme, HOST:PORT is asked for
        raise UsageError(
            f"--url {text!r} is not a URL", hint="write it as http://HOST:PORT, or HOST:PORT (http is assumed)"
        )
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
    """One GET, over in `timeout_s` whatever the server does: each socket operation may take only
    the time left (a server that trickles one byte a second cannot stretch it). Never raises for
    what a starting server does; only the status line is read."""
    started = time.monotonic()
    deadline = started + timeout_s

    def left() -> float:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the deadline passed")
        return remaining

    def said(health: Health, detail: str, status: int | None = None) -> Probe:
        return Probe(health, status, detail, time.monotonic() - started)

    try:
        connection = _connect(url.host, url.port, left)
    except ConnectionRefusedError:
        return said(Health.REFUSED, "connection refused")
    except TimeoutError:
        return said(Health.NO_ANSWER, "timed out")
    except OSError as exc:  # no route, no such host
        return said(Health.OTHER, f"{exc.__class__.__name__}: {exc}")
    try:
        with connection:
            head = _status_head(url, connection, left)
    except TimeoutError:
        return said(Health.NO_ANSWER, "timed out")
    except (ConnectionResetError, BrokenPipeError) as exc:
        # a listener that drops the connection before answering is not up yet
        return said(Health.NO_ANSWER, f"connection dropped: {exc.__class__.__name__}")
    except OSError as exc:  # TLS failures among them
        return said(Health.OTHER, f"{exc.__class__.__name__}: {exc}")
    if not head:
        return said(Health.NO_ANSWER, "connection dropped: closed without an answer")
    found = STATUS_LINE.match(head)
    if found is None:
        return said(Health.OTHER, "not an HTTP answer")
    status = int(found[1])
    if status == 200:
        return said(Health.READY, "ok", status)
    if status == 503:
        return said(Health.STARTING, "service unavailable", status)
    return said(Health.OTHER, f"HTTP {status}", status)


def _connect(host: str, port: int, left: Callable[[], float]) -> socket.socket:
    """A TCP connection within the time left, the name lookup included."""
    error: OSError = OSError(f"no address for {host}")
    for family, address in _lookup(host, port, left()):
        candidate = socket.socket(family, socket.SOCK_STREAM)
        try:
            candidate.settimeout(left())
            candidate.connect(address)
            return candidate
        except OSError as exc:  # the next address, as socket.create_connection does
            candidate.close()
            error = exc
    raise error


def _lookup(host: str, port: int, timeout_s: float) -> list[Address]:
    """getaddrinfo has no timeout of its own (a dead DNS server holds it for many seconds): a name
    is looked up in a thread the probe stops waiting for at its deadline; an address needs none."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        pass
    else:
        return _addresses(host, port)
    found: list[list[Address] | OSError] = []
    done = threading.Event()

    def look_up() -> None:
        try:
            found.append(_addresses(host, port))
        except OSError as exc:
            found.append(exc)
        finally:
            done.set()

    threading.Thread(target=look_up, name="logphase-health-lookup", daemon=True).start()
    if not done.wait(timeout_s):
        raise TimeoutError(f"looking up {host} took longer than {timeout_s:.1f}s")
    if isinstance(found[0], OSError):
        raise found[0]
    return found[0]


def _addresses(host: str, port: int) -> list[Address]:
    return [(info[0], info[4]) for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)]


def _status_head(url: HealthURL, connection: socket.socket, left: Callable[[], float]) -> bytes:
    """Send the GET and read up to the end of the status line (at most MAX_HEAD_BYTES)."""
    if url.scheme == "https":
        connection.settimeout(left())
        connection = ssl.create_default_context().wrap_socket(connection, server_hostname=url.host)
    host = f"[{url.host}]" if ":" in url.host else url.host  # an IPv6 address, as in the URL
    request = f"GET {url.path} HTTP/1.1\r\nHost: {host}:{url.port}\r\nUser-Agent: logphase-watch\r\n"
    connection.settimeout(left())
    connection.sendall(f"{request}Connection: close\r\n\r\n".encode("ascii", "replace"))
    head = b""
    while b"\n" not in head and len(head) < MAX_HEAD_BYTES:
        connection.settimeout(left())
        chunk = connection.recv(MAX_HEAD_BYTES - len(head))
        if not chunk:
            break
        head += chunk
    return head
