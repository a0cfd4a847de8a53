"""The speech server's parts without HTTP: resampler, encoders, request parsing, voice mapping, bind rule,
and the engine's queue (with a fake synthesizer: fast and exact)."""

from __future__ import annotations

import io
import threading

import numpy as np
import pytest
import soundfile as sf

from cosydesk.runtime.types import AudioChunk, Request
from cosydesk.serve.config import bind_problem, is_loopback
from cosydesk.serve.encoders import _strip_mp3_placeholder, available_formats, make_encoder
from cosydesk.serve.engine import QueueFull, SpeechEngine
from cosydesk.serve.errors import ApiError
from cosydesk.serve.resample import StreamResampler
from cosydesk.serve.speech_request import parse_speech_body
from cosydesk.serve.voices import VoiceCatalogue


def test_streaming_resampler_matches_one_pass_and_scipy():
    from scipy.signal import resample_poly

    rate = 22050
    x = np.sin(2 * np.pi * 1000 * np.arange(rate) / rate).astype(np.float32)
    whole = StreamResampler(rate, 24000)
    one_pass = np.concatenate([whole.feed(x), whole.finish()])
    rng = np.random.default_rng(0)
    chunked, pieces, start = StreamResampler(rate, 24000), [], 0
    while start < len(x):
        size = int(rng.integers(1, 4000))
        pieces.append(chunked.feed(x[start:start + size]))
        start += size
    pieces.append(chunked.finish())
    assert len(one_pass) == 24000
    np.testing.assert_array_equal(np.concatenate(pieces), one_pass)
    reference = resample_poly(x.astype(np.float64), 160, 147)[:len(one_pass)]
    assert np.abs(reference - one_pass)[500:-500].max() < 1e-5
    assert StreamResampler(24000, 24000).passthrough


def test_mp3_placeholder_frame_is_dropped_only_when_empty():
    frame_header = b"\xff\xf3\x94\xc4"
    real = b"\xff\xf3\x94\xc4\x12\x34"
    assert _strip_mp3_placeholder(frame_header + bytes(200) + real) == (real, True)
    assert _strip_mp3_placeholder(frame_header + bytes(20)) == (frame_header + bytes(20), False)  # undecided yet
    assert _strip_mp3_placeholder(real + bytes(100)) == (real + bytes(100), True)
    assert _strip_mp3_placeholder(b"ID3\x04") == (b"ID3\x04", True)


