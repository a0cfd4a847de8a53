"""Plain data passed between the runtime and its callers (CLI, desktop app, bench). No torch here."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


#: Speaking rates a request may ask for, as multiples of normal speed: OpenAI's speech API range. Speed
#: stretches the flow's mel in time before the vocoder (as the official code does), so pitch is kept.
SPEED_RANGE = (0.25, 4.0)

@dataclass(frozen=True)
class Request:
    """What to say and how.

    speaker: an SFT speaker id from spk2info.pt, or a saved voice-profile name, or None (model default).
    instruct: an emotion / style instruction (v1-Instruct persona text, v2/v3 instruct2 text), or None.
    prompt_wav / prompt_text: a zero-shot prompt (path to audio and its transcript) instead of a speaker.
    per_sentence: synthesise one sentence as a reader sees it at a time (frontend.sentences: the desktop app's
    reading path, so its progress, highlight and subtitles mark real sentences); False packs short sentences into
    segments of up to ~80 tokens as the official frontend does (CLI and API default).
    """

    text: str
    speaker: str | None = None
    instruct: str | None = None
    prompt_wav: str | None = None
    prompt_text: str | None = None
    speed: float = 1.0
    seed: int | None = None
    stream: bool = True
    per_sentence: bool = False


@dataclass
class AudioChunk:
    """A piece of synthesised audio, ready to play.

    timings: perf_counter seconds of submit, first_token, flow_done, vocoder_done, ready.
    span: [start, end) of the request's text that the chunk's sentence was made from (None where unknown).
    """

    pcm: np.ndarray
    sample_rate: int
    index: int
    final: bool
    sentence_index: int = 0
    span: tuple[int, int] | None = None
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def duration_s(self) -> float:
        return len(self.pcm) / float(self.sample_rate)
