"""A run's gate digest: what the gate needs of the current step, worked out once by
the run layer when the step changes (start, advance, a loop's move, a branch) and
kept in the run row's `gate` column, under the row's seal (store/state_seal.py).

A hook then reads the row and decides (runs/gate_decision.py); it never parses the pinned
workflow. The digest holds the step's id, its place among the workflow's steps, its
`allow` and `deny` lists as written (the workflow's own where the step gives none),
and the workflow folders its baseline and protected paths take in (the folders the
run's tree was started with). JSON, keys sorted, so the same step gives the same text.
"""

import json
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from handrail.model.step_policy import Policy
from handrail.rules.policy import compile_rules, iter_steps

# the policies compiled, by the digest text they come from: a server's hooks read the same
# few rows again and again; a text names its rules exactly, so a step moved or a digest
# rewritten is another key, never a stale answer
POLICIES_KEPT = 64
FORM = 1  # the digest's own version: another is not read, the source is compiled instead
# the sha256 of the gate's baseline file (gate/anchor.py): written by the hook, carried
# over by the run layer when the step changes, and no part of what the events decide
ANCHOR = "baseline"


class Digest:
    """A gate digest as read back.
    Slotted, not a NamedTuple: every hook process makes this class, at a tenth of the cost."""

    __slots__ = (
        "folders",
        "number",
        "rules",
        "step_id",
        "steps",
    )

    def __init__(
        self,
        step_id: str | None,
        number: int | None,
        steps: int,
        rules: Mapping[str, Any] | None,
        folders: tuple[str, ...],
    ) -> None:
        self.step_id = step_id
        self.number = number  # 1-based place of the step among the workflow's steps
        self.steps = steps  # how many steps the workflow has
        self.rules = rules  # {"allow": [...] or None, "deny": [...]}; None: no rules at all
        self.folders = folders


def compiled(document: Mapping[str, Any], position: Mapping[str, Any], folders: Sequence[str]) -> str:
    """The digest of the step `position` names, from the workflow source `document`."""
    step = position.get("step")
    step_id = step.get("id") if isinstance(step, Mapping) and isinstance(step.get("id"), str) else None
    steps = list(iter_steps(document.get("steps")))
    ids = [raw.get("id") for raw in steps]
    raw = next((each for each in steps if step_id is not None and each.get("id") == step_id), {})
    body = {
        "form": FORM,
        "step": step_id,
        "number": ids.index(step_id) + 1 if step_id in ids else None,
        "count": len(ids),
        "rules": rules_of(document, raw) if step_id is not None else None,
        "folders": [f for f in folders if isinstance(f, str) and f],
    }
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def rules_of(document: Mapping[str, Any], step: Mapping[str, Any]) -> dict[str, Any] | None:
    """A step's lists as rules/policy.py's `step_policy` takes them: its own, each
    falling back on the workflow's; None when neither gives any."""
    if not any(name in source for source in (document, step) for name in ("allow", "deny")):
        return None
    allow = step["allow"] if "allow" in step else document.get("allow")
    deny = step["deny"] if "deny" in step else document.get("deny", [])
    return {"allow": allow, "deny": deny}


def read(text: str | None) -> Digest | None:
    """The digest in a row's `gate` column; None when there is none or it is not one
    this handrail writes (the caller then compiles the pinned source)."""
    body = _body(text)
    if body is None or body.get("form") != FORM:
        return None
    step, number, count = body.get("step"), body.get("number"), body.get("count")
    rules, folders = body.get("rules"), body.get("folders")
    if not (
        (step is None or isinstance(step, str))
        and (number is None or isinstance(number, int))
        and isinstance(count, int)
        and (rules is None or isinstance(rules, dict))
        and isinstance(folders, list)
    ):
        return None
    return Digest(step, number, count, rules, tuple(f for f in folders if isinstance(f, str)))


def folders_of(text: str | None) -> tuple[str, ...]:
    found = read(text)
    return found.folders if found is not None else ()


def anchor_of(text: str | None) -> str | None:
    """The baseline's hash the row keeps, if any."""
    body = _body(text)
    found = body.get(ANCHOR) if body is not None else None
    return found if isinstance(found, str) else None


def anchored(text: str | None, sha: str | None) -> str | None:
    """The digest `text` keeping `sha` as the baseline's hash; None when there is no
    digest to keep it in."""
    body = _body(text)
    if body is None:
        return None
    if sha is None:
        body.pop(ANCHOR, None)
    else:
        body[ANCHOR] = sha
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def unanchored(text: str | None) -> str | None:
    """The digest as the step gives it: what `runs verify` replays."""
    return anchored(text, None) if anchor_of(text) is not None else text


def carried(old: str | None, new: str) -> str:
    """A new step's digest keeping the baseline's hash of the old one: the file is the
    same until the hook takes the new step's baseline."""
    sha = anchor_of(old)
    return new if sha is None else anchored(new, sha) or new


def _body(text: str | None) -> dict[str, Any] | None:
    if not text:
        return None
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return body if isinstance(body, dict) else None


class _Silent:
    """The rules were reported when the workflow was compiled: nothing is said again."""

    def error(self, *args: Any, **kwargs: Any) -> None:
        pass

    def warning(self, *args: Any, **kwargs: Any) -> None:
        pass


@lru_cache(maxsize=POLICIES_KEPT)
def policy_of(text: str) -> Policy | None:
    """The compiled policy of the digest `text` (one `read` gives): compiled once a text.
    Policy and its rules are immutable, so one answer may serve every caller."""
    digest = read(text)
    return None if digest is None else policy(digest)


def policy(digest: Digest) -> Policy | None:
    """The step's compiled policy: its lists turned into matchers (a few globs)."""
    rules = digest.rules
    if rules is None:
        return None
    silent: Any = _Silent()
    allow = rules.get("allow")
    deny = rules.get("deny")
    return Policy(
        compile_rules(allow, "/allow", silent) if isinstance(allow, list) else None,
        compile_rules(deny, "/deny", silent) if isinstance(deny, list) else (),
    )
