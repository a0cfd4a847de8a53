"""`cosydesk serve` as a user runs it: refusals are one line with exit code 2 (before any model loads), and a
real server process answers the openai client and stops cleanly on Ctrl-C."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time

import pytest

from tests.support.paths import REPO_ROOT
from tests.serve.conftest import SHORT_TEXT, openai


def cosydesk(*args: str, env: dict | None = None, **kwargs) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "OMP_NUM_THREADS": "1", **(env or {})}
    full_env.pop("COSYDESK_API_KEY", None)
    return subprocess.run([sys.executable, "-m", "cosydesk", *args], capture_output=True, text=True, env=full_env,
                          cwd=REPO_ROOT, timeout=120, **kwargs)


def one_error_line(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cosydesk: error: "), result.stderr
    return lines[0]


def test_public_bind_without_key_is_refused_before_loading():
    # the model folder does not exist: a refusal about the address proves nothing was loaded first
    line = one_error_line(cosydesk("serve", "--model", "/nonexistent/model", "--host", "0.0.0.0"))
    assert "--host 0.0.0.0" in line and "--api-key" in line


@pytest.mark.parametrize("args, says", [
    (["--host", "192.168.1.20", "--port", "9000"], "other machines"),
    (["--host", "::"], "other machines"),
    (["--api-key", ""], "empty"),
    (["--port", "70000"], "not a TCP port"),
    (["--queue", "-1"], "--queue"),
    (["--cors-origin", "localhost:3000"], "origin"),
])
def test_refusals_are_one_line_before_loading(args, says, capsys, monkeypatch):
    from cosydesk.cli import main

    monkeypatch.delenv("COSYDESK_API_KEY", raising=False)
    assert main(["serve", "--model", "/nonexistent/model", *args]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cosydesk: error: ") and says in lines[0]


def test_taken_port_is_a_one_line_error(capsys, monkeypatch):
    from cosydesk.cli import main

    monkeypatch.delenv("COSYDESK_API_KEY", raising=False)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--model", "/nonexistent/model", "--port", str(port)]) == 2
    line = capsys.readouterr().err.strip()
    assert line.startswith("cosydesk: error: ") and f"127.0.0.1:{port}" in line and "--port" in line


def test_serve_answers_then_stops_on_ctrl_c(tiny_v2_dir, voices_dir, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "OMP_NUM_THREADS": "1", "COSYDESK_DATA_DIR": str(tmp_path)}
    env.pop("COSYDESK_API_KEY", None)
    process = subprocess.Popen([sys.executable, "-m", "cosydesk", "serve", "--model", str(tiny_v2_dir), "--port", "0",
                                "--device", "cpu", "--quiet", "--queue", "4"],
                               stderr=subprocess.PIPE, text=True, env=env, cwd=REPO_ROOT)
    try:
        url, seen = None, []
        deadline = time.monotonic() + 120
        while url is None and time.monotonic() < deadline:
            line = process.stderr.readline()
            if not line:
                break
            seen.append(line)
            found = re.search(r"speech server on (http://127\.0\.0\.1:\d+/v1)", line)
            url = found.group(1) if found else None
        assert url, "".join(seen)
        with openai.OpenAI(base_url=url, api_key="x", max_retries=0, timeout=120) as client:
            speech = client.audio.speech.create(model="tts-1", voice="alloy", input=SHORT_TEXT, response_format="wav")
            assert speech.content[:4] == b"RIFF" and len(speech.content) > 1000
            assert client.models.list().data[0].id == tiny_v2_dir.name
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
