"""`handrail walk`: play a workflow in the terminal, as an agent would.

For authors, to try a workflow before an agent does. Each step's composed guidance
is shown exactly as `workflow_next` composes it; the author types the step's
output, which `workflow_validate` checks. The client's side of the contract is
kept to the letter (spec/engine.md §3.1): after a step, `completedSteps` is the
result's `completedSteps` plus the step's id and `state` is the result's `state`;
after a blocked result, both are the result's own.

All input and output go through the streams given, so the walk is testable and
works with piped stdin: an output block ends at a line holding only `.` or at the
end of the input; a prompt answered by the end of the input stops the walk.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO

from handrail.engine import Guidance, LoopPosition, LoopView, NextResult, next_step, validate_output
from handrail.engine.next import loop_need
from handrail.model.errors import HandrailError
from handrail.model.workflow import Loop, Workflow

END_OF_OUTPUT = "."
QUIT_WORDS = {":q", ":quit"}
EXIT_COMPLETE, EXIT_STOPPED = 0, 1


class Stop(Exception):
    """The walk ends before the workflow does: the input ended, or the author quit."""


def parse_value(text: str) -> Any:
    """An answer as JSON when it parses as JSON, else as the string typed."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def set_path(context: dict[str, Any], path: str, value: Any) -> None:
    """Set a dotted path (`a.b.c`) in the context, creating objects on the way."""
    parts = path.split(".")
    target = context
    for part in parts[:-1]:
        child = target.get(part)
        if not isinstance(child, dict):
            child = target[part] = {}
        target = child
    target[parts[-1]] = value


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


