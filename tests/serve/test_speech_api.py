"""`/v1/audio/speech` and friends through the real `openai` client against a loopback server (tiny v2 model)."""

from __future__ import annotations

import http.client
import io
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np
import pytest
import soundfile as sf

from tests.serve.conftest import (
    LONG_TEXT,
    PROFILE_NAME,
    SHORT_TEXT,
    HoldAfterFirstChunk,
    HoldBeforeStart,
    SynthProxy,
    openai,
    openai_client,
    running_server,
)

ERROR_KEYS = {"message", "type", "param", "code"}


def job_of(engine, response_headers):
    assert engine.wait_idle(60)
    job_id = int(response_headers["x-request-id"])
    return next(job for job in engine.finished if job.id == job_id)


def decode(fmt: str, data: bytes) -> tuple[np.ndarray, int]:
    if fmt == "pcm":
        return np.frombuffer(data, dtype="<i2").astype(np.float32) / 32767.0, 24000
    return sf.read(io.BytesIO(data), dtype="float32")


def assert_openai_error(body: dict, param=None, code=None) -> dict:
    assert set(body) == {"error"} and set(body["error"]) == ERROR_KEYS, body
    error = body["error"]
    assert isinstance(error["message"], str) and len(error["message"]) > 10 and isinstance(error["type"], str)
    if param is not None:
        assert error["param"] == param, error
    if code is not None:
        assert error["code"] == code, error
    return error


@pytest.mark.parametrize("fmt, media_type", [("wav", "audio/wav"), ("flac", "audio/flac"), ("mp3", "audio/mpeg"),
                                             ("opus", "audio/ogg"), ("pcm", "audio/pcm")])
def test_every_format_decodes(server, client, fmt, media_type):
    _, engine = server
    result = client.audio.speech.create(model="tts-1", voice="alloy", input=SHORT_TEXT, response_format=fmt)
    assert result.response.status_code == 200
    assert result.response.headers["content-type"] == media_type
    audio, rate = decode(fmt, result.content)
    assert rate == 24000 and int(result.response.headers["x-sample-rate"]) == 24000
    job = job_of(engine, result.response.headers)
    assert job.state == "done" and job.samples > 2400
    if fmt in ("wav", "flac", "pcm", "opus"):  # sample-exact containers
        assert len(audio) == job.samples
    else:  # mp3: the encoder's delay and last frame pad it (576 samples a frame at 24 kHz)
        assert job.samples <= len(audio) <= job.samples + 4 * 576
    assert np.isfinite(audio).all() and np.abs(audio).max() > 1e-3


@pytest.mark.parametrize("fmt", ["pcm", "wav", "mp3", "opus"])
def test_streamed_bytes_arrive_before_synthesis_ends(tiny_synth, fmt):
    """The engine is held after its first chunk until the client has bytes: a server that buffered the
    response would never release it (the hold then times out and the test fails)."""
    synth = HoldAfterFirstChunk(tiny_synth)
    with running_server(synth) as (server, engine), openai_client(server) as client:
        start = time.perf_counter()
        with client.audio.speech.with_streaming_response.create(model="tts-1", voice="nova", input=LONG_TEXT,
                                                                response_format=fmt) as response:
            pieces = []
            for piece in response.iter_bytes():
                if piece and not pieces:
                    first_byte = time.perf_counter()
                    synth.release.set()
                pieces.append(piece)
            headers = response.headers
        job = job_of(engine, headers)
    assert synth.resumed_by == ["release"]
    assert job.state == "done" and job.chunks >= 2
    body = b"".join(pieces)
    assert len(pieces[0]) < len(body)
    audio, _ = decode(fmt, body)
    assert len(audio) >= job.samples
    print(f"{fmt}: first bytes after {1000 * (first_byte - start):.0f} ms ({len(pieces[0])} bytes), "
          f"last chunk synthesised after {1000 * (job.chunk_times[-1] - start):.0f} ms, {job.chunks} chunks")


def test_flac_is_sent_whole_with_its_length(client):
    result = client.audio.speech.create(model="tts-1", voice="alloy", input=SHORT_TEXT, response_format="flac")
    assert int(result.response.headers["content-length"]) == len(result.content)
    with sf.SoundFile(io.BytesIO(result.content)) as flac:
        assert flac.frames > 0 and flac.samplerate == 24000


