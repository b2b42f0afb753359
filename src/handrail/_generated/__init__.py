"""Generated validators; see handrail.schemas."""
