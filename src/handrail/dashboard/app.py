"""The dashboard's routes, mounted beside /mcp (see handrail.transport.http.create_app).

Sign-in: a person posts their token once; the run store keeps a session (shared by
every server on it) and gives the browser only an opaque id in an HttpOnly,
SameSite=Strict cookie. Scripts may also send the token as `Authorization: Bearer`.
Forms that change something (approve, decline, sign out) carry the session's CSRF
token and must come from our own Origin.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from handrail import forwarded
from handrail.dashboard import insights, views
from handrail.dashboard.passkey_pages import Challenges, Kit, passkey_routes, presence_of, sign_page_url
from handrail.dashboard.sessions import COOKIE, Identifies, Session, Sessions
from handrail.errors import HandrailError, RunNotFound
from handrail.forwarded import Network
from handrail.notify.targets import shown
from handrail.runs.presence import PresenceNeeded
from handrail.runs.records import ACTIVE_STATUSES, STATUSES, EventType
from handrail.runs.refusals import NotAllowedToDecide
from handrail.runs.request import Request as Asking
from handrail.service.people import AGENT, PERSON, bearer

HERE = Path(__file__).parent
STATIC = {
    "dashboard.css": "text/css",
    "dashboard.js": "text/javascript",
    "mermaid.min.js": "text/javascript",
    "passkeys.js": "text/javascript",
}
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


def dashboard_routes(
    service: Any, refuse: Refuse, people: Identifies | None, proxies: frozenset[Network] = frozenset()
) -> list[BaseRoute]:
    """`refuse(request, authenticate=False)`: the transport's Host and Origin checks;
    `people`: whom the tokens name (None: no token asked, one person's server);
    `proxies`: those whose forwarded origin counts (`--trust-proxy`)."""
    templates = Environment(
        loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(default=True)
    )
    templates.filters["duration"] = views.duration  # seconds as people read them
    sessions = Sessions(service.runs.sign_ins)  # in the store: every server on it knows them
    challenges = Challenges()  # the passkey challenges handed out, each taken once
    runs = service.runs

    def page(
        name: str, request: Request, session: Session | None, code: int = 200, **values: Any
    ) -> Response:
        html = templates.get_template(name).render(
            session=session, signin_needed=people is not None, path=request.url.path, **values
        )
        # text a run holds may be half of a UTF-16 pair (kept by an older handrail): escaped
        body = html.encode("utf-8", "backslashreplace")
        return HTMLResponse(body, status_code=code, headers=SECURITY_HEADERS)

    def with_cookie(response: Response, request: Request, session: Session) -> Response:
        response.set_cookie(
            COOKIE,
            session.id,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https" or getattr(where(request), "scheme", None) == "https",
            path="/",
        )
        return response

    def bearer_of(request: Request) -> str | None:
        headers = request.headers.getlist("authorization")
        return bearer(headers[0]) if len(headers) == 1 else None

    def agent_only(token: str | None) -> bool:
        """Whether `token` is known and good for /mcp alone: it signs in nowhere here."""
        found = people.credential(token) if people is not None and token is not None else None
        return found is not None and found[1] == AGENT

    def signed_in(request: Request) -> tuple[Session | None, bool]:
        """The request's session, and whether it was made just now (its cookie must be set)."""
        session = sessions.get(request.cookies.get(COOKIE))
        if session is not None:
            return session, False
        given = bearer_of(request)
        if given is not None and people is not None:
            # a script's request: kept nowhere, no cookie; a person's token only
            person = people.identify(given, scope=PERSON)
            return (Sessions.passing(person), False) if person is not None else (None, False)
        if people is None:  # no token asked for: one person's local server
            return sessions.create(runs.default_owner), True
        return None, False

    def as_person(session: Session, work: Callable[..., Any], *args: Any) -> Any:
        """Run `work(asking, *args)` on a worker thread, `asking` the request of the
        signed-in person (their runs, and those waiting for their approval)."""
        return run_in_threadpool(work, Asking(owner=session.person, scope=PERSON), *args)

    def where(request: Request) -> forwarded.Public | None:
        """Where the browser sent the request: a trusted proxy's word, else `Host`."""
        peer = request.client.host if request.client is not None else None
        return forwarded.public(request.headers, peer, proxies)

    def same_origin(request: Request) -> bool:
        """A form post must name this very host and port (browsers send Origin on every
        POST); the scheme is compared only when a trusted proxy names it, so that a
        TLS-terminating proxy is no obstacle."""
        origin = request.headers.get("origin") or request.headers.get("referer")
        return origin is not None and forwarded.same_origin(origin, where(request))

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

    def gate(handler: Callable[..., Any], *, api: bool = False) -> Callable[[Request], Any]:
        async def guarded(request: Request) -> Response:
            refused = refuse(request, authenticate=False)
            if refused is not None:
                return refused
            session, new = await run_in_threadpool(signed_in, request)  # reads the store
            if session is None and agent_only(bearer_of(request)):
                return JSONResponse({"error": AGENT_REFUSED, "rule": "scope"}, 403)
            if session is None:
                if api:
                    return JSONResponse(
                        {"error": "Unauthorized: sign in or send a bearer token"},
                        401,
                        headers={"WWW-Authenticate": 'Bearer realm="handrail"'},
                    )
                return RedirectResponse("/signin?next=" + quote(request.url.path), 303)
            response: Response = await handler(request, session)
            return with_cookie(response, request, session) if new else response

        return guarded

    # -- pages ------------------------------------------------------------------
    def workflow_of(run: Any) -> Any:
        try:
            return runs.pinned(service.catalog.snapshot(), run)
        except HandrailError:
            return None

    def listing(
        asking: Asking, status: str | None, workflow: str | None, text: str | None
    ) -> list[dict[str, Any]]:
        statuses = [status] if status in STATUSES else None
        found = runs.listing(asking, statuses=statuses, workflow_id=workflow, text=text, limit=LISTED)
        return views.grouped(found, lambda r: views.run_row(r, workflow_of(r)))  # branches under their run

    def filters(request: Request) -> tuple[str | None, str | None, str | None]:
        params = request.query_params
        text = (params.get("q") or "").strip()[:200] or None
        return params.get("status") or None, params.get("workflow") or None, text

    def waiting_rows(asking: Asking) -> list[dict[str, Any]]:
        found = runs.waiting_for(asking, asking.owner or runs.default_owner)
        return [views.run_row(r, workflow_of(r)) for r in found]

    async def runs_page(request: Request, session: Session) -> Response:
        status, workflow, text = filters(request)
        rows = await as_person(session, listing, status, workflow, text)
        waiting = await as_person(session, waiting_rows)
        snapshot = service.catalog.ready
        ids = sorted(snapshot.entries) if snapshot is not None else []
        return page(
            "runs.html",
            request,
            session,
            rows=rows,
            waiting=waiting,
            statuses=STATUSES,
            workflows=ids,
            status=status,
            workflow=workflow,
            text=text,
        )

    def run_details(asking: Asking, run_id: str) -> dict[str, Any]:
        person = asking.owner or runs.default_owner
        run = runs.readable(asking, run_id, person)
        events = runs.events(run)
        workflow = workflow_of(run)
        refused = runs.may_decide(asking, run, person, "dashboard")
        return {
            "run": run,
            "row": views.run_row(run, workflow),
            "approval": views.approval(runs.pending_approval(run)),
            "waiting": runs.waiting(run),
            "refused": refused,
            "decides": EventType.APPROVED in runs.offers(run) and refused is None,  # the buttons
            "events": events,
            "blocks": views.timeline(events, workflow),
            "graph": views.run_graph(workflow, run, events) if workflow is not None else None,
            "tree": runs.tree.tree(runs.tree.root(run)) if runs.tree.in_tree(run) else None,
            "broken": runs.chain_break(run, events),
            # a receiver's failures, for as long as the notification is not delivered
            "undelivered": [
                {**n.as_dict(), "target": shown(n.target)}
                for n in runs.notifications(run)
                if n.state != "delivered" and n.last_error
            ],
        }

    async def run_page(request: Request, session: Session) -> Response:
        run_id = request.path_params["run_id"]
        try:
            details = await as_person(session, run_details, run_id)
        except HandrailError as exc:
            return page("missing.html", request, session, code=404, run_id=run_id, message=exc.message)
        run = details["run"]
        return page(
            "run.html",
            request,
            session,
            **details,
            context=views.pretty(dict(run.context)),
            step=run.position.get("step"),
            open_statuses=ACTIVE_STATUSES,
            note=views.NOTES.get(request.query_params.get("note") or ""),
        )

    async def workflows_page(request: Request, session: Session) -> Response:
        data = await run_in_threadpool(lambda: views.catalog(service.catalog.snapshot()))
        return page("workflows.html", request, session, **data)

    async def insights_page(request: Request, session: Session) -> Response:
        workflow = request.query_params.get("workflow") or None
        shown = await as_person(session, insight_pages, workflow)
        return page("insights.html", request, session, workflows=shown)

    def insight_pages(asking: Asking, workflow: str | None) -> list[dict[str, Any]]:
        def pinned(workflow_id: str, version: str) -> Any:
            """The workflow a version's runs were pinned to: the catalog's, or one run's."""
            current = service.catalog.snapshot().get(workflow_id)
            if current is not None and current.version == version:
                return current
            found = runs.listing(asking, workflow_id=workflow_id, limit=LISTED)
            run = next((r for r in found if r.workflow_version == version), None)
            return workflow_of(run) if run is not None else None

        return insights.pages(runs.insights(asking, workflow), pinned)

    async def decide(request: Request, session: Session) -> Response:
        run_id = request.path_params["run_id"]
        verb = request.path_params["verb"]
        if verb not in ("approve", "decline"):
            return Response(status_code=404)
        fields = await form(request)
        if fields is None or not same_origin(request):
            return HTMLResponse("Forbidden: cross-site request", 403, headers=SECURITY_HEADERS)
        if not hmac.compare_digest(fields.get("csrf", "").encode(), session.csrf.encode()):
            return HTMLResponse("Forbidden: the form's token does not match", 403, headers=SECURITY_HEADERS)
        comment = fields.get("comment", "").strip() or None
        method = runs.approve if verb == "approve" else runs.decline
        # a passkey's signed answer, to the challenge this session was given (passkey_pages.py)
        presence = (
            presence_of(challenges, session, run_id, verb, fields["assertion"])
            if "assertion" in fields
            else None
        )
        if isinstance(presence, str):
            return RedirectResponse(f"/runs/{quote(run_id)}?note={quote(presence)}", 303)
        try:
            await as_person(
                session,
                lambda asking: method(
                    asking,
                    run_id,
                    person=session.person,
                    comment=comment,
                    via="dashboard",
                    presence=presence,
                    shared=people is None,  # without tokens, anyone on this machine is "local"
                ),
            )
            note = "approved" if verb == "approve" else "declined"
        except PresenceNeeded as exc:
            return RedirectResponse(sign_page_url(run_id, verb, comment, str(exc.data["details"])), 303)
        except HandrailError as exc:
            note = views.note_code(exc)  # a code: the page says the fixed text it names
        return RedirectResponse(f"/runs/{quote(run_id)}?note={note}", 303)

    # -- JSON -------------------------------------------------------------------
    async def api_decide(request: Request) -> Response:
        """POST /api/runs/{runId}/approve|decline `{"comment": ...}` with a person's bearer
        token (never a cookie: a script has no form token to carry)."""
        refused = refuse(request, authenticate=False)
        if refused is not None:
            return refused
        verb = request.path_params["verb"]
        if verb not in ("approve", "decline"):
            return JSONResponse({"error": f"no such action `{verb[:40]}`: approve or decline"}, 404)
        given = bearer_of(request)
        if agent_only(given):
            return JSONResponse({"error": AGENT_REFUSED, "rule": "scope"}, 403)
        if people is None:
            person: str | None = runs.default_owner
        else:
            person = people.identify(given, scope=PERSON) if given is not None else None
        if person is None:
            return JSONResponse(
                {"error": "Unauthorized: send a person's token as `Authorization: Bearer <token>`"},
                401,
                headers={"WWW-Authenticate": 'Bearer realm="handrail"'},
            )
        comment = await json_comment(request)
        if isinstance(comment, Response):
            return comment
        run_id = request.path_params["run_id"]
        method = runs.approve if verb == "approve" else runs.decline
        asking = Asking(owner=person, scope=PERSON)
        try:
            result = await run_in_threadpool(
                # without tokens, anyone on this machine is "local": the agent shares the channel
                lambda: method(
                    asking, run_id, person=person, comment=comment, via="api", shared=people is None
                )
            )
        except PresenceNeeded as exc:
            said = {"error": exc.message, "rule": "presence", "page": exc.data.get("page")}
            return JSONResponse(said, 403)
        except NotAllowedToDecide as exc:
            return JSONResponse({"error": exc.message, "rule": exc.data.get("rule")}, 403)
        except RunNotFound as exc:
            return JSONResponse({"error": exc.message, "runId": run_id}, 404)
        except HandrailError as exc:
            details = exc.data.get("details")
            return JSONResponse({"error": exc.message + (f": {details}" if details else "")}, 409)
        return TextJSONResponse(result, headers={"Cache-Control": "no-store"})

    async def json_comment(request: Request) -> str | Response | None:
        """The body's optional `comment`: a JSON object of at most MAX_FORM bytes, or
        nothing. A body must say it is JSON, which no cross-site form can."""
        declared = request.headers.get("content-length", "0")
        if not declared.isdigit() or int(declared) > MAX_FORM:
            return JSONResponse({"error": f"the body is over {MAX_FORM} bytes"}, 413)
        body = await request.body()
        if len(body) > MAX_FORM:
            return JSONResponse({"error": f"the body is over {MAX_FORM} bytes"}, 413)
        if not body.strip():
            return None
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind != "application/json":
            return JSONResponse({"error": "send the body as Content-Type: application/json"}, 415)
        try:
            document = json.loads(body)
        except ValueError:
            return JSONResponse({"error": 'the body is not JSON: send {"comment": "..."} or nothing'}, 400)
        if not isinstance(document, dict) or not isinstance(document.get("comment", ""), str):
            return JSONResponse({"error": 'the body must be {"comment": "<text>"}'}, 400)
        comment = str(document.get("comment", "")).strip()
        return comment or None

    async def api_runs(request: Request, session: Session) -> Response:
        rows = await as_person(session, listing, *filters(request))
        return TextJSONResponse({"runs": rows}, headers={"Cache-Control": "no-store"})

    async def api_run(request: Request, session: Session) -> Response:
        def one(asking: Asking, run_id: str) -> dict[str, Any]:
            run = runs.run(asking, run_id)
            return {**views.run_row(run, workflow_of(run)), "version": run.version}

        try:
            row = await as_person(session, one, request.path_params["run_id"])
        except HandrailError as exc:
            return JSONResponse({"error": exc.message}, 404)
        return TextJSONResponse(row, headers={"Cache-Control": "no-store"})

    # -- sign-in ----------------------------------------------------------------
    async def signin(request: Request) -> Response:
        refused = refuse(request, authenticate=False)
        if refused is not None:
            return refused
        target = request.query_params.get("next", "/")
        # only a path of this server: never `//host` or `/\host`, which browsers take as another site
        target = target if target.startswith("/") and not target.startswith(("//", "/\\")) else "/"
        if request.method == "GET":
            failed = request.query_params.get("failed")
            return page(
                "signin.html", request, None, next=target, failed=failed is not None, agent=failed == "agent"
            )
        fields = await form(request)
        if fields is None or not same_origin(request):
            return HTMLResponse("Forbidden: cross-site request", 403, headers=SECURITY_HEADERS)
        token = fields.get("token", "")
        if agent_only(token):
            return RedirectResponse("/signin?failed=agent&next=" + quote(target), 303)
        person = people.identify(token, scope=PERSON) if people is not None else runs.default_owner
        if person is None:
            # back to the form by a redirect: a 401 page would be logged by the browser as an error
            return RedirectResponse("/signin?failed&next=" + quote(target), 303)
        made = await run_in_threadpool(sessions.create, person)
        return with_cookie(RedirectResponse(target, 303), request, made)

    async def signout(request: Request) -> Response:
        refused = refuse(request, authenticate=False)
        if refused is not None:
            return refused
        fields = await form(request)
        session = await run_in_threadpool(sessions.get, request.cookies.get(COOKIE))
        if fields is None or not same_origin(request) or session is None:
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

    kit = Kit(gate, page, form, same_origin, as_person, runs, shared=people is None, where=where)
    return [
        *passkey_routes(kit, challenges),
        Route("/", gate(runs_page), methods=["GET"]),
        Route("/runs/{run_id}", gate(run_page), methods=["GET"]),
        Route("/runs/{run_id}/{verb:str}", gate(decide), methods=["POST"]),
        Route("/workflows", gate(workflows_page), methods=["GET"]),
        Route("/insights", gate(insights_page), methods=["GET"]),
        Route("/api/runs", gate(api_runs, api=True), methods=["GET"]),
        Route("/api/runs/{run_id}", gate(api_run, api=True), methods=["GET"]),
        Route("/api/runs/{run_id}/{verb:str}", api_decide, methods=["POST"]),
        Route("/signin", signin, methods=["GET", "POST"]),
        Route("/signout", signout, methods=["POST"]),
        Route("/static/{name}", static, methods=["GET"]),
    ]