BAD_OPENAI_CALLS = [
    (dict(input=""), "input", "empty_input"),
    (dict(input="   \n"), "input", "empty_input"),
    (dict(input="!!! ??? ..."), "input", "empty_input"),  # found by the engine's text frontend
    (dict(input="x" * 5000), "input", "input_too_long"),
    (dict(voice="no-such-voice"), "voice", "voice_not_found"),
    (dict(speed=0.1), "speed", "out_of_range"),
    (dict(speed=4.5), "speed", "out_of_range"),
    (dict(response_format="aac"), "response_format", "unsupported_format"),
    (dict(stream_format="sse"), "stream_format", "unsupported_format"),
    (dict(model="whisper-1"), "model", "model_not_found"),
    (dict(voice="英文女", instructions="用开心的语气说"), "instructions", "unsupported_mode"),  # SFT voice on v2
]


@pytest.mark.parametrize("changes, param, code", BAD_OPENAI_CALLS, ids=[f"{p}-{c}-{i}" for i, (_, p, c) in
                                                                         enumerate(BAD_OPENAI_CALLS)])
def test_bad_input_is_a_400_in_openai_shape(server, client, changes, param, code):
    _, engine = server
    arguments = dict(model="tts-1", voice="alloy", input=SHORT_TEXT, response_format="wav") | changes
    with pytest.raises(openai.BadRequestError) as raised:
        client.audio.speech.create(**arguments)
    assert raised.value.status_code == 400
    assert_openai_error(raised.value.response.json(), param, code)
    ok = client.audio.speech.create(model="tts-1", voice="alloy", input=SHORT_TEXT, response_format="pcm")
    assert len(ok.content) > 0  # and the server keeps serving


BAD_RAW_BODIES = [
    (b'{"input": "hi", "voice": "alloy"', "application/json", 400, "invalid_json"),
    (b'["input", "voice"]', "application/json", 400, "invalid_json"),
    (b"\xff\xfe not utf-8", "application/json", 400, "invalid_json"),
    (b'{"voice": "alloy"}', "application/json", 400, "missing"),
    (b'{"input": "hi"}', "application/json", 400, "missing"),
    (b'{"input": 42, "voice": "alloy"}', "application/json", 400, "invalid_type"),
    (b'{"input": "hi", "voice": "alloy", "speed": true}', "application/json", 400, "invalid_type"),
    (b'{"input": "hi", "voice": "alloy", "speed": "fast"}', "application/json", 400, "invalid_type"),
    (b'{"input": "hi", "voice": "alloy", "response_format": "ogg"}', "application/json", 400, "unsupported_format"),
    (b'{"input": "hi", "voice": "alloy"}', "text/plain", 415, "unsupported_media_type"),
    (b'{"input": "' + b"a" * 100_000 + b'", "voice": "alloy"}', "application/json", 413, "body_too_large"),
]


@pytest.mark.parametrize("body, content_type, status, code", BAD_RAW_BODIES,
                         ids=[f"{s}-{c}-{i}" for i, (_, _, s, c) in enumerate(BAD_RAW_BODIES)])
def test_bad_body_is_a_4xx_in_openai_shape(server, body, content_type, status, code):
    url = server[0].base_url + "/audio/speech"
    response = httpx.post(url, content=body, headers={"Content-Type": content_type}, timeout=60)
    assert response.status_code == status
    assert_openai_error(response.json(), code=code)


def test_body_without_length_is_limited_too(server):
    """A chunked upload (no Content-Length) is cut off at the limit, not read to the end."""
    def chunks():
        yield b'{"input": "'
        for _ in range(200):
            yield b"a" * 1000
        yield b'", "voice": "alloy"}'

    response = httpx.post(server[0].base_url + "/audio/speech", content=chunks(),
                          headers={"Content-Type": "application/json"}, timeout=60)
    assert response.status_code == 413
    assert_openai_error(response.json(), code="body_too_large")


def test_unknown_endpoint_and_method_use_the_error_shape(server):
    base = server[0].base_url
    assert_openai_error(httpx.get(base + "/audio/transcriptions").json(), code="not_found")
    response = httpx.get(base + "/audio/speech")
    assert response.status_code == 405
    assert_openai_error(response.json(), code="method_not_allowed")


def test_models_and_voices(server, client):
    base = server[0].base_url
    ids = [model.id for model in client.models.list().data]
    assert ids[0] == "tiny-v2" and "tts-1" in ids
    assert client.models.retrieve("tts-1").id == "tts-1"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("whisper-1")
    listing = httpx.get(base + "/audio/voices").json()
    voices = {voice["id"]: voice for voice in listing["data"]}
    assert voices["英文女"] == {"id": "英文女", "object": "voice", "kind": "speaker", "language": "en", "styles": False}
    assert voices["中文男"]["language"] == "zh"
    assert voices[PROFILE_NAME]["kind"] == "profile" and voices[PROFILE_NAME]["styles"] is True
    assert voices[PROFILE_NAME]["language"] == "en"
    # OpenAI's names: female -> the first female speaker (English first), male likewise, alloy -> the default
    assert voices["nova"]["maps_to"] == "英文女" and voices["onyx"]["maps_to"] == "英文男"
    assert voices["alloy"]["maps_to"] == "中文女"
    assert listing["styles"] and "Happy" in listing["styles"]


