"""The single sign-on options of `handrail serve` (docs/team.md, "Single sign-on"), and
the OpenID provider they name."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from handrail.settings import settings


def add_oidc_options(serve: Any) -> None:
    group = serve.add_argument_group("single sign-on (docs/team.md; the secret: HANDRAIL_OIDC_CLIENT_SECRET)")
    group.add_argument(
        "--oidc-issuer", metavar="URL", help="the team's OpenID provider (default $HANDRAIL_OIDC_ISSUER)"
    )
    group.add_argument("--oidc-client-id", metavar="ID", help="handrail's client id at the provider")
    group.add_argument(
        "--oidc-audience",
        metavar="URL",
        help="the audience /mcp's bearer JWTs must name (default: the public URL's /mcp)",
    )
    group.add_argument(
        "--oidc-roles",
        action="append",
        metavar="ROLE=GROUP",
        help="members of the provider's GROUP hold handrail's ROLE, e.g. lead=handrail-leads (repeatable)",
    )


def provider_of(args: argparse.Namespace, sock: Any) -> Any:
    """The OpenID provider the settings name, None without one, False (said on stderr,
    `sock` closed) when they cannot be used."""
    found = _provider(args, sock.getsockname()[1])
    if found is False:
        sock.close()
    return found


def _provider(args: argparse.Namespace, port: int) -> Any:
    chosen = settings(args)
    if not chosen.oidc_issuer:
        return None
    from handrail.service.identity_provider import Provider, parse_roles  # lazy: only with a provider

    said = f"handrail {args.command}:"
    if not chosen.oidc_issuer.lower().startswith(("https://", "http://")) or not chosen.oidc_client_id:
        print(f"{said} --oidc-issuer needs an http(s) URL and --oidc-client-id", file=sys.stderr)
        return False
    try:
        groups = parse_roles(chosen.oidc_roles)
    except ValueError as exc:
        print(f"{said} {exc}", file=sys.stderr)
        return False
    public = chosen.public_url.rstrip("/") or f"http://{args.host}:{port}"
    return Provider(
        issuer=chosen.oidc_issuer,
        client_id=chosen.oidc_client_id,
        client_secret=chosen.oidc_client_secret,
        audience=chosen.oidc_audience or public + "/mcp",
        groups=groups,
        public_url=chosen.public_url,
    )
