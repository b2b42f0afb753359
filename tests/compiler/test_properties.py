"""Properties of the compiler: what it builds cannot change, and no input, however
broken, makes it raise; it always answers with a `Compiled`."""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from handrail.compiler import Compiled, compile_path, compile_text
from handrail.compiler.codes import CODES
from handrail.model.workflow import Loop, Step
from tests.conftest import CORPUS, corpus_files

pytestmark = pytest.mark.slow

BOUNDED = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
SPEC_CASES = Path(__file__).resolve().parents[2] / "spec" / "cases" / "compiler"

MINIMAL: dict[str, Any] = {
    "id": "props",
    "name": "Properties",
    "description": "A workflow for property tests.",
    "version": "1.0.0",
    "steps": [
        {
            "id": "first",
            "title": "First",
            "prompt": "Do {{thing}}.",
            "runCondition": {"var": "thing"},
            "guidance": ["Be brief."],
            "validationCriteria": [{"type": "contains", "value": "done", "message": "Say done"}],
        },
        {
            "id": "repeat",
            "type": "loop",
            "title": "Repeat",
            "loop": {"type": "for", "count": 2, "maxIterations": 3},
            "body": [{"id": "inner", "title": "Inner", "prompt": "Again."}],
        },
    ],
}


def _well_formed(result: Any) -> None:
    assert isinstance(result, Compiled)
    for d in result.diagnostics:
        assert d.code in CODES
        assert d.severity in ("error", "warning")
        assert d.line >= 1 and d.column >= 1
        assert d.pointer == "" or d.pointer.startswith("/")
    assert (result.workflow is None) == bool(result.errors)


# ---- immutability ---------------------------------------------------------------


def _compiled() -> Compiled:
    compiled = compile_text(json.dumps(MINIMAL), "props.json")
    assert compiled.errors == ()
    return compiled


def test_a_compiled_workflow_is_frozen() -> None:
    compiled = _compiled()
    workflow = compiled.workflow
    assert workflow is not None
    with pytest.raises(dataclasses.FrozenInstanceError):
        workflow.name = "changed"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        compiled.workflow = None  # type: ignore[misc]
    step = workflow.nodes["first"]
    assert isinstance(step, Step)
    with pytest.raises(dataclasses.FrozenInstanceError):
        step.prompt = "changed"  # type: ignore[misc]
    loop = workflow.nodes["repeat"]
    assert isinstance(loop, Loop)
    with pytest.raises(dataclasses.FrozenInstanceError):
        loop.max_iterations = 99  # type: ignore[misc]
    assert isinstance(step.guidance, tuple)
    assert isinstance(loop.body, tuple)
    assert isinstance(workflow.sequence, tuple)


def test_nodes_are_read_only() -> None:
    workflow = _compiled().workflow
    assert workflow is not None
    with pytest.raises(TypeError):
        workflow.nodes["new"] = workflow.nodes["first"]  # type: ignore[index]
    with pytest.raises(TypeError):
        del workflow.nodes["first"]  # type: ignore[attr-defined]
    assert not hasattr(workflow.nodes, "pop")


def test_mutating_the_source_afterwards_changes_nothing() -> None:
    source = copy.deepcopy(MINIMAL)
    compiled = compile_text(json.dumps(source), "props.json")
    workflow = compiled.workflow
    assert workflow is not None
    before = (workflow.name, workflow.sequence, dict(workflow.nodes), workflow.document)
    source["name"] = "Changed"
    source["steps"][0]["prompt"] = "Changed."
    source["steps"][0]["guidance"].append("More.")
    source["steps"].append({"id": "late", "title": "Late", "prompt": "Late."})
    source["steps"][1]["body"].clear()
    assert (workflow.name, workflow.sequence, dict(workflow.nodes), workflow.document) == before
    step = workflow.nodes["first"]
    assert isinstance(step, Step)
    assert step.prompt == "Do {{thing}}."
    assert step.guidance == ("Be brief.",)
    assert "late" not in workflow.nodes
    assert json.loads(workflow.document) == MINIMAL


def test_the_same_source_compiles_to_equal_but_separate_workflows() -> None:
    a, b = _compiled(), _compiled()
    assert a.workflow is not None and b.workflow is not None
    assert a.workflow.revision == b.workflow.revision
    assert a.workflow.nodes is not b.workflow.nodes


