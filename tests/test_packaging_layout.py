"""pyproject's explicit package list covers every package, so a wheel install has all modules and resources."""

from __future__ import annotations

import tomllib

from tests.support.paths import REPO_ROOT


def test_every_package_is_listed():
    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    found = {".".join(p.relative_to(REPO_ROOT).parts[:-1]) for p in (REPO_ROOT / "cosydesk").rglob("__init__.py")}
    assert found - listed == set(), f"add these to [tool.setuptools] packages: {sorted(found - listed)}"
    assert config["package-dir"]["cosydesk.resources"] == "resources"
    assert (REPO_ROOT / "resources" / "bench_corpus_zh.txt").is_file()
