"""The request frontend: turns a Request into the model's inputs (voice tensors, then one SentenceInputs per
sentence), following the official frontend_* rules.

    frontend = RequestFrontend(version, model_dir, sample_rate, tokenizer, spk2info)
    voice = frontend.voice_inputs(request)                  # once per request: whose voice, which style
    for segment in frontend.segments(request.text):         # normalised lazily, with spans into the text
        inputs = frontend.sentence_inputs(segment.text, voice)

Voices: an SFT speaker (spk2info embedding), a saved zero-shot speaker (spk2info prompt entries), a prompt
recording with transcript (zero-shot) or without (cross-lingual, no prompt in the LLM); an instruction replaces
the LLM's prompt (v1-Instruct: speaker + style; v2/v3 instruct2: prompt voice + style). v3 wants its system
prompt and ``<|endofprompt|>`` where the official code puts them; the user never types either.

It lives in runtime/ (not frontend/) because it speaks the runtime's Request, errors and style presets; the
text and audio work it calls stays in cosydesk.frontend. No threads, no device work: tensors stay on the CPU.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import unicodedata
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cosydesk.frontend.segments import Segment
from cosydesk.runtime.errors import EmptyTextError, PromptError, UnknownSpeakerError, UnsupportedModeError
from cosydesk.runtime.styles import StylePreset, is_instruct_model, presets_for, resolve_instruct
from cosydesk.runtime.types import Request

if TYPE_CHECKING:
    import torch

    from cosydesk.frontend.prompt import PromptFeatures
    from cosydesk.frontend.tokenizer import TextTokenizer
    from cosydesk.runtime.pipeline import SentenceInputs

ENDOFPROMPT = "<|endofprompt|>"
V3_SYSTEM_PROMPT = "You are a helpful assistant."
SPEECH_TOKENIZER_FILES = {"v1": "speech_tokenizer_v1.onnx", "v2": "speech_tokenizer_v2.onnx",
                          "v3": "speech_tokenizer_v3.onnx"}


@dataclasses.dataclass(frozen=True)
class VoiceInputs:
    """Prompt tensors shared by every sentence of a request (CPU)."""

    prompt_text: torch.Tensor              # [1, P] ids: prompt transcript or instruction (may be empty)
    llm_prompt_speech_token: torch.Tensor  # [1, S] (may be empty)
    llm_embedding: torch.Tensor            # [1, 192] or [0, 192]
    flow_prompt_speech_token: torch.Tensor  # [1, S']
    prompt_speech_feat: torch.Tensor       # [1, F, 80]
    flow_embedding: torch.Tensor           # [1, 192]


def _pronounceable_char(ch: str) -> bool:
    """Drop control and format characters, lone surrogates (undecodable bytes) and emoji variation selectors."""
    if ch in "\n\t":
        return True
    return unicodedata.category(ch) not in ("Cc", "Cf", "Cs") and not "\ufe00" <= ch <= "\ufe0f"


# Every character _pronounceable_char may refuse, and a few more (unassigned ones, in case the regex module knows a
# newer Unicode than unicodedata): one C scan of the text, so a 100,000-character text is not walked character by
# character in Python while the worker holds the GIL (that stalled the desktop app's UI thread ~25-120 ms).
@functools.cache
def _maybe_unpronounceable():
    import regex

    return regex.compile(r"[\p{Cc}\p{Cf}\p{Cs}\p{Cn}\ufe00-\ufe0f]")


def unpronounceable_positions(text: str) -> list[int]:
    """Positions in ``text`` of the characters ``segments`` drops (_pronounceable_char), in order."""
    return [m.start() for m in _maybe_unpronounceable().finditer(text) if not _pronounceable_char(m.group())]


def _without(text: str, dropped: list[int]) -> str:
    """``text`` less the characters at ``dropped`` (ascending), joined from the runs between them."""
    starts = [0] + [i + 1 for i in dropped]
    ends = dropped + [len(text)]
    return "".join(text[a:b] for a, b in zip(starts, ends))


def _kept_positions(length: int, dropped: list[int]) -> Sequence[int]:
    """The positions of a text of ``length`` characters left after ``dropped`` ones: cleaned index -> original."""
    if not dropped:
        return range(length)
    import numpy as np

    return np.delete(np.arange(length), dropped).tolist()


def _all_finite(value: Any) -> bool:
    """A floating tensor holds only finite numbers (anything else - ids, strings - counts as finite here)."""
    import torch

    return not (isinstance(value, torch.Tensor) and value.is_floating_point()) or bool(torch.isfinite(value).all())


class RequestFrontend:
    """The prompt and voice rules of one loaded model (its version, folder, tokenizer and speakers)."""

    def __init__(self, version: str, model_dir: str | Path, sample_rate: int, tokenizer: TextTokenizer,
                 spk2info: dict[str, dict]):
        self.version = version
        self.model_dir = Path(model_dir)
        self.sample_rate = sample_rate
        self.tokenizer = tokenizer
        self.spk2info = spk2info
        self.instruct_model = is_instruct_model(version, self.model_dir)
        self.presets = presets_for(version, self.instruct_model)
        # per instance, so a dropped model's prompt features go with it
        self._cached_prompt = functools.lru_cache(maxsize=16)(self._build_prompt_features)

    # -- what the model offers ----------------------------------------------------------------------------
    def speakers(self) -> list[str]:
        return list(self.spk2info.keys())

    def style_presets(self) -> list[StylePreset]:
        return list(self.presets)

    def supports(self, mode: str) -> bool:
        return {
            "sft": bool(self.spk2info),
            "zero_shot": True,
            "cross_lingual": True,
            "instruct": self.version == "v1" and self.instruct_model,
            "instruct2": self.version in ("v2", "v3"),
        }.get(mode, False)

    # -- text -------------------------------------------------------------------------------------------
    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text)

    def ids(self, text: str) -> torch.Tensor:
        import torch

        return torch.tensor([self.encode(text)], dtype=torch.int32)

    def segments(self, text: str, per_sentence: bool = False) -> Iterator[Segment]:
        """The synthesis segments of ``text``, normalised one at a time (a 100,000-character text starts as fast
        as one sentence), each with its span in ``text``; ``per_sentence``: one reading sentence at a time
        (frontend.sentences) instead of the official packing. Empty and unpronounceable texts raise
        EmptyTextError: the cheap checks at once, "nothing pronounceable after normalisation" when the text turns
        out so."""
        from cosydesk.frontend.text import says_nothing

        if text is None or not text.strip():
            raise EmptyTextError("the text is empty: type something to say")
        dropped = unpronounceable_positions(text)
        kept = _kept_positions(len(text), dropped)
        cleaned = _without(text, dropped)
        if says_nothing(cleaned):
            raise EmptyTextError("the text holds only punctuation, symbols or emoji: there is nothing to pronounce")
        return self._pronounceable_segments(cleaned, kept, per_sentence)

    def _pronounceable_segments(self, cleaned: str, kept: Sequence[int], per_sentence: bool) -> Iterator[Segment]:
        from cosydesk.frontend.segments import iter_segments
        from cosydesk.frontend.sentences import iter_sentence_segments
        from cosydesk.frontend.text import says_nothing

        found = False
        split = iter_sentence_segments if per_sentence else iter_segments
        for segment in split(cleaned, self.version, self.encode):
            if not segment.text.strip() or says_nothing(segment.text):
                continue
            found = True
            # spans into the caller's text, not the cleaned copy (control characters were dropped)
            yield dataclasses.replace(segment, start=kept[segment.start], end=kept[segment.end - 1] + 1)
        if not found:
            raise EmptyTextError("the text holds nothing pronounceable after normalisation")

    def notices(self, request: Request) -> list[str]:
        """Advice about a request that will still be synthesised (shown by the CLI and the app)."""
        found = []
        if self.version == "v3" and re.search(r"[\u3040-\u309f]", request.text or ""):
            found.append("CosyVoice3 reads Japanese reliably only in katakana: convert hiragana/kanji to katakana "
                         "for correct pronunciation")
        if request.speed != 1.0 and request.stream:
            found.append("speed changes are applied per sentence without streaming (as in the official code)")
        return found

    # -- prompt recordings ------------------------------------------------------------------------------
    @functools.cached_property
    def _prompt_models(self):
        from cosydesk.frontend.prompt import SpeakerEncoder, SpeechTokenizer

        campplus = self.model_dir / "campplus.onnx"
        speech_tokenizer = self.model_dir / SPEECH_TOKENIZER_FILES[self.version]
        for path in (campplus, speech_tokenizer):
            if not path.is_file():
                raise PromptError(f"{path.name} is missing from {self.model_dir}: zero-shot voices need it")
        loaded = []
        for cls, path in ((SpeakerEncoder, campplus), (SpeechTokenizer, speech_tokenizer)):
            try:
                loaded.append(cls(path))
            except Exception as err:  # noqa: BLE001 - onnxruntime raises its own types for damaged files
                raise PromptError(f"{path.name} in {self.model_dir} cannot be loaded ({type(err).__name__}): "
                                  "the file is damaged; download the model again") from err
        return tuple(loaded)

    def _build_prompt_features(self, wav_path: str, mtime: float, transcript: str) -> PromptFeatures:
        from cosydesk.frontend.prompt import build_zero_shot_prompt

        encoder, speech_tokenizer = self._prompt_models
        return build_zero_shot_prompt(
            transcript, wav_path, version=self.version, sample_rate=self.sample_rate,
            tokenizer=self.tokenizer, speaker_encoder=encoder, speech_tokenizer=speech_tokenizer,
        )

    def prompt_features(self, wav_path: str, transcript: str) -> PromptFeatures:
        """The zero-shot prompt of a recording and its transcript (cached per file version and transcript)."""
        path = Path(wav_path).expanduser()
        if not path.is_file():
            raise PromptError(f"prompt audio {path} does not exist")
        features = self._cached_prompt(str(path), path.stat().st_mtime, transcript)
        for name in ("speech_feat", "embedding"):
            if not _all_finite(getattr(features, name)):
                what = "speaker embedding (campplus.onnx)" if name == "embedding" else "mel features"
                raise PromptError(f"the {what} of {path.name} came out as NaN/inf: the recording's samples are far "
                                  "outside -1..1 or campplus.onnx is damaged; use a normal recording")
        return features

    # -- voices -----------------------------------------------------------------------------------------
    def voice_inputs(self, request: Request) -> VoiceInputs:
        """Prompt tensors common to every sentence of the request (official frontend_* semantics)."""
        import torch

        instruct = request.instruct.strip() if request.instruct and request.instruct.strip() else None
        empty_ids = torch.zeros(1, 0, dtype=torch.int32)
        if request.prompt_wav:
            transcript = request.prompt_text or ""
            prompt = self.prompt_features(request.prompt_wav, self._prompt_transcript(transcript))
            voice = VoiceInputs(
                prompt_text=prompt.prompt_text_ids, llm_prompt_speech_token=prompt.speech_token,
                llm_embedding=prompt.embedding, flow_prompt_speech_token=prompt.speech_token,
                prompt_speech_feat=prompt.speech_feat, flow_embedding=prompt.embedding,
            )
            if not transcript.strip():  # cross-lingual: no prompt in the LLM
                voice = dataclasses.replace(voice, prompt_text=empty_ids, llm_prompt_speech_token=empty_ids)
            if instruct:
                voice = dataclasses.replace(voice, prompt_text=self.ids(self._instruct_text(instruct)),
                                            llm_prompt_speech_token=empty_ids)
            return voice
        entry = self._speaker_entry(request.speaker)
        if "prompt_speech_feat" in entry:  # a saved zero-shot speaker
            voice = VoiceInputs(
                prompt_text=entry["prompt_text"], llm_prompt_speech_token=entry["llm_prompt_speech_token"],
                llm_embedding=entry["llm_embedding"], flow_prompt_speech_token=entry["flow_prompt_speech_token"],
                prompt_speech_feat=entry["prompt_speech_feat"], flow_embedding=entry["flow_embedding"],
            )
            if instruct:
                voice = dataclasses.replace(voice, prompt_text=self.ids(self._instruct_text(instruct)),
                                            llm_prompt_speech_token=empty_ids)
            return voice
        embedding = entry["embedding"].reshape(1, -1).float()
        voice = VoiceInputs(prompt_text=empty_ids, llm_prompt_speech_token=empty_ids, llm_embedding=embedding,
                            flow_prompt_speech_token=empty_ids, prompt_speech_feat=torch.zeros(1, 0, 80),
                            flow_embedding=embedding)
        if instruct:
            if not self.supports("instruct") and self.version == "v1":
                raise UnsupportedModeError("this model has no instruct mode: use CosyVoice-300M-Instruct for styles")
            if self.version != "v1":
                raise UnsupportedModeError("styles need a voice profile (prompt audio) with this model, not an SFT speaker")
            # official frontend_instruct: the LLM gets no speaker embedding (information leakage)
            voice = dataclasses.replace(voice, prompt_text=self.ids(self._instruct_text(instruct)),
                                        llm_embedding=torch.zeros(0, 192))
        return voice

    def _speaker_entry(self, speaker: str | None) -> dict:
        """The spk2info entry of ``speaker`` (None: the model's first), refused when unknown or damaged."""
        speakers = self.speakers()
        name = speaker or (speakers[0] if speakers else None)
        if name is None:
            raise UnknownSpeakerError("this model has no built-in speakers: choose a voice profile (prompt audio + transcript)")
        if name not in self.spk2info:
            raise UnknownSpeakerError(f"unknown speaker {name!r}; this model offers: {', '.join(speakers) or 'none'}")
        entry = self.spk2info[name]
        broken = [key for key, value in entry.items() if not _all_finite(value)]
        if broken:
            raise UnknownSpeakerError(f"speaker {name!r} in {self.model_dir / 'spk2info.pt'} is damaged ({broken[0]} "
                                      "holds NaN/inf values): choose another voice or download the model again")
        return entry

    def _prompt_transcript(self, transcript: str) -> str:
        if self.version == "v3" and transcript and ENDOFPROMPT not in transcript:
            return f"{V3_SYSTEM_PROMPT}{ENDOFPROMPT}{transcript}"
        return transcript

    def _instruct_text(self, instruct: str) -> str:
        text = resolve_instruct(instruct.strip(), self.presets).replace(ENDOFPROMPT, "")
        if self.version == "v3":
            text = f"{V3_SYSTEM_PROMPT} {text}"
        return text + ENDOFPROMPT

    # -- sentences --------------------------------------------------------------------------------------
    def sentence_inputs(self, sentence: str, voice: VoiceInputs) -> SentenceInputs:
        """One sentence's model inputs in the request's voice (v3: the system prompt where none was given)."""
        import torch

        from cosydesk.runtime.pipeline import SentenceInputs

        text_ids = self.ids(sentence)
        prompt_text = voice.prompt_text
        if self.version == "v3":
            endofprompt = self.encode(ENDOFPROMPT)
            joined = prompt_text.flatten().tolist() + text_ids.flatten().tolist()
            if not any(joined[i:i + len(endofprompt)] == endofprompt for i in range(len(joined))):
                prompt_text = torch.cat([self.ids(f"{V3_SYSTEM_PROMPT}{ENDOFPROMPT}"), prompt_text], dim=1)
        return SentenceInputs(
            text=text_ids, prompt_text=prompt_text.to(torch.int32),
            llm_prompt_speech_token=voice.llm_prompt_speech_token.to(torch.int32), llm_embedding=voice.llm_embedding,
            flow_prompt_speech_token=voice.flow_prompt_speech_token.to(torch.int32),
            prompt_speech_feat=voice.prompt_speech_feat, flow_embedding=voice.flow_embedding,
        )
