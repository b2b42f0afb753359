"""The web dashboard: runs, their timelines, approvals and the workflow catalog,
served beside /mcp by `handrail serve` and alone by `handrail dashboard`.

Server-rendered HTML (Jinja2, autoescaped) with a little JavaScript served as files,
so that the Content-Security-Policy can forbid inline script. Outputs are untrusted
text: Markdown is rendered with raw HTML disabled. See SECURITY.md.
"""

from handrail.dashboard.app import dashboard_routes

__all__ = ["dashboard_routes"]
