"""The README's install command is complete: in a fresh virtual environment, running exactly the commands
between `<!-- install -->` and `<!-- /install -->` in README.md yields a working `cosydesk doctor` and
`cosydesk say` (against a tiny official-format model).

The slow test copies the checkout (tracked and untracked-but-not-ignored files, i.e. what a `git clone` of
this tree would hold) into a temporary folder and runs the README's commands there from a fresh venv, so a
README that creates `.venv` in the repository root does not touch the developer's environment.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.paths import REPO_ROOT

ROOT = REPO_ROOT
_BLOCK = re.compile(r"<!--\s*install\s*-->(.*?)<!--\s*/install\s*-->", re.S)


def install_commands(readme_text: str) -> list[str]:
    """The shell lines of the README's install block: the same reader .ci/run uses (.ci/readme_packages.py)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("readme_packages", ROOT / ".ci" / "readme_packages.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.install_lines(readme_text)


def test_install_block_parsing():
    text = "intro\n<!-- install -->\n```bash\n# comment\n$ pip install torch==2.13.0\npip install -e .\n```\n" \
           "<!-- /install -->\nmore"
    assert install_commands(text) == ["pip install torch==2.13.0", "pip install -e ."]
    with pytest.raises(ValueError):
        install_commands("no block here")


def _checkout_files() -> list[Path]:
    listing = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout
    return [Path(name) for name in listing.split("\0") if name and (ROOT / name).is_file()]


@pytest.mark.heavy  # ~2 min of pip; CI itself runs the install block on a clean machine (.ci/run, test_readme_ci)
def test_readme_install_command_gives_working_doctor_and_say(tmp_path):
    readme = ROOT / "README.md"
    assert readme.is_file(), "README.md is missing"
    commands = install_commands(readme.read_text(encoding="utf-8"))

    checkout = tmp_path / "checkout"
    for relative in _checkout_files():
        (checkout / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / relative, checkout / relative)

    # The tiny model is made by the test's own interpreter: the README installs the app, not test extras.
    from cosydesk.synthetic.tiny_model import write_tiny_model

    model = write_tiny_model(tmp_path / "tiny-v2", version="v2")
    out_wav = tmp_path / "hello.wav"

    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if ".venv" not in p)
    env["COSYDESK_DATA_DIR"] = str(tmp_path / "data")  # a first-run user: no models, no settings
    env["QT_QPA_PLATFORM"] = "offscreen"
    python = shutil.which("python3", path=env["PATH"]) or sys.executable
    script = "\n".join([
        "set -euo pipefail",
        f"{python} -m venv {tmp_path / 'fresh-venv'}",
        f". {tmp_path / 'fresh-venv' / 'bin' / 'activate'}",
        "echo '== README install commands'",
        *commands,
        "echo '== cosydesk doctor'",
        "cosydesk doctor --quick",
        "echo '== cosydesk say'",
        f"cosydesk say 'Hello from a fresh install.' --model {model} -o {out_wav}",
    ])
    start = time.perf_counter()
    result = subprocess.run(["bash", "-c", script], cwd=checkout, env=env, capture_output=True, text=True,
                            timeout=1800)
    elapsed = time.perf_counter() - start
    log = f"{result.stdout[-6000:]}\n{result.stderr[-6000:]}"
    assert result.returncode == 0, f"README install / doctor / say failed after {elapsed:.0f} s:\n{log}"
    assert out_wav.is_file() and out_wav.stat().st_size > 44, log
    doctor_output = result.stdout.split("== cosydesk doctor", 1)[1].split("== cosydesk say", 1)[0]
    assert "[FAIL]" not in doctor_output and "[OK  ] torch" in doctor_output, log
    print(f"fresh install + doctor + say took {elapsed:.0f} s")
