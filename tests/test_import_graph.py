"""No import cycle among adk_notebook's modules, counting imports inside functions too.

Every module is read with `ast`; each `import` / `from ... import` anywhere in it (module level,
functions, methods) is an edge to the module it names, except those under `if TYPE_CHECKING:`,
which never run. `from pkg import name` is an edge to `pkg.name` when that is a module, else to
`pkg`. A cycle fails the test, listed module by module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import adk_notebook

PACKAGE = Path(adk_notebook.__file__).resolve().parent
ROOT = PACKAGE.name


def module_files() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package (a package is its __init__)."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement that can run: all of them but the bodies of `if TYPE_CHECKING:`."""
    found: list[ast.Import | ast.ImportFrom] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))
    return found


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that module `name` imports at run time."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
            continue
        if node.level:
            base = package.split(".")
            base = base[: len(base) - node.level + 1]
            origin = ".".join(base + ([node.module] if node.module else []))
        else:
            origin = node.module or ""
        for alias in node.names:
            submodule = f"{origin}.{alias.name}"
            targets.add(submodule if submodule in modules else origin)
    return {t for t in targets if t in modules and t != name}


def import_graph() -> dict[str, set[str]]:
    modules = module_files()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each strongly connected component of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_a_cycle(graph, component) for component in components]


def _a_cycle(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A shortest cycle through the first module of `component`, as [a, b, ..., a]."""
    start = min(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target in sorted(graph[node] & component):
                if target == start:
                    return paths[node] + [start]
                if target not in paths:
                    paths[target] = paths[node] + [target]
                    following.append(target)
        frontier = following
    raise AssertionError(f"no cycle through {start} in {component}")


def test_no_import_cycle_among_the_package_modules() -> None:
    found = cycles(import_graph())
    assert not found, "import cycles:\n" + "\n".join(" -> ".join(cycle) for cycle in found)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from .b import x", {"pkg.b"}),
        ("def f():\n    from . import b\n", {"pkg.b"}),  # function-level imports count
        (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import x\n",
            set(),
        ),
        (
            "import typing\nif typing.TYPE_CHECKING:\n    import pkg.b\nelse:\n    import pkg.c\n",
            {"pkg.c"},
        ),
        ("from ..pkg import c", {"pkg.c"}),
        ("from . import x", {"pkg"}),  # a name of the package itself, not a module
    ],
)
def test_the_walk_sees_each_kind_of_import(tmp_path: Path, source: str, expected: set[str]) -> None:
    for module in ("__init__", "a", "b", "c"):
        (tmp_path / f"{module}.py").write_text(source if module == "a" else "", encoding="utf-8")
    modules = {
        "pkg": tmp_path / "__init__.py",
        **{f"pkg.{m}": tmp_path / f"{m}.py" for m in "abc"},
    }
    assert imports_of("pkg.a", modules["pkg.a"], modules) == expected


def test_a_cycle_is_reported_module_by_module() -> None:
    graph = {"p.a": {"p.b"}, "p.b": {"p.c"}, "p.c": {"p.a"}, "p.d": {"p.a"}}
    assert cycles(graph) == [["p.a", "p.b", "p.c", "p.a"]]
