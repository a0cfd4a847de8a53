"""The one registry of environment variables (cosydesk/environment.py) and the EngineOptions built from it."""

from __future__ import annotations

import re

import pytest

from cosydesk import environment
from cosydesk.runtime.options import EngineOptions, active, using
from tests.support.paths import REPO_ROOT

ROOT = REPO_ROOT


def test_switch_and_count_readings():
    for value, expected in (("1", True), ("Yes", True), (" on ", True), ("0", False), ("OFF", False),
                            ("false", False), ("", None), ("maybe", None)):
        for default in (True, False):
            got = environment.switch("COSYDESK_PDL", default, {"COSYDESK_PDL": value})
            assert got is (default if expected is None else expected), (value, default)
    assert environment.switch("COSYDESK_PDL", True, {}) is True
    assert environment.count("COSYDESK_DECODE_AHEAD", 3, 1, {"COSYDESK_DECODE_AHEAD": "0"}) == 1
    assert environment.count("COSYDESK_DECODE_AHEAD", 3, 1, {"COSYDESK_DECODE_AHEAD": "-2"}) == 3
    assert environment.count("COSYDESK_DECODE_AHEAD", 3, 1, {"COSYDESK_DECODE_AHEAD": "5"}) == 5
    with pytest.raises(KeyError, match="not registered"):
        environment.switch("COSYDESK_NO_SUCH_THING", True, {})


def test_every_variable_the_code_reads_is_registered():
    """No COSYDESK_* name in the package outside the registry: a new variable must come with its docs."""
    registered = {v.name for v in environment.VARIABLES}
    used = set()
    for path in (ROOT / "cosydesk").rglob("*.py"):
        used |= set(re.findall(r"COSYDESK_[A-Z0-9_]+", path.read_text(encoding="utf-8")))
    assert used - registered == set(), f"unregistered: {sorted(used - registered)}"
    # every engine option has its variable, and nothing else in the gpu section
    gpu = {v.name for v in environment.VARIABLES if v.section == "gpu"}
    fields = {f"COSYDESK_{name.upper()}" for name in EngineOptions.__dataclass_fields__}
    assert gpu == fields


def test_configuration_doc_is_generated_from_the_registry():
    committed = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert committed == environment.markdown(), \
        "docs/configuration.md is stale: python -m cosydesk.environment > docs/configuration.md"


def test_engine_options_from_env_and_active():
    assert EngineOptions.from_env({}) == EngineOptions()
    options = EngineOptions.from_env({"COSYDESK_DECODE_AHEAD": "1", "COSYDESK_PDL": "off",
                                      "COSYDESK_FIRST_CHUNK_SHARED_STEPS": "0"})
    assert (options.decode_ahead, options.pdl, options.first_chunk_shared_steps) == (1, False, 0)
    assert options.flow_kernels and options.compile
    with pytest.raises(ValueError, match="decode_ahead"):
        EngineOptions(decode_ahead=0)
    mine = EngineOptions(row_estimator=False)
    with using(mine):
        assert active() is mine
    assert active() == EngineOptions.from_env()


def test_active_reads_the_environment_outside_a_build(monkeypatch):
    monkeypatch.setenv("COSYDESK_V1_HIFT_GRAPHS", "0")
    assert active().v1_hift_graphs is False
    with using(EngineOptions()):
        assert active().v1_hift_graphs is True  # a Synthesizer's options win over the environment
