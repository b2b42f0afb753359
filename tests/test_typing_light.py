"""`handrail.typing_light.NamedTuple` makes the class `typing.NamedTuple` makes, for
the modules a hook loads, in a process that never loads `typing`."""

from __future__ import annotations

import pickle
import subprocess
import sys
import typing

from handrail.typing_light import NamedTuple


class Light(NamedTuple):
    """A record."""

    name: str
    count: int = 0
    tags: tuple[str, ...] = ()
    LIMIT = 3

    def doubled(self) -> int:
        return self.count * 2


class Typed(typing.NamedTuple):
    """A record."""

    name: str
    count: int = 0
    tags: tuple[str, ...] = ()
    LIMIT = 3

    def doubled(self) -> int:
        return self.count * 2


def test_a_light_named_tuple_has_the_fields_defaults_methods_and_constants_of_typings() -> None:
    light, typed = Light("a", 2), Typed("a", 2)
    assert light == typed == ("a", 2, ())
    assert Light._fields == Typed._fields and Light._field_defaults == Typed._field_defaults
    assert list(Light.__annotations__) == list(Typed.__annotations__)
    assert (light.doubled(), Light.LIMIT, Light.__doc__) == (typed.doubled(), Typed.LIMIT, Typed.__doc__)
    assert repr(light) == "Light(name='a', count=2, tags=())" and light._replace(count=5).count == 5
    assert pickle.loads(pickle.dumps(light)) == light and Light.__module__ == __name__
    assert Light.__qualname__ == "Light" and isinstance(light, tuple)


def test_importing_it_loads_no_typing() -> None:
    code = "import sys, handrail.typing_light; print('typing' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