def test_profile_voice_takes_instructions(server, client):
    _, engine = server
    result = client.audio.speech.create(model="tiny-v2", voice=PROFILE_NAME.lower(), input=SHORT_TEXT,
                                        instructions="Happy", response_format="wav")
    audio, _ = decode("wav", result.content)
    job = job_of(engine, result.response.headers)
    assert job.request.prompt_wav.endswith("prompt.wav") and job.request.instruct == "Happy"
    assert len(audio) == job.samples > 0


def test_eight_concurrent_clients_are_all_answered_in_arrival_order(server, client):
    _, engine = server
    texts = [f"Client number {n} says hello." for n in range(8)]

    def ask(text):
        return client.audio.speech.create(model="tts-1", voice="echo", input=text, response_format="wav")

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(ask, texts))
    jobs = [job_of(engine, result.response.headers) for result in results]
    assert sorted(job.request.text for job in jobs) == sorted(texts)
    for result, job in zip(results, jobs):
        audio, rate = decode("wav", result.content)
        assert rate == 24000 and len(audio) == job.samples > 0
    by_arrival = sorted(jobs, key=lambda job: job.id)
    starts = [job.started for job in by_arrival]
    assert starts == sorted(starts)  # served one at a time, first come first served
    assert all(a.finished <= b.started for a, b in zip(by_arrival, by_arrival[1:]))


def test_client_leaving_mid_stream_cancels_its_synthesis(tiny_synth):
    synth = HoldAfterFirstChunk(tiny_synth)
    with running_server(synth) as (server, engine), openai_client(server) as client:
        with client.audio.speech.with_streaming_response.create(model="tts-1", voice="alloy", input=LONG_TEXT,
                                                                response_format="pcm") as response:
            first = next(response.iter_bytes())
            headers = response.headers
        assert first  # the client leaves after its first bytes
        job = job_of(engine, headers)
        assert synth.resumed_by == ["cancel"]  # the server noticed the disconnect while the engine held
        assert job.state == "cancelled" and job.cancelled_at_chunk == 1
        assert synth.chunks_after_resume == [0]  # stopped within one chunk: nothing synthesised after the cancel
        synth.release.set()
        again = client.audio.speech.create(model="tts-1", voice="alloy", input=SHORT_TEXT, response_format="pcm")
        assert len(again.content) > 0 and engine.stats.cancelled == 1 and engine.stats.done == 1


def test_client_leaving_while_queued_is_never_synthesised(tiny_synth):
    synth = HoldBeforeStart(tiny_synth)
    with running_server(synth) as (server, engine), openai_client(server) as client:
        first = ThreadPoolExecutor(1).submit(client.audio.speech.create, model="tts-1", voice="alloy",
                                             input=SHORT_TEXT, response_format="wav")
        assert synth.started.wait(60)
        with pytest.raises(httpx.ReadTimeout):  # waits behind the held request, then gives up
            httpx.post(server.base_url + "/audio/speech", json={"input": "never spoken", "voice": "alloy"},
                       timeout=httpx.Timeout(60, read=1.0))
        deadline = time.monotonic() + 30
        while not any(job.cancel_event.is_set() for job in list(engine._waiting)) and time.monotonic() < deadline:
            time.sleep(0.01)
        synth.release.set()
        assert first.result().response.status_code == 200
        assert engine.wait_idle(60)
    left = next(job for job in engine.finished if job.request.text == "never spoken")
    assert left.state == "cancelled" and left.chunks == 0 and left.started is not None


def test_queue_full_is_429_with_retry_after(tiny_synth):
    synth = HoldBeforeStart(tiny_synth)
    with running_server(synth, max_waiting=1) as (server, engine), openai_client(server) as client:
        pool = ThreadPoolExecutor(2)
        ask = dict(model="tts-1", voice="alloy", input=SHORT_TEXT, response_format="wav")
        running = pool.submit(client.audio.speech.create, **ask)
        assert synth.started.wait(60)
        waiting = pool.submit(client.audio.speech.create, **ask)
        deadline = time.monotonic() + 30
        while engine.waiting() < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        with pytest.raises(openai.RateLimitError) as raised:
            client.audio.speech.create(**ask)
        response = raised.value.response
        assert response.status_code == 429 and int(response.headers["retry-after"]) >= 1
        assert_openai_error(response.json(), code="rate_limit_exceeded")
        synth.release.set()
        assert running.result().response.status_code == 200 and waiting.result().response.status_code == 200
        assert engine.stats.rejected == 1 and engine.stats.max_waiting_seen == 1


