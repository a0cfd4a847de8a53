"""Emotion / style presets offered per model family (what the official instruct modes were trained on).

Each preset has an English label, a Chinese label and the instruction text the model expects (without
``<|endofprompt|>``: the Synthesizer appends it where the official code requires it).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class StylePreset:
    label: str
    label_zh: str
    instruct: str


V1_INSTRUCT = [
    StylePreset("Cheerful narrator", "开朗的讲述者", "A cheerful, energetic narrator who speaks with a bright and lively voice."),
    StylePreset("Calm storyteller", "平静的讲故事的人", "A calm storyteller with a gentle, soothing voice, speaking slowly."),
    StylePreset("Serious news anchor", "严肃的新闻主播", "A serious news anchor speaking clearly and formally."),
    StylePreset("Excited", "激动", "A young speaker who is very excited and speaks quickly."),
    StylePreset("Sad", "悲伤", "A speaker who sounds sad and speaks softly with a low voice."),
    StylePreset("Angry", "生气", "A speaker who is angry and speaks loudly and sharply."),
]

V2_INSTRUCT = [
    StylePreset("Happy", "开心", "用开心的语气说"),
    StylePreset("Sad", "伤心", "用伤心的语气说"),
    StylePreset("Angry", "生气", "用生气的语气说"),
    StylePreset("Whisper", "悄悄话", "用悄悄话的方式说"),
    StylePreset("Slow", "慢速", "请用尽可能慢的语速说"),
    StylePreset("Fast", "快速", "请用尽可能快的语速说"),
    StylePreset("Cantonese", "粤语", "用粤语说这句话"),
    StylePreset("Sichuanese", "四川话", "用四川话说这句话"),
]

V3_INSTRUCT = [
    StylePreset("Happy", "开心", "请用开心的语气说。"),
    StylePreset("Sad", "伤心", "请用伤心的语气说。"),
    StylePreset("Angry", "生气", "请用生气的语气说。"),
    StylePreset("Loud", "大声", "请用大声的方式说。"),
    StylePreset("Soft", "小声", "请用小声的方式说。"),
    StylePreset("Slow", "慢速", "请用尽可能慢的语速说一句话。"),
    StylePreset("Fast", "快速", "请用尽可能快地语速说一句话。"),
    StylePreset("Cantonese", "粤语", "请用广东话表达。"),
    StylePreset("Sichuanese", "四川话", "请用四川话表达。"),
    StylePreset("Role-play: little girl", "角色扮演：小女孩", "请模仿小女孩的声音说。"),
]


def is_instruct_model(version: str, model_dir: str | Path) -> bool:
    """v2/v3 all take instructions; of the v1 models only CosyVoice-300M-Instruct (known by its folder name)."""
    return version != "v1" or "instruct" in Path(model_dir).name.lower()


def presets_for(version: str, instruct_model: bool) -> list[StylePreset]:
    if version == "v1":
        return list(V1_INSTRUCT) if instruct_model else []
    return list(V2_INSTRUCT if version == "v2" else V3_INSTRUCT)


def resolve_instruct(text: str, presets: list[StylePreset]) -> str:
    """A preset label (English or Chinese) maps to its instruction; anything else is free text."""
    for preset in presets:
        if text in (preset.label, preset.label_zh):
            return preset.instruct
    return text
