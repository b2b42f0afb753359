"""How handrail runs the `git` program, for checks and for git sources alike.

git runs programs that its configuration names: hooks, filters, textconv, an
external diff, an fsmonitor, a credential helper, an ssh command, a pager. None of
those may come from a repository handrail looks at, from the user's git configuration,
or from the system's. So git gets an environment made here, not the server's: PATH, a
HOME that is an empty folder of its own, the C locale, no system or global
configuration, no system attributes, no prompt, and never a `HANDRAIL_*` variable.
The repository's own `.git/config` still applies; the callers deal with it (checks
never let git read it where it could run something, git sources write it themselves).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
from collections.abc import Mapping

# what a caller may add to the minimal environment, from the server's (the operator's)
SSH_VARIABLES = ("SSH_AUTH_SOCK", "GIT_SSH_COMMAND")
NETWORK_VARIABLES = (
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
)

# given on every git command line: they outrank any configuration file git reads
SAFE_CONFIG = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.untrackedCache=false",
    "credential.helper=",
    "core.askPass=",
    "core.pager=cat",
    "submodule.recurse=false",
    "protocol.allow=never",
)

_home_lock = threading.Lock()
_home: str | None = None


def empty_home() -> str:
    """A folder of our own, empty, that git may take for the user's home."""
    global _home
    with _home_lock:
        if _home is None or not os.path.isdir(_home):
            _home = tempfile.mkdtemp(prefix="handrail-git-home-")
            atexit.register(shutil.rmtree, _home, True)
        return _home


def git_environment(
    protocols: str = "",
    *,
    passed: tuple[str, ...] = (),
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The whole environment git runs with. `protocols`: the transports git may use
    (`file:https`; empty: none at all). `passed`: variables taken from the server's
    environment when set there (never a `HANDRAIL_*` one)."""
    source = os.environ if environ is None else environ
    home = empty_home()
    env = {
        "PATH": source.get("PATH", os.defpath),
        "HOME": home,
        "XDG_CONFIG_HOME": os.path.join(home, ".config"),
        "LANG": "C",
        "LC_ALL": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_ATTR_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "",
        "SSH_ASKPASS": "",
        "GIT_PAGER": "cat",
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_NO_LAZY_FETCH": "1",
        # listed transports only; an empty list allows none (so never ext::, which runs a command)
        "GIT_ALLOW_PROTOCOL": protocols,
    }
    if "TMPDIR" in source:
        env["TMPDIR"] = source["TMPDIR"]
    for name in passed:
        if name in source and not name.startswith("HANDRAIL_"):
            env[name] = source[name]
    return env


def git_argv(*args: str) -> list[str]:
    """`git`, the settings no configuration may override, then `args`."""
    argv = ["git"]
    for setting in SAFE_CONFIG:
        argv += ["-c", setting]
    return [*argv, *args]
