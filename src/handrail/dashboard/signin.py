"""Signing in and out of the dashboard, and its static files."""

from __future__ import annotations

import hmac
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, RedirectResponse, Response

from handrail.dashboard.sessions import COOKIE
from handrail.dashboard.site import HERE, SECURITY_HEADERS, Site, form
from handrail.service.people import PERSON

STATIC = {
    "dashboard.css": "text/css",
    "dashboard.js": "text/javascript",
    "mermaid.min.js": "text/javascript",
    "passkeys.js": "text/javascript",
}


class SignIn:
    def __init__(self, site: Site) -> None:
        self.site = site

    async def signin(self, request: Request) -> Response:
        site, people = self.site, self.site.people
        refused = site.refuse(request, authenticate=False)
        if refused is not None:
            return refused
        target = request.query_params.get("next", "/")
        # only a path of this server: never `//host` or `/\host`, which browsers take as another site
        target = target if target.startswith("/") and not target.startswith(("//", "/\\")) else "/"
        if request.method == "GET":
            failed = request.query_params.get("failed")
            return site.page(
                "signin.html", request, None, next=target, failed=failed is not None, agent=failed == "agent"
            )
        fields = await form(request)
        if fields is None or not site.same_origin(request):
            return HTMLResponse("Forbidden: cross-site request", 403, headers=SECURITY_HEADERS)
        token = fields.get("token", "")
        if site.agent_only(token):
            return RedirectResponse("/signin?failed=agent&next=" + quote(target), 303)
        person = people.identify(token, scope=PERSON) if people is not None else site.runs.default_owner
        if person is None:
            # back to the form by a redirect: a 401 page would be logged by the browser as an error
            return RedirectResponse("/signin?failed&next=" + quote(target), 303)
        made = await run_in_threadpool(site.sessions.create, person)
        return site.with_cookie(RedirectResponse(target, 303), request, made)

    async def signout(self, request: Request) -> Response:
        sessions = self.site.sessions
        refused = self.site.refuse(request, authenticate=False)
        if refused is not None:
            return refused
        fields = await form(request)
        session = await run_in_threadpool(sessions.get, request.cookies.get(COOKIE))
        if fields is None or not self.site.same_origin(request) or session is None:
            return HTMLResponse("Forbidden", 403, headers=SECURITY_HEADERS)
        if hmac.compare_digest(fields.get("csrf", "").encode(), session.csrf.encode()):
            await run_in_threadpool(sessions.end, session.id)
        response = RedirectResponse("/signin", 303)
        response.delete_cookie(COOKIE, path="/")
        return response


async def static(request: Request) -> Response:
    name = request.path_params["name"]
    if name not in STATIC:
        return Response(status_code=404)
    return FileResponse(
        HERE / "static" / name,
        media_type=STATIC[name],
        headers={"Cache-Control": "max-age=3600", "X-Content-Type-Options": "nosniff"},
    )
