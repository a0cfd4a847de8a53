"""The voices the server offers: the model's own speakers, saved voice profiles, and OpenAI's voice names.

OpenAI clients often hard-code `alloy`, `nova`, ... Those names map to the model's default voices: female
names to the model's first female speaker, male names to its first male one (English speakers preferred,
then Chinese), `alloy` to the model's default speaker. A model without built-in speakers (CosyVoice2/3) maps
them to `default_voice` or, failing that, to the oldest saved voice profile. A model speaker or a profile of
the same name always wins over an OpenAI alias. Profiles are re-read per request, so a voice saved in the
app is usable at once. No FastAPI or Qt imports here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from cosydesk.serve.errors import ApiError

# OpenAI's voices and the timbre each is usually described with (None: neutral -> the model's default voice)
OPENAI_VOICES: dict[str, str | None] = {
    "alloy": None, "ash": "male", "ballad": "male", "coral": "female", "echo": "male", "fable": "male",
    "onyx": "male", "nova": "female", "sage": "female", "shimmer": "female", "verse": "male",
    "marin": "female", "cedar": "male",
}
_LANGUAGE_WORDS = (("英文", "en"), ("英语", "en"), ("中文", "zh"), ("普通话", "zh"), ("粤语", "yue"),
                   ("日语", "ja"), ("日文", "ja"), ("韩语", "ko"), ("韩文", "ko"))
_PREFERRED_LANGUAGES = ("en", "zh")


@dataclass(frozen=True)
class Voice:
    id: str
    kind: str  # "speaker" (the model's spk2info), "profile" (saved prompt recording), "openai" (an alias)
    language: str | None
    styles: bool  # whether `instructions` apply with this voice on this model
    speaker: str | None = None
    prompt_wav: str | None = None
    prompt_text: str | None = None
    maps_to: str | None = None

    def request_fields(self) -> dict:
        """Keyword arguments of cosydesk.runtime.Request that select this voice."""
        if self.prompt_wav:
            return {"prompt_wav": self.prompt_wav, "prompt_text": self.prompt_text}
        return {"speaker": self.speaker}

    def describe(self) -> dict:
        """The voice's entry in GET /v1/audio/voices."""
        entry = {"id": self.id, "object": "voice", "kind": self.kind, "language": self.language, "styles": self.styles}
        if self.maps_to:
            entry["maps_to"] = self.maps_to
        return entry


def speaker_language(name: str) -> str | None:
    """Language of an official speaker id such as 英文女 (en) or 粤语女 (yue); None when the name does not say."""
    for word, language in _LANGUAGE_WORDS:
        if word in name:
            return language
    return None


def speaker_gender(name: str) -> str | None:
    lowered = name.lower()
    if "女" in name or "female" in lowered or "woman" in lowered:
        return "female"
    if "男" in name or re.search(r"\bmale\b|\bman\b", lowered):
        return "male"
    return None


def text_language(text: str) -> str:
    """A profile's language from its transcript: ko (Hangul), ja (kana), zh (CJK ideographs) or en."""
    if re.search(r"[\uac00-\ud7af]", text):
        return "ko"
    if re.search(r"[\u3040-\u30ff]", text):
        return "ja"
    if re.search(r"[\u4e00-\u9fff]", text):
        return "zh"
    return "en"


class VoiceCatalogue:
    """Voices of one loaded Synthesizer (anything with speakers(), supports(), model.spk2info) plus profiles."""

    def __init__(self, synth, voices_dir: str | Path | None = None, default_voice: str | None = None) -> None:
        self.synth = synth
        self.voices_dir = Path(voices_dir) if voices_dir is not None else None
        self.default_voice = default_voice

    # -- the pieces ---------------------------------------------------------------------------------------
    def speakers(self) -> list[Voice]:
        spk2info = getattr(getattr(self.synth, "model", None), "spk2info", {}) or {}
        voices = []
        for name in self.synth.speakers():
            zero_shot = "prompt_speech_feat" in spk2info.get(name, {})
            styles = self.synth.supports("instruct2") if zero_shot else self.synth.supports("instruct")
            voices.append(Voice(id=name, kind="speaker", language=speaker_language(name), styles=styles, speaker=name))
        return voices

    def profiles(self) -> list[Voice]:
        from cosydesk.audio.profiles import VoiceProfileStore

        folder = self.voices_dir
        if folder is None:
            from cosydesk.paths import voices_dir

            folder = voices_dir()
        if not folder.is_dir():
            return []
        styles = self.synth.supports("instruct2")
        return [Voice(id=p.name, kind="profile", language=text_language(p.transcript), styles=styles,
                      prompt_wav=str(p.wav_path), prompt_text=p.transcript) for p in VoiceProfileStore(folder).list()]

    def _own(self) -> list[Voice]:
        return self.speakers() + self.profiles()

    def alias_target(self, openai_name: str, own: list[Voice] | None = None) -> Voice | None:
        """The model voice an OpenAI voice name maps to (None: this model has no voice to map it to)."""
        own = self._own() if own is None else own
        if self.default_voice:
            return next((v for v in own if v.id == self.default_voice), None)
        speakers = [v for v in own if v.kind == "speaker"]
        if speakers:
            wanted = OPENAI_VOICES.get(openai_name)
            if wanted is None:
                return speakers[0]
            ranked = sorted(speakers, key=lambda v: _PREFERRED_LANGUAGES.index(v.language)
                            if v.language in _PREFERRED_LANGUAGES else len(_PREFERRED_LANGUAGES))
            return next((v for v in ranked if speaker_gender(v.id) == wanted), speakers[0])
        profiles = [v for v in own if v.kind == "profile"]
        return profiles[0] if profiles else None

    # -- what the endpoints use ---------------------------------------------------------------------------
    def list(self) -> list[Voice]:
        own = self._own()
        taken = {v.id for v in own}
        aliases = []
        for name in OPENAI_VOICES:
            target = self.alias_target(name, own)
            if name not in taken and target is not None:
                aliases.append(_alias(name, target))
        return own + aliases

    def resolve(self, name: str) -> Voice:
        """The voice called `name` (exact, then case-insensitive); ApiError(400) naming the choices otherwise."""
        own = self._own()
        for voice in own:
            if voice.id == name:
                return voice
        folded = [v for v in own if v.id.casefold() == name.casefold()]
        if len(folded) == 1:
            return folded[0]
        if name.lower() in OPENAI_VOICES:
            target = self.alias_target(name.lower(), own)
            if target is None and self.default_voice:
                raise ApiError(400, f"voice {name!r} maps to --default-voice {self.default_voice!r}, which no longer "
                               "exists (was the profile deleted?)", param="voice", code="voice_not_found")
            if target is None:
                raise ApiError(400, f"voice {name!r} is an OpenAI voice name, and this model has no built-in speakers "
                               "to map it to: save a voice profile in the CosyDesk app, or start the server with "
                               "--default-voice NAME", param="voice", code="voice_not_found")
            return _alias(name.lower(), target)
        choices = ", ".join(v.id for v in own[:20]) or "none"
        raise ApiError(400, f"unknown voice {name!r}: this server offers {choices} and OpenAI's names "
                       f"({', '.join(OPENAI_VOICES)}); GET /v1/audio/voices lists them", param="voice",
                       code="voice_not_found")


def _alias(name: str, target: Voice) -> Voice:
    return Voice(id=name, kind="openai", language=target.language, styles=target.styles, speaker=target.speaker,
                 prompt_wav=target.prompt_wav, prompt_text=target.prompt_text, maps_to=target.id)
