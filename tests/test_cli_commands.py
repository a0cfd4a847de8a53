"""Explicit command registration (cosydesk/cli.py COMMANDS): --help lists every command without importing any
command module or torch, each command's module is imported when it runs, and a module that fails to import is
a one-line error naming it instead of a command that silently disappears."""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys

import pytest

from cosydesk import cli
from tests.support.paths import REPO_ROOT
from tests.test_cli import run_cli


def _registered_help(module_name: str, name: str) -> str:
    sub = argparse.ArgumentParser().add_subparsers()
    importlib.import_module(module_name).add_parser(sub)
    return next(action.help for action in sub._choices_actions if action.dest == name)


@pytest.mark.parametrize("name, module_name, help_text", cli.COMMANDS)
def test_the_listed_help_is_the_one_the_module_registers(name, module_name, help_text):
    assert _registered_help(module_name, name) == help_text


def test_help_lists_every_command_and_imports_no_command_module_nor_torch():
    probe = ("import sys, contextlib, io\n"
             "from cosydesk import cli\n"
             "out = io.StringIO()\n"
             "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(out):\n"
             "    cli.main(['--help'])\n"
             "loaded = [m for _, m, _ in cli.COMMANDS if m in sys.modules] + [m for m in ('torch',) if m in sys.modules]\n"
             "print(out.getvalue()); print('LOADED', loaded)\n")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO_ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "LOADED []" in result.stdout
    for name in ("say", "models", *(entry[0] for entry in cli.COMMANDS)):
        assert name in result.stdout
    assert run_cli("--help").returncode == 0  # the real entry point as well


def test_a_command_whose_module_cannot_import_fails_loudly(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "cosydesk.serve.cli", None)  # import cosydesk.serve.cli -> ImportError
    assert cli.main(["serve", "--port", "0"]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("cosydesk: error: the `serve` command cannot start") and "cosydesk.serve.cli" in error
    assert "\n" not in error
    # the other commands are unaffected
    with pytest.raises(SystemExit) as done:
        cli.main(["doctor", "--help"])
    assert done.value.code == 0 and "--quick" in capsys.readouterr().out
