"""Where the tests find the repository and the files they read (one place, so moving a test file breaks nothing).

REPO_ROOT is found by walking up to pyproject.toml, not by counting `parents[N]` from a test file's own path.
Tests read tests/fixtures/... and tests/data/... only through the helpers below.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np


def _repo_root() -> Path:
    for folder in Path(__file__).resolve().parents:
        if (folder / "pyproject.toml").is_file() and (folder / "tests").is_dir():
            return folder
    raise RuntimeError(f"no pyproject.toml above {__file__}: the tests must run from a CosyDesk checkout")


REPO_ROOT = _repo_root()
TESTS = REPO_ROOT / "tests"
# The official-reference fixtures travel with the repository (provenance: tests/fixtures/cosyvoice-official/README.md).
FIXTURES = TESTS / "fixtures" / "cosyvoice-official"
# Corpora of bad inputs, state files and model folders (JSON) shared by the reliability tests.
TEST_DATA = TESTS / "data"

_VERSIONS = ("v1", "v2", "v3")


def fixture_dir(version: str) -> Path:
    """Folder of the official tiny fixture for 'v1', 'v2' or 'v3' (its model/ folder and golden.npz)."""
    if version not in _VERSIONS:
        raise ValueError(f"fixture version {version!r}: expected one of {', '.join(_VERSIONS)}")
    return FIXTURES / f"{version}-tiny"


def load_golden(version: str) -> dict[str, np.ndarray]:
    """The reference tensors of one fixture (golden.npz), read without pickles."""
    with np.load(fixture_dir(version) / "golden.npz", allow_pickle=False) as z:
        return {key: z[key] for key in z.files}


def golden_meta(golden: dict[str, np.ndarray]) -> dict:
    """The JSON metadata stored in a golden.npz (case parameters, seeds)."""
    return json.loads(str(golden["meta_json"]))


def load_test_data(name: str) -> Any:
    """A JSON corpus from tests/data (e.g. "bad_inputs.json")."""
    return json.loads((TEST_DATA / name).read_text(encoding="utf-8"))
