"""`health.probe`: one GET of a health URL, told apart as refused / starting / ready / no answer,
and over within its time whatever the server does (a server that trickles bytes included)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from logphase.watch.health import Health, HealthURL, Probe, probe

# seconds between the bytes of a server that answers one byte at a time (issue 15 item 6)
TRICKLE_S = 1.5


def answer(raw: bytes) -> Callable[[socket.socket], None]:
    def handle(connection: socket.socket) -> None:
        connection.recv(4096)
        connection.sendall(raw)

    return handle


def trickle(connection: socket.socket) -> None:
    """`HTTP/1.1 200 OK`, one byte every TRICKLE_S: each read gets a byte well within its timeout."""
    connection.recv(4096)
    for byte in b"HTTP/1.1 200 OK\r\n\r\n":
        connection.sendall(bytes([byte]))
        time.sleep(TRICKLE_S)


def hang_up(connection: socket.socket) -> None:
    connection.recv(4096)


@contextmanager
def serving(handle: Callable[[socket.socket], None]) -> Iterator[HealthURL]:
    """A listener on 127.0.0.1 that gives each connection to `handle` in a thread of its own."""
    listener = socket.create_server(("127.0.0.1", 0))
    stopping = threading.Event()

    def accept() -> None:
        while not stopping.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=_served, args=(handle, connection), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield HealthURL("http", "127.0.0.1", listener.getsockname()[1], "/health")
    finally:
        stopping.set()
        listener.close()


def _served(handle: Callable[[socket.socket], None], connection: socket.socket) -> None:
    with connection, contextlib.suppress(OSError):  # the probe gave up and closed its end
        handle(connection)


@pytest.mark.parametrize(
    ("raw", "health", "status", "text"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", Health.READY, 200, "200 ready"),
        (b"HTTP/1.1 503 Service Unavailable\r\n\r\n", Health.STARTING, 503, "503 starting or warming up"),
        (b"HTTP/1.0 404 Not Found\r\n\r\n", Health.OTHER, 404, "404 HTTP 404"),
        (b"SSH-2.0-OpenSSH_9.6\r\n", Health.OTHER, None, "not an HTTP answer"),
    ],
)
def test_the_status_line_tells_what_the_server_is(raw: bytes, health: Health, status: int | None, text: str) -> None:
    with serving(answer(raw)) as url:
        probed = probe(url, 2.0)
    assert (probed.health, probed.status, probed.text) == (health, status, text)


def test_a_port_nobody_listens_on_is_refused() -> None:
    with socket.socket() as bound:  # bound, never listening: connections are refused
        bound.bind(("127.0.0.1", 0))
        probed = probe(HealthURL("http", "127.0.0.1", bound.getsockname()[1], "/health"), 2.0)
    assert (probed.health, probed.text) == (Health.REFUSED, "connection refused (not listening yet)")


def test_a_listener_that_hangs_up_without_answering_is_no_answer() -> None:
    with serving(hang_up) as url:
        probed = probe(url, 2.0)
    assert (probed.health, probed.detail) == (Health.NO_ANSWER, "connection dropped: closed without an answer")


@pytest.mark.slow
def test_a_server_trickling_one_byte_per_1_5_s_cannot_stretch_the_probe_past_its_time() -> None:
    # GIVEN a server that answers one byte every 1.5 s (each read within a 2 s socket timeout)
    with serving(trickle) as url:
        started = time.monotonic()
        # WHEN it is probed with 2 s
        probed = probe(url, 2.0)
        took = time.monotonic() - started
    # THEN the probe is over in 2 s (was: as long as the server kept trickling), as no answer
    assert probed.health is Health.NO_ANSWER
    assert 1.9 <= took < 3.0, took  # the deadline holds (a loaded machine adds a little)
    assert probed == Probe(Health.NO_ANSWER, None, "timed out", probed.seconds)
    assert probed.text == f"no answer within {probed.seconds:.1f}s"


def test_a_host_name_is_looked_up_and_each_of_its_addresses_tried() -> None:
    # GIVEN a server on 127.0.0.1 WHEN probed as `localhost` (which may name ::1 first)
    with serving(answer(b"HTTP/1.1 503 Service Unavailable\r\n\r\n")) as url:
        probed = probe(HealthURL("http", "localhost", url.port, "/health"), 2.0)
    assert (probed.health, probed.status) == (Health.STARTING, 503)


@pytest.mark.slow  # real waits or a subprocess: the full suite's tier
def test_a_name_lookup_that_hangs_cannot_stretch_the_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a DNS server that does not answer (getaddrinfo has no timeout of its own)
    released = threading.Event()

    def hanging_lookup(*args: object, **kwargs: object) -> list[object]:
        released.wait(30)
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")

    monkeypatch.setattr(socket, "getaddrinfo", hanging_lookup)
    started = time.monotonic()
    # WHEN a host name is probed with 1 s
    probed = probe(HealthURL("http", "health.example", 80, "/health"), 1.0)
    took = time.monotonic() - started
    released.set()
    # THEN it is over in 1 s, as no answer
    assert (probed.health, probed.detail) == (Health.NO_ANSWER, "timed out")
    assert 0.9 <= took < 2.0, took  # the deadline holds (a loaded machine adds a little)
