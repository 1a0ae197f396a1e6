"""`watch --url`: what a user may type, read as a health URL, or a usage error with a hint."""

from __future__ import annotations

import pytest

from logphase.errors import UsageError
from logphase.watch.health import HealthURL, parse_url


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("http://127.0.0.1:30000", HealthURL("http", "127.0.0.1", 30000, "/health")),
        ("127.0.0.1:30000/health_generate", HealthURL("http", "127.0.0.1", 30000, "/health_generate")),
        ("https://[::1]:8443/v1/models?x=1", HealthURL("https", "::1", 8443, "/v1/models?x=1")),
    ],
)
def test_urls_a_user_types(text: str, expected: HealthURL) -> None:
    assert parse_url(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("http://[::1", "--url 'http://[::1' is not a URL: Invalid IPv6 URL"),
        ("ftp://host:21", "--url 'ftp://host:21' is not an http(s) URL"),
        ("http://host:port", "--url 'http://host:port': the port is not a number"),
    ],
)
def test_a_bad_url_is_a_usage_error_with_a_hint(text: str, message: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_url(text)
    assert caught.value.message == message
    assert caught.value.hint
