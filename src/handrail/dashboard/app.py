"""The dashboard's routes, mounted beside /mcp (see handrail.transport.http.create_app).

Each part is a class of named handlers over one `Site` (site.py: the templates,
sessions, challenges and checks they share), and this table routes to them, as
starlette's routing does: `pages` (the HTML pages and their forms), `api` (the JSON
API), `signin` (signing in and out, the static files), `passkey_pages`."""

from __future__ import annotations

from typing import Any

from starlette.routing import BaseRoute, Route

from handrail.dashboard.api import Api
from handrail.dashboard.forwarded import Network
from handrail.dashboard.link_pages import link_routes
from handrail.dashboard.pages import Pages
from handrail.dashboard.passkey_pages import Kit, passkey_routes
from handrail.dashboard.sessions import Identifies
from handrail.dashboard.signin import SignIn, static
from handrail.dashboard.site import Refuse, Site, form
from handrail.service.identity_provider import Provider


def oidc_routes(site: Site, provider: Provider | None) -> list[BaseRoute]:
    if provider is None:
        return []
    from handrail.dashboard.oidc_signin import OidcSignIn  # Authlib: only with a provider

    flow = OidcSignIn(site, provider)
    return [
        Route("/signin/oidc", flow.start, methods=["GET"]),
        Route("/signin/oidc/callback", flow.callback, methods=["GET"]),
    ]


def dashboard_routes(
    service: Any,
    refuse: Refuse,
    people: Identifies | None,
    proxies: frozenset[Network] = frozenset(),
    provider: Provider | None = None,
) -> list[BaseRoute]:
    """`refuse(request, authenticate=False)`: the transport's Host and Origin checks;
    `people`: whom the tokens name (None: no token asked, one person's server);
    `proxies`: those whose forwarded origin counts (`--trust-proxy`);
    `provider`: the team's OpenID provider, which signs people in too (oidc_signin)."""
    site = Site(service, refuse, people, proxies, provider)
    pages, signin = Pages(site), SignIn(site)
    api = Api(site, pages)
    gate = site.gate
    kit = Kit(
        gate,
        site.page,
        form,
        site.same_origin,
        site.as_person,
        site.runs,
        shared=people is None,
        where=site.where,
    )
    return [
        *link_routes(kit),
        *passkey_routes(kit, site.challenges),
        Route("/", gate(pages.runs_page), methods=["GET"]),
        Route("/runs/{run_id}", gate(pages.run_page), methods=["GET"]),
        Route("/runs/{run_id}/{verb:str}", gate(pages.decide), methods=["POST"]),
        Route("/workflows", gate(pages.workflows_page), methods=["GET"]),
        Route("/insights", gate(pages.insights_page), methods=["GET"]),
        Route("/api/runs", gate(api.api_runs, api=True), methods=["GET"]),
        Route("/api/runs/{run_id}", gate(api.api_run, api=True), methods=["GET"]),
        Route("/api/runs/{run_id}/{verb:str}", api.api_decide, methods=["POST"]),
        Route("/signin", signin.signin, methods=["GET", "POST"]),
        Route("/signout", signin.signout, methods=["POST"]),
        *oidc_routes(site, provider),
        Route("/static/{name}", static, methods=["GET"]),
    ]
