"""A sign-in through the provider on one replica gives the person's roles to every
replica: the signing replica seals them in a cookie with the client secret they all
share, and another replica reads them back only for the person its session names."""

from __future__ import annotations

import time

from starlette.requests import Request

from handrail.dashboard.oidc_cookies import ROLES_COOKIE, OidcCookies
from handrail.service.identity_provider import Provider

SECRET = "the-client-secret-every-replica-shares"


def replica(secret: str = SECRET) -> tuple[OidcCookies, Provider]:
    provider = Provider("https://idp.test", "handrail", client_secret=secret)
    return OidcCookies(provider), provider


def request_with(cookie: str) -> Request:
    return Request({"type": "http", "method": "GET", "path": "/", "headers": [(b"cookie", cookie.encode())]})


def sealed_roles(signer: OidcCookies, person: str, roles: list[str], until: float | None = None) -> str:
    held = {"person": person, "roles": roles, "until": time.time() + 60 if until is None else until}
    return f"{ROLES_COOKIE}={signer.seal(held)}"


def test_another_replica_learns_the_roles_for_the_person_its_session_names() -> None:
    signer, _ = replica()
    other, provider = replica()
    other.recall(request_with(sealed_roles(signer, "lena@idp.test", ["lead"])), "lena@idp.test")
    assert provider.roles_of("lena@idp.test") == frozenset({"lead"})


def test_roles_sealed_for_someone_else_by_another_key_or_long_ago_give_nothing() -> None:
    signer, _ = replica()
    stranger, _ = replica("a-secret-of-some-other-server")
    other, provider = replica()
    other.recall(request_with(sealed_roles(signer, "lena@idp.test", ["lead"])), "pat@idp.test")
    other.recall(request_with(sealed_roles(stranger, "pat@idp.test", ["lead"])), "pat@idp.test")
    other.recall(
        request_with(sealed_roles(signer, "pat@idp.test", ["lead"], until=time.time() - 1)), "pat@idp.test"
    )
    other.recall(request_with(f"{ROLES_COOKIE}=not.sealed"), "pat@idp.test")
    assert provider.roles_of("pat@idp.test") == frozenset()
