"""The tools' meaning: their published definitions, argument checks and limits,
calling the engine and the runs, and the results' encoding."""
