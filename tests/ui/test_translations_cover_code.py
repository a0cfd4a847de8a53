"""zh_CN keeps up with the code: every tr() string lupdate finds in cosydesk/ui is in the committed .ts.

test_translations_complete.py only looks at the committed .ts; this one runs pyside6-lupdate on the sources
into a temporary .ts, so a string added to the UI without running build_translations.py fails here. Strings in
contexts that no tr() looks up at run time (`parent.tr`) are moved the way build_translations.py moves them, and
a context it does not know fails (its strings would stay English however well translated).
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import cosydesk.ui
from cosydesk.ui.resources import translations_dir

PLACEHOLDER = re.compile(r"\{\w*\}|%\d+")


def _lupdate() -> str | None:
    found = shutil.which("pyside6-lupdate")
    beside_python = Path(sys.executable).parent / "pyside6-lupdate"
    return found or (str(beside_python) if beside_python.exists() else None)


def _build_module():
    spec = importlib.util.spec_from_file_location("build_translations", translations_dir() / "build_translations.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _messages(root: ET.Element) -> dict[tuple[str, str], str]:
    """(context, source) -> translation text, for every message of a .ts tree."""
    return {(context.findtext("name") or "", message.findtext("source") or ""): message.findtext("translation") or ""
            for context in root.iter("context") for message in context.iter("message")}


def _committed() -> ET.Element:
    return ET.parse(translations_dir() / "cosydesk_zh_CN.ts").getroot()


def test_committed_ts_has_every_tr_string_in_the_ui_code(tmp_path):
    tool = _lupdate()
    if tool is None:
        pytest.skip("pyside6-lupdate is not installed (it comes with PySide6-Essentials)")
    sources = sorted(str(p) for p in Path(cosydesk.ui.__file__).parent.glob("*.py"))
    fresh = tmp_path / "fresh.ts"
    subprocess.run([tool, *sources, "-locations", "none", "-ts", str(fresh)],
                   check=True, capture_output=True, timeout=60)
    fresh_root = ET.parse(fresh).getroot()
    unknown = _build_module().relocate_contexts(fresh_root)
    assert unknown == [], (f"tr() contexts {unknown} are never looked up at run time: use self.tr() in the QObject "
                           "subclass that shows the text, or add them to RUNTIME_CONTEXTS in build_translations.py")
    in_code = set(_messages(fresh_root))
    assert len(in_code) > 100, f"lupdate found only {len(in_code)} strings in {sources}"
    committed = set(_messages(_committed()))
    lacking = sorted(in_code - committed)
    assert lacking == [], ("strings in cosydesk/ui missing from cosydesk_zh_CN.ts (add them to ZH_CN in "
                           "resources/translations/build_translations.py and run it):\n"
                           + "\n".join(f"  [{context}] {source!r}" for context, source in lacking))
    stale = sorted(committed - in_code)
    assert stale == [], "obsolete entries in cosydesk_zh_CN.ts (rerun build_translations.py):\n" + "\n".join(
        f"  [{context}] {source!r}" for context, source in stale)


def test_translations_keep_placeholders_accelerators_and_ellipses():
    wrong = []
    for (context, source), translation in _messages(_committed()).items():
        if sorted(PLACEHOLDER.findall(source)) != sorted(PLACEHOLDER.findall(translation)):
            wrong.append(f"[{context}] {source!r} -> {translation!r}: placeholders differ")
        if source.count("…") != translation.count("…"):
            wrong.append(f"[{context}] {source!r} -> {translation!r}: ellipsis count differs")
        if re.search(r"&\w", source) and not re.search(r"\(&\w\)|&\w", translation):
            wrong.append(f"[{context}] {source!r} -> {translation!r}: accelerator lost")
    assert wrong == []
