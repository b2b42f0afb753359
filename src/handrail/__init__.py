"""handrail: step-by-step workflows for AI agents, compiled once and served over MCP.

Library use, without MCP:

    from handrail import load_catalog, next_step, validate_output
    catalog = load_catalog("my-workflows/")
    workflow = catalog.snapshot().get("coding-task")
    result = next_step(workflow, completed_steps=[], context={})
"""

__version__ = "0.1.0"

from handrail.catalog import Catalog, load_catalog
from handrail.compiler import Compiled, compile_path, compile_text
from handrail.engine import next_step, validate_output

__all__ = [
    "Catalog",
    "Compiled",
    "__version__",
    "compile_path",
    "compile_text",
    "load_catalog",
    "next_step",
    "validate_output",
]
