"""`{{name}}` and `{{a.b}}` in prompts, filled from the context.

An unset name renders visibly as `[unset: name]`; anything that is not a plain
(dotted) name, such as `{{index + 1}}`, is left as written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from handrail.expr import MISSING, lookup
from handrail.model import budget

_TEMPLATE = re.compile(r"\{\{\s*([A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z0-9_$]+)*)\s*\}\}")


def _show(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    return json.dumps(value, ensure_ascii=False, default=str)


def render(text: str, context: Mapping[str, Any]) -> str:
    parts = _parts(text)  # a long prompt is searched for `{{` once, not on every call
    if len(parts) == 1:
        return text
    out = [parts[0]]
    for at in range(1, len(parts), 2):
        name = parts[at]
        value = lookup(context, name)
        shown = f"[unset: {name}]" if value is MISSING else _show(value)
        budget.render(len(shown))  # `{{x}}` 4,000 times over a large `x`: stop, do not build it
        out.append(shown)
        out.append(parts[at + 1])
    return "".join(out)


@lru_cache(maxsize=4096)
def _parts(text: str) -> tuple[str, ...]:
    """A step's text split once: literal, name, literal, name, ..., literal. Texts come
    from compiled workflows only, never from a client, and the cache is bounded."""
    return tuple(_TEMPLATE.split(text)) if "{{" in text else (text,)
