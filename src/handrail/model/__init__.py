"""The kernel: the types every layer shares (the workflow model, a run's records, the
error tree, the codec, limits and budgets). It imports nothing of handrail above it."""
