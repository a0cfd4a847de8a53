"""Token -> mel flow models of v1 (MaskedDiffWithXvec) and v2 (CausalMaskedDiffWithXvec), and `build_flow`.

Both turn speech tokens (plus an optional prompt: its tokens, its mel and a speaker embedding) into a mel
spectrogram by conditional flow matching:

1. spks = spk_embed_affine_layer(L2-normalised 192-d embedding) -> [1, 80];
2. mu = encoder_proj(encoder(input_embedding([prompt_tokens, tokens]))) at mel-frame rate -> [1, 80, T];
   v1 stretches the encoder output with the length regulator (int(n/50*22050/256) frames for n tokens),
   v2's encoder upsamples x token_mel_ratio itself (and may hold back the last pre_lookahead_len tokens as
   look-ahead context when ``finalize=False``);
3. cond = the prompt mel in the first frames, zeros elsewhere;
4. the CFM sampler integrates from noise z to the mel; the frames after the prompt are returned.

Noise: v1 draws fresh Gaussian noise per call (callers may inject it, and v1 streaming carries a "flow cache"
of z and mu for the prompt and the last 34 frames into the next chunk); v2 slices a fixed noise table made
once at construction from seed 0 (private generator: the global RNG is left untouched).

The state-dict layout is the official one (``input_embedding``, ``spk_embed_affine_layer``, ``encoder.*``,
``encoder_proj``, ``decoder.estimator.*``, v1 also ``length_regulator.*``). This module is pure torch math:
no threads, no device-specific tricks; the estimator is reachable as ``flow.estimator``. v2 streaming calls may
pass a per-request ``stream_state`` (``flow_stream``) to compute only the frames earlier calls did not.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from cosydesk.model import flow_stream
from cosydesk.model.cfm import FlowMatchingSampler, fixed_start_noise
# the pieces v1/v2 share with flow_v3 (which imports them from flow_common, so the two never import each other)
from cosydesk.model.flow_common import (  # noqa: F401 - re-exported
    MEL_CHANNELS,
    FlowConditioning,
    cfg_rate,
    project_speaker,
    prompt_conditioning,
    start_noise,
)
from cosydesk.model.length_regulator import InterpolateRegulator, frames_for_tokens
from cosydesk.model.unet import build_estimator
from cosydesk.model.versions import V1, V2

# v1 streaming: the chunk overlap (20 tokens at 50 Hz) is 34 mel frames; the cache keeps that many tail frames.
V1_OVERLAP_FRAMES = V1.mel_frames_for_tokens(V1.chunk_overlap)  # 34


def _build_encoder(node: Any) -> nn.Module:
    from cosydesk.model import transformer

    if not hasattr(transformer, node.class_name):
        raise ValueError(f"unsupported flow encoder {node.target}")
    return getattr(transformer, node.class_name).from_config(node)


def _base_kwargs(node: Any, vocab_size: int, input_frame_rate: float) -> dict[str, Any]:
    """The constructor arguments v1 and v2 flows read the same way (defaults: the release's per version)."""
    return dict(
        encoder=_build_encoder(node["encoder"]),
        estimator=build_estimator(node["decoder"]["estimator"]),
        input_size=node.get("input_size", 512),
        output_size=node.get("output_size", 80),
        spk_embed_dim=node.get("spk_embed_dim", 192),
        vocab_size=node.get("vocab_size", vocab_size),
        input_frame_rate=node.get("input_frame_rate", input_frame_rate),
        inference_cfg_rate=cfg_rate(node["decoder"]),
        encoder_output_size=node["encoder"].get("output_size", 256),
    )


def _length(value: torch.Tensor | int) -> int:
    return int(value.reshape(-1)[0]) if isinstance(value, torch.Tensor) else int(value)


class _TokenFlowBase(nn.Module):
    """Parts shared by v1 and v2: token embedding, speaker projection, encoder + projection, CFM decoder."""

    def __init__(
        self,
        encoder: nn.Module,
        estimator: nn.Module,
        input_size: int,
        output_size: int,
        spk_embed_dim: int,
        vocab_size: int,
        input_frame_rate: float,
        inference_cfg_rate: float,
        encoder_output_size: int,
        n_timesteps: int = 10,
    ):
        super().__init__()
        self.output_size = output_size
        self.input_frame_rate = input_frame_rate
        self.input_embedding = nn.Embedding(vocab_size, input_size)
        self.spk_embed_affine_layer = nn.Linear(spk_embed_dim, output_size)
        self.encoder = encoder
        self.encoder_proj = nn.Linear(encoder_output_size, output_size)
        self.decoder = FlowMatchingSampler(estimator, inference_cfg_rate=inference_cfg_rate, n_steps=n_timesteps)

    @property
    def estimator(self) -> nn.Module:
        """The velocity network (state-dict keys ``decoder.estimator.*``)."""
        return self.decoder.estimator

    def speaker_vector(self, embedding: torch.Tensor) -> torch.Tensor:
        """[1, 192] speaker embedding -> [1, 80] (L2-normalised first)."""
        return project_speaker(self.spk_embed_affine_layer, embedding)

    def embed_tokens(self, prompt_token: torch.Tensor, token: torch.Tensor) -> torch.Tensor:
        """[prompt, tokens] ids -> [1, T, input_size] (negative ids clamped to 0, as the official code does)."""
        ids = torch.cat([prompt_token, token], dim=1).to(torch.long).clamp(min=0)
        return self.input_embedding(ids)

    def _conditioning(self, mu_frames_last: torch.Tensor, spks: torch.Tensor, prompt_feat: torch.Tensor) -> FlowConditioning:
        return prompt_conditioning(mu_frames_last, spks, prompt_feat, self.output_size)


class MaskedDiffWithXvec(_TokenFlowBase):
    """v1 flow: ConformerEncoder at token rate, InterpolateRegulator to 22050/256 Hz frames, U-Net CFM."""

    def __init__(
        self,
        encoder: nn.Module,
        length_regulator: InterpolateRegulator,
        estimator: nn.Module,
        input_size: int = 512,
        output_size: int = 80,
        spk_embed_dim: int = 192,
        vocab_size: int = 4096,
        input_frame_rate: float = V1.speech_tokens_per_second,
        inference_cfg_rate: float = 0.7,
        encoder_output_size: int = 512,
        sample_rate: int = V1.sample_rate,
        hop: int = V1.samples_per_mel_frame,
    ):
        super().__init__(encoder, estimator, input_size, output_size, spk_embed_dim, vocab_size, input_frame_rate,
                         inference_cfg_rate, encoder_output_size)
        self.length_regulator = length_regulator
        # The official code hard-codes 22050 Hz / hop 256 for v1 frame counts.
        self.sample_rate = sample_rate
        self.hop = hop

    @classmethod
    def from_config(cls, node: Any, sample_rate: int = V1.sample_rate,
                    hop: int = V1.samples_per_mel_frame) -> "MaskedDiffWithXvec":
        return cls(
            length_regulator=InterpolateRegulator.from_config(node["length_regulator"]),
            sample_rate=sample_rate,
            hop=hop,
            **_base_kwargs(node, vocab_size=4096, input_frame_rate=50),
        )

    def condition(
        self,
        token: torch.Tensor,
        token_len: torch.Tensor,
        prompt_token: torch.Tensor,
        prompt_token_len: torch.Tensor,
        prompt_feat: torch.Tensor,
        prompt_feat_len: torch.Tensor,
        embedding: torch.Tensor,
    ) -> FlowConditioning:
        """Everything up to the CFM: speaker vector, mu (prompt + generated frames), cond, mask."""
        if token.shape[0] != 1:
            raise ValueError("flow inference takes one utterance at a time (batch 1)")
        spks = self.speaker_vector(embedding)
        n_prompt, n_new = prompt_token.shape[1], token.shape[1]
        tokens = self.embed_tokens(prompt_token, token)
        lengths = torch.tensor([n_prompt + n_new], device=tokens.device, dtype=torch.int32)
        hidden, _ = self.encoder(tokens, lengths)
        hidden = self.encoder_proj(hidden)
        mel_len1 = prompt_feat.shape[1]
        mel_len2 = frames_for_tokens(n_new, self.input_frame_rate, self.sample_rate, self.hop)
        mu, _ = self.length_regulator.inference(
            hidden[:, :n_prompt], hidden[:, n_prompt:], mel_len1, mel_len2, self.input_frame_rate, self.sample_rate,
            self.hop,
        )
        return self._conditioning(mu, spks, prompt_feat)

    def inference_with_cache(
        self,
        token: torch.Tensor,
        token_len: torch.Tensor,
        prompt_token: torch.Tensor,
        prompt_token_len: torch.Tensor,
        prompt_feat: torch.Tensor,
        prompt_feat_len: torch.Tensor,
        embedding: torch.Tensor,
        streaming: bool = False,
        finalize: bool = True,
        noise: torch.Tensor | None = None,
        flow_cache: torch.Tensor | None = None,
        generator: torch.Generator | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Generated mel [1, 80, T_gen] and the new flow cache [1, 80, P + 34, 2] ([..., 0] = z, [..., 1] = mu).

        ``noise`` is the initial z over prompt + generated frames (drawn with ``generator`` when None). A non-empty
        ``flow_cache`` (the previous chunk's) overwrites the first cache frames of z and mu, so the overlap of
        consecutive streaming chunks is sampled from the same noise and conditioning. ``streaming``/``finalize``
        have no effect in v1 (accepted for a uniform interface).
        """
        c = self.condition(token, token_len, prompt_token, prompt_token_len, prompt_feat, prompt_feat_len, embedding)
        mu = c.mu
        if noise is None:
            device = generator.device if generator is not None else mu.device
            noise = torch.randn(mu.shape, generator=generator, device=device)
        z = noise.to(device=mu.device, dtype=mu.dtype).clone()
        if flow_cache is not None and flow_cache.shape[2] > 0:
            carried = flow_cache.shape[2]
            z[:, :, :carried] = flow_cache[:, :, :, 0].to(z.dtype)
            mu = mu.clone()
            mu[:, :, :carried] = flow_cache[:, :, :, 1].to(mu.dtype)
        keep = c.prompt_frames
        new_cache = torch.stack(
            [
                torch.cat([z[:, :, :keep], z[:, :, -V1_OVERLAP_FRAMES:]], dim=2),
                torch.cat([mu[:, :, :keep], mu[:, :, -V1_OVERLAP_FRAMES:]], dim=2),
            ],
            dim=-1,
        )
        mel = self.decoder(z, c.mask, mu, c.spks, c.cond)
        return mel[:, :, keep:].float(), new_cache

    def inference(self, *args: Any, **kwargs: Any) -> torch.Tensor:
        """Same arguments as `inference_with_cache`; returns only the generated mel [1, 80, T_gen]."""
        return self.inference_with_cache(*args, **kwargs)[0]


class CausalMaskedDiffWithXvec(_TokenFlowBase):
    """v2 flow: UpsampleConformerEncoder (x token_mel_ratio, look-ahead), causal U-Net CFM, fixed noise table."""

    def __init__(
        self,
        encoder: nn.Module,
        estimator: nn.Module,
        input_size: int = 512,
        output_size: int = 80,
        spk_embed_dim: int = 192,
        vocab_size: int = 6561,
        input_frame_rate: float = V2.speech_tokens_per_second,
        inference_cfg_rate: float = 0.7,
        encoder_output_size: int = 512,
        token_mel_ratio: int = V2.token_mel_ratio,
        pre_lookahead_len: int = 3,
    ):
        super().__init__(encoder, estimator, input_size, output_size, spk_embed_dim, vocab_size, input_frame_rate,
                         inference_cfg_rate, encoder_output_size)
        self.token_mel_ratio = token_mel_ratio
        self.pre_lookahead_len = pre_lookahead_len
        noise = fixed_start_noise(MEL_CHANNELS)
        # Not in flow.pt: rebuilt identically at every construction; a buffer so .to(device) moves it.
        self.register_buffer("rand_noise", noise, persistent=False)

    @classmethod
    def from_config(cls, node: Any) -> "CausalMaskedDiffWithXvec":
        return cls(
            token_mel_ratio=node.get("token_mel_ratio", 2),
            pre_lookahead_len=node.get("pre_lookahead_len", 3),
            **_base_kwargs(node, vocab_size=6561, input_frame_rate=25),
        )

    def condition(
        self,
        token: torch.Tensor,
        token_len: torch.Tensor,
        prompt_token: torch.Tensor,
        prompt_token_len: torch.Tensor,
        prompt_feat: torch.Tensor,
        prompt_feat_len: torch.Tensor,
        embedding: torch.Tensor,
        streaming: bool = False,
        finalize: bool = True,
    ) -> FlowConditioning:
        """Speaker vector, mu, cond and mask; with ``finalize=False`` the last pre_lookahead_len tokens are only
        look-ahead context for the encoder (no frames are produced for them)."""
        if token.shape[0] != 1:
            raise ValueError("flow inference takes one utterance at a time (batch 1)")
        spks = self.speaker_vector(embedding)
        tokens = self.embed_tokens(prompt_token, token)
        context = None
        if not finalize:
            tokens, context = tokens[:, : -self.pre_lookahead_len], tokens[:, -self.pre_lookahead_len :]
        lengths = torch.tensor([tokens.shape[1]], device=tokens.device, dtype=torch.int32)
        hidden, _ = self.encoder(tokens, lengths, context=context, streaming=streaming)
        mu = self.encoder_proj(hidden)
        return self._conditioning(mu, spks, prompt_feat)

    def inference(
        self,
        token: torch.Tensor,
        token_len: torch.Tensor,
        prompt_token: torch.Tensor,
        prompt_token_len: torch.Tensor,
        prompt_feat: torch.Tensor,
        prompt_feat_len: torch.Tensor,
        embedding: torch.Tensor,
        streaming: bool = False,
        finalize: bool = True,
        noise: torch.Tensor | None = None,
        flow_cache: torch.Tensor | None = None,
        generator: torch.Generator | None = None,
        stream_state: flow_stream.FlowStreamState | None = None,
    ) -> torch.Tensor:
        """Generated mel [1, 80, T_gen]. ``noise`` overrides the fixed table (for tests); ``flow_cache`` and
        ``generator`` are unused in v2 (accepted for a uniform interface). ``stream_state`` (from `stream_state`,
        streaming calls only): the same mel, computing only the frames the request's earlier calls did not."""
        mel = flow_stream.serve(self, stream_state, streaming, finalize, token, prompt_token, prompt_feat, embedding,
                                noise)
        if mel is not None:
            return mel
        c = self.condition(token, token_len, prompt_token, prompt_token_len, prompt_feat, prompt_feat_len, embedding,
                           streaming=streaming, finalize=finalize)
        z = start_noise(self.rand_noise, noise, c.mu)
        mel = self.decoder(z, c.mask, c.mu, c.spks, c.cond, streaming=streaming)
        return mel[:, :, c.prompt_frames :].float()

    def inference_with_cache(self, *args: Any, **kwargs: Any) -> tuple[torch.Tensor, None]:
        """Uniform interface with v1: (mel, None) - v2 carries no flow cache."""
        return self.inference(*args, **kwargs), None

    def stream_state(self, max_bytes: int = flow_stream.DEFAULT_MAX_BYTES) -> flow_stream.FlowStreamState | None:
        """A fresh per-request state for incremental streaming calls, or None when this flow as wired now (e.g. a
        backend swapped in graphs or engines) cannot run them: `flow_stream.why_not_incremental` says why."""
        return flow_stream.new_state(self, max_bytes)


FLOW_CLASSES = ("MaskedDiffWithXvec", "CausalMaskedDiffWithXvec", "CausalMaskedDiffWithDiT")


def build_flow(node: Any) -> nn.Module:
    """The flow network for the yaml ``flow`` Node (v1, v2 or v3), randomly initialised."""
    name = node.class_name
    if name == "MaskedDiffWithXvec":
        return MaskedDiffWithXvec.from_config(node)
    if name == "CausalMaskedDiffWithXvec":
        return CausalMaskedDiffWithXvec.from_config(node)
    if name == "CausalMaskedDiffWithDiT":
        from cosydesk.model.flow_v3 import CausalMaskedDiffWithDiT

        return CausalMaskedDiffWithDiT.from_config(node)
    raise ValueError(f"unsupported flow model {node.target} (expected one of {', '.join(FLOW_CLASSES)})")
