"""What every dashboard handler shares: the templates, the sessions, the passkey
challenges, the transport's checks, and the helpers that sign a request in, render a
page, read a form and run work as the signed-in person (see app.py for the routes).

Sign-in: a person posts their token once; the server keeps a session and gives the
browser only an opaque id in an HttpOnly, SameSite=Strict cookie. Scripts may also
send the token as `Authorization: Bearer`. Forms that change something (approve,
decline, sign out) carry the session's CSRF token and must come from our own Origin.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, quote

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from handrail.dashboard import forwarded, views
from handrail.dashboard.forwarded import Network
from handrail.dashboard.passkey_pages import Challenges
from handrail.dashboard.sessions import COOKIE, Identifies, Session, Sessions
from handrail.model.errors import HandrailError
from handrail.model.request import Request as Asking
from handrail.service.people import AGENT, PERSON, bearer

if TYPE_CHECKING:
    from handrail.dashboard.oidc_cookies import OidcCookies
    from handrail.service.identity_provider import Provider

HERE = Path(__file__).parent
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "  # Mermaid styles its SVG
    "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; form-action 'self'; "
    "base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
MAX_FORM = 64 * 1024
AGENT_REFUSED = (
    "Forbidden: this token's scope is `agent`: it reaches /mcp only, and neither signs in "
    "here nor approves; a person's token (scope `person` or `both`) does"
)
LISTED = 500


class TextJSONResponse(JSONResponse):
    """JSON of run text: a lone surrogate an older handrail kept is sent as its JSON escape."""

    def render(self, content: Any) -> bytes:
        text = json.dumps(content, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        return text.encode("utf-8", "backslashreplace")


Refuse = Callable[..., Response | None]


def bearer_of(request: Request) -> str | None:
    headers = request.headers.getlist("authorization")
    return bearer(headers[0]) if len(headers) == 1 else None


async def form(request: Request) -> dict[str, str] | None:
    """A small urlencoded form (no multipart parser needed); None when it is not one."""
    declared = request.headers.get("content-length", "")
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if not declared.isdigit() or int(declared) > MAX_FORM or kind != "application/x-www-form-urlencoded":
        return None
    body = await request.body()
    if len(body) > MAX_FORM:
        return None
    try:
        pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, max_num_fields=16)
    except (UnicodeDecodeError, ValueError):
        return None
    return dict(pairs)


class Site:
    """One dashboard's state: `refuse(request, authenticate=False)` is the transport's
    Host and Origin checks; `people` whom the tokens name (None: no token asked, one
    person's server)."""

    def __init__(
        self,
        service: Any,
        refuse: Refuse,
        people: Identifies | None,
        proxies: frozenset[Network] = frozenset(),
        provider: Provider | None = None,
    ) -> None:
        self.service = service
        self.proxies = proxies  # those whose forwarded origin counts (`--trust-proxy`)
        self.runs = service.runs
        self.refuse = refuse
        self.people = people
        self.templates = Environment(
            loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(default=True)
        )
        self.templates.filters["duration"] = views.duration  # seconds as people read them
        self.sessions = Sessions(service.runs.sign_ins)  # in the store: every server on it knows them
        self.challenges = Challenges(service.runs.sign_ins)  # passkey challenges, in the store too
        self.single_sign_on = provider is not None  # an OpenID provider signs people in (/signin/oidc)
        self.oidc_cookies: OidcCookies | None = None
        if provider is not None:
            from handrail.dashboard.oidc_cookies import OidcCookies  # only with a provider

            self.oidc_cookies = OidcCookies(provider)

    def where(self, request: Request) -> forwarded.Public | None:
        """Where the browser sent the request: a trusted proxy's word, else `Host`."""
        peer = request.client.host if request.client is not None else None
        return forwarded.public(request.headers, peer, self.proxies)

    def same_origin(self, request: Request) -> bool:
        """A form post must name this very host and port (browsers send Origin on every
        POST); the scheme is compared only when a trusted proxy names it, so that a
        TLS-terminating proxy is no obstacle."""
        origin = request.headers.get("origin") or request.headers.get("referer")
        return origin is not None and forwarded.same_origin(origin, self.where(request))

    def with_cookie(self, response: Response, request: Request, session: Session) -> Response:
        said = self.where(request)
        response.set_cookie(
            COOKIE,
            session.id,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https" or (said is not None and said.scheme == "https"),
            path="/",
        )
        return response

    def page(
        self, name: str, request: Request, session: Session | None, code: int = 200, **values: Any
    ) -> Response:
        html = self.templates.get_template(name).render(
            session=session,
            signin_needed=self.people is not None,
            single_sign_on=self.single_sign_on,
            path=request.url.path,
            **values,
        )
        # text a run holds may be half of a UTF-16 pair (kept by an older handrail): escaped
        body = html.encode("utf-8", "backslashreplace")
        return HTMLResponse(body, status_code=code, headers=SECURITY_HEADERS)

    def agent_only(self, token: str | None) -> bool:
        """Whether `token` is known and good for /mcp alone: it signs in nowhere here."""
        people = self.people
        found = people.credential(token) if people is not None and token is not None else None
        return found is not None and found[1] == AGENT

    def signed_in(self, request: Request) -> tuple[Session | None, bool]:
        """The request's session, and whether it was made just now (its cookie must be set)."""
        session = self.sessions.get(request.cookies.get(COOKIE))
        if session is not None:
            if self.oidc_cookies is not None:  # the roles a sign-in on any replica gave, told here
                self.oidc_cookies.recall(request, session.person)
            return session, False
        given = bearer_of(request)
        if given is not None and self.people is not None:
            # a script's request: kept nowhere, no cookie; a person's token only
            person = self.people.identify(given, scope=PERSON)
            return (Sessions.passing(person), False) if person is not None else (None, False)
        if self.people is None:  # no token asked for: one person's local server
            return self.sessions.create(self.runs.default_owner), True
        return None, False

    def as_person(self, session: Session, work: Callable[..., Any], *args: Any) -> Any:
        """Run `work(asking, *args)` on a worker thread, `asking` the request of the
        signed-in person (their runs, and those waiting for their approval)."""
        return run_in_threadpool(work, Asking(owner=session.person, scope=PERSON), *args)

    def gate(self, handler: Callable[..., Any], *, api: bool = False) -> Callable[[Request], Any]:
        """`handler(request, session)` behind the transport's checks and a sign-in: a
        page sends the stranger to /signin, the JSON API answers 401."""
        return Guarded(self, handler, api).respond  # a method: starlette calls it with the request

    def workflow_of(self, run: Any) -> Any:
        try:
            return self.runs.pinned(self.service.catalog.snapshot(), run)
        except HandrailError:
            return None


class Guarded:
    """A handler that takes `(request, session)`, served only to a signed-in person."""

    def __init__(self, site: Site, handler: Callable[..., Any], api: bool) -> None:
        self.site = site
        self.handler = handler
        self.api = api

    async def respond(self, request: Request) -> Response:
        site = self.site
        refused = site.refuse(request, authenticate=False)
        if refused is not None:
            return refused
        session, new = await run_in_threadpool(site.signed_in, request)  # reads the store
        if session is None and site.agent_only(bearer_of(request)):
            return JSONResponse({"error": AGENT_REFUSED, "rule": "scope"}, 403)
        if session is None:
            if self.api:
                return JSONResponse(
                    {"error": "Unauthorized: sign in or send a bearer token"},
                    401,
                    headers={"WWW-Authenticate": 'Bearer realm="handrail"'},
                )
            return RedirectResponse("/signin?next=" + quote(request.url.path), 303)
        response: Response = await self.handler(request, session)
        return site.with_cookie(response, request, session) if new else response
