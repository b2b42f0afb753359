"""The settings the person who starts handrail gives: one object, from the command line
and the environment.

Every `HANDRAIL_*` and `WORKFLOW_*` variable handrail reads is read here, and listed
in `VARIABLES` (docs/configuration.md shows the same table). A value given on the
command line wins over the environment's, which wins over the default. Yes/no
variables take one set of words, in any case, spaces around ignored: `YES_WORDS` and
`NO_WORDS`; an empty or unknown word leaves the default.
"""

import os
from collections.abc import Mapping
from typing import Any, NamedTuple

YES_WORDS = frozenset({"1", "true", "yes", "on"})
NO_WORDS = frozenset({"0", "false", "no", "off"})

# every variable handrail reads, and what it sets (the command-line option that wins over it)
VARIABLES: dict[str, str] = {
    "HANDRAIL_HOME": "the folder of handrail's own files (default `~/.handrail`)",
    "HANDRAIL_DATABASE_URL": "the run store (`--database`; default SQLite at `$HANDRAIL_HOME/handrail.db`)",
    "HANDRAIL_TOKEN": "the token an HTTP client must send to `handrail serve`",
    "HANDRAIL_TOKENS_FILE": "the people file of `handrail serve` (`--tokens`)",
    "HANDRAIL_ALLOW_COMMANDS": "yes/no: command checks may run programs (`--allow-commands`; default no)",
    "HANDRAIL_COMMANDS": 'named commands, `test="pytest -q" lint="ruff check ."` (`--command` wins per name)',
    "HANDRAIL_RUNS_ONLY": "yes/no: offer only workflow_list and the run tools (`--runs-only`; default no)",
    "HANDRAIL_WORKFLOWS": "workflow folders or files, separated by `:` (`;` on Windows)",
    "WORKFLOW_STORAGE_PATH": "workflow folders or files, as HANDRAIL_WORKFLOWS (WorkRail's name)",
    "WORKFLOW_INCLUDE_BUNDLED": "yes/no: serve the bundled workflows (`--no-bundled`; default yes)",
    "HANDRAIL_SIGNING_KEY": "the Ed25519 key file that signs exported run records (`--signing-key`)",
    "WORKFLOW_GIT_REPOS": "git repositories of workflows, separated by commas (`git+` optional)",
    "HANDRAIL_NOTIFY": "run notifications' webhook receivers, separated by spaces (`--notify`)",
    "HANDRAIL_NOTIFY_SECRET": "the key notifications are signed with (`--notify-secret`; default: unsigned)",
    "HANDRAIL_PUBLIC_URL": "the dashboard's address in notifications' links (`--public-url`)",
    "HANDRAIL_METRICS_TOKEN": "the token a scraper sends for `/metrics` (`--metrics-token`)",
    "HANDRAIL_LEASE_SECONDS": "how long a claimed branch stays an agent's (`--lease-seconds`; default 300)",
    "HANDRAIL_OIDC_ISSUER": "the team's OpenID provider: people sign in through it (`--oidc-issuer`)",
    "HANDRAIL_OIDC_CLIENT_ID": "handrail's client id at that provider (`--oidc-client-id`)",
    "HANDRAIL_OIDC_CLIENT_SECRET": "the client secret there (no option: off the command line)",
    "HANDRAIL_OIDC_AUDIENCE": "the audience /mcp's JWTs must name (`--oidc-audience`; default its URL)",
    "HANDRAIL_OIDC_ROLES": "roles from the provider's groups: `lead=leads qa=testers` (`--oidc-roles` adds)",
    "OTEL_EXPORTER_OTLP_ENDPOINT": "where traces go (OTLP over HTTP); set, traces are on (`handrail[otel]`)",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "where traces go, for traces alone; set, it turns traces on",
    "OTEL_TRACES_EXPORTER": "`otlp` or `console` (stderr) turns traces on; `none` keeps them off",
}
NOTIFY_SECRET = "HANDRAIL_NOTIFY_SECRET"  # `handrail drive` passes it on to its agents' servers
PATH_VARIABLES = ("WORKFLOW_STORAGE_PATH", "HANDRAIL_WORKFLOWS")  # in increasing precedence


def yes_no(text: str | None, default: bool) -> bool:
    """A yes/no word as a bool: `default` when it is unset, empty or not a known word."""
    word = (text or "").strip().lower()
    if word in YES_WORDS:
        return True
    if word in NO_WORDS:
        return False
    return default


