"""The gate's values as classes of slots keep what their callers used of a NamedTuple."""

from handrail.runs.gate import Action, Decision, GateEvent, Options


def test_a_slotted_value_equals_and_hashes_as_its_fields_do() -> None:
    one = GateEvent("before-tool", "/work", action=Action("edit", "a.py", "Edit"))
    same = GateEvent("before-tool", "/work", action=Action("edit", "a.py", "Edit"))
    assert one == same and hash(one) == hash(same) and len({one, same}) == 1
    assert one != GateEvent("before-tool", "/work")
    assert Decision("allow") != Options()  # another type is never equal, whatever its fields


def test_a_slotted_value_is_replaced_field_by_field_and_left_as_it_was() -> None:
    action = Action("edit", "a.py", "Edit")
    moved = action._replace(leads_to="/real/a.py")
    assert (moved.kind, moved.target, moved.tool, moved.leads_to) == ("edit", "a.py", "Edit", "/real/a.py")
    assert action.leads_to is None


def test_a_slotted_value_s_repr_names_its_fields() -> None:
    assert repr(Decision("deny", "no")) == "Decision(record=None, text='no', verdict='deny')"  # as __slots__


def test_a_frozen_value_refuses_a_change_and_leaves_its_uncompared_fields_out() -> None:
    from pathlib import Path

    import pytest

    from handrail.catalog.sources import Source
    from handrail.model.request import Request

    request = Request(owner="ana")
    with pytest.raises(AttributeError):
        request.owner = "bo"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del request.owner  # type: ignore[misc]
    assert request._replace(owner="bo").owner == "bo" and request.owner == "ana"
    assert request == Request(owner="ana") and request != Request(owner="bo")
    checkout = object()  # a git source's checkout: not part of what the source is
    assert Source("cli", Path("/w"), checkout) == Source("cli", Path("/w"))  # type: ignore[arg-type]
    assert hash(Source("cli", Path("/w"), checkout)) == hash(Source("cli", Path("/w")))  # type: ignore[arg-type]
    assert repr(Source("cli", Path("/w"))) == "Source(name='cli', path=PosixPath('/w'))"