def test_api_key_rules(tiny_synth):
    key = "local-test-key-123"
    with running_server(tiny_synth, api_key=key) as (server, engine):
        speech = server.base_url + "/audio/speech"
        body = {"model": "tts-1", "input": SHORT_TEXT, "voice": "alloy", "response_format": "pcm"}
        missing = httpx.post(speech, json=body)
        assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"
        assert_openai_error(missing.json(), code="invalid_api_key")
        assert httpx.get(server.base_url + "/models").status_code == 401
        with openai_client(server, api_key="wrong-key") as wrong, pytest.raises(openai.AuthenticationError) as raised:
            wrong.audio.speech.create(**body)
        assert raised.value.status_code == 401
        with openai_client(server, api_key=key) as right:
            assert len(right.audio.speech.create(**body).content) > 0
            assert right.models.list().data[0].id == "tiny-v2"
        # with a key, the Host header may name this machine's network address
        assert httpx.get(server.base_url + "/models", headers={"Authorization": f"Bearer {key}",
                                                               "Host": "speech.example.lan:8000"}).status_code == 200
        assert engine.stats.submitted == 1


def test_without_key_only_loopback_host_names_are_served(server):
    base = server[0].base_url
    for host in ("localhost:8000", "127.0.0.1", "[::1]:8000"):
        assert httpx.get(base + "/models", headers={"Host": host}).status_code == 200
    rebound = httpx.get(base + "/models", headers={"Host": "attacker.example:8000"})
    assert rebound.status_code == 403
    assert_openai_error(rebound.json(), code="forbidden_host")


def test_cors_only_for_listed_origins(tiny_synth, server):
    origin = "http://localhost:3000"
    preflight = {"Origin": origin, "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "content-type"}
    closed = httpx.options(server[0].base_url + "/audio/speech", headers=preflight)
    assert "access-control-allow-origin" not in closed.headers
    with running_server(tiny_synth, cors_origins=[origin]) as (open_server, _):
        opened = httpx.options(open_server.base_url + "/audio/speech", headers=preflight)
        assert opened.status_code == 200 and opened.headers["access-control-allow-origin"] == origin
        other = httpx.options(open_server.base_url + "/audio/speech", headers={**preflight, "Origin": "http://evil.test"})
        assert "access-control-allow-origin" not in other.headers


def test_engine_failure_before_audio_is_reported_and_the_server_goes_on(tiny_synth):
    """A fault inside the engine (not the client's) is a 500 in the error shape; the next request works."""

    class BreaksOnce(SynthProxy):
        broken = False

        def stream(self, request, cancel=None):
            if not self.broken:
                self.broken = True
                raise RuntimeError("simulated engine fault")
            yield from self._synth.stream(request, cancel=cancel)

    with running_server(BreaksOnce(tiny_synth)) as (server, engine), openai_client(server) as client:
        with pytest.raises(openai.InternalServerError) as raised:
            client.audio.speech.create(model="tts-1", voice="alloy", input=SHORT_TEXT)
        assert_openai_error(raised.value.response.json(), code="internal_error")
        assert len(client.audio.speech.create(model="tts-1", voice="alloy", input=SHORT_TEXT).content) > 0
        assert engine.stats.failed == 1 and engine.stats.done == 1


def test_threads_do_not_pile_up(server, client):
    before = threading.active_count()
    for _ in range(3):
        client.audio.speech.create(model="tts-1", voice="alloy", input=SHORT_TEXT, response_format="mp3")
    assert threading.active_count() <= before + 2


def test_an_idle_connection_outlives_the_clients_own_keep_alive(server):
    """httpx (and the openai client on it) reuses an idle connection for up to 5 s; the server must keep it
    longer, or a request sent as the server closes it breaks (at equal timeouts the two race)."""
    client_expiry = httpx.Limits().keepalive_expiry
    host, port = server[0].sock.getsockname()[:2]
    connection = http.client.HTTPConnection(host, port, timeout=10)  # one connection, never reopened

    def models_status() -> int:
        connection.request("GET", "/v1/models")
        reply = connection.getresponse()  # RemoteDisconnected if the server closed the idle connection
        reply.read()
        return reply.status

    try:
        assert models_status() == 200
        time.sleep(client_expiry + 1)  # idle longer than any httpx client would reuse it
        assert models_status() == 200, "the server closed an idle connection a client may reuse"
    finally:
        connection.close()
