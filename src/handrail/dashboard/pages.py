"""The dashboard's pages: the runs, one run, the workflows, the insights, and the
approve and decline forms of a run's page, and its abandon form where only a person may
end the run."""

from __future__ import annotations

import hmac
from typing import Any
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from handrail.dashboard import insights, views
from handrail.dashboard.passkey_pages import presence_of, sign_page_url
from handrail.dashboard.sessions import Session
from handrail.dashboard.site import LISTED, SECURITY_HEADERS, Site, form
from handrail.model.errors import HandrailError
from handrail.model.request import Request as Asking
from handrail.model.runs import ACTIVE_STATUSES, STATUSES, EventType
from handrail.notify.targets import shown
from handrail.runs.abandons import ByPerson
from handrail.runs.presence import Presence, PresenceNeeded


def filters(request: Request) -> tuple[str | None, str | None, str | None]:
    params = request.query_params
    text = (params.get("q") or "").strip()[:200] or None
    return params.get("status") or None, params.get("workflow") or None, text


class Pages:
    def __init__(self, site: Site) -> None:
        self.site = site
        self.runs = site.runs
        self.service = site.service

    def listing(
        self, asking: Asking, status: str | None, workflow: str | None, text: str | None
    ) -> list[dict[str, Any]]:
        statuses = [status] if status in STATUSES else None
        found = self.runs.listing(asking, statuses=statuses, workflow_id=workflow, text=text, limit=LISTED)
        workflow_of = self.site.workflow_of
        return views.grouped(found, lambda r: views.run_row(r, workflow_of(r)))  # branches under their run

    def waiting_rows(self, asking: Asking) -> list[dict[str, Any]]:
        found = self.runs.waiting_for(asking, asking.owner or self.runs.default_owner)
        return [views.run_row(r, self.site.workflow_of(r)) for r in found]

    async def runs_page(self, request: Request, session: Session) -> Response:
        status, workflow, text = filters(request)
        rows = await self.site.as_person(session, self.listing, status, workflow, text)
        waiting = await self.site.as_person(session, self.waiting_rows)
        snapshot = self.service.catalog.ready
        ids = sorted(snapshot.entries) if snapshot is not None else []
        return self.site.page(
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

    def run_details(self, asking: Asking, run_id: str) -> dict[str, Any]:
        runs = self.runs
        person = asking.owner or runs.default_owner
        run = runs.readable(asking, run_id, person)
        events = runs.events(run)
        workflow = self.site.workflow_of(run)
        refused = runs.may_decide(asking, run, person, "dashboard")
        return {
            "run": run,
            "row": views.run_row(run, workflow),
            "approval": views.approval(runs.pending_approval(run)),
            "waiting": runs.waiting(run),
            "refused": refused,
            "decides": EventType.APPROVED in runs.offers(run) and refused is None,  # the buttons
            # a run only a person may end: the person's button (with a passkey where it needs one)
            "abandons": EventType.ABANDONED in runs.offers(run) and runs.person_abandons(run),
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

    async def run_page(self, request: Request, session: Session) -> Response:
        page = self.site.page
        run_id = request.path_params["run_id"]
        try:
            details = await self.site.as_person(session, self.run_details, run_id)
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

    async def workflows_page(self, request: Request, session: Session) -> Response:
        data = await run_in_threadpool(lambda: views.catalog(self.service.catalog.snapshot()))
        return self.site.page("workflows.html", request, session, **data)

    async def insights_page(self, request: Request, session: Session) -> Response:
        workflow = request.query_params.get("workflow") or None
        shown = await self.site.as_person(session, self.insight_pages, workflow)
        return self.site.page("insights.html", request, session, workflows=shown)

    def insight_pages(self, asking: Asking, workflow: str | None) -> list[dict[str, Any]]:
        runs, service, workflow_of = self.runs, self.service, self.site.workflow_of

        def pinned(workflow_id: str, version: str) -> Any:
            """The workflow a version's runs were pinned to: the catalog's, or one run's."""
            current = service.catalog.snapshot().get(workflow_id)
            if current is not None and current.version == version:
                return current
            found = runs.listing(asking, workflow_id=workflow_id, limit=LISTED)
            run = next((r for r in found if r.workflow_version == version), None)
            return workflow_of(run) if run is not None else None

        return insights.pages(runs.insights(asking, workflow), pinned)

    async def decide(self, request: Request, session: Session) -> Response:
        runs, people = self.runs, self.site.people
        run_id = request.path_params["run_id"]
        verb = request.path_params["verb"]
        if verb not in ("approve", "decline", "abandon"):
            return Response(status_code=404)
        fields = await form(request)
        if fields is None or not self.site.same_origin(request):
            return HTMLResponse("Forbidden: cross-site request", 403, headers=SECURITY_HEADERS)
        if not hmac.compare_digest(fields.get("csrf", "").encode(), session.csrf.encode()):
            return HTMLResponse("Forbidden: the form's token does not match", 403, headers=SECURITY_HEADERS)
        comment = fields.get("comment", "").strip() or None
        # a passkey's signed answer, to the challenge this session was given (passkey_pages.py)
        presence = (
            await presence_of(self.site.challenges, session, run_id, verb, fields["assertion"])
            if "assertion" in fields
            else None
        )
        if isinstance(presence, str):
            return RedirectResponse(f"/runs/{quote(run_id)}?note={quote(presence)}", 303)
        if verb == "abandon":
            return await self.abandon(session, run_id, comment, presence)
        try:
            await self.site.as_person(
                session,
                lambda asking: runs.decide(
                    asking,
                    run_id,
                    "approve" if verb == "approve" else "decline",
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

    async def abandon(
        self, session: Session, run_id: str, reason: str | None, presence: Presence | None
    ) -> Response:
        """The person ends a run its workflow leaves to a person (runs/abandons.py); any
        other run is no page's to end here (404), as before."""
        by = ByPerson(session.person, "dashboard", presence, shared=self.site.people is None)
        said = reason or "abandoned on the dashboard"

        def abandoned(asking: Asking) -> bool:
            if not self.runs.person_abandons(self.runs.run(asking, run_id)):
                return False
            self.runs.abandon(asking, run_id, said, by)
            return True

        try:
            if not await self.site.as_person(session, abandoned):
                return Response(status_code=404)
            note = "abandoned"
        except PresenceNeeded as exc:
            return RedirectResponse(sign_page_url(run_id, "abandon", reason, str(exc.data["details"])), 303)
        except HandrailError as exc:
            note = views.note_code(exc)
        return RedirectResponse(f"/runs/{quote(run_id)}?note={note}", 303)