# ---- never raises -----------------------------------------------------------------

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()  # NaN and infinities included: json.dumps writes them, JSON has none
    | st.text(max_size=12)
    | st.sampled_from(["loop", "for", "forEach", "while", "until", "x == 1", "((", "f()", "1.0.0", "abc"])
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=5)
        | st.dictionaries(
            st.sampled_from(["id", "type", "steps", "body", "loop", "var", "and", "not", "count"])
            | st.text(max_size=8),
            children,
            max_size=6,
        )
    ),
    max_leaves=30,
)


@BOUNDED
@given(json_values)
def test_any_json_value_compiles_without_raising(value: Any) -> None:
    _well_formed(compile_text(json.dumps(value), "any.json"))


@BOUNDED
@given(json_values, st.sampled_from(["runCondition", "validationCriteria", "requireConfirmation", "body"]))
def test_any_json_value_inside_a_valid_workflow_compiles_without_raising(value: Any, key: str) -> None:
    document = copy.deepcopy(MINIMAL)
    target = document["steps"][1] if key == "body" else document["steps"][0]
    target[key] = value
    _well_formed(compile_text(json.dumps(document), "props.json"))


@BOUNDED
@given(st.binary(max_size=400))
def test_any_bytes_compile_without_raising(data: bytes) -> None:
    _well_formed(compile_text(data, "bytes.json"))


@BOUNDED
@given(st.text(max_size=400))
def test_any_text_compiles_without_raising(text: str) -> None:
    _well_formed(compile_text(text, "text.json"))


def _paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [at] if at else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*at, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*at, index))
    return found


CORPUS_DOCUMENTS = [json.loads(p.read_text("utf-8")) for p in corpus_files()] or [{}]  # [{}]: skipped below
NEW_NAMES = st.sampled_from(
    ["id", "body", "type", "loop", "steps", "runCondtion", "condition", "items", "count", "x", "prompt"]
)
Mutation = tuple[int, str, Any, str]


def _mutate(document: Any, mutations: list[Mutation]) -> Any:
    for index, operation, value, name in mutations:
        paths = _paths(document)
        if not paths:
            break
        path = paths[index % len(paths)]
        parent = document
        for part in path[:-1]:
            parent = parent[part]
        key = path[-1]
        if operation == "drop":
            del parent[key]
        elif operation == "rename" and isinstance(parent, dict):
            parent[name] = parent.pop(key)
        elif operation == "set":
            parent[key] = copy.deepcopy(value)  # never the same object twice in one document
        elif operation == "duplicate" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[key]))
    return document


mutations = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=10**6),
        st.sampled_from(["drop", "rename", "set", "duplicate"]),
        # a fresh copy per example: sampled_from hands out the same objects every time,
        # and a mutation that set one into a document, then wrote into it, changed the
        # samples of later examples (they grew into themselves: RecursionError)
        scalars | st.sampled_from([{}, [], {"var": "x"}, "missing-step", "phase-1"]).map(copy.deepcopy),
        NEW_NAMES,
    ),
    min_size=1,
    max_size=4,
)


@pytest.mark.corpus
@BOUNDED
@given(st.integers(min_value=0, max_value=len(CORPUS_DOCUMENTS) - 1), mutations)
def test_mutated_corpus_documents_compile_without_raising(which: int, changes: list[Mutation]) -> None:
    document = _mutate(copy.deepcopy(CORPUS_DOCUMENTS[which]), changes)
    _well_formed(compile_text(json.dumps(document, indent=2), "mutated.json"))


@pytest.mark.corpus
@BOUNDED
@given(st.integers(min_value=0, max_value=len(CORPUS_DOCUMENTS) - 1), st.data())
def test_truncated_corpus_files_are_a_syntax_error_where_the_text_stops(which: int, data: Any) -> None:
    text = json.dumps(CORPUS_DOCUMENTS[which], indent=2)
    cut = data.draw(st.integers(min_value=1, max_value=len(text) - 1))
    result = compile_text(text[:cut], "cut.json")
    _well_formed(result)
    assert [d.code for d in result.diagnostics] == ["H001"]
    d = result.diagnostics[0]
    lines = text[:cut].split("\n")
    assert (d.line, d.column) <= (len(lines), len(lines[-1]) + 1)


