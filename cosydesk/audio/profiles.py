"""Voice profiles for zero-shot models: a short prompt recording plus its transcript, kept on disk.

What it is for: checking a prompt before the runtime sees it (length, sample rate, silence) with messages a
person can act on, and storing accepted profiles under <user data>/voices/<slug>/ (prompt.wav, profile.json).
The runtime receives them as Request(prompt_wav=..., prompt_text=...).

What it must not do: import Qt or torch.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import soundfile as sf

from cosydesk.audio.export import write_audio

MIN_SECONDS = 3.0
MAX_SECONDS = 30.0  # the speech tokenizer takes at most 30 s of prompt
MIN_SAMPLE_RATE = 16000
SILENCE_PEAK = 1e-3  # below this peak the file holds no usable speech
MIN_VOICED_FRACTION = 0.2


class ProfileError(ValueError):
    """A prompt or profile was rejected; str() lists every reason, one per line."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


@dataclass
class PromptCheck:
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass
class VoiceProfile:
    name: str
    transcript: str
    sample_rate: int
    duration_s: float
    created: float
    folder: Path = field(default=Path("."), compare=False)

    @property
    def wav_path(self) -> Path:
        return self.folder / "prompt.wav"


def load_prompt_audio(path: str | Path) -> tuple[np.ndarray, int, list[str]]:
    """(mono float32 samples, sample rate, warnings); ProfileError if the file is not readable audio."""
    file = Path(path)
    if not file.is_file():
        raise ProfileError([f"{file} does not exist"])
    try:
        data, rate = sf.read(str(file), dtype="float32", always_2d=True)
    except (sf.LibsndfileError, RuntimeError, TypeError) as error:
        raise ProfileError([f"{file.name} is not an audio file that can be read (WAV, FLAC or OGG): {error}"]) from error
    warnings = []
    if data.shape[1] > 1:
        warnings.append(f"{file.name} has {data.shape[1]} channels; they were mixed down to mono")
    return data.mean(axis=1).astype(np.float32), int(rate), warnings


def check_prompt_audio(pcm: np.ndarray, sample_rate: int) -> PromptCheck:
    """Is this recording usable as a zero-shot prompt? Every problem found is listed, not just the first."""
    check = PromptCheck()
    samples = np.asarray(pcm, dtype=np.float32).reshape(-1)
    if sample_rate < MIN_SAMPLE_RATE:
        check.problems.append(
            f"sample rate {sample_rate} Hz is too low: record at {MIN_SAMPLE_RATE // 1000} kHz or more")
    duration = len(samples) / sample_rate if sample_rate > 0 else 0.0
    if duration < MIN_SECONDS:
        check.problems.append(
            f"too short ({duration:.1f} s): use {MIN_SECONDS:.0f}–{MAX_SECONDS:.0f} s of clear speech")
    elif duration > MAX_SECONDS:
        check.problems.append(
            f"too long ({duration:.1f} s): at most {MAX_SECONDS:.0f} s are used; trim it to one or two sentences")
    if not np.isfinite(samples).all():
        check.problems.append("the audio holds invalid (NaN/inf) samples")
        return check
    peak = float(np.abs(samples).max()) if len(samples) else 0.0
    if peak < SILENCE_PEAK:
        check.problems.append("the recording is silent: check the microphone or pick another file")
    elif sample_rate > 0 and len(samples) >= sample_rate // 10:
        frame = sample_rate // 50  # 20 ms frames
        frames = samples[: len(samples) // frame * frame].reshape(-1, frame)
        rms = np.sqrt((frames**2).mean(axis=1))
        voiced = float((rms > max(peak * 0.03, SILENCE_PEAK)).mean())
        if voiced < MIN_VOICED_FRACTION:
            check.problems.append(f"almost silent: speech in only {voiced:.0%} of the recording")
        clipped = float((np.abs(samples) >= 0.999).mean())
        if clipped > 0.01:
            check.warnings.append(f"{clipped:.1%} of the samples are clipped; the cloned voice may sound distorted")
    return check


def check_transcript(text: str) -> list[str]:
    if not text or not text.strip():
        return ["the transcript is empty: type exactly what is said in the recording"]
    if len(text) > 500:
        return [f"the transcript is {len(text)} characters long; a prompt of up to 30 s needs far fewer"]
    return []


def _slug(name: str) -> str:
    slug = re.sub(r"[^\w\-]+", "_", name.strip(), flags=re.UNICODE).strip("_")
    return slug[:60] or "voice"


class VoiceProfileStore:
    """Profiles under `root` (normally <user data>/voices)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    def list(self) -> list[VoiceProfile]:
        profiles = []
        for meta in sorted(self.root.glob("*/profile.json")):
            try:
                data = json.loads(meta.read_text(encoding="utf-8"))
                profile = VoiceProfile(folder=meta.parent, **data)
            except (OSError, ValueError, TypeError):
                continue  # a damaged profile must not hide the others
            if profile.wav_path.is_file():
                profiles.append(profile)
        return sorted(profiles, key=lambda p: p.created)

    def names(self) -> list[str]:
        return [p.name for p in self.list()]

    def get(self, name: str) -> VoiceProfile | None:
        return next((p for p in self.list() if p.name == name), None)

    def add(self, name: str, pcm: np.ndarray, sample_rate: int, transcript: str,
            reserved_names: tuple[str, ...] = ()) -> VoiceProfile:
        """Validate and save; ProfileError lists every problem."""
        problems = []
        clean_name = (name or "").strip()
        if not clean_name:
            problems.append("give the voice a name")
        elif clean_name in self.names() or clean_name in reserved_names:
            problems.append(f"a voice called {clean_name!r} exists already")
        problems += check_transcript(transcript)
        problems += check_prompt_audio(pcm, sample_rate).problems
        if problems:
            raise ProfileError(problems)
        folder = self.root / _slug(clean_name)
        suffix = 2
        while folder.exists():
            folder = self.root / f"{_slug(clean_name)}_{suffix}"
            suffix += 1
        folder.mkdir(parents=True)
        samples = np.asarray(pcm, dtype=np.float32).reshape(-1)
        write_audio(folder / "prompt.wav", samples, sample_rate)
        profile = VoiceProfile(name=clean_name, transcript=transcript.strip(), sample_rate=int(sample_rate),
                               duration_s=round(len(samples) / sample_rate, 3), created=time.time(), folder=folder)
        data = {k: v for k, v in asdict(profile).items() if k != "folder"}
        (folder / "profile.json").write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
        return profile

    def add_from_file(self, name: str, wav_path: str | Path, transcript: str,
                      reserved_names: tuple[str, ...] = ()) -> VoiceProfile:
        pcm, rate, _warnings = load_prompt_audio(wav_path)
        return self.add(name, pcm, rate, transcript, reserved_names)

    def delete(self, name: str) -> bool:
        profile = self.get(name)
        if profile is None:
            return False
        shutil.rmtree(profile.folder, ignore_errors=True)
        return True
