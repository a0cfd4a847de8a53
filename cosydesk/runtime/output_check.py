"""Is a chunk the model produced audio? Checked before any chunk is handed on to be played or written.

A damaged model folder (NaN weights, a NaN speaker embedding) or an absurd prompt (samples scaled by 1e30)
makes the networks produce NaN/inf, or samples pinned at the vocoder's clamp: the export would write NaN or
constant -32768 and exit 0. Such a chunk raises InvalidAudioError instead. Plain numpy, cheap (one pass).
"""

from __future__ import annotations

import numpy as np

from cosydesk.runtime.errors import InvalidAudioError

FULL_SCALE = 0.98  # the vocoder clamps to +-0.99; speech touches it for a few samples at most
MAX_FULL_SCALE_FRACTION = 0.5  # more than half of a chunk pinned there is not speech
MIN_SAMPLES_FOR_SCALE_CHECK = 480  # 20 ms at 24 kHz: a short tail is not judged by its level


def check_audio_chunk(pcm: np.ndarray, what: str = "the model") -> None:
    """Raise InvalidAudioError (one line, saying what to do) unless ``pcm`` holds finite, plausible samples."""
    samples = np.asarray(pcm).reshape(-1)
    if samples.size == 0:
        return
    if not np.isfinite(samples).all():
        bad = int(samples.size - np.count_nonzero(np.isfinite(samples)))
        raise InvalidAudioError(f"{what} produced invalid audio ({bad} of {samples.size} samples are NaN/inf): "
                                "nothing was played or written; the model files or the voice are damaged")
    if samples.size >= MIN_SAMPLES_FOR_SCALE_CHECK:
        pinned = float(np.count_nonzero(np.abs(samples) >= FULL_SCALE)) / samples.size
        if pinned > MAX_FULL_SCALE_FRACTION:
            raise InvalidAudioError(f"{what} produced invalid audio ({pinned:.0%} of the samples at full scale): "
                                    "nothing was played or written; the model files or the voice are damaged")
