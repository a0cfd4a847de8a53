"""Zero-shot prompt extraction through tiny ONNX stand-ins of campplus / speech tokenizer."""

from __future__ import annotations

import math

import numpy as np
import onnxruntime
import pytest
import soundfile
import torch

from cosydesk.frontend.prompt import (
    PromptFeatures,
    SpeakerEncoder,
    SpeechTokenizer,
    align_tokens_and_mel,
    build_zero_shot_prompt,
)
from cosydesk.frontend.text import normalize
from cosydesk.frontend.tokenizer import BLANKEN_DIR_NAME, load_tokenizer
from cosydesk.synthetic.tiny_assets import (
    SPEECH_TOKEN_VOCAB,
    write_blanken_tokenizer,
    write_tiny_campplus,
    write_tiny_speech_tokenizer,
)


def _voice(rate: int, seconds: float, f0: float = 140.0, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(int(round(rate * seconds))) / rate
    harmonics = sum(np.sin(2 * np.pi * f0 * k * t) / k for k in range(1, 12))
    return (0.2 * harmonics + 0.01 * rng.standard_normal(t.shape)).astype(np.float32)


@pytest.fixture(scope="module")
def onnx_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("onnx")
    write_tiny_campplus(out / "campplus.onnx")
    for version in ("v1", "v2", "v3"):
        write_tiny_speech_tokenizer(out / f"speech_tokenizer_{version}.onnx", version)
    return out


def _session(path):
    return onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def test_tiny_campplus_signature(onnx_dir):
    session = _session(onnx_dir / "campplus.onnx")
    (inp,) = session.get_inputs()
    (out,) = session.get_outputs()
    assert (inp.name, inp.type, inp.shape[2]) == ("input", "tensor(float)", 80)
    assert (out.name, out.type, out.shape[1]) == ("output", "tensor(float)", 192)


@pytest.mark.parametrize("version", ["v1", "v2", "v3"])
def test_tiny_speech_tokenizer_signature(onnx_dir, version):
    session = _session(onnx_dir / f"speech_tokenizer_{version}.onnx")
    feats, length = session.get_inputs()
    assert (feats.name, feats.type, feats.shape[:2]) == ("feats", "tensor(float)", [1, 128])
    assert (length.name, length.type, length.shape) == ("feats_length", "tensor(int32)", [1])
    assert session.get_outputs()[0].name == "indices"


def test_tiny_assets_are_deterministic(tmp_path):
    write_tiny_speech_tokenizer(tmp_path / "a.onnx", "v2", seed=3)
    write_tiny_speech_tokenizer(tmp_path / "b.onnx", "v2", seed=3)
    write_tiny_speech_tokenizer(tmp_path / "c.onnx", "v2", seed=4)
    assert (tmp_path / "a.onnx").read_bytes() == (tmp_path / "b.onnx").read_bytes()
    assert (tmp_path / "a.onnx").read_bytes() != (tmp_path / "c.onnx").read_bytes()


def test_speaker_embedding_depends_on_the_voice(onnx_dir):
    encoder = SpeakerEncoder(onnx_dir / "campplus.onnx")
    low = encoder.embed(torch.from_numpy(_voice(16000, 1.5, 110.0)).unsqueeze(0))
    high = encoder.embed(torch.from_numpy(_voice(16000, 1.5, 240.0)).unsqueeze(0))
    assert low.shape == (1, 192) and low.dtype == torch.float32
    assert torch.equal(low, encoder.embed(torch.from_numpy(_voice(16000, 1.5, 110.0)).unsqueeze(0)))
    assert float((low - high).abs().max()) > 1e-2


@pytest.mark.parametrize("version, per_token", [("v1", 2), ("v2", 4), ("v3", 4)])
def test_speech_tokens_rate_and_range(onnx_dir, version, per_token):
    tokenizer = SpeechTokenizer(onnx_dir / f"speech_tokenizer_{version}.onnx")
    wav = torch.from_numpy(_voice(16000, 2.37)).unsqueeze(0)
    ids = tokenizer.tokens(wav)
    frames = wav.shape[1] // 160
    expected = math.ceil(frames / 2) if per_token == 2 else math.ceil(math.ceil(frames / 2) / 2)
    assert ids.shape == (1, expected) and ids.dtype == torch.int32
    assert 0 <= int(ids.min()) and int(ids.max()) < SPEECH_TOKEN_VOCAB[version]
    assert len(set(ids[0].tolist())) > 1
    assert torch.equal(ids, tokenizer.tokens(wav))


def test_speech_tokenizer_refuses_long_audio(onnx_dir):
    tokenizer = SpeechTokenizer(onnx_dir / "speech_tokenizer_v2.onnx")
    with pytest.raises(ValueError, match="30 s"):
        tokenizer.tokens(torch.zeros(1, 16000 * 31))


def test_align_tokens_and_mel():
    tokens, mel = torch.zeros(1, 51, dtype=torch.int32), torch.zeros(1, 100, 80)
    t2, m2 = align_tokens_and_mel(tokens, mel, "v2")
    assert (t2.shape[1], m2.shape[1]) == (50, 100)
    t3, m3 = align_tokens_and_mel(tokens[:, :40], mel[:, :99], "v3")
    assert (t3.shape[1], m3.shape[1]) == (40, 80)
    t1, m1 = align_tokens_and_mel(tokens, mel, "v1")
    assert (t1.shape[1], m1.shape[1]) == (51, 100)


@pytest.fixture(scope="module")
def v2_model_dir(tmp_path_factory):
    model_dir = tmp_path_factory.mktemp("v2model")
    write_blanken_tokenizer(model_dir / BLANKEN_DIR_NAME)
    return model_dir


def test_zero_shot_prompt_v2_truncates_to_two_frames_per_token(onnx_dir, v2_model_dir, tmp_path):
    wav_path = tmp_path / "prompt.wav"
    soundfile.write(str(wav_path), _voice(24000, 2.01), 24000, subtype="FLOAT")
    tokenizer = load_tokenizer("v2", v2_model_dir)
    prompt = build_zero_shot_prompt(
        "希望你以后能够做的比我还好呦。",
        wav_path,
        version="v2",
        sample_rate=24000,
        tokenizer=tokenizer,
        speaker_encoder=SpeakerEncoder(onnx_dir / "campplus.onnx"),
        speech_tokenizer=SpeechTokenizer(onnx_dir / "speech_tokenizer_v2.onnx"),
    )
    assert isinstance(prompt, PromptFeatures)
    # 2.01 s: 201 whisper frames -> 51 tokens, but only 100 mel frames -> 50 tokens kept.
    assert prompt.speech_token.shape == (1, 50) and prompt.speech_token.dtype == torch.int32
    assert prompt.speech_feat.shape == (1, 100, 80) and prompt.speech_feat.dtype == torch.float32
    assert prompt.embedding.shape == (1, 192) and prompt.embedding.dtype == torch.float32
    assert prompt.prompt_text_ids.dtype == torch.int32
    assert prompt.prompt_text_ids[0].tolist() == tokenizer.encode(normalize("希望你以后能够做的比我还好呦。", "v2"))


def test_zero_shot_prompt_v1_keeps_its_own_rates(onnx_dir, tmp_path):
    wav_path = tmp_path / "prompt.flac"
    soundfile.write(str(wav_path), _voice(44100, 1.5), 44100)
    prompt = build_zero_shot_prompt(
        "I have 2 dogs.",
        wav_path,
        version="v1",
        sample_rate=22050,
        tokenizer=load_tokenizer("v1", tmp_path),
        speaker_encoder=SpeakerEncoder(onnx_dir / "campplus.onnx"),
        speech_tokenizer=SpeechTokenizer(onnx_dir / "speech_tokenizer_v1.onnx"),
    )
    assert prompt.speech_token.shape == (1, 75)  # 50 Hz
    assert prompt.speech_feat.shape == (1, int(1.5 * 22050) // 256, 80)
    assert load_tokenizer("v1", tmp_path).decode(prompt.prompt_text_ids[0].tolist()) == "I have two dogs."


def test_missing_onnx_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="campplus.onnx"):
        SpeakerEncoder(tmp_path / "campplus.onnx")
