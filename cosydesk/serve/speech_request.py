"""The body of `POST /v1/audio/speech`, parsed and checked field by field (OpenAI's request shape).

    {"model": "tts-1", "input": "Hello.", "voice": "alloy", "instructions": null, "speed": 1.0,
     "response_format": "mp3", "stream_format": "audio"}

Each problem is an ApiError(400) naming the field (`param`), the value and what is accepted. Unknown extra
fields are ignored, as OpenAI clients add new ones over time. No FastAPI or torch imports here.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

from cosydesk.runtime.types import SPEED_RANGE
from cosydesk.serve.config import MAX_INSTRUCTIONS_CHARS
from cosydesk.serve.errors import ApiError, bad_request

MEDIA_TYPES = {"mp3": "audio/mpeg", "opus": "audio/ogg", "flac": "audio/flac", "wav": "audio/wav", "pcm": "audio/pcm"}
REFUSED_FORMATS = {"aac": "aac is not offered (no AAC encoder ships with libsndfile)"}
OPENAI_SPEED_RANGE = (0.25, 4.0)
# The Synthesizer's own speed range (cosydesk/runtime/types.py): OpenAI's whole range today; should it ever be
# narrower, asking beyond it gets its own 400 rather than a silently clamped speed.
ENGINE_SPEED_RANGE = SPEED_RANGE
OPENAI_TTS_MODEL = re.compile(r"^(tts-1(-hd)?|gpt-4o(-mini)?-tts)(-\d{4}-\d{2}-\d{2})?$")
GENERIC_MODEL_NAMES = ("cosydesk", "cosyvoice")


@dataclass(frozen=True)
class SpeechParams:
    input: str
    voice: str
    model: str | None = None
    instructions: str | None = None
    speed: float = 1.0
    response_format: str = "mp3"


def accepts_model(name: str, model_id: str) -> bool:
    """OpenAI's TTS model names (clients hard-code them), this server's model id, or 'cosydesk'/'cosyvoice'."""
    wanted = name.strip().lower()
    return wanted == model_id.lower() or wanted in GENERIC_MODEL_NAMES or bool(OPENAI_TTS_MODEL.match(wanted))


def _decode_json(raw: bytes) -> dict:
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise ApiError(400, f"the request body is not UTF-8 text (byte {err.start}): send JSON encoded as UTF-8",
                       code="invalid_json") from None
    except json.JSONDecodeError as err:
        raise ApiError(400, f"the request body is not valid JSON: {err.msg} at line {err.lineno} column {err.colno}",
                       code="invalid_json") from None
    if not isinstance(data, dict):
        raise ApiError(400, f"the request body must be a JSON object, not a JSON {type(data).__name__}",
                       code="invalid_json")
    return data


def _optional_str(data: dict, key: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise bad_request(f"'{key}' must be a string, not {type(value).__name__}", key, "invalid_type")
    return value


def _voice_name(data: dict) -> str:
    voice = data.get("voice")
    if isinstance(voice, dict) and isinstance(voice.get("id"), str):  # newer clients: {"id": "..."}
        voice = voice["id"]
    if voice is None:
        raise bad_request("'voice' is required: an OpenAI voice name (alloy, nova, ...), one of this model's "
                          "speakers or a saved voice profile (GET /v1/audio/voices lists them)", "voice", "missing")
    if not isinstance(voice, str):
        raise bad_request(f"'voice' must be a string, not {type(voice).__name__}", "voice", "invalid_type")
    if not voice.strip():
        raise bad_request("'voice' is empty: give a voice name (GET /v1/audio/voices lists them)", "voice", "missing")
    return voice.strip()


def _speed(data: dict) -> float:
    speed = data.get("speed", 1.0)
    if speed is None:
        return 1.0
    if isinstance(speed, bool) or not isinstance(speed, (int, float)):
        raise bad_request(f"'speed' must be a number, not {type(speed).__name__}", "speed", "invalid_type")
    low, high = OPENAI_SPEED_RANGE
    if not math.isfinite(speed) or not low <= speed <= high:
        raise bad_request(f"'speed' {speed} is out of range: use {low}-{high}", "speed", "out_of_range")
    low, high = ENGINE_SPEED_RANGE
    if not low <= speed <= high:
        raise bad_request(f"'speed' {speed} is valid for OpenAI but CosyVoice speaks at {low}-{high} times normal "
                          "speed: choose a value in that range", "speed", "out_of_range")
    return float(speed)


def _response_format(data: dict, available: tuple[str, ...]) -> str:
    fmt = _optional_str(data, "response_format")
    fmt = (fmt or "mp3").strip().lower()
    offered = ", ".join(available)
    if fmt in REFUSED_FORMATS:
        raise bad_request(f"response_format {fmt!r}: {REFUSED_FORMATS[fmt]}; choose one of {offered}",
                          "response_format", "unsupported_format")
    if fmt not in available:
        why = "" if fmt not in MEDIA_TYPES else " (this server's libsndfile cannot write it)"
        raise bad_request(f"response_format {fmt!r} is not supported{why}: choose one of {offered}",
                          "response_format", "unsupported_format")
    return fmt


def parse_speech_body(raw: bytes, *, model_id: str, max_input_chars: int, formats: tuple[str, ...]) -> SpeechParams:
    """Check every field of a speech request; ApiError(400) for the first problem found."""
    data = _decode_json(raw)
    model = _optional_str(data, "model")
    if model is not None and not accepts_model(model, model_id):
        raise ApiError(400, f"model {model!r} is not served here: use {model_id!r} (or an OpenAI TTS name such as "
                       "'tts-1', which maps to it)", param="model", code="model_not_found")
    text = data.get("input")
    if text is None:
        raise bad_request("'input' is required: the text to speak", "input", "missing")
    if not isinstance(text, str):
        raise bad_request(f"'input' must be a string, not {type(text).__name__}", "input", "invalid_type")
    if not text.strip():
        raise bad_request("'input' is empty: give the text to speak", "input", "empty_input")
    if len(text) > max_input_chars:
        raise bad_request(f"'input' has {len(text)} characters; this server accepts at most {max_input_chars} "
                          "(split the text, or start the server with a larger --max-input-chars)",
                          "input", "input_too_long")
    voice = _voice_name(data)
    instructions = _optional_str(data, "instructions")
    if instructions is not None and not instructions.strip():
        instructions = None
    if instructions is not None and len(instructions) > MAX_INSTRUCTIONS_CHARS:
        raise bad_request(f"'instructions' has {len(instructions)} characters; at most {MAX_INSTRUCTIONS_CHARS} are "
                          "accepted", "instructions", "instructions_too_long")
    speed = _speed(data)
    fmt = _response_format(data, formats)
    stream_format = _optional_str(data, "stream_format")
    if stream_format not in (None, "audio"):
        raise bad_request(f"stream_format {stream_format!r} is not supported: audio streams as raw bytes "
                          "(stream_format 'audio')", "stream_format", "unsupported_format")
    return SpeechParams(input=text, voice=voice, model=model, instructions=instructions, speed=speed,
                        response_format=fmt)
