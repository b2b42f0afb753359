"""The layers of src/handrail import downward only. Every module is read with `ast` and
given its layer by the table in docs/development.md ("Layers, and where a change goes");
the test fails naming the importing module, the imported one and the line where a
module imports a layer above its own, where imports form a cycle, or where an import
inside a function has no comment beside it or on the line above saying why it waits.

Every import counts towards layers and cycles, typing-only and function-local ones too:
a cycle an import hides by waiting is still a cycle.

Sizes are held here too: no function over 80 lines and no module over 450, outside
src/handrail/_generated/, but for the ones SIZE_DEBT lists, which may only shrink."""

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

# The package itself (`import handrail`) holds `__version__`, which every layer may
# read, and the library's names, which it imports lazily or for type checkers only: its
# own imports count neither for layers nor for cycles.
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
# giant closures"), generated code aside. These are the ones over today, each with its
# size: none may grow, none may be added, and one brought within the limit is deleted
# here (lower a figure as its code shrinks).
MAX_FUNCTION = 80
MAX_MODULE = 450
SIZE_DEBT: dict[str, int] = {
    "function handrail.runs.advance.Advance._continue_once": 104,
    "module handrail.gate.hook": 598,
    "module handrail.gate.install": 527,
    "module handrail.protocol.core": 475,
    "module handrail.runs.decisions": 645,
    "module handrail.runs.gate": 520,
    "module handrail.runs.tree": 622,
    "module handrail.store.sqlite": 493,
}


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
        own = f"={module.rsplit('.', 1)[-1]}"
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
            if module == FACADE or item.imported in (module, FACADE):
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
    folders = Counter(folder_of(name) for name in ("handrail.cli", "handrail.__main__", "handrail.codec"))
    assert folders == {"cli": 2, "": 1}


def oversized(module: str, path: Path) -> dict[str, int]:
    """The module, when over MAX_MODULE lines, and each function over MAX_FUNCTION (from
    its `def` to its last line, nested ones counted in their own and their parent's),
    named as SIZE_DEBT names them."""
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
    new = [f"{key}: {size} lines" for key, size in sorted(found.items()) if key not in SIZE_DEBT]
    grown = [
        f"{key}: {found[key]} lines, {SIZE_DEBT[key]} in SIZE_DEBT"
        for key in sorted(SIZE_DEBT.keys() & found.keys())
        if found[key] > SIZE_DEBT[key]
    ]
    paid = sorted(SIZE_DEBT.keys() - found.keys())
    limits = f"functions over {MAX_FUNCTION} lines, modules over {MAX_MODULE}"
    assert not new, "\n".join([f"{limits}: split them into named parts", *new])
    assert not grown, "\n".join([f"{limits} that grew past their SIZE_DEBT figure:", *grown])
    assert not paid, "\n".join(
        ["within the limits now, so delete them from SIZE_DEBT in tests/test_layers.py:", *paid]
    )


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
