"""The cookies a sign-in through the team's OpenID provider leaves (oidc_signin.py):
sealed with an HMAC keyed by the client secret every replica shares, so that whichever
replica a request reaches can read them. One carries the flow from start to callback,
the other the roles the person's groups gave at sign-in, which `recall` tells the
replica that serves a later request."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from typing import Any, Literal

from starlette.requests import Request
from starlette.responses import Response

from handrail.service.identity_provider import Provider

ROLES_COOKIE = "handrail_oidc_roles"  # the roles a sign-in showed, for every replica (see recall)


class OidcCookies:
    def __init__(self, provider: Provider) -> None:
        self.provider = provider
        # the key: the client secret every replica shares, or this process's own
        seed = provider.client_secret.encode() or secrets.token_bytes(32)
        self.key = hashlib.sha256(b"handrail oidc flow\0" + seed).digest()

    def seal(self, values: dict[str, Any]) -> str:
        body = base64.urlsafe_b64encode(json.dumps(values).encode()).decode()
        mac = hmac.new(self.key, body.encode(), hashlib.sha256).hexdigest()
        return f"{body}.{mac}"

    def leave(
        self,
        response: Response,
        request: Request,
        name: str,
        values: dict[str, Any],
        *,
        max_age: int,
        samesite: Literal["lax", "strict"],
        path: str,
    ) -> None:
        """Set cookie `name` to `values` sealed, for the browser only (httponly), sent back
        over https alone when the request came that way."""
        secure = request.url.scheme == "https"
        response.set_cookie(
            name, self.seal(values), max_age, httponly=True, samesite=samesite, secure=secure, path=path
        )

    def unseal(self, sealed: str | None) -> dict[str, Any] | None:
        body, _, mac = (sealed or "").rpartition(".")
        expected = hmac.new(self.key, body.encode(), hashlib.sha256).hexdigest()
        if not body or not hmac.compare_digest(mac.encode(), expected.encode()):
            return None
        try:
            values = json.loads(base64.urlsafe_b64decode(body))
        except ValueError:
            return None
        return values if isinstance(values, dict) and values.get("until", 0) > time.time() else None

    def recall(self, request: Request, person: str) -> None:
        """Tell this replica the roles the signed-in `person`'s groups gave at sign-in,
        from the cookie the signing replica sealed (with the secret every replica shares)."""
        held = self.unseal(request.cookies.get(ROLES_COOKIE))
        roles = held.get("roles") if held is not None and held.get("person") == person else None
        if isinstance(roles, list) and self.provider.roles_of(person) != frozenset(roles):
            self.provider.remember(person, frozenset(str(role) for role in roles))