@dataclass
class Walkthrough:
    workflow: Workflow
    input: TextIO
    output: TextIO
    context: dict[str, Any] = field(default_factory=dict)
    auto: bool = False
    echo: bool | None = None  # write what is read back out; default: when input is no terminal
    max_calls: int = 10_000
    completed: list[str] = field(default_factory=list)
    state: tuple[LoopPosition, ...] | None = None  # the running loops, from the last result
    steps_done: int = 0
    outputs_passed: int = 0  # outputs that met their step's rules
    outputs_let_through: int = 0  # outputs accepted anyway although they did not
    checks_not_run: int = 0  # the checks of the steps played: a run's server runs them, walk does not

    def __post_init__(self) -> None:
        if self.echo is None:
            try:
                self.echo = not self.input.isatty()
            except (AttributeError, ValueError):
                self.echo = True

    # ------------------------------------------------------------ output and input

    def say(self, text: str = "") -> None:
        self.output.write(text + "\n")

    def readline(self) -> str | None:
        self.output.flush()
        line = self.input.readline()
        if not line:
            return None
        return line.rstrip("\r\n")

    def ask(self, prompt: str) -> str:
        """One answer; raises Stop at the end of the input or on `:q`."""
        self.output.write(prompt)
        answer = self.readline()
        if answer is None:
            self.say()
            raise Stop("the input ended")
        if self.echo:
            self.say(answer)
        if answer.strip() in QUIT_WORDS:
            raise Stop("quit")
        return answer.strip()

    def read_block(self) -> str:
        """Lines up to one holding only `.`, or to the end of the input."""
        self.say(f"Your output (end it with a line holding only `{END_OF_OUTPUT}`, or end the input):")
        lines: list[str] = []
        while True:
            line = self.readline()
            if line is None:
                if not lines:
                    raise Stop("the input ended")
                break
            if line.strip() == END_OF_OUTPUT:
                break
            if not lines and line.strip() in QUIT_WORDS:
                raise Stop("quit")
            lines.append(line)
            if self.echo:
                self.say("| " + line)
        return "\n".join(lines)

    def choose(self, prompt: str, options: str, default: str) -> str:
        """A one-letter choice among `options` (lower case); blank picks `default`."""
        while True:
            answer = self.ask(prompt).lower()
            if not answer:
                return default
            if answer[0] in options:
                return answer[0]
            self.say(f"Please answer one of: {', '.join(options)}.")

    # ------------------------------------------------------------ the walk

    def run(self) -> int:
        w = self.workflow
        self.say(f"Walking `{w.id}` {w.version}: {w.name}")
        if self.auto:
            self.say("(--auto: every output is canned, every missing value picked for you)")
        else:
            self.say(
                "Type each step's output as an agent would. "
                f"End an output with a line holding only `{END_OF_OUTPUT}`; `:q` quits."
            )
        try:
            return self.walk()
        except KeyboardInterrupt:
            return self.stopped("interrupted")
        except Stop as stop:
            return self.stopped(str(stop))
        except HandrailError as exc:
            self.say(f"\nThe engine refused the call: {exc.message} {_json(exc.data) if exc.data else ''}")
            return EXIT_STOPPED

    def stopped(self, why: str) -> int:
        self.say(f"\nStopped ({why}) with {self.steps_done} step(s) done; the workflow is not complete.")
        return EXIT_STOPPED

    def call(self) -> NextResult:
        return next_step(self.workflow, self.completed, self.context, state=self.state)

    def walk(self) -> int:
        for _ in range(self.max_calls):
            result = self.call()
            if result.is_complete:
                self.say()
                self.say(result.guidance.prompt)
                self.say(f"{self.steps_done} step(s) done.")
                self.say(self.what_was_checked())
                return EXIT_COMPLETE
            step = result.step
            if step is None:
                # blocked: send back the result's own completedSteps and state (§3.1)
                self.completed, self.state = list(result.completed_steps), result.loops
                self.fill_missing(result.guidance)
                continue
            self.play(result)
            self.completed = [*result.completed_steps, step.id]
            self.state = result.loops
        raise Stop(f"more than {self.max_calls} calls to workflow_next")

    def play(self, result: NextResult) -> None:
        step, guidance = result.step, result.guidance
        assert step is not None  # only a result with a step is played
        where = ""
        loop = result.loop
        if loop is not None:
            where = f" (loop `{loop.id}`, iteration {loop.iteration})"
        self.say()
        self.say(f"--- step {self.steps_done + 1}: {step.id}{where} ---")
        self.say(guidance.prompt)
        extras = []
        if step.run_condition:
            extras.append(f"Offered because its runCondition holds: {step.run_condition}")
        if guidance.model_hint:
            extras.append(f"Model hint: {guidance.model_hint}")
        if step.ask_for_files:
            extras.append("This step asks for files.")
        if step.function_references:
            extras.append("Functions: " + ", ".join(step.function_references))
        if step.checks:
            self.checks_not_run += len(step.checks)
            extras.append(f"walk does not run this step's {len(step.checks)} check(s); a run's server does.")
        if extras:
            self.say("\n" + "\n".join(extras))
        self.say()
        while True:
            output = self.produce(step.id)
            # what the step sets comes before validation: rules may read it (§2.3)
            self.offer_context()
            scope = {**self.context, **self.loop_variables(loop)}
            if not self.accepted(step.id, output, scope):
                continue
            if guidance.requires_confirmation and not self.confirmed():
                continue
            break
        self.steps_done += 1

    def what_was_checked(self) -> str:
        """What the walk checked, and what it did not: it holds outputs to their steps'
        rules, but never runs a step's checks (commands, files, git)."""
        outputs = f"{self.outputs_passed} output(s) met their step's rules"
        if self.outputs_let_through:
            outputs += f", {self.outputs_let_through} did not and were accepted anyway"
        if self.checks_not_run:
            checks = (
                f"no checks ran: the {self.checks_not_run} check(s) of the steps walked run only "
                "in a run (workflow_start), on the server"
            )
        else:
            checks = "no step walked has checks"
        return f"{outputs}; {checks}."

    def loop_variables(self, loop: LoopView | None) -> dict[str, Any]:
        """The innermost loop's variables, which validation sees only when sent (§2.3)."""
        if loop is None:
            return {}
        node = self.workflow.nodes.get(loop.id)
        if not isinstance(node, Loop):
            return {}
        names = (node.iteration_var, node.index_var, node.item_var)
        # as a client sees them: a loop variable named like a field of `loop` replaces it
        shown = {"id": loop.id, "title": loop.title, "iteration": loop.iteration, **loop.variables}
        return {name: shown[name] for name in names if name in shown}

    def produce(self, step_id: str) -> str:
        if self.auto:
            output = f"(auto) A canned output for step `{step_id}`: nothing was done, run or checked."
            self.say(f"| {output}")
            return output
        return self.read_block()

    def accepted(self, step_id: str, output: str, scope: Mapping[str, Any]) -> bool:
        verdict = validate_output(self.workflow, step_id, output, scope)
        if verdict.valid:
            self.say("Valid.")
            self.outputs_passed += 1
            return True
        self.say("The output does not pass:")
        for issue in verdict.issues:
            self.say(f"  - {issue}")
        if verdict.suggestions:
            self.say("Suggestions:")
            for suggestion in verdict.suggestions:
                self.say(f"  - {suggestion}")
        if self.auto:
            self.say("(--auto: accepted anyway)")
            self.outputs_let_through += 1
            return True
        choice = self.choose("[r]etry, [a]ccept anyway, or [q]uit? [r] ", "raq", "r")
        if choice == "q":
            raise Stop("quit")
        self.outputs_let_through += choice == "a"
        return choice == "a"

    def confirmed(self) -> bool:
        """The step asks for the user's confirmation before the workflow goes on."""
        self.say("This step asks for the user's confirmation before going on.")
        if self.auto:
            self.say("(--auto: confirmed)")
            return True
        choice = self.choose("Confirm? [y]es, [r]edo the step, or [q]uit [y] ", "yrnq", "y")
        if choice == "q":
            raise Stop("quit")
        return choice == "y"

    def offer_context(self) -> None:
        """Let the author set context variables, as a step may tell the agent to."""
        if self.auto:
            return
        self.say("Set what this step set in the context: `name = value` (JSON, else text) or a JSON")
        self.say("object; a blank line goes on to check the output.")
        while True:
            line = self.readline_or_blank("context> ")
            if not line or line == END_OF_OUTPUT:
                return
            self.set_line(line)

    def readline_or_blank(self, prompt: str) -> str:
        """Like `ask`, but the end of the input reads as a blank line: the next read stops."""
        self.output.write(prompt)
        answer = self.readline()
        if answer is None:
            self.say()
            return ""
        if self.echo:
            self.say(answer)
        if answer.strip() in QUIT_WORDS:
            raise Stop("quit")
        return answer.strip()

    def set_line(self, line: str) -> None:
        if line.startswith("{"):
            value = parse_value(line)
            if isinstance(value, dict):
                for name, item in value.items():
                    self.set_value(name, item)
                return
            self.say("That is not a JSON object; write `name = value`.")
            return
        name, sep, text = line.partition("=")
        if not sep or not name.strip():
            self.say('Write `name = value`, e.g. `taskSize = "small"` or `planParts = [1, 2]`.')
            return
        self.set_value(name.strip(), parse_value(text.strip()))

    def set_value(self, name: str, value: Any) -> None:
        set_path(self.context, name, value)
        self.say(f"  context.{name} = {_json(value)}")

    # ------------------------------------------------------------ a blocked workflow

    def fill_missing(self, guidance: Guidance) -> None:
        if not guidance.missing:
            raise Stop("the workflow is blocked and names nothing to set")
        self.say()
        self.say("--- the workflow waits on the context ---")
        self.say(guidance.prompt)
        for entry in guidance.missing:
            name, wanted = entry.name, list(entry.wanted)
            self.say()
            hint = self.hint(name, wanted)
            if self.auto:
                value = self.pick(name, wanted)
                self.say(f"{name}{hint} = {_json(value)}  (--auto)")
                set_path(self.context, name, value)
                continue
            default = f" [{_json(wanted[0])}]" if wanted else ""
            while True:
                answer = self.ask(f"{name}{hint}{default} = ")
                if answer:
                    value = parse_value(answer)
                    break
                if wanted:
                    value = wanted[0]
                    break
            self.set_value(name, value)

    def loops_reading(self, name: str) -> tuple[list[Loop], list[Loop]]:
        loops = [n for n in self.workflow.nodes.values() if isinstance(n, Loop)]
        return [lp for lp in loops if lp.items == name], [lp for lp in loops if lp.count == name]

    def hint(self, name: str, wanted: list[Any]) -> str:
        lists, counts = self.loops_reading(name)
        if wanted:
            return f" (the conditions look for {', '.join(_json(v) for v in wanted)})"
        if lists:
            return f" ({loop_need('list', lists[0].id)})"
        if counts:
            return f" ({loop_need('number', counts[0].id)})"
        return ""

    def pick(self, name: str, wanted: list[Any]) -> Any:
        """--auto's answer: the first value looked for, else one that lets the loop run."""
        if wanted:
            return wanted[0]
        lists, counts = self.loops_reading(name)
        if lists:
            return ["first item", "second item"]
        if counts:
            return 2
        return True


def walk(
    workflow: Workflow,
    input: TextIO,
    output: TextIO,
    *,
    context: Mapping[str, Any] | None = None,
    auto: bool = False,
    echo: bool | None = None,
) -> int:
    """Play `workflow` through the streams; 0 when it completes, 1 when it stops."""
    return Walkthrough(workflow, input, output, dict(context or {}), auto=auto, echo=echo).run()
