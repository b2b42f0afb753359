"""The kernel: the types every layer shares (the workflow model, a run's records, the
error tree, the codec, limits and budgets, who asks and the approvals' values). It
imports nothing of handrail above it."""
