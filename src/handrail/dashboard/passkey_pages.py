"""The dashboard's passkey pages: registering a person's passkeys (/passkeys), and the
page where a decision that needs the person is signed (/runs/RUN/sign: an approval, a
decline, or the abandon of a run only a person may end), with the challenges both
ceremonies sign (spec/runs.md, "Presence").

A challenge is made for one session and used once: it is kept server side, in the
store every server shares (runs/sign_ins.py), so that the answer may come back through
another server behind the load balancer, and it is taken away when the answer comes.
A decision's challenge is made of the run's chain head at that moment
(runs/presence.py), so the signature anchors the log."""

from __future__ import annotations

import base64
import hmac
import json
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote, urlsplit

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from handrail.dashboard.forwarded import Public
from handrail.dashboard.sessions import Session
from handrail.model.errors import HandrailError
from handrail.model.request import Request as Asking
from handrail.model.runs import EventType
from handrail.runs.passkeys import credential_of
from handrail.runs.presence import Presence, challenge, new_nonce

CHALLENGE_SECONDS = 600.0  # a ceremony not finished in ten minutes asks again
# what a passkey signs here: a decision on an approval, or ending a run only a person may end
SIGNED = {"approve": "Approve", "decline": "Decline", "abandon": "Abandon"}
FORBIDDEN = {"Content-Security-Policy": "default-src 'none'", "Cache-Control": "no-store"}


@dataclass(frozen=True, slots=True)
class Kit:
    """What the dashboard's app lends these pages: its guard, page renderer, form
    reader and Origin check, the run operations, and how work runs as a person."""

    gate: Callable[..., Any]
    page: Callable[..., Response]
    form: Callable[[Request], Awaitable[dict[str, str] | None]]
    same_origin: Callable[[Request], bool]
    as_person: Callable[..., Awaitable[Any]]
    runs: Any
    shared: bool  # the dashboard runs without tokens: the agent on this machine reaches it too
    # where the browser sent the request: a `--trust-proxy` proxy's word, else Host (app.py)
    where: Callable[[Request], Public | None] | None = None


@dataclass(frozen=True, slots=True)
class Asked:
    """A challenge handed out: for a decision (run, verb, head, nonce) or a registration."""

    rp_id: str
    origin: str
    nonce: str
    head: str | None = None
    run_id: str | None = None
    verb: str | None = None
    raw: bytes = b""  # a registration's challenge bytes


class Kept(Protocol):
    """handrail.runs.sign_ins.SignIns: the challenges in the shared store."""

    def ask(self, key: str, person: str, body: str, seconds: float) -> None: ...

    def taken(self, key: str) -> str | None: ...


class Challenges:
    """The challenges handed out, each under its session's key. The store is read and
    written off the event loop, so one slow database stalls no other request."""

    def __init__(self, kept: Kept, seconds: float = CHALLENGE_SECONDS) -> None:
        self._kept = kept
        self._seconds = seconds

    async def put(self, key: str, person: str, asked: Asked) -> None:
        fields = {name: getattr(asked, name) for name in Asked.__slots__ if name != "raw"}
        body = json.dumps({**fields, "raw": base64.b64encode(asked.raw).decode()})
        await run_in_threadpool(self._kept.ask, key, person, body, self._seconds)

    async def take(self, key: str) -> Asked | None:
        body = await run_in_threadpool(self._kept.taken, key)
        return None if body is None else _asked(body)


def _asked(body: str) -> Asked | None:
    """A kept challenge read back; a row that is not one of ours (the store is the
    agent's to write too) is no challenge, so the ceremony asks again."""
    try:
        fields = json.loads(body)
        return Asked(**{**fields, "raw": base64.b64decode(fields["raw"], validate=True)})
    except (ValueError, TypeError, KeyError):
        return None


def relying_party(
    request: Request, where: Callable[[Request], Public | None] | None = None
) -> tuple[str, str]:
    """The relying party's id (the host name the browser used: behind a trusted proxy
    the one it forwards, not the proxy's own Host) and the origin."""
    said = where(request) if where is not None else None
    host = said.netloc if said is not None else request.headers.get("host", "")
    scheme = said.scheme if said is not None and said.scheme else request.url.scheme
    return urlsplit(f"//{host}").hostname or "", f"{scheme}://{host}"


