"""The package's layers point down: no import cycle, no function-level import of dpcert's own modules.

The import graph is read from the source (``ast``), not by importing it: an edge A -> B for every
``import``/``from ... import`` of a dpcert module at module level of A (imports under
``if TYPE_CHECKING:`` are for the type checker only and are not edges).  ``from P import n`` is an
edge to ``P.n`` when that is a module, else to ``P``.  Layers are numbered from the ground up; a
module may import only modules of its own layer or below.

``python tests/test_layout.py`` prints every violation.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[1] / "src"

# (prefix, layer): the longest matching prefix decides; listed from the ground up.
LAYERS: list[tuple[str, int]] = [
    ("dpcert.errors", 0),
    ("dpcert._numerics", 0),
    ("dpcert._validation", 0),
    ("dpcert._json", 0),
    ("dpcert._fixed_order", 0),
    ("dpcert._notebook", 0),
    ("dpcert.provenance", 1),
    ("dpcert.signatures", 1),
    ("dpcert.theory", 2),
    ("dpcert.certificates", 3),
    ("dpcert.profiles", 3),
    ("dpcert.mechanisms", 4),
    ("dpcert.accounting", 5),
    ("dpcert.ledger", 5),
    ("dpcert.session", 5),
    ("dpcert.interop", 6),
    ("dpcert.viz", 6),
    ("dpcert.audits", 6),
    ("dpcert.bandits", 6),
    ("dpcert.testing", 7),
    ("dpcert.reproductions", 7),
    ("dpcert.cli", 8),
    ("dpcert", 9),  # the package face, dpcert/__init__.py
]


def layer_of(module: str) -> int:
    best = max(
        (prefix for prefix, _ in LAYERS if module == prefix or module.startswith(prefix + ".")), key=len
    )
    return dict(LAYERS)[best]


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted((SOURCE / "dpcert").rglob("*.py")):
        parts = path.relative_to(SOURCE).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _targets(node: ast.Import | ast.ImportFrom, module: str, known: dict[str, Path]) -> Iterator[str]:
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name == "dpcert" or alias.name.startswith("dpcert."):
                yield alias.name
        return
    base = node.module or ""
    if node.level:
        package = module.split(".")
        if not known[module].name == "__init__.py":
            package = package[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join([*package, *([base] if base else [])])
    if not (base == "dpcert" or base.startswith("dpcert.")):
        return
    for alias in node.names:
        yield f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base


def imports(module: str, known: dict[str, Path]) -> tuple[set[str], list[tuple[int, str]]]:
    """(module-level dpcert imports, [(line, target)] of dpcert imports inside functions or classes)."""
    tree = ast.parse(known[module].read_text())
    top: set[str] = set()
    nested: list[tuple[int, str]] = []

    def visit(nodes: list[ast.stmt], inside: bool) -> None:
        for node in nodes:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _targets(node, module, known):
                    (nested.append((node.lineno, target)) if inside else top.add(target))
            elif isinstance(node, ast.If) and _is_type_checking(node):
                continue
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                visit(node.body, True)
            else:
                for field in ("body", "orelse", "finalbody", "handlers"):
                    block = getattr(node, field, None)
                    if isinstance(block, list):
                        visit([item for item in block if isinstance(item, ast.stmt)], inside)
                        for handler in block:
                            if isinstance(handler, ast.ExceptHandler):
                                visit(handler.body, inside)

    visit(tree.body, False)
    top.discard(module)
    return top, nested


def graph() -> tuple[dict[str, set[str]], dict[str, list[tuple[int, str]]]]:
    known = modules()
    edges, nested = {}, {}
    for module in known:
        edges[module], nested[module] = imports(module, known)
    return edges, nested


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def strong(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                strong(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for node in sorted(edges):
        if node not in index:
            strong(node)
    return found


def upward(edges: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{module} (layer {layer_of(module)}) imports {target} (layer {layer_of(target)})"
        for module, targets in edges.items()
        for target in targets
        if layer_of(target) > layer_of(module)
    )


def function_level(nested: dict[str, list[tuple[int, str]]]) -> list[str]:
    return sorted(
        f"{module}:{line} imports {target}" for module, items in nested.items() for line, target in items
    )


def test_the_graph_reader_sees_a_known_edge_and_a_nested_import(tmp_path: Path) -> None:
    known = {"dpcert.a": tmp_path / "a.py", "dpcert.b": tmp_path / "b.py"}
    known["dpcert.a"].write_text(
        "from dpcert import b\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import dpcert.c\n"
        "def f():\n    from dpcert.b import x\n"
    )
    top, nested = imports("dpcert.a", known)
    assert top == {"dpcert.b"}
    assert nested == [(6, "dpcert.b")]
    assert cycles({"x": {"y"}, "y": {"x"}, "z": {"x"}}) == [["x", "y"]]


def test_no_import_cycle() -> None:
    edges, _ = graph()
    assert cycles(edges) == []


def test_layers_point_down() -> None:
    edges, _ = graph()
    assert upward(edges) == []


def test_no_function_level_import_of_dpcert_modules() -> None:
    _, nested = graph()
    assert function_level(nested) == []


if __name__ == "__main__":
    edges, nested = graph()
    area = sys.argv[1] if len(sys.argv) > 1 else "dpcert"
    for component in cycles(edges):
        if any(member.startswith(area) for member in component):
            print("cycle:", " ".join(component))
    for line in upward(edges):
        if line.startswith(area):
            print("upward:", line)
    for line in function_level(nested):
        if line.startswith(area):
            print("nested:", line)
