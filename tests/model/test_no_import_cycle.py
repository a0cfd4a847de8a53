"""model/ is the bottom layer: its modules import each other in one direction only (no cycle, lazy imports
included), so any of them can be read, tested and loaded on its own."""

from __future__ import annotations

import ast
from pathlib import Path

import cosydesk.model

MODEL = Path(cosydesk.model.__file__).parent


def _imports(path: Path) -> set[str]:
    """The cosydesk.model modules ``path`` imports anywhere in it (top level or inside functions)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("cosydesk.model"):
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)  # from cosydesk.model import x
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("cosydesk.model"))
    return found


def test_model_modules_import_each_other_in_one_direction():
    modules = {f"cosydesk.model.{p.stem}": p for p in MODEL.glob("*.py") if p.stem != "__init__"}
    graph = {name: sorted(_imports(path) & modules.keys() - {name}) for name, path in modules.items()}
    cycles = []

    def visit(name: str, trail: list[str]) -> None:
        for target in graph[name]:
            if target in trail:
                cycles.append(" -> ".join(trail[trail.index(target):] + [target]))
            elif target not in done:
                visit(target, trail + [target])
        done.add(name)

    done: set[str] = set()
    for start in sorted(graph):
        if start not in done:
            visit(start, [start])
    assert cycles == []