@pytest.mark.parametrize("rate", [24000, 22050])
@pytest.mark.parametrize("fmt", ["wav", "mp3", "opus", "flac", "pcm"])
def test_encoders_stream_and_decode(fmt, rate):
    if fmt not in available_formats():
        pytest.skip(f"this libsndfile cannot write {fmt}")
    x = (0.3 * np.sin(2 * np.pi * 440 * np.arange(2 * rate) / rate)).astype(np.float32)
    encoder = make_encoder(fmt, rate)
    parts = [encoder.start()] + [encoder.feed(x[i:i + rate // 5]) for i in range(0, len(x), rate // 5)]
    parts.append(encoder.finish())
    body = b"".join(parts)
    if fmt == "flac":
        assert not any(parts[:-1])  # whole at the end
    else:
        assert sum(1 for part in parts[:-1] if part) >= 5  # bytes after (nearly) every chunk
    if fmt == "pcm":
        audio, out_rate = np.frombuffer(body, "<i2") / 32767.0, 24000
    else:
        audio, out_rate = sf.read(io.BytesIO(body))
    expected_rate = {"pcm": 24000, "opus": 24000}.get(fmt, rate)
    assert out_rate == expected_rate == encoder.sample_rate
    expected = 2 * expected_rate
    assert expected <= len(audio) <= expected + (4 * 1152 if fmt == "mp3" else 0)
    spectrum = np.abs(np.fft.rfft(audio[:expected_rate] * np.hanning(expected_rate)))
    assert abs(np.argmax(spectrum) * out_rate / expected_rate - 440) < 5  # still a 440 Hz tone


def parse(body: str, **limits):
    arguments = dict(model_id="tiny", max_input_chars=100, formats=("mp3", "opus", "flac", "wav", "pcm")) | limits
    return parse_speech_body(body.encode(), **arguments)


def test_parse_defaults_and_extras():
    params = parse('{"input": "Hi", "voice": {"id": "nova"}, "future_field": 1}')
    assert (params.input, params.voice, params.speed, params.response_format) == ("Hi", "nova", 1.0, "mp3")
    assert parse('{"input": "Hi", "voice": "x", "model": "gpt-4o-mini-tts", "speed": 2}').speed == 2.0
    assert parse('{"input": "Hi", "voice": "x", "model": "TINY", "instructions": "  "}').instructions is None


@pytest.mark.parametrize("body, param", [
    ('{"input": "Hi", "voice": "x", "speed": NaN}', "speed"),
    ('{"input": "' + "a" * 101 + '", "voice": "x"}', "input"),
    ('{"input": "Hi", "voice": "x", "instructions": "' + "a" * 1001 + '"}', "instructions"),
    ('{"input": "Hi", "voice": 3}', "voice"),
    ('{"input": "Hi", "voice": "x", "model": 5}', "model"),
])
def test_parse_rejections_name_the_field(body, param):
    with pytest.raises(ApiError) as raised:
        parse(body)
    assert raised.value.status == 400 and raised.value.param == param


def test_format_missing_from_libsndfile_is_refused_clearly():
    with pytest.raises(ApiError, match="cannot write it"):
        parse('{"input": "Hi", "voice": "x", "response_format": "mp3"}', formats=("wav", "pcm"))


class FakeModel:
    def __init__(self, spk2info):
        self.spk2info = spk2info


class FakeSynth:
    """Just enough of a Synthesizer for the catalogue and the engine: each chunk waits for `step`."""

    sample_rate = 24000

    def __init__(self, speakers=(), version="v2", chunks=3, gate=False):
        self.model = FakeModel({name: {"embedding": None} for name in speakers})
        self.version = version
        self.chunks = chunks
        self.step = threading.Semaphore(0) if gate else None
        self.streamed: list[str] = []

    def speakers(self):
        return list(self.model.spk2info)

    def styles(self):
        return []

    def supports(self, mode):
        return mode == "instruct2" and self.version != "v1"

    def stream(self, request, cancel=None):
        self.streamed.append(request.text)
        for index in range(self.chunks):
            if self.step is not None:
                self.step.acquire()
            if cancel is not None and cancel.is_set():
                return
            yield AudioChunk(pcm=np.zeros(240, np.float32), sample_rate=24000, index=index,
                             final=index == self.chunks - 1)


def test_openai_names_map_to_profiles_on_a_model_without_speakers(tmp_path):
    from cosydesk.audio.profiles import VoiceProfileStore

    synth = FakeSynth(speakers=())
    catalogue = VoiceCatalogue(synth, tmp_path / "voices")
    with pytest.raises(ApiError, match="no built-in speakers") as raised:
        catalogue.resolve("alloy")
    assert raised.value.param == "voice"
    rate = 16000
    t = np.arange(4 * rate) / rate
    pcm = (0.3 * (0.5 + 0.5 * np.sin(2 * np.pi * 3 * t)) * np.sin(2 * np.pi * 180 * t)).astype(np.float32)
    store = VoiceProfileStore(tmp_path / "voices")
    store.add("Oldest", pcm, rate, "你好，这是我的声音。")
    store.add("Newer", pcm, rate, "Hello, this is my voice.")
    shimmer = catalogue.resolve("Shimmer")
    assert shimmer.kind == "openai" and shimmer.maps_to == "Oldest" and shimmer.language == "zh"
    assert shimmer.request_fields()["prompt_wav"].endswith("prompt.wav")
    assert VoiceCatalogue(synth, tmp_path / "voices", default_voice="Newer").resolve("alloy").maps_to == "Newer"


def test_own_voice_named_like_an_openai_voice_wins():
    catalogue = VoiceCatalogue(FakeSynth(speakers=("alloy", "英文男")), voices_dir=None)
    catalogue.profiles = lambda: []
    assert catalogue.resolve("alloy").kind == "speaker"
    assert catalogue.resolve("onyx").maps_to == "英文男"
    assert [v.id for v in catalogue.list()].count("alloy") == 1


@pytest.mark.parametrize("host, key, refused", [
    ("127.0.0.1", None, False), ("localhost", None, False), ("::1", None, False), ("127.0.0.2", None, False),
    ("0.0.0.0", None, True), ("192.168.1.5", None, True), ("myhost.lan", None, True), ("0.0.0.0", "k3y", False),
    ("127.0.0.1", "  ", True),
])
def test_bind_rule(host, key, refused):
    assert (bind_problem(host, key) is not None) == refused
    assert is_loopback("[::1]") and not is_loopback("::")


def collect(events: list):
    return events.append


def test_engine_queue_bound_order_and_cancel():
    synth = FakeSynth(chunks=2, gate=True)
    engine = SpeechEngine(synth, max_waiting=2)
    try:
        seen = {name: [] for name in "abcd"}
        jobs = {name: engine.submit(Request(text=name), collect(seen[name])) for name in "abc"}
        with pytest.raises(QueueFull) as full:
            engine.submit(Request(text="d"), collect(seen["d"]))
        assert full.value.retry_after_s >= 1 and engine.stats.rejected == 1
        jobs["b"].cancel()  # waiting: dropped without synthesis
        for _ in range(4):
            synth.step.release()
        assert engine.wait_idle(10)
        assert synth.streamed == ["a", "c"]
        assert [e.kind for e in seen["a"]] == ["chunk", "chunk", "end"]
        assert [job.state for job in jobs.values()] == ["done", "cancelled", "done"]
        assert jobs["b"].chunks == 0 and engine.stats.max_waiting_seen == 2
        # a running job stops within one chunk of its cancel
        running = engine.submit(Request(text="e"), collect(seen["d"]))
        synth.step.release()
        while running.chunks < 1:
            threading.Event().wait(0.005)
        running.cancel()
        synth.step.release()
        assert engine.wait_idle(10) and running.state == "cancelled" and running.chunks == 1
    finally:
        engine.close()


def test_engine_survives_a_sink_and_a_synth_that_fail():
    class Broken(FakeSynth):
        def stream(self, request, cancel=None):
            if request.text == "boom":
                raise RuntimeError("boom")
            yield from super().stream(request, cancel)

    engine = SpeechEngine(Broken(chunks=1), max_waiting=4)
    try:
        events: list = []

        def bad_sink(event):
            raise RuntimeError("client gone")

        engine.submit(Request(text="x"), bad_sink)
        engine.submit(Request(text="boom"), collect(events))
        engine.submit(Request(text="fine"), collect(events))
        assert engine.wait_idle(10)
        assert [e.kind for e in events] == ["error", "chunk", "end"] and isinstance(events[0].error, RuntimeError)
        assert (engine.stats.done, engine.stats.failed) == (2, 1)
    finally:
        engine.close()
