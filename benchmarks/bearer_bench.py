"""What a bearer check costs per request: a tokens file's token (hashed, compared with
every line in constant time) against a provider's JWT for /mcp (signature, issuer,
audience and expiry checked, with the provider's keys already fetched), as a same-run
ratio. The JWT is signed here with an RSA-2048 key, as most providers sign.

    python -m benchmarks.bearer_bench [--n 2000] [--lines 20]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey

from benchmarks.timing import percentile
from handrail.service.identity_provider import Provider
from handrail.service.people import People, digest

ISSUER = "https://idp.bench"
AUDIENCE = "https://handrail.bench/mcp"


def timed(work: Callable[[], object], n: int) -> float:
    """p50 of `work` in microseconds."""
    times = []
    for _ in range(n):
        start = time.perf_counter_ns()
        work()
        times.append((time.perf_counter_ns() - start) / 1000)
    return percentile(times, 50)


def provider_with_key() -> tuple[Provider, str]:
    key = RSAKey.generate_key(2048, parameters={"kid": "bench"})
    provider = Provider(ISSUER, "handrail", audience=AUDIENCE)
    provider._keys = KeySet([key])  # as fetched from its jwks_uri: the cache a server keeps
    provider._fetched = time.monotonic()
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "bot", "exp": int(time.time()) + 3600, "scope": "agent"}
    return provider, jwt.encode({"alg": "RS256", "kid": "bench"}, claims, key)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--lines", type=int, default=20)
    args = parser.parse_args()
    people = People(tuple((digest(f"token-{i}-0123456789abcdef"), f"p{i}") for i in range(args.lines)))
    provider, token = provider_with_key()
    assert provider.access(token) == ("bot@idp.bench", "agent")
    tokens_file = timed(lambda: people.credential("token-3-0123456789abcdef"), args.n)
    with_jwt = timed(lambda: provider.access(token), args.n)
    print(f"tokens file ({args.lines} lines): {tokens_file:.1f} us p50")
    print(f"provider JWT (RS256):      {with_jwt:.1f} us p50")
    print(f"ratio JWT / tokens file:   {with_jwt / tokens_file:.1f}")


if __name__ == "__main__":
    main()