def is_ip(host: str) -> bool:
    """WebAuthn takes no IP address as a relying party: the page says to use localhost."""
    return host.replace(".", "").isdigit() or ":" in host


def localhost(request: Request) -> str:
    port = urlsplit(f"//{request.headers.get('host', '')}").port
    return f"{request.url.scheme}://localhost{f':{port}' if port else ''}{request.url.path}"


async def presence_of(
    challenges: Challenges, session: Session, run_id: str, verb: str, text: str
) -> Presence | str:
    """The assertion a decision's form carries, with the challenge this session was
    given for it; else why there is none that can count."""
    asked = await challenges.take(f"{session.id}:{run_id}")
    credential = credential_of(text)
    if credential is None:
        return "the passkey's answer is not a WebAuthn credential"
    if asked is None or asked.verb != verb:
        return "no passkey challenge of this session is open for this decision: sign again"
    return Presence(asked.head, asked.nonce, asked.rp_id, asked.origin, credential)


class PasskeyPages:
    """The pages' handlers, with what the dashboard lends them and the challenges open."""

    def __init__(self, kit: Kit, challenges: Challenges) -> None:
        self.kit = kit
        self.runs = kit.runs
        self.challenges = challenges

    def forbidden(self, text: str) -> Response:
        return HTMLResponse(f"Forbidden: {text}", 403, headers=FORBIDDEN)

    async def checked(self, request: Request, session: Session) -> dict[str, str] | Response:
        fields = await self.kit.form(request)
        if fields is None or not self.kit.same_origin(request):
            return self.forbidden("cross-site request")
        if not hmac.compare_digest(fields.get("csrf", "").encode(), session.csrf.encode()):
            return self.forbidden("the form's token does not match")
        return fields

    async def keys_page(
        self,
        template: str,
        request: Request,
        session: Session,
        here_only: bool,
        query: str = "",
        **shown: Any,
    ) -> Response:
        """A page over the person's passkeys (`here_only`: those made for this host), with
        its address at localhost (and `query`) for a host, an IP address, that can hold none."""
        keys = await self.kit.as_person(session, lambda _asking: self.runs.passkeys.of(session.person))
        rp_id, _ = relying_party(request, self.kit.where)
        return self.kit.page(
            template,
            request,
            session,
            keys=[k for k in keys if k.rp_id == rp_id] if here_only else keys,
            rp_id=rp_id,
            ip_host=is_ip(rp_id),
            localhost=localhost(request) + query,
            **shown,
        )

    async def passkeys_page(self, request: Request, session: Session) -> Response:
        note = request.query_params.get("note")
        return await self.keys_page("passkeys.html", request, session, False, note=note)

    async def registration_options(self, request: Request, session: Session) -> Response:
        fields = await self.checked(request, session)
        if isinstance(fields, Response):
            return fields
        rp_id, origin = relying_party(request, self.kit.where)
        if is_ip(rp_id):
            return JSONResponse({"error": "a passkey needs a host name: open the page at localhost"}, 400)
        watched = (
            await self.kit.as_person(session, lambda _asking: self.runs.passkeys.watched_open_run())
            if self.kit.shared
            else None
        )
        if watched is not None:
            said = (
                f"no passkey is registered here while the gate watches run {watched}: this dashboard "
                "takes no token, so the agent reaches it too; register when no run is open, or sign in "
                "with a person's token on a server that asks for one"
            )
            return JSONResponse({"error": said}, 409)
        raw = secrets.token_bytes(32)
        await self.challenges.put(f"{session.id}:register", session.person, Asked(rp_id, origin, "", raw=raw))
        text = await self.kit.as_person(
            session, lambda _asking: self.runs.passkeys.registration_options(session.person, rp_id, raw)
        )
        return Response(text, media_type="application/json", headers={"Cache-Control": "no-store"})

    async def register(self, request: Request, session: Session) -> Response:
        fields = await self.checked(request, session)
        if isinstance(fields, Response):
            return fields
        asked = await self.challenges.take(f"{session.id}:register")
        credential = credential_of(fields.get("credential", ""))
        if asked is None or credential is None:
            note = "No passkey was registered: ask for one again."
        else:
            try:
                await self.kit.as_person(
                    session,
                    lambda _asking: self.runs.passkeys.register(
                        session.person,
                        credential,
                        asked.raw,
                        asked.rp_id,
                        asked.origin,
                        fields.get("name", ""),
                    ),
                )
                note = "Passkey registered."
            except HandrailError as exc:
                note = str(exc.data.get("details") or exc.message)
        return RedirectResponse(f"/passkeys?note={quote(note)}", 303)

    def decision_challenge(
        self, asking: Asking, person: str, run_id: str, verb: str, rp_id: str
    ) -> tuple[Any, str]:
        nonce = new_nonce()
        if verb == "abandon":  # the run, whatever its step (runs/abandons.py)
            run = self.runs.run(asking, run_id)
            if EventType.ABANDONED not in self.runs.offers(run):
                raise ValueError(f"the run is {run.status}: it cannot be abandoned")
            raw = challenge(run.id, None, "abandon", run.head, nonce)
            return (run.head, nonce), self.runs.passkeys.assertion_options(person, rp_id, raw)
        run = self.runs.readable(asking, run_id, person)
        pending = self.runs.pending_approval(run)
        if pending is None:
            raise ValueError(f"the run is {run.status}: it waits for no approval")
        raw = challenge(
            run.id, str(pending["stepId"]), "approve" if verb == "approve" else "decline", run.head, nonce
        )
        return (run.head, nonce), self.runs.passkeys.assertion_options(person, rp_id, raw)

    async def sign_challenge(self, request: Request, session: Session) -> Response:
        fields = await self.checked(request, session)
        if isinstance(fields, Response):
            return fields
        run_id, verb = request.path_params["run_id"], request.path_params["verb"]
        if verb not in SIGNED:
            return JSONResponse({"error": f"no such decision `{verb[:40]}`"}, 404)
        rp_id, origin = relying_party(request, self.kit.where)
        if is_ip(rp_id):
            return JSONResponse({"error": "a passkey needs a host name: open the page at localhost"}, 400)
        try:
            (head, nonce), text = await self.kit.as_person(
                session, self.decision_challenge, session.person, run_id, verb, rp_id
            )
        except (HandrailError, ValueError) as exc:
            said = exc.message if isinstance(exc, HandrailError) else str(exc)
            return JSONResponse({"error": said}, 409)
        await self.challenges.put(
            f"{session.id}:{run_id}",
            session.person,
            Asked(rp_id, origin, nonce, head=head, run_id=run_id, verb=verb),
        )
        return Response(text, media_type="application/json", headers={"Cache-Control": "no-store"})

    async def sign_page(self, request: Request, session: Session) -> Response:
        run_id = request.path_params["run_id"]
        verb = request.query_params.get("verb", "approve")
        verb = verb if verb in SIGNED else "approve"
        return await self.keys_page(
            "sign.html",
            request,
            session,
            True,
            f"?verb={verb}",
            run_id=run_id,
            verb=verb,
            label=SIGNED[verb],
            comment=request.query_params.get("comment"),
            reason=request.query_params.get("reason", ""),
        )


def passkey_routes(kit: Kit, challenges: Challenges) -> list[BaseRoute]:
    pages = PasskeyPages(kit, challenges)
    return [
        Route("/passkeys", kit.gate(pages.passkeys_page), methods=["GET"]),
        Route("/passkeys/options", kit.gate(pages.registration_options, api=True), methods=["POST"]),
        Route("/passkeys/register", kit.gate(pages.register), methods=["POST"]),
        Route("/runs/{run_id}/sign", kit.gate(pages.sign_page), methods=["GET"]),
        Route(
            "/runs/{run_id}/{verb:str}/challenge", kit.gate(pages.sign_challenge, api=True), methods=["POST"]
        ),
    ]


def sign_page_url(run_id: str, verb: str, comment: str | None, reason: str) -> str:
    """Where a decision that needs the person's passkey is sent."""
    query = f"verb={verb}&reason={quote(reason)}" + (f"&comment={quote(comment)}" if comment else "")
    return f"/runs/{quote(run_id)}/sign?{query}"
