"""The page a one-time approval link opens (runs/links.py): what the link decides, and a
button that decides it. Opening the link decides nothing by itself, since a chat's
preview of a link fetches it too; the button's form carries the session's CSRF value
and is checked for its Origin, as every form of the dashboard."""

from __future__ import annotations

import hmac
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from handrail.dashboard.passkey_pages import FORBIDDEN, Kit
from handrail.dashboard.sessions import Session
from handrail.model.errors import HandrailError
from handrail.model.request import Request as Asking


def link_routes(kit: Kit) -> list[BaseRoute]:
    runs = kit.runs

    def opener(session: Session) -> str | None:
        """Who opened the link, where the server knows (its tokens); None on a one-person server."""
        return None if kit.shared else session.person

    async def link_page(request: Request, session: Session) -> Response:
        run_id, token = request.path_params["run_id"], request.path_params["token"]

        def read(_asking: Asking) -> dict[str, Any]:
            link = runs.links.usable(run_id, token)
            run = runs.store.get(run_id)
            return {"link": link, "run": run}

        try:
            found = await kit.as_person(session, read)
        except HandrailError as exc:
            return kit.page("link.html", request, session, code=403, run_id=run_id, refused=exc.message)
        return kit.page("link.html", request, session, run_id=run_id, token=token, **found)

    async def link_decide(request: Request, session: Session) -> Response:
        run_id, token = request.path_params["run_id"], request.path_params["token"]
        fields = await kit.form(request)
        if fields is None or not kit.same_origin(request):
            return HTMLResponse("Forbidden: cross-site request", 403, headers=FORBIDDEN)
        if not hmac.compare_digest(fields.get("csrf", "").encode(), session.csrf.encode()):
            return HTMLResponse("Forbidden: the form's token does not match", 403, headers=FORBIDDEN)
        try:
            link, _ = await kit.as_person(
                session, lambda _asking: runs.by_link(run_id, token, opener(session))
            )
        except HandrailError as exc:
            return kit.page("link.html", request, session, code=403, run_id=run_id, refused=exc.message)
        note = "approved" if link.approve else "declined"
        return RedirectResponse(f"/runs/{run_id}?note={note}", 303)

    return [
        Route("/runs/{run_id}/link/{token}", kit.gate(link_page), methods=["GET"]),
        Route("/runs/{run_id}/link/{token}", kit.gate(link_decide), methods=["POST"]),
    ]
