"""`handrail drive`'s usage mistakes: exit 2, saying what is wrong, before any agent starts."""

from __future__ import annotations

import pytest

from handrail.cli import main


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["drive"], "give a WORKFLOW to start, or --resume RUN, not both"),
        (["drive", "coding-task", "--resume", "run_1"], "not both"),
        (["drive", "coding-task", "--context", "novalue"], "--context 'novalue' is not KEY=VALUE"),
        (
            ["drive", "coding-task", "--agent-command", "/bin/true", "--workspace", "/nonexistent"],
            "not a folder",
        ),
    ],
)
def test_a_usage_mistake_exits_2_naming_it(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert said in capsys.readouterr().err


def test_an_unknown_workflow_exits_2_before_an_agent_starts(
    tmp_path: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    database = f"sqlite:///{str(tmp_path).lstrip('/')}/runs.db"
    argv = ["drive", "no-such-workflow", "--agent-command", "/bin/false", "--database", database, "--json"]
    assert main([*argv, "--workspace", str(tmp_path)]) == 2
    out = capsys.readouterr().out
    assert '"status": "not started"' in out and "no-such-workflow" in out
