"""Voice profiles for zero-shot models: a short prompt recording plus its transcript, kept on disk.

What it is for: checking a prompt before the runtime sees it (length, sample rate, silence) with messages a
person can act on, and storing accepted profiles under <user data>/voices/<slug>/ (prompt.wav, profile.json).
The runtime receives them as Request(prompt_wav=..., prompt_text=...).

Stored profiles are untrusted input: a profile.json of the wrong shape (a number as the name, deeply nested
JSON, a FIFO) is skipped and reported in ``VoiceProfileStore.problems``, never fatal; a profile folder or
prompt.wav that leads outside the voices folder (a symlink) is never read or deleted.

What it must not do: import Qt or torch.
"""

from __future__ import annotations

import json
import logging
import math
import re
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import soundfile as sf

from cosydesk.atomic_file import write_atomically
from cosydesk.audio.export import write_audio
from cosydesk.leftovers import remove_leftover_temporaries
from cosydesk.state_files import StateFileError, contained_file, ensure_folder, read_json

log = logging.getLogger(__name__)
PROFILE_MAX_BYTES = 64 * 1024  # a name, a transcript of at most 500 characters and three numbers

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
    """(mono float32 samples, sample rate, warnings); ProfileError if the file is not readable audio, or is
    sampled below 8 kHz, or is longer than MAX_SECONDS: those are refused from the file's header, before it is
    decoded (a 2-hour 8-channel 192 kHz file would need 44 GB)."""
    from cosydesk.frontend.audio_io import AudioInputError, read_mono

    file = Path(path)
    if file.is_dir():
        raise ProfileError([f"{file} is a folder, not a recording: pick an audio file (WAV, FLAC or OGG)"])
    if not file.is_file():
        raise ProfileError([f"{file} does not exist"])
    try:
        channels = sf.info(str(file)).channels
    except (sf.LibsndfileError, RuntimeError, TypeError) as error:
        raise ProfileError([f"{file.name} is not an audio file that can be read (WAV, FLAC or OGG): {error}"]) from error
    try:
        pcm, rate = read_mono(file, max_seconds=MAX_SECONDS)
    except AudioInputError as error:
        raise ProfileError([str(error)]) from None
    warnings = []
    if channels > 1:
        warnings.append(f"{file.name} has {channels} channels; they were mixed down to mono")
    return pcm, int(rate), warnings


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


def _finite_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def profile_from_json(data, folder: Path) -> VoiceProfile:
    """A stored profile, checked field by field (ValueError says what is wrong); extra keys are ignored."""
    if not isinstance(data, dict):
        raise ValueError(f"it holds a {type(data).__name__}, not an object")
    checks = {
        "name": lambda v: isinstance(v, str) and bool(v.strip()) and len(v) <= 200,
        "transcript": lambda v: isinstance(v, str),
        "sample_rate": lambda v: isinstance(v, int) and not isinstance(v, bool) and 0 < v <= 1_000_000,
        "duration_s": lambda v: _finite_number(v) and v >= 0,
        "created": _finite_number,
    }
    for key, ok in checks.items():
        if key not in data:
            raise ValueError(f"it has no {key!r}")
        if not ok(data[key]):
            raise ValueError(f"its {key!r} is {str(data[key])[:60]!r}")
    return VoiceProfile(folder=folder, **{key: data[key] for key in checks})


class VoiceProfileStore:
    """Profiles under `root` (normally <user data>/voices)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.problems: list[str] = []  # what was wrong with stored profiles (for the UI to show)
        try:
            self._report(ensure_folder(self.root))  # a file where the folder should be is moved aside
            self.available = True
        except OSError as error:
            self.available = False
            self._report(f"voice profiles are off for this session: {self.root} cannot be made a folder "
                         f"({error.strerror or error})")
            return
        for folder in self._folders():
            remove_leftover_temporaries(folder)

    def _report(self, problem: str | None) -> None:
        if problem and problem not in self.problems:
            log.warning("voice profiles: %s", problem)
            self.problems.append(problem)

    def _folders(self) -> list[Path]:
        """Profile folders: real folders directly inside the root (a symlink out of it is not one)."""
        if not self.available:
            return []
        try:
            names = sorted(entry.name for entry in self.root.iterdir())
        except OSError:
            return []
        folders = []
        for name in names:
            folder = contained_file(self.root, name)
            if folder is not None and folder.is_dir() and not folder.is_symlink():
                folders.append(folder)
        return folders

    def list(self) -> list[VoiceProfile]:
        profiles = []
        for folder in self._folders():
            meta = folder / "profile.json"
            if not (meta.exists() or meta.is_symlink()):
                continue
            try:
                if contained_file(folder, "profile.json") is None:
                    raise ValueError("it leads outside its folder")
                profile = profile_from_json(read_json(meta, PROFILE_MAX_BYTES), folder)
            except FileNotFoundError:
                continue
            except (StateFileError, ValueError) as error:  # a damaged profile must not hide the others
                reason = str(error) if isinstance(error, StateFileError) else f"{meta}: {error}"
                self._report(f"skipped a voice profile: {reason}")
                continue
            if contained_file(folder, "prompt.wav") is not None and profile.wav_path.is_file():
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
        if not self.available:
            raise ProfileError([f"voice profiles cannot be saved: {'; '.join(self.problems)}"])
        folder = self.root / _slug(clean_name)
        suffix = 2
        while folder.exists() or folder.is_symlink():
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

    def _write_meta(self, profile: VoiceProfile) -> None:
        data = {k: v for k, v in asdict(profile).items() if k != "folder"}
        write_atomically(profile.folder / "profile.json", json.dumps(data, ensure_ascii=False, indent=1))

    def _own(self, name: str) -> VoiceProfile:
        profile = self.get(name)
        if profile is None or profile.folder.is_symlink() or contained_file(self.root, profile.folder.name) is None:
            raise ProfileError([f"there is no voice profile called {name!r}"])
        return profile

    def rename(self, name: str, new_name: str, reserved_names: tuple[str, ...] = ()) -> VoiceProfile:
        """Give a profile another name (its folder stays); ProfileError says why not."""
        profile = self._own(name)
        clean = (new_name or "").strip()
        if not clean:
            raise ProfileError(["give the voice a name"])
        if len(clean) > 200:
            raise ProfileError([f"the name is {len(clean)} characters long; use at most 200"])
        if clean != name and (clean in self.names() or clean in reserved_names):
            raise ProfileError([f"a voice called {clean!r} exists already"])
        profile.name = clean
        self._write_meta(profile)
        return profile

    def replace_recording(self, name: str, pcm: np.ndarray, sample_rate: int, transcript: str) -> VoiceProfile:
        """Re-record: new prompt audio and transcript for an existing profile, checked as for a new one. The
        audio is replaced atomically; the old recording stays if anything is wrong."""
        profile = self._own(name)
        problems = check_transcript(transcript) + check_prompt_audio(pcm, sample_rate).problems
        if problems:
            raise ProfileError(problems)
        samples = np.asarray(pcm, dtype=np.float32).reshape(-1)
        write_audio(profile.wav_path, samples, sample_rate)
        profile.transcript = transcript.strip()
        profile.sample_rate = int(sample_rate)
        profile.duration_s = round(len(samples) / sample_rate, 3)
        self._write_meta(profile)
        return profile

    def delete(self, name: str) -> bool:
        profile = self.get(name)
        if profile is None or profile.folder.is_symlink() or contained_file(self.root, profile.folder.name) is None:
            return False  # only a real folder inside the voices folder is ever removed
        shutil.rmtree(profile.folder, ignore_errors=True)
        return True
