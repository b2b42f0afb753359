"""The layers of src/handrail import downward only. Every module is read with `ast` and
given its layer by the table in docs/development.md ("Layers, and where a change goes");
the test fails naming the importing module, the imported one and the line where a
module imports a layer above its own, where imports form a cycle, or where an import
inside a function has no comment beside it or on the line above saying why it waits.

Every import counts towards layers and cycles, typing-only and function-local ones too:
a cycle an import hides by waiting is still a cycle.

At most MAX_TOP_LEVEL modules sit directly in src/handrail (issue 37, "A top level
that is not a drawer"); every other goes to the folder of its layer.

Sizes are held here too: no function over 80 lines and no module over 450, outside
src/handrail/_generated/, with no exemptions.

Settings are made once and passed in (issue 37): no code assigns an attribute of an
object after it is built, unless the object is its own. Precisely, in every module of
src/handrail, a target `obj.attr` of an assignment (plain, annotated, augmented, an
unpacking's part, a `for` or `with ... as` target, `del`), and the object of a call
`setattr(obj, ...)`, `delattr(obj, ...)` or `object.__setattr__(obj, ...)`, must be
- the name `self` or `cls` (an object's own attributes, in its methods), or
- a local name bound earlier in the same function (or module or class body, nested
  functions being their own), by a `def` or `class` statement or by an assignment whose
  value is a constructor call (a call whose callee's last name begins with a capital:
  `Foo(...)`, `argparse.Namespace(...)`), and not rebound otherwise since: that is
  building an object, not reaching into one.
`self.part.attr = ...` is reaching into `self.part`. There are no exemptions."""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from tests.conftest import ROOT

SRC = ROOT / "src" / "handrail"
TABLE = ROOT / "docs" / "development.md"

# The package itself (`import handrail`): the library's names, imported lazily. Its
# `__init__` has a row of its own at the top of the table, so nothing below imports it.
FACADE = "handrail"

# Pairs where the lower layer is still out of reach: DESIGN.md has the dashboard read
# runs through runs/, "never the store directly".
NOT_DIRECTLY = {("dashboard", "store"): "the dashboard reads runs through `Runs`, never the store"}

# Violations in the tree today, each with what removes it. Delete an entry when it is
# fixed: an entry that no longer happens fails the test.
KNOWN = {}

# Imports inside functions without a reason beside them, counted per module: none may
# be added. No slice owns them: a slice that rewrites a module gives each a reason (or
# moves it to the top) and lowers the count here.
UNEXPLAINED_LOCAL_IMPORTS: dict[str, int] = {}

# No function is over MAX_FUNCTION lines and no module over MAX_MODULE (issue 37, "No
# giant closures"), generated code aside, and none is exempt.
MAX_FUNCTION = 80
MAX_TOP_LEVEL = 8
MAX_MODULE = 450


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    line: int


def layer_table() -> list[set[str]]:
    """The table's rows, top layer first, each the set of folders it names; the row
    "top level" names the empty folder (modules directly in src/handrail), and a row
    may name modules directly in src/handrail that stand apart (`entry.py`)."""
    text = TABLE.read_text("utf-8")
    section = text.split("## Layers, and where a change goes", 1)[1].split("\n## ", 1)[0]
    rows: list[set[str]] = []
    for line in section.splitlines():
        if not line.startswith("|"):
            continue
        first = line.strip("|").split("|")[0].strip()
        if first == "top level":
            rows.append({""})
        elif folders := set(re.findall(r"`(\w+)/`", first)):
            rows.append(folders)
        elif files := set(re.findall(r"`(\w+\.py)`", first)):
            rows.append(files)
    return rows


def named_rows(text: str | None = None) -> list[tuple[set[str], set[str]]]:
    """Each row of the table as (the folders or files of its first column, the names its
    second gives in backticks that read as a module's: lowercase words, `/` between a
    package and its module). Other code names are written so as not to read as one:
    `Runs`, `serve()`, `/mcp`, `grammar/condition.lark`."""
    text = TABLE.read_text("utf-8") if text is None else text
    section = text.split("## Layers, and where a change goes", 1)[1].split("\n## ", 1)[0]
    rows: list[tuple[set[str], set[str]]] = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) < 2:
            continue
        first, holds = cells[0], cells[1]
        if first == "top level":
            folders = {""}
        elif not (folders := set(re.findall(r"`(\w+)/`", first))):
            folders = {name.removesuffix(".py") for name in re.findall(r"`(\w+\.py)`", first)}
            folders = {f"={name}" for name in folders}
        if folders:
            rows.append((folders, set(re.findall(r"`([a-z_][a-z0-9_]*(?:/[a-z_][a-z0-9_]*)*)/?`", holds))))
    return rows


