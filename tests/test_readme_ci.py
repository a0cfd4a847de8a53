"""The README is the one source of the system packages, and .ci/run installs exactly those.

A package added to .ci/run but not to the README (or the other way round) is the drift a newcomer hits: the
suite passes in CI and fails on a fresh machine. .ci/run must take its package list from the README's blocks
(through .ci/readme_packages.py) and run the README's install and test commands.
"""

from __future__ import annotations

import importlib.util
import re

import pytest

from tests.support.paths import REPO_ROOT

ROOT = REPO_ROOT


def _readme_packages():
    spec = importlib.util.spec_from_file_location("readme_packages", ROOT / ".ci" / "readme_packages.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _block(text: str, name: str) -> str:
    match = re.search(rf"<!--\s*{name}\s*-->(.*?)<!--\s*/{name}\s*-->", text, re.S)
    assert match, f"README.md has no <!-- {name} --> block"
    return match.group(1)


def test_parser_reads_apt_lines_only():
    module = _readme_packages()
    text = ("<!-- system-packages -->\n```bash\n# Debian\nsudo apt-get install -y a b-c\n"
            "sudo dnf install -y x y\n```\n<!-- /system-packages -->")
    assert module.apt_packages(text, "system-packages") == ["a", "b-c"]
    with pytest.raises(ValueError):
        module.apt_packages("nothing here", "system-packages")
    with pytest.raises(ValueError):
        module.apt_packages("<!-- test-packages -->none<!-- /test-packages -->", "test-packages")


def test_ci_installs_exactly_the_readme_packages():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    module = _readme_packages()
    system = module.apt_packages(readme, "system-packages")
    tests = module.apt_packages(readme, "test-packages")
    assert "python3 .ci/readme_packages.py system" in ci and "python3 .ci/readme_packages.py test" in ci
    # .ci/run names no package itself: every apt package word in it would be a second list.
    code = "\n".join(line for line in ci.splitlines() if not line.lstrip().startswith("#"))
    for package in system + tests:
        assert not re.search(rf"(?<![\w.-]){re.escape(package)}(?![\w.-])", code), \
            f".ci/run names {package} itself; it must come from the README only"
    # What the app needs at run time must be in the Set up block, not only among the test packages.
    for needed in ("libportaudio2", "libxcb-icccm4", "libxcb-keysyms1", "libxcb-cursor0"):
        assert needed in system, f"README Set up block lacks {needed}"


def test_ci_runs_the_readme_install_and_test_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    test_lines = [line.strip() for line in _block(readme, "test").splitlines()
                  if line.strip() and not line.strip().startswith("```")]
    assert test_lines == ["python -m pytest -q"]
    assert ci.rstrip().splitlines()[-1].strip() == test_lines[0], ".ci/run must end with the README's test command"
    install = _block(readme, "install")
    assert "pip install torch==2.13.0" in install and '-e ".[test]"' in install
    # .ci/run runs the install block itself, so CI is the README's install on a clean machine.
    assert 'eval "$(python3 .ci/readme_packages.py install)"' in ci
    assert _readme_packages().install_lines(readme) == [
        line.strip() for line in install.splitlines() if line.strip() and not line.strip().startswith("```")]


def test_one_cjk_font_recommendation():
    """README and CI recommend the same CJK font as the code (doctor, screenshots)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    code = "\n".join(path.read_text(encoding="utf-8") for path in (ROOT / "cosydesk").rglob("*.py"))
    fonts = set(re.findall(r"fonts-(?:wqy-microhei|wqy-zenhei|noto-cjk)", readme + code))
    assert fonts == {"fonts-wqy-microhei"}, f"more than one CJK font recommended: {sorted(fonts)}"
