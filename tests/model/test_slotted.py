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
