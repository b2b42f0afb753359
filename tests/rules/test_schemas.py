"""The generated validators are in step with the schemas they come from."""

from __future__ import annotations

import pytest

from handrail.rules.schemas import (
    GENERATED,
    TARGETS,
    check_schema,
    check_workflow,
    generated_code,
    schema_digest,
)


@pytest.mark.parametrize("filename", sorted(TARGETS))
def test_generated_validator_is_up_to_date(filename: str) -> None:
    # what matters is the schema it was made from; the code itself differs between
    # versions of fastjsonschema, so it is compared only with the version that wrote it
    import fastjsonschema

    current = (GENERATED / filename).read_text(encoding="utf-8")
    assert f"# {schema_digest(TARGETS[filename])}\n" in current, "run `python -m handrail.rules.schemas`"
    if f'VERSION = "{fastjsonschema.VERSION}"' in current:
        assert current == generated_code(TARGETS[filename]), "run `python -m handrail.rules.schemas`"


def test_the_declared_fastjsonschema_bound_allows_no_version_the_generated_code_cannot_import() -> None:
    # the generated validators import JsonSchemaValuesException, new in fastjsonschema 2.22
    import re
    import tomllib

    from tests.conftest import ROOT

    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    bound = next(d for d in project["project"]["dependencies"] if d.startswith("fastjsonschema"))
    assert re.fullmatch(r"fastjsonschema>=2\.(2[2-9]|[3-9]\d)(\.\d+)?", bound), bound
    code = (GENERATED / "workflow_validator.py").read_text("utf-8")
    assert "JsonSchemaValuesException" in code


def test_numeric_keywords_in_rule_schemas_are_checked_without_crashing() -> None:
    assert check_schema({"type": "string", "minLength": 1, "maximum": 3}) is None
    assert check_schema({"minLength": -1}) == ("/minLength", "must be bigger than or equal to 0")


def test_the_workflow_validator_accepts_a_minimal_workflow_and_rejects_garbage() -> None:
    minimal = {
        "id": "abc",
        "name": "n",
        "description": "d",
        "version": "1.0.0",
        "steps": [{"id": "one", "title": "t", "prompt": "p"}],
    }
    assert check_workflow(minimal) is True
    assert check_workflow({"id": "abc"}) is False
    assert check_workflow([1, 2]) is False
