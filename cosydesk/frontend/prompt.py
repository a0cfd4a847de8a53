"""Turn a prompt recording (+ its transcript) into the tensors a zero-shot synthesis needs.

Runs the two ONNX networks shipped with every model (CAM++ speaker encoder
`campplus.onnx`, speech tokenizer `speech_tokenizer_v{1,2,3}.onnx`) with onnxruntime on the
CPU, exactly as the official frontend feeds them, and computes the flow's prompt mel.
Inputs are passed by position, as the official code does, so any export with the
released signature works.

This module must not synthesise, sample or touch the GPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from cosydesk.frontend.audio_io import MAX_PROMPT_SECONDS, load_audio
from cosydesk.frontend.features import FBANK_SAMPLE_RATE, kaldi_fbank, prompt_mel, whisper_log_mel
from cosydesk.frontend.text import normalize
from cosydesk.frontend.tokenizer import TextTokenizer
from cosydesk.model.versions import VERSIONS

# Flow mel frames per speech token in the 25 Hz models (v2/v3): 50 fps / 25 Hz.
TOKEN_MEL_RATIO = {v: c.token_mel_ratio for v, c in VERSIONS.items() if c.token_mel_ratio is not None}
SPEAKER_EMBEDDING_DIM = 192  # CAM++ output width
# speech tokenizers by file name: (token rate Hz, vocabulary) - v1 50 Hz / 4096, v2 and v3 25 Hz / 6561
SPEECH_TOKENIZER_SPECS = {f"speech_tokenizer_{v}.onnx": (c.speech_tokens_per_second, c.speech_vocab)
                          for v, c in VERSIONS.items()}
TOKEN_COUNT_SLACK = 2  # a tokenizer may round up; more than twice its rate is not a speech tokenizer


class OnnxOutputError(ValueError):
    """An ONNX frontend network (campplus / speech tokenizer) failed or returned something it never returns: a
    damaged or foreign file. One line naming the file and what it returned."""


def _run(session, path: Path, feeds: dict) -> np.ndarray:
    """The first output of ``session`` on ``feeds``; OnnxOutputError (naming ``path``) when the run fails."""
    try:
        outputs = session.run(None, feeds)
    except MemoryError as err:
        raise OnnxOutputError(f"{path}: ran out of memory computing its output: the file is damaged or not the "
                              "released network; download the model again") from err
    except Exception as err:  # noqa: BLE001 - onnxruntime raises its own exception types
        detail = " ".join(str(err).split())[:160]
        raise OnnxOutputError(f"{path}: failed to run ({type(err).__name__}: {detail})") from err
    if not outputs or not isinstance(outputs[0], np.ndarray):
        raise OnnxOutputError(f"{path}: returned no tensor")
    return outputs[0]


def _cpu_session(onnx_path: str | Path):
    import onnxruntime

    path = Path(onnx_path)
    if not path.is_file():
        raise FileNotFoundError(f"ONNX model not found: {path}")
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    # One thread: these run next to the GPU pipeline and must not steal its CPU cores.
    options.intra_op_num_threads = 1
    return onnxruntime.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])


class SpeakerEncoder:
    """CAM++ speaker embedding from 16 kHz audio (campplus.onnx)."""

    def __init__(self, onnx_path: str | Path) -> None:
        self.path = Path(onnx_path)
        self._session = _cpu_session(onnx_path)
        self._input = self._session.get_inputs()[0].name

    def embed(self, wav16k: torch.Tensor) -> torch.Tensor:
        """[1, N] waveform at 16 kHz -> [1, 192] float32 embedding."""
        feats = kaldi_fbank(wav16k)
        if feats.shape[0] == 0:
            raise ValueError("audio too short for a speaker embedding (needs at least 25 ms at 16 kHz)")
        # Per-utterance mean normalisation (CMN) of the filterbanks.
        feats = feats - feats.mean(dim=0, keepdim=True)
        embedding = _run(self._session, self.path, {self._input: feats.unsqueeze(0).numpy()})
        if embedding.size != SPEAKER_EMBEDDING_DIM or embedding.dtype.kind != "f":
            raise OnnxOutputError(f"{self.path}: returned a {embedding.dtype} tensor of shape {list(embedding.shape)}; "
                                  f"a speaker encoder returns [1, {SPEAKER_EMBEDDING_DIM}] floats (the file is damaged "
                                  "or not campplus.onnx)")
        return torch.from_numpy(np.ascontiguousarray(embedding, dtype=np.float32).reshape(1, -1))


class SpeechTokenizer:
    """Discrete speech tokens from 16 kHz audio (speech_tokenizer_v*.onnx)."""

    def __init__(self, onnx_path: str | Path, vocab_size: int | None = None, token_rate_hz: int | None = None) -> None:
        self.path = Path(onnx_path)
        rate, vocab = SPEECH_TOKENIZER_SPECS.get(self.path.name, (50, 6561))
        self.vocab_size = vocab_size or vocab
        self.token_rate_hz = token_rate_hz or rate
        self._session = _cpu_session(onnx_path)
        inputs = self._session.get_inputs()
        if len(inputs) < 2:
            raise ValueError(f"{onnx_path} does not look like a speech tokenizer (expected 2 inputs)")
        self._feats_input, self._length_input = inputs[0].name, inputs[1].name

    def tokens(self, wav16k: torch.Tensor) -> torch.Tensor:
        """[1, N] waveform at 16 kHz (at most 30 s) -> [1, S] int32 token ids."""
        seconds = wav16k.shape[-1] / FBANK_SAMPLE_RATE
        if seconds > MAX_PROMPT_SECONDS:
            raise ValueError(f"speech tokens need audio of at most {MAX_PROMPT_SECONDS:g} s, got {seconds:.1f} s")
        feats = whisper_log_mel(wav16k, n_mels=128).unsqueeze(0)
        feeds = {
            self._feats_input: feats.numpy(),
            self._length_input: np.array([feats.shape[2]], dtype=np.int32),
        }
        ids = _run(self._session, self.path, feeds)
        return torch.from_numpy(self._checked_ids(ids, seconds))

    def _checked_ids(self, ids: np.ndarray, seconds: float) -> np.ndarray:
        """[1, S] int32 ids from the raw output: integers, one row, 0..vocab-1, at most ~2x the token rate."""
        limit = int(TOKEN_COUNT_SLACK * self.token_rate_hz * seconds) + 16
        if ids.dtype.kind not in "iu" or ids.ndim == 0 or any(size != 1 for size in ids.shape[:-1]):
            raise OnnxOutputError(f"{self.path}: returned a {ids.dtype} tensor of shape {list(ids.shape)}; a speech "
                                  "tokenizer returns one row of integer token ids (the file is damaged or foreign)")
        if ids.size > limit:
            raise OnnxOutputError(f"{self.path}: returned {ids.size:,} speech tokens for {seconds:.1f} s of audio "
                                  f"(at most {limit:,} expected at {self.token_rate_hz} Hz): the file is damaged")
        if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= self.vocab_size):
            raise OnnxOutputError(f"{self.path}: returned token ids from {int(ids.min())} to {int(ids.max())}; "
                                  f"speech tokens are 0..{self.vocab_size - 1} (the file is damaged or from another "
                                  "model)")
        return np.ascontiguousarray(ids.reshape(1, -1).astype(np.int32))


@dataclass
class PromptFeatures:
    """Everything a zero-shot prompt contributes (batch 1, official dtypes)."""

    prompt_text_ids: torch.Tensor  # [1, P] int32
    speech_token: torch.Tensor  # [1, S] int32 (LLM and flow prompt tokens are the same)
    speech_feat: torch.Tensor  # [1, F, 80] float32 flow prompt mel
    embedding: torch.Tensor  # [1, 192] float32 speaker embedding (LLM and flow)


def align_tokens_and_mel(
    speech_token: torch.Tensor, speech_feat: torch.Tensor, version: str
) -> tuple[torch.Tensor, torch.Tensor]:
    """Trim so that mel frames == 2 x tokens for the 25 Hz models; v1 is left untouched."""
    ratio = TOKEN_MEL_RATIO.get(version)
    if ratio is None:
        return speech_token, speech_feat
    n_tokens = min(speech_feat.shape[1] // ratio, speech_token.shape[1])
    return speech_token[:, :n_tokens], speech_feat[:, : ratio * n_tokens]


def build_zero_shot_prompt(
    prompt_text: str,
    prompt_wav: str | Path,
    *,
    version: str,
    sample_rate: int,
    tokenizer: TextTokenizer,
    speaker_encoder: SpeakerEncoder,
    speech_tokenizer: SpeechTokenizer,
    normalize_text: bool = True,
) -> PromptFeatures:
    """Prompt tensors for zero-shot cloning from a recording and its transcript.

    The file is read twice, resampled to 16 kHz (embedding, tokens) and to `sample_rate`,
    the model rate (prompt mel). The transcript is normalised first (as the official
    inference_zero_shot does) unless `normalize_text` is False. AudioInputError from
    load_audio reaches the caller unchanged.
    """
    if normalize_text:
        prompt_text = normalize(prompt_text, version)
    text_ids = torch.tensor([tokenizer.encode(prompt_text)], dtype=torch.int32).reshape(1, -1)

    wav16k = load_audio(prompt_wav, FBANK_SAMPLE_RATE)
    wav_model = wav16k if sample_rate == FBANK_SAMPLE_RATE else load_audio(prompt_wav, sample_rate)

    speech_feat = prompt_mel(wav_model, sample_rate, version)
    speech_token = speech_tokenizer.tokens(wav16k)
    speech_token, speech_feat = align_tokens_and_mel(speech_token, speech_feat, version)
    return PromptFeatures(
        prompt_text_ids=text_ids,
        speech_token=speech_token.contiguous(),
        speech_feat=speech_feat.contiguous(),
        embedding=speaker_encoder.embed(wav16k),
    )