def needs_naming(module: str, path: Path) -> bool:
    """Every module but generated code and a package's `__init__` that holds no more than
    its docstring."""
    if module.startswith(f"{FACADE}._generated") or module == f"{FACADE}.__main__":
        return False
    if path.name != "__init__.py":
        return True
    body = parsed(path)[1].body
    return len(body) > (1 if body and isinstance(body[0], ast.Expr) else 0)


def spellings(module: str, path: Path) -> tuple[str, set[str]]:
    """The folder a module's row names it under (`=entry` for a top-level module with a
    row of its own), and the ways the row may name it: its path below the folder, or
    from src/handrail (`surface/approvals`, `protocol/surface/approvals`)."""
    parts = module.split(".")[1:] + (["__init__"] if path.name == "__init__.py" else [])
    if len(parts) == 1:
        return "", {parts[0]}
    folder = parts[0]
    return folder, {"/".join(parts[1:]), "/".join(parts)}


def test_the_layer_table_names_every_module_in_its_folders_row_and_only_modules_that_exist() -> None:
    rows = named_rows()
    modules = all_modules()
    unnamed: list[str] = []
    for module, path in modules.items():
        if not needs_naming(module, path):
            continue
        folder, ways = spellings(module, path)
        own = "=__init__" if module == FACADE else f"={module.rsplit('.', 1)[-1]}"
        if not any((folder in folders and ways & names) or own in folders for folders, names in rows):
            unnamed.append(f"{module}: not in the row of {folder or 'top level'}/ as `{min(ways, key=len)}`")
    paths = {str(path.relative_to(SRC).with_suffix("")) for path in modules.values()}
    paths |= {str(path.relative_to(SRC).parent) for path in modules.values()}
    dead: list[str] = []
    for folders, names in rows:
        for name in sorted(names):
            bases = [folder for folder in folders if not folder.startswith("=")]
            if not any(f"{base}/{name}".lstrip("/") in paths for base in ["", *bases]):
                dead.append(f"`{name}` in the row of {sorted(folders)}")
    assert not unnamed, "\n".join([f"modules the layer table of {TABLE} does not name:", *unnamed])
    assert not dead, "\n".join(
        [f"names in the layer table of {TABLE} that are no module of src/handrail:", *dead]
    )


def module_name(path: Path) -> str:
    parts = [FACADE, *path.relative_to(SRC).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def all_modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(SRC.rglob("*.py"))}


def folder_of(module: str) -> str:
    """The layer folder a module is in: "" for the top level (and generated code)."""
    parts = module.split(".")[1:]
    if parts == ["__main__"]:
        return "cli"  # `python -m handrail` is the command
    if not parts or parts[0] == "_generated" or not (SRC / parts[0]).is_dir():
        return ""
    return parts[0]


def rank(module: str, table: list[set[str]]) -> int:
    """The row of the table a module belongs to; 0 is the top. A top-level module
    the table names a row for is in that row, not in the top level's."""
    folder = folder_of(module)
    own_row = f"{module.rsplit('.', 1)[-1]}.py" if module.count(".") == 1 else None
    if module == FACADE:
        own_row = "__init__.py"
    for row, names in enumerate(table):
        if own_row in names:
            return row
    for row, folders in enumerate(table):
        if folder in folders:
            return row
    raise AssertionError(f"{module}: folder {folder}/ has no row in the layer table of {TABLE}")


def _target(name: str, known: dict[str, Path]) -> str:
    while name not in known:
        name = name.rsplit(".", 1)[0]
    return name


@cache
def parsed(path: Path) -> tuple[list[str], ast.Module]:
    text = path.read_text("utf-8")
    return text.splitlines(), ast.parse(text, str(path))


