"""The origin a browser used, as a proxy the operator trusts says it (`--trust-proxy`):
RFC 7239's `Forwarded` (its last element, the one the nearest proxy added), else
`X-Forwarded-Host` and `X-Forwarded-Proto`. From any other peer these headers are
ignored and the request's own `Host` stands. The transport's Origin check and the
dashboard's CSRF check both ask here, so they never disagree."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

DEFAULT_PORTS = {"http": 80, "https": 443}
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class Headers(Protocol):
    def getlist(self, key: str) -> list[str]: ...


@dataclass(frozen=True, slots=True)
class Public:
    """Where the browser sent the request: `netloc` as `Host` would name it, and the
    scheme when a trusted proxy said it (None: unknown, so not compared)."""

    netloc: str
    scheme: str | None = None


def parse_proxies(values: Iterable[str]) -> frozenset[Network]:
    """`--trust-proxy` values: addresses or networks (`10.0.0.5`, `172.28.0.0/24`);
    ValueError names the one that is neither."""
    found: set[Network] = set()
    for value in values:
        for part in (p.strip() for p in value.split(",")):
            if not part:
                continue
            try:
                found.add(ipaddress.ip_network(part, strict=False))
            except ValueError:
                why = "is not an IP address or network (such as 10.0.0.5 or 10.0.0.0/24)"
                raise ValueError(f"--trust-proxy: `{part}` {why}") from None
    return frozenset(found)


def trusted(peer: str | None, proxies: frozenset[Network]) -> bool:
    if peer is None or not proxies:
        return False
    try:
        address = ipaddress.ip_address(peer)
    except ValueError:
        return False
    return any(address in network for network in proxies)


def public(headers: Headers, peer: str | None, proxies: frozenset[Network]) -> Public | None:
    """The browser's origin; None when the request names none (no single Host)."""
    if trusted(peer, proxies):
        said = _forwarded(headers) or _x_forwarded(headers)
        if said is not None:
            return said
    hosts = headers.getlist("host")
    return Public(hosts[0]) if len(hosts) == 1 else None


def same_origin(origin: str, where: Public | None) -> bool:
    """Whether an `Origin` (or `Referer`) names the very place the request was sent."""
    parts = urlsplit(origin)
    if where is None or parts.scheme not in DEFAULT_PORTS:
        return False
    if where.scheme is None:  # the request's own Host: compared as written, scheme aside
        return parts.netloc == where.netloc
    if parts.scheme != where.scheme:
        return False
    told = urlsplit(f"{where.scheme}://{where.netloc}")
    try:
        return (parts.hostname, parts.port or DEFAULT_PORTS[parts.scheme]) == (
            told.hostname,
            told.port or DEFAULT_PORTS[where.scheme],
        )
    except ValueError:  # a port that is not a number
        return False


def _last(headers: Headers, name: str) -> str | None:
    values = [v.strip() for line in headers.getlist(name) for v in line.split(",")]
    return values[-1] if values and values[-1] else None


def _scheme(value: str | None) -> str | None:
    lowered = (value or "").strip().strip('"').lower()
    return lowered if lowered in DEFAULT_PORTS else None


def _forwarded(headers: Headers) -> Public | None:
    element = _last(headers, "forwarded")
    if element is None:
        return None
    pairs = {}
    for pair in element.split(";"):
        key, _, value = pair.partition("=")
        pairs[key.strip().lower()] = value.strip().strip('"')
    host = pairs.get("host")
    return Public(host, _scheme(pairs.get("proto"))) if host else None


def _x_forwarded(headers: Headers) -> Public | None:
    host = _last(headers, "x-forwarded-host")
    return Public(host, _scheme(_last(headers, "x-forwarded-proto"))) if host else None
