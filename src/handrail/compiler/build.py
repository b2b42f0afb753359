"""Semantic checks and construction of the compiled workflow.

Runs on documents that satisfy the schema, so shapes are known; every problem is
reported, none stops the others from being found. The steps and loop bodies are found
by `steps`, the names conditions and templates use checked by `names`, loops compiled
by `loops`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from handrail.compiler.approvals import compile_approval
from handrail.compiler.checks import Commands, compile_checks
from handrail.compiler.loops import compile_loop
from handrail.compiler.names import Names
from handrail.compiler.source import KEY
from handrail.compiler.steps import Entry, Steps, function_names
from handrail.expr import ParsedConditions, Reporter, compile_condition, did_you_mean
from handrail.model import budget
from handrail.model.codec import encode_document
from handrail.model.step_policy import Policy
from handrail.model.workflow import (
    AnyStep,
    Condition,
    Rule,
    Step,
    StepCheck,
    SubWorkflow,
    Workflow,
    WorkflowOrigin,
)
from handrail.rules.closures import compile_criteria, criteria_text
from handrail.rules.policy import compile_defaults, step_policy

# WorkRail convention: metaGuidance may define a function as a line "name(): what it does"
GUIDANCE_FUNCTION = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\(\)")


@dataclass
class Build:
    """What compiling one workflow's steps shares: its steps, the names they use, and
    each condition parsed once."""

    report: Reporter
    steps: Steps
    names: Names
    parsed: ParsedConditions
    document: Mapping[str, Any]
    commands: Commands | None
    defaults: Policy | None  # the workflow's own allow and deny lists, its steps' default
    workflow_functions: tuple[str, ...]

    def check_functions(self, entry: Entry, workflow_functions: tuple[str, ...]) -> tuple[str, ...]:
        raw = entry.raw
        visible = workflow_functions + entry.functions + function_names(raw.get("functionDefinitions"))
        refs = tuple(raw.get("functionReferences", ()))
        for index, ref in enumerate(refs):
            name = ref[:-2] if ref.endswith("()") else ref
            if name not in visible:
                self.report.error(
                    "H206",
                    f"function `{name}` is not defined",
                    f"{entry.pointer}/functionReferences/{index}",
                    did_you_mean(name, list(visible)) or "define it in functionDefinitions",
                )
        return refs

    def condition(self, raw: Mapping[str, Any], key: str, at: str, what: str) -> Condition | None:
        """The compiled condition; None when there is none, or when it has errors (reported)."""
        if key not in raw:
            return None
        watch = self.report.watch()
        compiled = compile_condition(raw[key], f"{at}/{key}", watch, what=what, parsed=self.parsed)
        return None if watch.failed else compiled

    def confirmation(self, raw: Mapping[str, Any], at: str) -> bool | Condition:
        value = raw.get("requireConfirmation", False)
        if isinstance(value, bool):
            return value
        return compile_condition(
            value,
            f"{at}/requireConfirmation",
            self.report,
            what="confirmation condition",
            parsed=self.parsed,
        )

    def node(self, sid: str) -> AnyStep:
        """Step `sid` compiled: a loop, or a step with its rules, checks and policy."""
        steps, names, report = self.steps, self.names, self.report
        entry = steps.entries[sid]
        raw, at = entry.raw, entry.pointer
        for key in ("title", "prompt", "agentRole"):
            names.check_templates(raw.get(key), f"{at}/{key}")
        for index, line in enumerate(raw.get("guidance", ()) or ()):
            names.check_templates(line, f"{at}/guidance/{index}")
        run_condition = self.condition(raw, "runCondition", at, "runCondition")
        if run_condition is not None and run_condition.constant is False:
            report.warning(
                "H203",
                f"step `{sid}` can never run",
                f"{at}/runCondition",
                "its runCondition never holds",
            )
        confirmation = self.confirmation(raw, at)
        if raw.get("type") == "loop":
            return compile_loop(self, entry, sid, run_condition, confirmation)
        return self.step(entry, sid, run_condition, confirmation)

    def step(
        self, entry: Entry, sid: str, run_condition: Condition | None, confirmation: bool | Condition
    ) -> Step:
        document, report = self.document, self.report
        raw, at = entry.raw, entry.pointer
        refs = self.check_functions(entry, self.workflow_functions)
        rules: tuple[Rule, ...] = ()
        if "validationCriteria" in raw:
            rules = compile_criteria(
                raw["validationCriteria"], f"{at}/validationCriteria", report, parsed=self.parsed
            )
        checks: tuple[StepCheck, ...] = ()
        if "checks" in raw:
            checks = compile_checks(
                raw["checks"], f"{at}/checks", report, commands=self.commands, parsed=self.parsed
            )
        sub = _subworkflow(raw, sid)
        return Step(
            id=sid,
            title=raw.get("title") or (f"Run workflow {sub.workflow_id}" if sub is not None else ""),
            prompt=raw.get("prompt") or (_SUB_PROMPT.format(sub.workflow_id) if sub is not None else ""),
            agent_role=raw.get("agentRole"),
            guidance=tuple(raw.get("guidance", ())),
            model_hint=raw.get("modelHint"),
            ask_for_files=bool(raw.get("askForFiles", False)),
            confirmation=confirmation,
            run_condition=run_condition,
            rules=rules,
            criteria=tuple(criteria_text(rule) for rule in rules),
            function_references=refs,
            loop=self.steps.owner.get(sid),
            pointer=at,
            checks=checks,
            policy=step_policy(raw, at, self.defaults, report),
            approval=compile_approval(
                raw,
                at,
                bool(document.get("separateApprover", False)),
                confirmation,
                report,
                document.get("approval") if isinstance(document.get("approval"), dict) else None,
            ),
            subworkflow=sub,
        )


def build_workflow(
    document: Mapping[str, Any],
    revision: str,
    file: str,
    report: Reporter,
    *,
    commands: Commands | None = None,
    origin: WorkflowOrigin = "submitted",
) -> Workflow:
    steps = Steps(report)
    steps.collect(document["steps"], "/steps", None, ())
    steps.link_bodies()
    parsed = ParsedConditions()  # each condition parsed once
    names = Names(document, report, steps.entries, parsed)
    names.gather_variables()
    names.check_condition_variables()
    workflow_functions = function_names(document.get("functionDefinitions")) + tuple(
        m.group(1) for line in document.get("metaGuidance", ()) if (m := GUIDANCE_FUNCTION.match(line))
    )
    defaults = compile_defaults(document, report)
    b = Build(report, steps, names, parsed, document, commands, defaults, workflow_functions)
    nodes: dict[str, AnyStep] = {}
    for sid in steps.order:
        budget.check()  # a workflow a client sends is compiled within its request's budget
        nodes[sid] = b.node(sid)
    sequence = tuple(
        sid for sid in steps.order if steps.entries[sid].parent is None and sid not in steps.owner
    )
    _check_file_name(document["id"], file, report)
    try:
        source = encode_document(document)
    except (RecursionError, ValueError):  # deeper than workflow_get could send
        report.error("H001", "the workflow is nested too deeply", "")
        source = b""
    return Workflow(
        id=document["id"],
        name=document["name"],
        description=document["description"],
        version=document["version"],
        category=document.get("category", "general"),
        model_hint=document.get("modelHint"),
        preconditions=tuple(document.get("preconditions", ())),
        clarification_prompts=tuple(document.get("clarificationPrompts", ())),
        meta_guidance=tuple(document.get("metaGuidance", ())),
        sequence=sequence,
        nodes=nodes,
        document=source,
        file=file,
        revision=revision,
        content_hash=hashlib.sha256(source).hexdigest(),
        origin=origin,
    )


def _check_file_name(workflow_id: str, file: str, report: Reporter) -> None:
    if file.startswith("<"):
        return
    name = file.replace("\\", "/").rsplit("/", 1)[-1]
    stem = name[:-5] if name.endswith(".json") else name
    if stem != workflow_id:
        report.warning(
            "H207",
            f"workflow id `{workflow_id}` differs from the file name `{name}`",
            "/id",
            f"rename the file to `{workflow_id}.json`",
            None,
        )


__all__ = ["KEY", "build_workflow"]


_SUB_PROMPT = (
    "This step runs workflow `{}` as a child run: start it and follow it to its end; in a run "
    "the server starts the child for you."
)


def _subworkflow(raw: Mapping[str, Any], sid: str) -> SubWorkflow | None:
    """A step's sub-workflow (`workflow`, `context`, `as`), when it names one."""
    workflow_id = raw.get("workflow")
    if not isinstance(workflow_id, str):
        return None
    context = raw.get("context")
    return SubWorkflow(
        workflow_id, dict(context) if isinstance(context, Mapping) else {}, str(raw.get("as", sid))
    )