# ---- inputs that once made it raise ------------------------------------------------

Builder = Callable[[str], str]


def _loop_with(max_iterations: str, count: str = "2") -> str:
    return (
        '{"id": "props", "name": "n", "description": "d", "version": "1.0.0", "steps": ['
        '{"id": "work", "title": "t", "prompt": "p"},'
        '{"id": "again", "type": "loop", "title": "l", "body": "work",'
        f' "loop": {{"type": "for", "count": {count}, "maxIterations": {max_iterations}}}}}]}}'
    )


@pytest.mark.parametrize(
    "text",
    [
        _loop_with("NaN"),
        _loop_with("Infinity"),
        _loop_with("-Infinity"),
        _loop_with("1e400"),
        _loop_with("5", count="NaN"),
        '{"id": "props", "name": "n\\ud800", "description": "d", "version": "1.0.0", "steps": []}',
    ],
    ids=["nan", "infinity", "minus-infinity", "overflow", "nan-count", "lone-surrogate"],
)
def test_values_json_cannot_hold_are_syntax_errors_where_they_are(text: str) -> None:
    result = compile_text(text, "props.json")
    _well_formed(result)
    assert [d.code for d in result.diagnostics] == ["H001"]
    d = result.diagnostics[0]
    assert d.line == 1
    assert text[d.column - 1] in "NI1\\", text[d.column - 1 :]


def test_deeply_nested_documents_are_a_diagnostic() -> None:
    for depth in (300, 2000, 50_000):
        condition = '{"not": ' * depth + '{"var": "x"}' + "}" * depth
        text = (
            '{"id": "props", "name": "n", "description": "d", "version": "1.0.0", '
            f'"steps": [{{"id": "deep", "title": "t", "prompt": "Set x.", "runCondition": {condition}}}]}}'
        )
        result = compile_text(text, "props.json")
        _well_formed(result)
        assert [d.code for d in result.diagnostics] == ["H001"]
        assert "nested too deeply" in result.diagnostics[0].message


def test_a_byte_order_mark_is_ignored_in_text_as_in_bytes() -> None:
    text = json.dumps(MINIMAL)
    with_mark, without = compile_text("\ufeff" + text, "props.json"), compile_text(text, "props.json")
    assert with_mark.diagnostics == without.diagnostics == ()
    assert with_mark.workflow is not None and without.workflow is not None
    assert with_mark.workflow.revision == without.workflow.revision
    assert compile_text(b"\xef\xbb\xbf" + text.encode(), "props.json").diagnostics == ()


def test_schema_rules_with_numeric_keywords_compile() -> None:
    # draft7_validator once lacked `from decimal import Decimal`: minimum, maxLength and
    # the like in a `schema` rule raised NameError instead of compiling
    document = copy.deepcopy(MINIMAL)
    document["steps"][0]["validationCriteria"] = [
        {"type": "schema", "schema": {"type": "integer", "minimum": 1}, "message": "A positive integer"},
        {"type": "schema", "schema": {"type": "string", "maxLength": 9}, "message": "A short text"},
    ]
    assert compile_text(json.dumps(document), "props.json").diagnostics == ()
    document["steps"][0]["validationCriteria"] = [
        {"type": "schema", "schema": {"properties": {"age": {"minimum": "ten"}}}, "message": "m"}
    ]
    result = compile_text(json.dumps(document), "props.json")
    _well_formed(result)
    assert [(d.code, d.pointer) for d in result.diagnostics] == [
        ("H402", "/steps/0/validationCriteria/0/schema/properties/age/minimum")
    ]


@pytest.mark.corpus
def test_every_golden_case_and_corpus_file_gives_well_formed_diagnostics() -> None:
    for path in [*sorted(SPEC_CASES.glob("*/workflow.json")), *corpus_files()]:
        _well_formed(compile_path(path))
    assert CORPUS.exists()


def test_a_mutation_never_shares_or_changes_the_value_it_sets() -> None:
    sample: dict[str, Any] = {"var": "x"}
    first = _mutate({"a": 1, "b": 2}, [(0, "set", sample, "x"), (1, "set", sample, "x")])
    assert sample == {"var": "x"}
    assert first["a"] is not sample
    # writing into what was set leaves the sample as it was for the next example
    _mutate(first, [(1, "set", 5, "x")])
    assert sample == {"var": "x"}
