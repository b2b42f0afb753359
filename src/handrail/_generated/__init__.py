"""Generated validators; see handrail.rules.schemas."""
