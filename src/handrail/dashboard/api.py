"""The dashboard's JSON API: the runs, one run, and a decision a script sends with a
person's bearer token."""

from __future__ import annotations

import json
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from handrail.dashboard import views
from handrail.dashboard.pages import Pages, filters
from handrail.dashboard.sessions import Session
from handrail.dashboard.site import AGENT_REFUSED, MAX_FORM, Site, TextJSONResponse, bearer_of
from handrail.model.errors import HandrailError, RunNotFound
from handrail.model.request import Request as Asking
from handrail.runs.presence import PresenceNeeded
from handrail.runs.refusals import NotAllowedToDecide
from handrail.service.people import PERSON


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


class Api:
    def __init__(self, site: Site, pages: Pages) -> None:
        self.site = site
        self.runs = site.runs
        self.pages = pages  # the runs page's listing, which /api/runs sends as JSON

    async def api_decide(self, request: Request) -> Response:
        """POST /api/runs/{runId}/approve|decline `{"comment": ...}` with a person's bearer
        token (never a cookie: a script has no form token to carry)."""
        runs, people = self.runs, self.site.people
        refused = self.site.refuse(request, authenticate=False)
        if refused is not None:
            return refused
        verb = request.path_params["verb"]
        if verb not in ("approve", "decline"):
            return JSONResponse({"error": f"no such action `{verb[:40]}`: approve or decline"}, 404)
        given = bearer_of(request)
        if self.site.agent_only(given):
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
        asking = Asking(owner=person, scope=PERSON)
        try:
            result = await run_in_threadpool(
                # without tokens, anyone on this machine is "local": the agent shares the channel
                lambda: runs.decide(
                    asking,
                    run_id,
                    "approve" if verb == "approve" else "decline",
                    person=person,
                    comment=comment,
                    via="api",
                    shared=people is None,
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

    async def api_runs(self, request: Request, session: Session) -> Response:
        rows = await self.site.as_person(session, self.pages.listing, *filters(request))
        return TextJSONResponse({"runs": rows}, headers={"Cache-Control": "no-store"})

    def one(self, asking: Asking, run_id: str) -> dict[str, Any]:
        run = self.runs.run(asking, run_id)
        return {**views.run_row(run, self.site.workflow_of(run)), "version": run.version}

    async def api_run(self, request: Request, session: Session) -> Response:
        try:
            row = await self.site.as_person(session, self.one, request.path_params["run_id"])
        except HandrailError as exc:
            return JSONResponse({"error": exc.message}, 404)
        return TextJSONResponse(row, headers={"Cache-Control": "no-store"})
