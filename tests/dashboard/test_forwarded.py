"""The origin a browser used, as a trusted proxy says it: `Forwarded` (its last element),
else `X-Forwarded-Host`/`-Proto`, only from the addresses `--trust-proxy` names."""

from __future__ import annotations

import pytest
from starlette.datastructures import Headers

from handrail.dashboard.forwarded import Public, parse_proxies, public, same_origin

PROXY = parse_proxies(["10.0.0.5", "172.28.0.0/24"])


def headers(**given: str) -> Headers:
    return Headers({k.replace("_", "-"): v for k, v in given.items()})


def test_a_trusted_proxys_forwarded_host_and_port_are_the_origin_the_browser_used() -> None:
    sent = headers(host="handrail.internal", x_forwarded_host="team.example:8765", x_forwarded_proto="http")
    where = public(sent, "10.0.0.5", PROXY)
    assert where == Public("team.example:8765", "http")
    assert same_origin("http://team.example:8765", where)
    assert not same_origin("http://team.example", where)  # the port counts
    assert not same_origin("https://team.example:8765", where)  # so does the scheme the proxy named


def test_a_network_is_trusted_as_a_whole_and_another_peer_is_not() -> None:
    sent = headers(host="handrail.internal", x_forwarded_host="team.example:8765")
    assert public(sent, "172.28.0.77", PROXY) == Public("team.example:8765")
    assert public(sent, "10.0.0.6", PROXY) == Public("handrail.internal")  # its headers are ignored
    assert public(sent, None, PROXY) == Public("handrail.internal")


def test_the_last_forwarded_element_is_the_nearest_proxys_and_wins_over_x_forwarded() -> None:
    sent = headers(
        host="handrail.internal",
        forwarded='for=1.2.3.4;host=evil.example, for=10.0.0.9;host="team.example";proto=https',
        x_forwarded_host="other.example",
    )
    where = public(sent, "10.0.0.5", PROXY)
    assert where == Public("team.example", "https")
    assert same_origin("https://team.example", where) and same_origin("https://team.example:443", where)
    assert not same_origin("https://evil.example", where)


def test_without_a_trusted_proxy_the_host_header_is_compared_as_written() -> None:
    where = public(headers(host="127.0.0.1:8765"), "127.0.0.1", frozenset())
    assert same_origin("http://127.0.0.1:8765", where) and same_origin("https://127.0.0.1:8765", where)
    assert not same_origin("http://127.0.0.1", where)
    assert not same_origin("ftp://127.0.0.1:8765", where)


@pytest.mark.parametrize("value", ["proxy.internal", "10.0.0.300", "10.0.0.0/33"])
def test_a_trust_proxy_value_that_is_no_address_is_refused_naming_it(value: str) -> None:
    with pytest.raises(ValueError, match=f"--trust-proxy: `{value}` is not an IP address or network"):
        parse_proxies([value])
