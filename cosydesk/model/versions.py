"""Per-version constants of the CosyVoice families (v1, v2, v3) in one table: rates, sizes and chunking rules the
model folders do not carry (the official code hard-codes them), read by the frontend, the runtime core, the
backends and the bench.

Values a model folder's yaml does carry (its sample rate, token_mel_ratio, ...) are read from the yaml where a
loaded model is at hand; this table is for the places that size things before (or without) a model: prompt
alignment, static caches and buffers, graph shapes, the chunk schedules, forced bench tokens.

Pure data: no torch, no imports beyond the standard library.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class VersionConstants:
    """What one model family runs at. Mel frames are the flow's output frames (one HiFT input frame each)."""

    version: str
    speech_tokens_per_second: int      # speech tokenizer / LLM token rate (v1 50 Hz, v2/v3 25 Hz)
    speech_vocab: int                  # speech tokens the tokenizer emits (the LLM adds stop ids past them)
    sample_rate: int                   # output waveform, Hz
    samples_per_mel_frame: int         # HiFT hop: waveform samples per mel frame
    token_mel_ratio: int | None        # mel frames per speech token (None: v1's length regulator stretches)
    # HiFT streaming cache (v1/v2; v3's causal HiFT keeps its own): mel frames vocoded again with the next chunk
    # (their source samples are reused, and as many output samples are held back and cross-faded)
    hift_mel_cache_frames: int
    # chunk schedule: v2/v3 (causal): first hop, largest hop, hop growth, look-ahead tokens;
    # v1 (windowed): hop and overlap tokens of each 120-token window
    chunk_first_hop: int
    chunk_max_hop: int
    chunk_hop_scale: int = 1
    chunk_lookahead: int = 0
    chunk_overlap: int = 0

    @property
    def mel_frames_per_second(self) -> float:
        return self.sample_rate / self.samples_per_mel_frame

    @property
    def hift_source_cache_samples(self) -> int:
        """Source (and held-back output) samples of the HiFT streaming cache."""
        return self.hift_mel_cache_frames * self.samples_per_mel_frame

    def mel_frames_for_tokens(self, tokens: int) -> int:
        """Mel frames ``tokens`` speech tokens make: ratio x tokens, or v1's int(n / rate * sr / hop)."""
        if self.token_mel_ratio is not None:
            return tokens * self.token_mel_ratio
        return int(tokens / self.speech_tokens_per_second * self.sample_rate / self.samples_per_mel_frame)


V1 = VersionConstants("v1", speech_tokens_per_second=50, speech_vocab=4096, sample_rate=22050,
                      samples_per_mel_frame=256, token_mel_ratio=None, hift_mel_cache_frames=20,
                      chunk_first_hop=100, chunk_max_hop=100, chunk_overlap=20)
V2 = VersionConstants("v2", speech_tokens_per_second=25, speech_vocab=6561, sample_rate=24000,
                      samples_per_mel_frame=480, token_mel_ratio=2, hift_mel_cache_frames=8,
                      chunk_first_hop=25, chunk_max_hop=100, chunk_hop_scale=2, chunk_lookahead=3)
V3 = VersionConstants("v3", speech_tokens_per_second=25, speech_vocab=6561, sample_rate=24000,
                      samples_per_mel_frame=480, token_mel_ratio=2, hift_mel_cache_frames=8,
                      chunk_first_hop=25, chunk_max_hop=100, chunk_hop_scale=2, chunk_lookahead=3)

VERSIONS: dict[str, VersionConstants] = {c.version: c for c in (V1, V2, V3)}


def constants(version: str) -> VersionConstants:
    """The table row of ``version``; a clear error for anything else."""
    try:
        return VERSIONS[version]
    except KeyError:
        raise ValueError(f"unknown model version {version!r} (expected one of {', '.join(VERSIONS)})") from None


def per_version(field: str, versions: tuple[str, ...] = tuple(VERSIONS)) -> dict[str, object]:
    """{version: value of ``field``} over ``versions``: the shape older per-version dicts had."""
    return {v: getattr(VERSIONS[v], field) for v in versions}


__all__ = ["VersionConstants", "VERSIONS", "V1", "V2", "V3", "constants", "per_version"]
