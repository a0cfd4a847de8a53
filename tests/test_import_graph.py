"""The import graph of the whole package: no cycle anywhere, and imports point down the layers only.

Every import of every cosydesk module counts: top level, inside functions (lazy), under ``if TYPE_CHECKING:``,
relative ones, and ``importlib.import_module("cosydesk...")`` / ``__import__`` with a literal name. An import
is an edge to the module it names (``from cosydesk.model import hift`` -> cosydesk.model.hift; ``from
cosydesk.model.hift import Snake`` -> cosydesk.model.hift); the implicit import of parent packages is no edge.

Layers (a module may import its own layer and the ones below):
    3  top: ui/ audio/ telemetry/ serve/ bench/ synthetic/, cli, doctor*, settings, ... (every module not below)
    2  runtime/  (the core runtime/*.py and runtime/backends/)
    1  frontend/ and the plain helpers at the package root (BASE_HELPERS)
    0  model/    (pure torch math: imports nothing of cosydesk outside model/)
Inside runtime/: the core (runtime/*.py) imports nothing of runtime/backends/cudagraph or runtime/backends/tensorrt
(it reaches backends through the runtime.backends registry), and those two import nothing of each other.

test_the_checks_catch_a_broken_package runs the same checks on a small package written on the fly with one
break of every kind, so these tests can fail.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.paths import REPO_ROOT

# Root-level modules that sit with frontend/ (layer 1): they import nothing above it; runtime/ may use them.
BASE_HELPERS = {"atomic_file", "environment", "file_lock", "hub", "leftovers", "paths", "state_files"}
BACKENDS = ("cosydesk.runtime.backends.cudagraph", "cosydesk.runtime.backends.tensorrt")
# Deliberate exceptions to the layer rules: (importer, imported) -> why. Empty: none is needed today.
ALLOWED_BREAKS: dict[tuple[str, str], str] = {}


def module_files(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every .py under ``root``/cosydesk (resources/ is data)."""
    files = {}
    for path in sorted((root / "cosydesk").rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if "resources" in parts:
            continue
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return files


def _literal_import_call(node: ast.AST) -> str | None:
    """The name in ``importlib.import_module("x")`` / ``import_module("x")`` / ``__import__("x")``, if literal."""
    if not isinstance(node, ast.Call) or not node.args or not isinstance(node.args[0], ast.Constant):
        return None
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    value = node.args[0].value
    return value if name in ("import_module", "__import__") and isinstance(value, str) else None


def imports_of(module: str, path: Path, files: dict[str, Path]) -> list[tuple[str, int]]:
    """(imported cosydesk module, line) for every import in ``path``, resolved to a module in ``files``."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in files else base for alias in node.names]
        elif (literal := _literal_import_call(node)) is not None:
            names = [literal]
        for name in names:
            while name not in files and "." in name:  # cosydesk.model.hift.Snake -> cosydesk.model.hift
                name = name.rsplit(".", 1)[0]
            if name in files and name != module:
                found.append((name, node.lineno))
    return found


def import_graph(root: Path) -> dict[str, dict[str, int]]:
    """Module -> {imported module: first line that imports it}."""
    files = module_files(root)
    graph: dict[str, dict[str, int]] = {}
    for module, path in files.items():
        edges: dict[str, int] = {}
        for target, line in sorted(imports_of(module, path, files), key=lambda edge: edge[1]):
            edges.setdefault(target, line)
        graph[module] = edges
    return graph


def cycles(graph: dict[str, dict[str, int]]) -> list[str]:
    """Every cycle a depth-first walk closes, as "a -> b -> a" (each back edge once)."""
    found, state = [], {}

    def visit(name: str, trail: list[str]) -> None:
        state[name] = "open"
        for target in sorted(graph[name]):
            if state.get(target) == "open":
                found.append(" -> ".join(trail[trail.index(target):] + [target]))
            elif target not in state:
                visit(target, trail + [target])
        state[name] = "done"

    for start in sorted(graph):
        if start not in state:
            visit(start, [start])
    return found


def layer(module: str) -> int:
    parts = module.split(".")
    area = parts[1] if len(parts) > 1 else ""
    if area == "model":
        return 0
    if area == "frontend" or (len(parts) == 2 and area in BASE_HELPERS):
        return 1
    return 2 if area == "runtime" else 3


def _is_core(module: str) -> bool:
    """runtime/__init__.py and runtime/*.py."""
    parts = module.split(".")
    return parts[:2] == ["cosydesk", "runtime"] and len(parts) <= 3 and module != "cosydesk.runtime.backends"


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def layer_breaks(graph: dict[str, dict[str, int]]) -> list[str]:
    """Every import that points up a layer or crosses the runtime's internal boundaries, as a readable line."""
    breaks = []
    for module, edges in sorted(graph.items()):
        for target, line in edges.items():
            if (module, target) in ALLOWED_BREAKS:
                continue
            where = f"{module} (line {line}) imports {target}"
            if layer(target) > layer(module):
                breaks.append(f"{where}: layer {layer(module)} may not import layer {layer(target)}")
            elif _is_core(module) and any(_within(target, backend) for backend in BACKENDS):
                breaks.append(f"{where}: the runtime core reaches backends through cosydesk.runtime.backends only")
            else:
                for own, other in (BACKENDS, BACKENDS[::-1]):
                    if _within(module, own) and _within(target, other):
                        breaks.append(f"{where}: the cudagraph and tensorrt backends import nothing of each other")
    return breaks


def test_no_import_cycle_anywhere():
    assert cycles(import_graph(REPO_ROOT)) == []


def test_imports_point_down_the_layers():
    assert layer_breaks(import_graph(REPO_ROOT)) == []


def test_the_graph_sees_lazy_and_package_imports():
    """The real graph holds edges of every kind the checks rely on (so an empty or partial parse cannot pass)."""
    graph = import_graph(REPO_ROOT)
    assert "cosydesk.model.hift" in graph["cosydesk.model.networks"]  # inside a function
    assert "cosydesk.runtime.options" in graph["cosydesk"]  # under TYPE_CHECKING / in __getattr__
    assert "cosydesk.runtime.backends.cudagraph.model" in graph["cosydesk.runtime.backends"]  # the registry, lazily
    assert {layer(m) for m in graph} == {0, 1, 2, 3}
    assert ALLOWED_BREAKS.keys() <= {(m, t) for m, edges in graph.items() for t in edges}, "stale ALLOWED_BREAKS entry"


_BROKEN_PACKAGE = {
    "cosydesk/__init__.py": "",
    "cosydesk/paths.py": "",
    "cosydesk/model/__init__.py": "",
    "cosydesk/model/nets.py": "def load():\n    import cosydesk.runtime.core\n",  # lazy, upward
    "cosydesk/model/maths.py": "from cosydesk.paths import x\n",  # model reaches outside model/
    "cosydesk/frontend/__init__.py": "",
    "cosydesk/frontend/text.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                  "    from cosydesk.ui.window import W\n"),
    "cosydesk/runtime/__init__.py": "",
    "cosydesk/runtime/core.py": "from . import other\n",  # relative cycle core <-> other
    "cosydesk/runtime/other.py": "from .core import thing\n",
    "cosydesk/runtime/pipeline.py": "from cosydesk.runtime.backends.cudagraph.graphs import G\n",
    "cosydesk/runtime/backends/__init__.py": "from cosydesk.runtime.backends import cudagraph, tensorrt\n",
    "cosydesk/runtime/backends/cudagraph/__init__.py": "",
    "cosydesk/runtime/backends/cudagraph/graphs.py": "import cosydesk.runtime.backends.tensorrt.engines\n",
    "cosydesk/runtime/backends/tensorrt/__init__.py": "",
    "cosydesk/runtime/backends/tensorrt/engines.py": "import importlib\nimportlib.import_module('cosydesk.ui')\n",
    "cosydesk/ui/__init__.py": "",
    "cosydesk/ui/window.py": "from cosydesk.runtime import pipeline\n",  # downward: fine
}


def test_the_checks_catch_a_broken_package(tmp_path):
    for relative, text in _BROKEN_PACKAGE.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text, encoding="utf-8")
    graph = import_graph(tmp_path)
    assert cycles(graph) == ["cosydesk.runtime.core -> cosydesk.runtime.other -> cosydesk.runtime.core"]
    assert [line.split(":")[0] for line in layer_breaks(graph)] == [
        "cosydesk.frontend.text (line 3) imports cosydesk.ui.window",
        "cosydesk.model.maths (line 1) imports cosydesk.paths",
        "cosydesk.model.nets (line 2) imports cosydesk.runtime.core",
        "cosydesk.runtime.backends.cudagraph.graphs (line 1) imports cosydesk.runtime.backends.tensorrt.engines",
        "cosydesk.runtime.backends.tensorrt.engines (line 2) imports cosydesk.ui",
        "cosydesk.runtime.pipeline (line 1) imports cosydesk.runtime.backends.cudagraph.graphs",
    ]
