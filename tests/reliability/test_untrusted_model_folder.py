"""A model folder is untrusted input (downloaded or received): reading it never runs its code, never asks a
question, and never spends unbounded time or memory. Each hostile file ends in one clear error naming it.

Cases: tests/data/hostile_model_files.json (the yaml reader's limits).
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from cosydesk.model.config import ConfigError, read_yaml
from tests.conftest import fixture_dir

CORPUS = json.loads((Path(__file__).resolve().parents[1] / "data" / "hostile_model_files.json").read_text(encoding="utf-8"))
YAML_CASES = {case["id"]: case for case in CORPUS["yaml_cases"]}
REFUSE_WITHIN_S = 3.0  # the slowest case (200,000 '[') takes ~0.3 s on 2 CPU cores


def one_line(message: str) -> bool:
    return bool(message.strip()) and "\n" not in message.strip() and "Traceback" not in message


def within(limit_s: float, work):
    """work() on a helper thread; fail instead of hanging the suite when it runs past limit_s."""
    box: dict = {}

    def target():
        try:
            box["value"] = work()
        except BaseException as error:  # noqa: BLE001 - re-raised on the test thread
            box["error"] = error

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(limit_s)
    assert not thread.is_alive(), f"still running after {limit_s:.0f} s"
    if "error" in box:
        raise box["error"]
    return box["value"]


def yaml_bytes(case: dict) -> bytes:
    if "bytes_hex" in case:
        return bytes.fromhex(case["bytes_hex"])
    if "repeat" in case:
        spec = case["repeat"]
        body = "".join(spec["unit"].format(i=i, i_spaces=" " * i) for i in range(spec["count"]))
        return (spec["prefix"] + body).encode("utf-8")
    return case["text"].encode("utf-8")


@pytest.mark.parametrize("case_id", list(YAML_CASES))
def test_hostile_yaml_is_refused_quickly(case_id, tmp_path):
    case = YAML_CASES[case_id]
    path = tmp_path / "cosyvoice2.yaml"
    path.write_bytes(yaml_bytes(case))
    start = time.perf_counter()
    with pytest.raises(ConfigError) as caught:
        within(30.0, lambda: read_yaml(path))
    elapsed = time.perf_counter() - start
    message = str(caught.value)
    assert elapsed < REFUSE_WITHIN_S, f"{case_id}: refused only after {elapsed:.1f} s"
    assert one_line(message), message
    assert str(path) in message, f"{case_id}: the message does not name the file: {message!r}"
    assert case["message"].lower() in message.lower(), f"{case_id}: {message!r} does not say {case['message']!r}"


def test_yaml_that_is_a_fifo_is_refused_without_blocking(tmp_path):
    import os

    path = tmp_path / "cosyvoice2.yaml"
    os.mkfifo(path)
    with pytest.raises(ConfigError, match="not a regular file"):
        within(5.0, lambda: read_yaml(path))


@pytest.mark.parametrize("version,name", [("v1", "cosyvoice.yaml"), ("v2", "cosyvoice2.yaml"), ("v3", "cosyvoice3.yaml")])
def test_official_yaml_stays_within_the_limits(version, name):
    """The limits leave room: the official files (with their anchors, !ref arithmetic and deep nesting) load."""
    config = read_yaml(fixture_dir(version) / "model" / name)
    assert config["llm"].kind == "new"
