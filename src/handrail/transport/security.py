"""Who may talk to the HTTP transport, checked before the protocol sees a request:
Host and Origin against allow-lists (DNS rebinding: 403), and, when tokens are set,
a bearer token that names the person asking (401). A refusal is a `Refused`: the
one JSON-RPC error type, with the HTTP status (and headers) it goes out with."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from starlette.datastructures import Headers

from handrail.dashboard.forwarded import Network, public, same_origin, trusted
from handrail.model.errors import SERVER_ERROR, RpcError
from handrail.service.identity_provider import WithProvider
from handrail.service.people import PERSON, People, bearer

LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]", "::1")


class Refused(RpcError):
    """A JSON-RPC error the HTTP transport answers with `status` (not 200)."""

    def __init__(
        self,
        status: int,
        code: int,
        message: str,
        data: Any = None,
        *,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(code, message, data)
        self.status = status
        self.headers = headers or {}


def host_name(value: str) -> str:
    """`example.com:8080` -> `example.com`; `[::1]:80` -> `[::1]`. Anything after the
    host but a `:port` of digits is kept, so `[::1]evil.com` matches no allowed host."""
    if value.startswith("["):
        host, _, rest = value.partition("]")
        if rest == "" or (rest.startswith(":") and rest[1:].isdigit()):
            return host + "]"
        return value
    if value.count(":") == 1:
        host, _, port = value.partition(":")
        return host if port.isdigit() else value
    return value


@dataclass
class Guard:
    allowed_hosts: set[str] = field(default_factory=lambda: set(LOCAL_HOSTS))
    allowed_origins: set[str] = field(default_factory=set)  # beyond http(s)://<allowed host>[:port]
    people: People | WithProvider | None = None  # None: no token asked for
    proxies: frozenset[Network] = frozenset()  # --trust-proxy: whose forwarded origin counts
    resource_metadata: str = ""  # with an OpenID provider: where /mcp's OAuth metadata is

    def origin_allowed(self, origin: str) -> bool:
        if origin in self.allowed_origins:
            return True
        parts = urlsplit(origin)
        return parts.scheme in ("http", "https") and host_name(parts.netloc) in self.allowed_hosts

    def forwarded_to(self, origin: str, headers: Headers, peer: str | None) -> bool:
        """Whether a trusted proxy says the browser sent this request to `origin`."""
        return trusted(peer, self.proxies) and same_origin(origin, public(headers, peer, self.proxies))

    def credential(self, headers: Headers) -> tuple[str, str] | None:
        """(person, scope) the request's bearer token names (None: no token, or one nobody holds)."""
        assert self.people is not None
        given = headers.getlist("authorization")
        token = bearer(given[0]) if len(given) == 1 else None
        return None if token is None else self.people.credential(token)

    def person(self, headers: Headers) -> str | None:
        found = self.credential(headers)
        return None if found is None else found[0]

    def check(self, headers: Headers, *, authenticate: bool = True, peer: str | None = None) -> str | None:
        """The person asking (None when no token is asked for, or not `authenticate`);
        raises Refused for a Host, Origin or token the server does not accept. `peer`: the
        address the connection comes from; a proxy of `proxies` may say the origin the
        browser used (dashboard/forwarded.py), and an Origin that names it is allowed."""
        hosts = headers.getlist("host")
        if len(hosts) != 1:  # a second Host could be the one a proxy or the app reads
            raise Refused(
                403, SERVER_ERROR, "Forbidden: exactly one Host header is required", {"hosts": len(hosts)}
            )
        host = host_name(hosts[0])
        if host not in self.allowed_hosts:
            # the operator who forgot --allow-host reads this in the client, so it says the fix
            message = f"Forbidden: Host `{host[:100]}` not allowed (a server allows it with --allow-host)"
            raise Refused(403, SERVER_ERROR, message, {"host": host})
        origins = headers.getlist("origin")
        if len(origins) > 1:
            raise Refused(
                403, SERVER_ERROR, "Forbidden: more than one Origin header", {"origins": len(origins)}
            )
        if (
            origins
            and not self.origin_allowed(origins[0])
            and not self.forwarded_to(origins[0], headers, peer)
        ):
            refused = origins[0][:100]
            message = f"Forbidden: Origin `{refused}` not allowed (a server allows it with --allow-origin)"
            raise Refused(403, SERVER_ERROR, message, {"origin": origins[0]})
        if not authenticate or self.people is None:
            return None
        found = self.credential(headers)
        if found is not None and found[1] == PERSON:
            raise Refused(
                403,
                SERVER_ERROR,
                "Forbidden: this token's scope is `person`: it signs in to the dashboard and "
                "approves, but an MCP client needs a token of scope `agent` or `both`",
                {"scope": PERSON},
            )
        asking = found[0] if found is not None else None
        if asking is None:
            given = headers.getlist("authorization")
            challenge = 'Bearer realm="handrail"'
            if self.resource_metadata:  # MCP authorization: how a client finds the provider
                challenge += f', resource_metadata="{self.resource_metadata}"'
            if not given:
                why = "a bearer token is required"
            elif len(given) > 1:
                why = "send one Authorization header, not several"
            elif bearer(given[0]) is None:
                why = "the Authorization header must read `Bearer <token>`"
            else:  # RFC 6750: a token was sent, and it is not one the server knows
                why = "the bearer token is not recognised"
                challenge += ', error="invalid_token"'
            raise Refused(401, SERVER_ERROR, f"Unauthorized: {why}", headers={"WWW-Authenticate": challenge})
        return asking