def imports_of(module: str, path: Path, known: dict[str, Path]) -> Iterator[Import]:
    """The handrail modules a module imports, wherever the import statement is."""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in ast.walk(parsed(path)[1]):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == FACADE:
                    yield Import(module, _target(alias.name, known), node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            if source.split(".")[0] != FACADE:
                continue
            for alias in node.names:
                # `from package import submodule` imports the submodule; any other name is the package's
                submodule = f"{source}.{alias.name}"
                yield Import(module, submodule if submodule in known else _target(source, known), node.lineno)


def unexplained_local_imports(path: Path) -> list[tuple[int, str]]:
    """Imports inside a function with no comment on their lines or the line above."""
    lines, tree = parsed(path)
    found: dict[int, str] = {}
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(function):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                own = lines[node.lineno - 1 : node.end_lineno or node.lineno]
                above = lines[node.lineno - 2].strip() if node.lineno > 1 else ""
                if not any("#" in line for line in own) and not above.startswith("#"):
                    found[node.lineno] = lines[node.lineno - 1].strip()
    return sorted(found.items())


def edges_on_cycles(edges: dict[str, set[str]]) -> set[tuple[str, str]]:
    """The edges whose two ends are in one strongly connected component (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    component: dict[str, int] = {}

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            while True:
                member = stack.pop()
                component[member] = index[node]
                if member == node:
                    break

    for node in sorted(edges):
        if node not in index:
            connect(node)
    return {(a, b) for a, targets in edges.items() for b in targets if component[a] == component[b]}


def layer_violations() -> dict[str, str]:
    """Each import against the layers or on a cycle: a key (as KNOWN lists them) and a
    message naming both modules and the line."""
    table = layer_table()
    known = all_modules()
    found: dict[str, str] = {}
    edges: dict[str, set[str]] = {}
    first_line: dict[tuple[str, str], int] = {}
    for module, path in known.items():
        for item in imports_of(module, path, known):
            if item.imported == module:
                continue
            edges.setdefault(module, set()).add(item.imported)
            first_line.setdefault((module, item.imported), item.line)
            key = f"upward {module} -> {item.imported}"
            where = f"{module} (line {item.line}) imports {item.imported}"
            if rank(item.imported, table) < rank(module, table):
                found.setdefault(key, f"{where}, a layer above its own in {TABLE.name}")
            elif (folder_of(module), folder_of(item.imported)) in NOT_DIRECTLY:
                found.setdefault(key, f"{where}: {NOT_DIRECTLY[folder_of(module), folder_of(item.imported)]}")
    for a, b in sorted(edges_on_cycles(edges)):
        found[f"cycle {a} -> {b}"] = (
            f"{a} (line {first_line[a, b]}) imports {b}, which leads back to {a}: an import cycle"
        )
    return found


def test_no_module_imports_a_layer_above_its_own_or_takes_part_in_an_import_cycle() -> None:
    found = layer_violations()
    new = [found[key] for key in sorted(found.keys() - KNOWN, key=lambda key: (key.startswith("cycle"), key))]
    gone = sorted(KNOWN - found.keys())
    assert not new, "\n".join(["imports against the layers of docs/development.md:", *new])
    assert not gone, "\n".join(["fixed, so delete them from KNOWN in tests/test_layers.py:", *gone])


def test_every_import_inside_a_function_says_why_it_waits() -> None:
    over: list[str] = []
    for module, path in all_modules().items():
        unexplained = unexplained_local_imports(path)
        if len(unexplained) > UNEXPLAINED_LOCAL_IMPORTS.get(module, 0):
            over.append(f"{module}: {len(unexplained)} imports inside functions without a reason, "
                        f"{UNEXPLAINED_LOCAL_IMPORTS.get(module, 0)} known:")  # fmt: skip
            over += [f"  line {line}: {text}" for line, text in unexplained]
    advice = "give each a comment saying why it waits (start-up time), or move it up:"
    assert not over, "\n".join([advice, *over])


def test_the_layer_table_places_every_folder_of_src() -> None:
    table = layer_table()
    assert len(table) >= 10, f"the layer table of {TABLE} was not found"
    unplaced = sorted({folder_of(module) for module in all_modules()} - set().union(*table))
    assert not unplaced, f"folders of src/handrail without a row in the layer table of {TABLE}: {unplaced}"


def test_a_planted_upward_import_and_cycle_are_found(tmp_path: Path) -> None:
    modules = {name: tmp_path for name in ("handrail.engine.a", "handrail.protocol", "handrail.protocol.b")}
    (tmp_path / "a.py").write_text("from handrail.protocol import b\n")
    found = list(imports_of("handrail.engine.a", tmp_path / "a.py", modules))
    assert found == [Import("handrail.engine.a", "handrail.protocol.b", 1)]
    assert rank("handrail.protocol.b", layer_table()) < rank("handrail.engine.a", layer_table())
    cycle = {"handrail.engine.a": {"handrail.engine.c"}, "handrail.engine.c": {"handrail.engine.a"}}
    assert edges_on_cycles({**cycle, "handrail.protocol.b": {"handrail.engine.a"}}) == {
        ("handrail.engine.a", "handrail.engine.c"),
        ("handrail.engine.c", "handrail.engine.a"),
    }


def test_an_import_inside_a_function_needs_a_comment_beside_it_or_above(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "def f():\n"
        "    import json\n"
        "    import os  # the command line only\n"
        "    # start-up time: lark loads in 60 ms\n"
        "    import lark\n"
    )
    assert unexplained_local_imports(source) == [(2, "import json")]
    folders = Counter(folder_of(name) for name in ("handrail.cli", "handrail.__main__", "handrail.settings"))
    assert folders == {"cli": 2, "": 1}


def oversized(module: str, path: Path) -> dict[str, int]:
    """The module, when over MAX_MODULE lines, and each function over MAX_FUNCTION (from
    its `def` to its last line, nested ones counted in their own and their parent's),
    named as the test's message names them."""
    lines, tree = parsed(path)
    found = {f"module {module}": len(lines)} if len(lines) > MAX_MODULE else {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}.{child.name}"
                size = (child.end_lineno or child.lineno) - child.lineno + 1
                if not isinstance(child, ast.ClassDef) and size > MAX_FUNCTION:
                    found[f"function {name}"] = size
                visit(child, name)
            else:
                visit(child, prefix)

    visit(tree, module)
    return found


def test_no_function_is_over_80_lines_and_no_module_over_450_outside_generated_code() -> None:
    found: dict[str, int] = {}
    for module, path in all_modules().items():
        if not module.startswith(f"{FACADE}._generated"):
            found |= oversized(module, path)
    over = [f"{key}: {size} lines" for key, size in sorted(found.items())]
    limits = f"functions over {MAX_FUNCTION} lines, modules over {MAX_MODULE}"
    assert not over, "\n".join([f"{limits}: split them into named parts", *over])


def test_an_oversized_function_nested_or_in_a_class_and_an_oversized_module_are_found(tmp_path: Path) -> None:
    source = tmp_path / "big.py"
    body = "".join(f"            x{n} = {n}\n" for n in range(MAX_FUNCTION))
    filler = "".join(f"y{n} = {n}\n" for n in range(MAX_MODULE))
    source.write_text(f"class A:\n    def outer(self):\n        def inner():\n{body}\n{filler}")
    assert oversized("handrail.big", source) == {
        "function handrail.big.A.outer": MAX_FUNCTION + 2,
        "function handrail.big.A.outer.inner": MAX_FUNCTION + 1,
        "module handrail.big": MAX_FUNCTION + 4 + MAX_MODULE,
    }
    small = tmp_path / "small.py"
    small.write_text("def f():\n" + "    pass\n" * (MAX_FUNCTION - 1))
    assert oversized("handrail.small", small) == {}


def test_a_rows_module_names_are_read_and_other_code_names_are_not() -> None:
    table = (
        "## Layers, and where a change goes\n\n| folder | holds | change |\n|---|---|---|\n"
        "| `entry.py` | to `gate/hook` | start |\n"
        "| `protocol/` | `core` (`Protocol`, `serve()`, `/mcp`), `surface/`: `surface/texts` | a method |\n"
        "| top level | `__init__`, `codec` (`Encoded`, `grammar/condition.lark`) | all |\n"
    )
    assert named_rows(table) == [
        ({"=entry"}, {"gate/hook"}),
        ({"protocol"}, {"core", "surface", "surface/texts"}),
        ({""}, {"__init__", "codec"}),
    ]


@dataclass(frozen=True)
class Reach:
    module: str
    line: int
    target: str


def _constructed(value: ast.expr) -> bool:
    """A call of a class by its name: `Foo(...)`, `module.Foo(...)`."""
    if not isinstance(value, ast.Call):
        return False
    callee = value.func
    name = (
        callee.attr
        if isinstance(callee, ast.Attribute)
        else callee.id
        if isinstance(callee, ast.Name)
        else ""
    )
    return name[:1].isupper()


def _targets(target: ast.expr) -> Iterator[ast.expr]:
    if isinstance(target, (ast.Tuple, ast.List)):
        for part in target.elts:
            yield from _targets(part)
    elif isinstance(target, ast.Starred):
        yield from _targets(target.value)
    else:
        yield target


def _assigned(node: ast.AST) -> list[ast.expr]:
    """What the statement or call `node` assigns to (or deletes), as objects' attributes."""
    if isinstance(node, ast.Assign):
        return [t for whole in node.targets for t in _targets(whole)]
    if isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
        return list(_targets(node.target))
    if isinstance(node, ast.withitem) and node.optional_vars is not None:
        return list(_targets(node.optional_vars))
    if isinstance(node, ast.Delete):
        return [t for whole in node.targets for t in _targets(whole)]
    if isinstance(node, ast.Call) and node.args:
        callee = ast.unparse(node.func)
        if callee in ("setattr", "delattr", "object.__setattr__", "object.__delattr__"):
            return [ast.Attribute(value=node.args[0], attr="?", lineno=node.lineno)]
    return []


def reaches(module: str, path: Path) -> list[Reach]:
    """Every attribute the module assigns on an object neither its own nor made there."""
    found: list[Reach] = []

    def scope(body: list[ast.stmt] | list[ast.expr]) -> None:
        made: set[str] = set()  # local names bound to an object made in this scope

        def visit(node: ast.AST) -> None:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                made.add(node.name)
                for decorator in node.decorator_list:
                    visit(decorator)
                scope(node.body)
                return
            if isinstance(node, ast.Lambda):
                scope([node.body])
                return
            for target in _assigned(node):
                if isinstance(target, ast.Attribute):
                    owner = target.value
                    if not (
                        isinstance(owner, ast.Name) and (owner.id in ("self", "cls") or owner.id in made)
                    ):
                        found.append(Reach(module, target.lineno, ast.unparse(target)))
            for child in ast.iter_child_nodes(node):
                visit(child)
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                names = node.targets if isinstance(node, ast.Assign) else [node.target]
                for name in names:
                    if isinstance(name, ast.Name):
                        (made.add if _constructed(node.value) else made.discard)(name.id)

        for statement in body:
            visit(statement)

    scope(parsed(path)[1].body)
    return found


def test_no_module_assigns_an_attribute_of_an_object_that_is_not_its_own_or_made_there() -> None:
    """Issue 37, point 1, with no exemptions: a value is given its parts at
    construction, or changes them itself (`self`), never from outside."""
    found = [r for module, path in sorted(all_modules().items()) for r in reaches(module, path)]
    assert not found, "\n".join(
        [
            "attributes assigned from outside their object (pass them at construction, or give "
            "its class a method that changes them):",
            *(f"{r.module}:{r.line}: {r.target} = ..." for r in found),
        ]
    )


def test_an_attribute_reached_into_is_found_and_one_of_a_fresh_or_own_object_is_not(tmp_path: Path) -> None:
    source = tmp_path / "reach.py"
    source.write_text(
        "import argparse, sys\n"
        "class A:\n"
        "    def __init__(self, other):\n"
        "        self.x = 1\n"  # its own
        "        self.part.y = 2\n"  # reached into
        "        other.z = 3\n"  # a parameter's
        "        made = argparse.Namespace()\n"
        "        made.w = 4\n"  # built here
        "        made = other.copy()\n"
        "        made.v = 5\n"  # no longer built here
        "        def inner():\n"
        "            made.u = 6\n"  # another function's
        "        inner.__doc__ = 'x'\n"  # a function made here
        "sys.stdout = sys.stderr\n"
        "a, sys.argv = 1, []\n"
        "setattr(sys, 'b', 1)\n"
        "for sys.t in (): pass\n"
    )
    assert [(r.line, r.target) for r in reaches("handrail.reach", source)] == [
        (5, "self.part.y"),
        (6, "other.z"),
        (10, "made.v"),
        (12, "made.u"),
        (14, "sys.stdout"),
        (15, "sys.argv"),
        (16, "sys.?"),
        (17, "sys.t"),
    ]


def test_at_most_eight_modules_sit_at_the_top_of_src_handrail() -> None:
    top = sorted(path.name for path in SRC.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL, (
        f"{len(top)} modules directly in src/handrail, at most {MAX_TOP_LEVEL}: move the ones "
        f"that are not an entry point to the folder of their layer: {top}"
    )


def test_the_package_s_init_sits_above_every_layer_so_an_import_of_it_from_below_is_found(
    tmp_path: Path,
) -> None:
    table = layer_table()
    assert rank(FACADE, table) == 0
    modules = {"handrail": tmp_path, "handrail.engine.a": tmp_path}
    (tmp_path / "a.py").write_text("from handrail import __version__\n")
    found = list(imports_of("handrail.engine.a", tmp_path / "a.py", modules))
    assert found == [Import("handrail.engine.a", FACADE, 1)]
    assert rank(FACADE, table) < rank("handrail.engine.a", table)
