"""Print the Debian/Ubuntu packages that README.md names, so .ci/run installs exactly those (one source of truth).

    python3 .ci/readme_packages.py system   # the Set up block (<!-- system-packages -->)
    python3 .ci/readme_packages.py test     # the packages the tests use (<!-- test-packages -->)
    python3 .ci/readme_packages.py install  # the shell lines of the install block (<!-- install -->)

Only `apt-get install` lines count; their options (-y ...) and `sudo` are dropped. tests/test_readme_ci.py
checks that .ci/run calls this for both blocks and lists no package of its own.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

BLOCKS = {"system": "system-packages", "test": "test-packages"}


def apt_packages(readme_text: str, block: str) -> list[str]:
    """Packages of every `apt-get install` line inside <!-- block --> ... <!-- /block -->."""
    match = re.search(rf"<!--\s*{block}\s*-->(.*?)<!--\s*/{block}\s*-->", readme_text, re.S)
    if match is None:
        raise ValueError(f"README.md has no <!-- {block} --> ... <!-- /{block} --> block")
    packages: list[str] = []
    for line in re.findall(r"apt-get install[^\n`]*", match.group(1)):
        packages += [word for word in line.split()[2:] if not word.startswith("-")]
    if not packages:
        raise ValueError(f"the README's {block} block has no apt-get install line")
    return packages


def install_lines(readme_text: str) -> list[str]:
    """The shell lines of <!-- install --> ... <!-- /install --> (code fences, comments and `$ ` prompts removed)."""
    match = re.search(r"<!--\s*install\s*-->(.*?)<!--\s*/install\s*-->", readme_text, re.S)
    if match is None:
        raise ValueError("README.md has no <!-- install --> ... <!-- /install --> block")
    lines = []
    for raw in match.group(1).splitlines():
        line = raw.strip()
        if line and not line.startswith(("```", "#")):
            lines.append(line[2:] if line.startswith("$ ") else line)
    if not lines:
        raise ValueError("the README's install block is empty")
    return lines


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in (*BLOCKS, "install"):
        print(f"usage: readme_packages.py {{{'|'.join(BLOCKS)}|install}}", file=sys.stderr)
        return 2
    readme = Path(__file__).resolve().parents[1] / "README.md"
    if argv[0] == "install":
        print("\n".join(install_lines(readme.read_text(encoding="utf-8"))))
        return 0
    print(" ".join(apt_packages(readme.read_text(encoding="utf-8"), BLOCKS[argv[0]])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