class Settings(NamedTuple):  # not a dataclass: the gate's hook reads it and loads no dataclasses
    home: str = ""  # HANDRAIL_HOME; empty: ~/.handrail
    database_url: str = ""  # empty: SQLite under the home folder
    token: str = ""
    tokens_file: str = ""
    allow_commands: bool = False
    commands: str = ""  # HANDRAIL_COMMANDS as written; checks/config.py reads its entries
    runs_only: bool = False
    include_bundled: bool = True
    workflow_paths: tuple[tuple[str, str], ...] = ()  # (variable, path), in precedence order
    git_repos: tuple[str, ...] = ()
    signing_key: str = ""  # a PEM file; empty: records are exported unsigned
    notify: tuple[str, ...] = ()  # webhook receivers, as written (spec/notify.md)
    notify_secret: str = ""
    public_url: str = ""
    metrics_token: str = ""  # empty: /metrics asks for the tokens /mcp asks for
    traces: str = ""  # the OpenTelemetry exporter ("otlp", "console"); empty: no traces
    lease_seconds: float = 300.0  # a claimed branch's lease, renewed by each call of its holder
    oidc_issuer: str = ""  # empty: no OpenID provider
    oidc_client_id: str = ""
    oidc_client_secret: str = ""
    oidc_audience: str = ""  # empty: the server's own /mcp URL
    oidc_roles: tuple[str, ...] = ()  # ROLE=GROUP items (identity_provider.parse_roles)

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> "Settings":
        """The settings the environment gives (default os.environ) over the defaults."""
        env = os.environ if environ is None else environ
        default = cls()
        return cls(
            home=env.get("HANDRAIL_HOME", "").strip(),
            database_url=env.get("HANDRAIL_DATABASE_URL", ""),
            token=env.get("HANDRAIL_TOKEN", ""),
            tokens_file=env.get("HANDRAIL_TOKENS_FILE", ""),
            allow_commands=yes_no(env.get("HANDRAIL_ALLOW_COMMANDS"), default.allow_commands),
            commands=env.get("HANDRAIL_COMMANDS", ""),
            runs_only=yes_no(env.get("HANDRAIL_RUNS_ONLY"), default.runs_only),
            include_bundled=yes_no(env.get("WORKFLOW_INCLUDE_BUNDLED"), default.include_bundled),
            workflow_paths=tuple(
                (variable, part.strip())
                for variable in PATH_VARIABLES
                for part in env.get(variable, "").split(os.pathsep)
                if part.strip()
            ),
            git_repos=tuple(p.strip() for p in env.get("WORKFLOW_GIT_REPOS", "").split(",") if p.strip()),
            signing_key=env.get("HANDRAIL_SIGNING_KEY", ""),
            notify=tuple(env.get("HANDRAIL_NOTIFY", "").split()),  # a URL holds no whitespace
            notify_secret=env.get(NOTIFY_SECRET, ""),
            public_url=env.get("HANDRAIL_PUBLIC_URL", "").strip(),
            metrics_token=env.get("HANDRAIL_METRICS_TOKEN", ""),
            traces=_traces(env),
            lease_seconds=_seconds(env.get("HANDRAIL_LEASE_SECONDS"), default.lease_seconds),
            oidc_issuer=env.get("HANDRAIL_OIDC_ISSUER", "").strip(),
            oidc_client_id=env.get("HANDRAIL_OIDC_CLIENT_ID", "").strip(),
            oidc_client_secret=env.get("HANDRAIL_OIDC_CLIENT_SECRET", ""),
            oidc_audience=env.get("HANDRAIL_OIDC_AUDIENCE", "").strip(),
            oidc_roles=tuple(env.get("HANDRAIL_OIDC_ROLES", "").split()),
        )

    def with_options(self, args: Any) -> "Settings":
        """These settings with what the command line (an argparse namespace) gave on top:
        an option a command does not have, or that was not given, leaves them as they are."""
        given: dict[str, Any] = {}
        if getattr(args, "database", None):
            given["database_url"] = args.database
        if getattr(args, "tokens", None):
            given["tokens_file"] = args.tokens
        if getattr(args, "allow_commands", False):
            given["allow_commands"] = True
        if getattr(args, "runs_only", False):
            given["runs_only"] = True
        if getattr(args, "no_bundled", False):
            given["include_bundled"] = False
        if getattr(args, "signing_key", None):
            given["signing_key"] = args.signing_key
        if getattr(args, "notify", None):
            given["notify"] = tuple(args.notify)
        if getattr(args, "notify_secret", None):
            given["notify_secret"] = args.notify_secret
        if getattr(args, "public_url", None):
            given["public_url"] = args.public_url
        if getattr(args, "metrics_token", None):
            given["metrics_token"] = args.metrics_token
        if getattr(args, "lease_seconds", None):
            given["lease_seconds"] = args.lease_seconds
        for name in ("oidc_issuer", "oidc_client_id", "oidc_audience"):
            if getattr(args, name, None):
                given[name] = getattr(args, name)
        if getattr(args, "oidc_roles", None):
            given["oidc_roles"] = self.oidc_roles + tuple(args.oidc_roles)
        return self._replace(**given)


def _seconds(text: str | None, default: float) -> float:
    """A positive number of seconds; `default` when it is unset or not one."""
    try:
        value = float((text or "").strip())
    except ValueError:
        return default
    return value if 0 < value < float("inf") else default


def _traces(env: Mapping[str, str]) -> str:
    """The exporter OpenTelemetry's own variables ask for ("" when they ask for none)."""
    exporter = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter == "none":
        return ""
    if exporter:
        return exporter
    endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "")
    return "otlp" if endpoint.strip() else ""


def settings(args: Any = None, environ: Mapping[str, str] | None = None) -> "Settings":
    """The settings of the command line `args` (if any) over the environment's."""
    read = Settings.from_environment(environ)
    return read if args is None else read.with_options(args)
