"""Signing in through the team's OpenID provider: the authorization code flow with
PKCE (RFC 7636, S256), through Authlib.

`GET /signin/oidc` sends the browser to the provider with a fresh state, nonce and
code challenge; the verifier, state, nonce and the page to return to travel in a short
cookie the server signs, so the callback may reach any replica. `GET
/signin/oidc/callback` checks the state, trades the code for tokens, checks the ID
token (signature, issuer, audience = our client id, expiry, nonce), reads the groups
from it (or from userinfo when the ID token leaves them out) and signs the person in
with the same session a tokens-file person gets. The last hop to the dashboard is a
page of our own, so that the SameSite=Strict session cookie goes with it.
"""

from __future__ import annotations

import base64
import hmac
import time
from html import escape
from typing import Any
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from handrail.dashboard.oidc_cookies import ROLES_COOKIE, OidcCookies
from handrail.dashboard.sessions import SESSION_SECONDS
from handrail.dashboard.site import SECURITY_HEADERS, Site
from handrail.service.identity_provider import Provider, ProviderError, fetch_json

FLOW_COOKIE = "handrail_oidc"
FLOW_SECONDS = 600  # a sign-in not finished in ten minutes starts again
SCOPES = "openid profile email groups"


def session_end() -> float:
    return time.time() + SESSION_SECONDS


def safe_next(target: str) -> str:
    """Only a path of this server: never `//host` or `/\\host`, which browsers take as another site."""
    return target if target.startswith("/") and not target.startswith(("//", "/\\")) else "/"


class OidcSignIn:
    def __init__(self, site: Site, provider: Provider) -> None:
        self.site = site
        self.provider = provider
        # sealed with the key every replica shares: the site's, which the roles are read with
        self.cookies = site.oidc_cookies or OidcCookies(provider)

    def callback_url(self, request: Request) -> str:
        base = self.provider.public_url.rstrip("/") or str(request.base_url).rstrip("/")
        return base + "/signin/oidc/callback"

    async def start(self, request: Request) -> Response:
        from authlib.common.security import generate_token  # Authlib: only with a provider
        from authlib.oauth2.rfc6749.parameters import prepare_grant_uri  # with it
        from authlib.oauth2.rfc7636 import create_s256_code_challenge  # with it

        refused = self.site.refuse(request, authenticate=False)
        if refused is not None:
            return refused
        try:
            endpoint = await run_in_threadpool(self.provider.endpoint, "authorization_endpoint")
        except ProviderError as exc:
            said = f"The identity provider cannot be reached: {escape(str(exc))}"
            return HTMLResponse(said, 502, headers=SECURITY_HEADERS)
        flow = {
            "state": generate_token(32),
            "nonce": generate_token(32),
            "verifier": generate_token(64),
            "next": safe_next(request.query_params.get("next", "/")),
            "until": time.time() + FLOW_SECONDS,
        }
        target = prepare_grant_uri(
            endpoint,
            self.provider.client_id,
            "code",
            redirect_uri=self.callback_url(request),
            scope=SCOPES,
            state=flow["state"],
            nonce=flow["nonce"],
            code_challenge=create_s256_code_challenge(flow["verifier"]),
            code_challenge_method="S256",
        )
        response = RedirectResponse(target, 303)
        # Lax: the provider's redirect back is a top-level navigation from its site
        self.cookies.leave(
            response, request, FLOW_COOKIE, flow, max_age=FLOW_SECONDS, samesite="lax", path="/signin/oidc"
        )
        return response

    async def callback(self, request: Request) -> Response:
        refused = self.site.refuse(request, authenticate=False)
        if refused is not None:
            return refused
        flow = self.cookies.unseal(request.cookies.get(FLOW_COOKIE))
        given = request.query_params
        state = given.get("state", "").encode()
        if flow is None or not hmac.compare_digest(state, str(flow["state"]).encode()):
            return RedirectResponse("/signin?failed", 303)
        if "code" not in given:  # the provider said no (the person declined, or it refused)
            return RedirectResponse("/signin?failed&next=" + quote(flow["next"]), 303)
        try:
            person = await run_in_threadpool(self.person, given["code"], flow, self.callback_url(request))
        except ProviderError:
            return RedirectResponse("/signin?failed&next=" + quote(flow["next"]), 303)
        session = await run_in_threadpool(self.site.sessions.create, person)  # a store row
        target = escape(flow["next"], quote=True)
        page = HTMLResponse(
            f'<!doctype html><meta http-equiv="refresh" content="0;url={target}">'
            f'<title>Signed in</title><p>Signed in. <a href="{target}">Continue</a></p>',
            headers=SECURITY_HEADERS,
        )
        page.delete_cookie(FLOW_COOKIE, path="/signin/oidc")
        held = {"person": person, "roles": sorted(self.provider.roles_of(person)), "until": session_end()}
        self.cookies.leave(
            page, request, ROLES_COOKIE, held, max_age=SESSION_SECONDS, samesite="strict", path="/"
        )
        return self.site.with_cookie(page, request, session)

    def person(self, code: str, flow: dict[str, Any], redirect_uri: str) -> str:
        """The code traded for tokens, and the person their ID token names (on a worker thread)."""
        from authlib.oauth2.rfc6749.parameters import prepare_token_request  # Authlib: with a provider

        provider = self.provider
        body = prepare_token_request(
            "authorization_code",
            code=code,
            redirect_uri=redirect_uri,
            code_verifier=flow["verifier"],
            client_id=provider.client_id,
        )
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        if provider.client_secret:  # client_secret_basic (RFC 6749 2.3.1)
            pair = f"{quote(provider.client_id, safe='')}:{quote(provider.client_secret, safe='')}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        tokens = fetch_json(provider.endpoint("token_endpoint"), body.encode(), headers)
        id_token = tokens.get("id_token")
        if not isinstance(id_token, str):
            raise ProviderError("the token endpoint gave no ID token")
        claims = provider.claims(id_token, provider.client_id, nonce=flow["nonce"])
        access = tokens.get("access_token")
        if provider.groups_claim not in claims and isinstance(access, str):
            asked = {"Authorization": f"Bearer {access}"}
            found = fetch_json(provider.endpoint("userinfo_endpoint"), headers=asked)
            if found.get("sub") == claims["sub"]:  # OpenID Connect Core 5.3.2
                claims = {**found, **claims}
        return provider.person(claims).id
