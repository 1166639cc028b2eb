"""The package's structure, read from its imports (every import, those inside functions and
under TYPE_CHECKING too): no module reaches itself through others, and the rooms of clientlab/
(its folders and top-level modules) import each other in one direction only, so that they stand
on floors, each above all that it imports."""

from __future__ import annotations

import ast
from pathlib import Path

from clientlab import paths

PACKAGE = paths.ROOT / "clientlab"


def _name(path: Path) -> str:
    parts = list(path.relative_to(paths.ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_name(p): p for p in PACKAGE.rglob("*.py") if "migrations" not in p.parts}


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The clientlab modules a module imports: `from a.b import c` names a.b.c where that is a
    module, else a.b."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in modules}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                found.add(sub if sub in modules else node.module)
    return {m for m in found if m in modules}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(path, modules) - {name} for name, path in modules.items()}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected parts of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            part = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                part.append(top)
                if top == node:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _room(module: str) -> str:
    """clientlab.runner.trial -> runner; clientlab.scenario -> scenario."""
    return module.split(".")[1] if module.count(".") else module


def rooms() -> dict[str, set[str]]:
    """Each room of clientlab/ with the rooms it imports."""
    out: dict[str, set[str]] = {}
    for module, imported in _graph().items():
        if module == "clientlab":
            continue
        room = _room(module)
        out.setdefault(room, set()).update(_room(m) for m in imported if m != "clientlab")
        out[room].discard(room)
    return out


def floors() -> dict[str, int]:
    """Each room's floor: 1 for a room that imports no other, else one above the highest it imports."""
    graph, floor = rooms(), {}

    def of(room: str) -> int:
        if room not in floor:
            floor[room] = 1 + max((of(r) for r in graph[room]), default=0)
        return floor[room]

    for room in graph:
        of(room)
    return floor


def test_no_module_reaches_itself_through_its_imports():
    assert _circles(_graph()) == []


def test_the_rooms_import_each_other_in_one_direction():
    assert _circles(rooms()) == []


def test_a_circle_is_found_where_two_modules_import_each_other():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


if __name__ == "__main__":  # the rooms by floor, from the top
    by_floor = floors()
    for room in sorted(by_floor, key=lambda r: (-by_floor[r], r)):
        print(f"{by_floor[room]:3}  {room}")
