"""The shape of the code base: tests mirror the package, modules stay small, every dependency is used.

* A test file sits in the tests/ folder that mirrors a cosydesk package (tests/ui/ for cosydesk/ui/,
  tests/test_x.py for cosydesk/x.py), and a test named after a module (test_<module>[_more].py, the longest
  matching module name counts) sits in the folder mirroring that module. Cross-cutting suites
  (tests/reliability, tests/support, tests/data, tests/fixtures) are exempt.
* No cosydesk module is over MAX_MODULE_LINES lines.
* Every [project] dependency of pyproject.toml is imported by cosydesk/ or tests/.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import tomllib
from collections import defaultdict
from pathlib import Path

from tests.support.paths import REPO_ROOT, TESTS

PACKAGE = REPO_ROOT / "cosydesk"
CROSS_CUTTING = {"reliability", "support", "data", "fixtures"}
MAX_MODULE_LINES = 560
# Packages whose tests already sit where the package is going (a package move in progress: source -> target).
# Once a package has moved, its entry fails test_pending_package_moves_are_still_pending.
PENDING_MOVES: dict[str, str] = {}
# Over the limit and being split in another branch; once it is under, the limit test says to remove it here.
OVER_LIMIT_FOR_NOW: set[str] = set()


def _sources() -> list[Path]:
    """cosydesk's Python files, relative to cosydesk/ (resources/ is data, linked in for development)."""
    return sorted(p.relative_to(PACKAGE) for p in PACKAGE.rglob("*.py") if "resources" not in p.relative_to(PACKAGE).parts)


def _mirror(folder: Path) -> str:
    """The tests/ folder (relative, "." for tests/ itself) that mirrors the cosydesk folder ``folder``."""
    text = folder.as_posix()
    for source, target in PENDING_MOVES.items():
        if text == source or text.startswith(source + "/"):
            text = target + text[len(source):]
    return text


def _module_homes() -> dict[str, set[str]]:
    """Module or package name -> the tests/ folders that mirror it (a module: its package's mirror; a package:
    its own)."""
    homes: dict[str, set[str]] = defaultdict(set)
    for relative in _sources():
        if relative.name == "__init__.py":
            if relative.parent != Path("."):
                homes[relative.parent.name].add(_mirror(relative.parent))
        elif relative.stem != "__main__":
            homes[relative.stem].add(_mirror(relative.parent))
    return homes


def _test_files() -> list[Path]:
    return sorted(p.relative_to(TESTS) for p in TESTS.rglob("test_*.py") if p.relative_to(TESTS).parts[0] not in CROSS_CUTTING)


def _tested_module(test_name: str, homes: dict[str, set[str]]) -> str | None:
    """The module a test file is named after: the longest leading run of its words that names one."""
    words = test_name.removeprefix("test_").split("_")
    for count in range(len(words), 0, -1):
        if (name := "_".join(words[:count])) in homes:
            return name
    return None


def test_every_test_folder_mirrors_a_package():
    packages = {_mirror(relative.parent) for relative in _sources() if relative.name == "__init__.py"}
    strays = [f"tests/{relative}" for relative in _test_files() if relative.parent.as_posix() not in packages]
    assert strays == [], f"test files in folders that mirror no cosydesk package: {strays}"


def test_a_test_named_after_a_module_sits_in_that_modules_mirror_folder():
    homes = _module_homes()
    misplaced = []
    for relative in _test_files():
        name = _tested_module(relative.stem, homes)
        if name is not None and relative.parent.as_posix() not in homes[name]:
            wanted = " or ".join(f"tests/{home}/" if home != "." else "tests/" for home in sorted(homes[name]))
            misplaced.append(f"tests/{relative} is named after {name!r}: it belongs in {wanted}")
    assert misplaced == [], "\n".join(misplaced)


def test_pending_package_moves_are_still_pending():
    for source, target in PENDING_MOVES.items():
        assert (PACKAGE / source / "__init__.py").is_file() and not (PACKAGE / target).exists(), \
            f"cosydesk/{source} has moved to cosydesk/{target}: delete its PENDING_MOVES entry in {__file__}"


def test_no_module_is_over_the_line_limit():
    lengths = {relative.as_posix(): len((PACKAGE / relative).read_text(encoding="utf-8").splitlines())
               for relative in _sources()}
    over = {name: n for name, n in lengths.items() if n > MAX_MODULE_LINES}
    assert set(over) - OVER_LIMIT_FOR_NOW == set(), \
        f"modules over {MAX_MODULE_LINES} lines (split them along their concerns): {over}"
    assert OVER_LIMIT_FOR_NOW <= set(over), \
        f"now within {MAX_MODULE_LINES} lines, remove from OVER_LIMIT_FOR_NOW: {sorted(OVER_LIMIT_FOR_NOW - set(over))}"


def _normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _imported_top_level_names() -> set[str]:
    names: set[str] = set()
    for path in [*PACKAGE.rglob("*.py"), *TESTS.rglob("*.py")]:
        if "resources" in path.relative_to(REPO_ROOT).parts or "fixtures" in path.relative_to(REPO_ROOT).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split(".")[0])
    return names


def test_every_declared_dependency_is_imported():
    declared = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    providers: dict[str, set[str]] = defaultdict(set)  # distribution -> the top-level modules it installs
    for module, distributions in importlib.metadata.packages_distributions().items():
        for distribution in distributions:
            providers[_normalised(distribution)].add(module)
    imported = _imported_top_level_names()
    unused = []
    for requirement in declared:
        distribution = _normalised(re.match(r"[A-Za-z0-9_.-]+", requirement).group(0))
        assert providers[distribution], f"{requirement!r} is declared but not installed here"
        if not providers[distribution] & imported:
            unused.append(requirement)
    assert unused == [], f"declared in pyproject.toml but imported by nothing in cosydesk/ or tests/: {unused}"
