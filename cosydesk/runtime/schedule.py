"""When does a streaming chunk fire? The official chunk schedules, as per-request state.

The official code keeps the hop length on the model object and grows it across requests (a leak: every
later request starts with 100-token hops). Here a schedule object is created per sentence and thrown away
with it, so two requests in a row always chunk the same way.

v2/v3: the first hop is 25 tokens plus padding so that prompt + hop is a multiple of 25, and a chunk needs
3 more look-ahead tokens; afterwards hops double up to 100. Each chunk's flow call sees all tokens so far
and returns mel from ``token_offset * 2`` on.
v1: windows of 120 tokens advancing by 100 (20 overlap); the flow call sees only the window.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from cosydesk.model.versions import V1, V2


@dataclass(frozen=True)
class ChunkCall:
    """One token2wav call: tokens[start:end], mel kept from token_offset on, finalize for the last call."""

    start: int
    end: int
    token_offset: int
    finalize: bool


class CausalChunkSchedule:
    """v2/v3 schedule (token_hop_len 25 -> 50 -> 100, pre-look-ahead 3)."""

    def __init__(self, prompt_tokens: int, first_hop: int = V2.chunk_first_hop, max_hop: int = V2.chunk_max_hop,
                 scale: int = V2.chunk_hop_scale, lookahead: int = V2.chunk_lookahead):
        self.hop = first_hop
        self.max_hop = max_hop
        self.scale = scale
        self.lookahead = lookahead
        self.pad = int(math.ceil(prompt_tokens / first_hop) * first_hop - prompt_tokens)
        self.offset = 0

    def _this_hop(self) -> int:
        return self.hop + self.pad if self.offset == 0 else self.hop

    def tokens_needed(self) -> int:
        """Total tokens that must exist before the next non-final chunk can fire."""
        return self.offset + self._this_hop() + self.lookahead

    def next_call(self, available: int, done: bool) -> ChunkCall | None:
        """The next call given ``available`` tokens; the final call once ``done`` and no full hop is left."""
        if available >= self.tokens_needed():
            call = ChunkCall(0, self.tokens_needed(), self.offset, finalize=False)
            self.offset += self._this_hop()
            self.hop = min(self.max_hop, self.hop * self.scale)
            return call
        if done:
            return ChunkCall(0, available, self.offset, finalize=True)
        return None


class WindowChunkSchedule:
    """v1 schedule: 120-token windows (hop 100, overlap 20); the flow cache carries the overlap."""

    def __init__(self, hop: int = V1.chunk_first_hop, overlap: int = V1.chunk_overlap):
        self.hop = hop
        self.overlap = overlap
        self.start = 0

    def tokens_needed(self) -> int:
        return self.start + self.hop + self.overlap

    def next_call(self, available: int, done: bool) -> ChunkCall | None:
        if available >= self.tokens_needed():
            call = ChunkCall(self.start, self.tokens_needed(), 0, finalize=False)
            self.start += self.hop
            return call
        if done:
            return ChunkCall(self.start, available, 0, finalize=True)
        return None


def make_schedule(version: str, prompt_tokens: int):
    return WindowChunkSchedule() if version == "v1" else CausalChunkSchedule(prompt_tokens)
