"""`handrail drive`: handrail runs the agents. A run is started (or resumed), and for
each of its steps a harness is started headless to do that step and submit it itself
through `workflow_continue`, held by the gate; the driver then reads the run and moves
on, tries again with the issues, waits for a person, or stops (docs/drive.md).

`driver` holds the loop, `claude_code` how Claude Code is started and what its report
says it spent, `report` what is written at the end."""
