"""CosyVoice3 flow: speech tokens (+ prompt) -> mel frames, through a DiT flow-matching estimator.

Official behaviour (`CausalMaskedDiffWithDiT.inference`, pinned by the v3-tiny fixtures, README V3-5b/V3-8):
  mu    = token embeddings of prompt ++ tokens (times the length mask) -> pre-look-ahead layer
          (at finalize=False the last `pre_lookahead_len` tokens are right context only) -> each frame x2;
  cond  = prompt mel frames, then zeros;
  spks  = Linear(192 -> 80) of the L2-normalised speaker embedding;
  z     = the first T columns of a fixed noise tensor (seed 0, randn [1, 80, 15000]);
  mel   = 10 Euler CFG steps of the estimator from z, minus the prompt frames.

There is no encoder in v3. The noise tensor comes from a private torch.Generator, so building this
module leaves the global RNG untouched, and it is a non-persistent buffer (not part of flow.pt, but it
follows `.to()`). What this module must not do: threads, hidden caches, CUDA-specific tricks, host syncs in the
math (token/prompt lengths are only used as tensors). Streaming calls may pass a per-request ``stream_state``
(``flow_stream``, explicit state) to compute only the frames earlier calls did not.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from cosydesk.model import flow_stream
from cosydesk.model.cfm import FlowMatchingSampler, fixed_start_noise
from cosydesk.model.config import Node
from cosydesk.model.dit import DiT
from cosydesk.model.flow_common import cfg_rate, project_speaker, prompt_conditioning, start_noise
from cosydesk.model.transformer import PreLookaheadLayer


class CausalMaskedDiffWithDiT(nn.Module):
    """The v3 flow. State-dict keys: input_embedding, spk_embed_affine_layer, pre_lookahead_layer, decoder.estimator.*"""

    def __init__(
        self,
        estimator: DiT,
        pre_lookahead_layer: nn.Module,
        input_size: int = 80,
        output_size: int = 80,
        spk_embed_dim: int = 192,
        vocab_size: int = 6561,
        token_mel_ratio: int = 2,
        pre_lookahead_len: int = 3,
        inference_cfg_rate: float = 0.7,
        n_timesteps: int = 10,
    ):
        super().__init__()
        self.input_size = input_size
        self.output_size = output_size
        self.token_mel_ratio = int(token_mel_ratio)
        self.pre_lookahead_len = int(pre_lookahead_len)
        self.input_embedding = nn.Embedding(vocab_size, input_size)
        self.spk_embed_affine_layer = nn.Linear(spk_embed_dim, output_size)
        self.pre_lookahead_layer = pre_lookahead_layer
        self.decoder = FlowMatchingSampler(estimator, inference_cfg_rate=inference_cfg_rate, n_steps=n_timesteps)
        self.register_buffer("rand_noise", fixed_start_noise(output_size), persistent=False)

    @property
    def estimator(self) -> DiT:
        """The DiT (registered once, under `decoder.estimator`)."""
        return self.decoder.estimator

    @classmethod
    def from_config(cls, node: Node) -> "CausalMaskedDiffWithDiT":
        """Build from the yaml node `flow` (a `cosyvoice.flow.flow.CausalMaskedDiffWithDiT` Node)."""
        decoder = node["decoder"]
        look = node["pre_lookahead_layer"]
        pre_lookahead_len = int(node.get("pre_lookahead_len", 3))
        layer = PreLookaheadLayer(
            in_channels=int(look["in_channels"]),
            channels=int(look["channels"]),
            pre_lookahead_len=int(look.get("pre_lookahead_len", pre_lookahead_len)),
        )
        return cls(
            estimator=DiT.from_config(decoder["estimator"]),
            pre_lookahead_layer=layer,
            input_size=int(node.get("input_size", 80)),
            output_size=int(node.get("output_size", 80)),
            spk_embed_dim=int(node.get("spk_embed_dim", 192)),
            vocab_size=int(node.get("vocab_size", 6561)),
            token_mel_ratio=int(node.get("token_mel_ratio", 2)),
            pre_lookahead_len=pre_lookahead_len,
            inference_cfg_rate=cfg_rate(decoder),
        )

    def speaker_vector(self, embedding: torch.Tensor) -> torch.Tensor:
        """[1, 192] x-vector -> [1, 80] conditioning vector."""
        return project_speaker(self.spk_embed_affine_layer, embedding)

    def decoder_inputs(
        self,
        token: torch.Tensor,
        token_len: torch.Tensor,
        prompt_token: torch.Tensor,
        prompt_token_len: torch.Tensor,
        prompt_feat: torch.Tensor,
        embedding: torch.Tensor,
        finalize: bool = True,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """(mu [1,80,T], mask [1,1,T], spks [1,80], cond [1,80,T]) exactly as the official code hands them to the CFM."""
        spks = self.speaker_vector(embedding)
        dtype = spks.dtype
        ids = torch.cat([prompt_token, token], dim=1).long()
        total_len = (prompt_token_len + token_len).to(ids.device).reshape(-1, 1)
        valid = torch.arange(ids.shape[1], device=ids.device)[None, :] < total_len  # [1, L]
        emb = self.input_embedding(ids.clamp(min=0)) * valid[:, :, None].to(dtype)
        if finalize:
            h = self.pre_lookahead_layer(emb, None)
        else:
            # The withheld tokens only feed the look-ahead conv; they get no frames of their own.
            cut = emb.shape[1] - self.pre_lookahead_len
            h = self.pre_lookahead_layer(emb[:, :cut], emb[:, cut:])
        c = prompt_conditioning(h.repeat_interleave(self.token_mel_ratio, dim=1), spks, prompt_feat, self.output_size)
        return c.mu, c.mask, c.spks, c.cond

    @torch.inference_mode()
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
        """Generated mel [1, 80, T_gen] (float32), prompt frames removed.

        token [1, N] int, prompt_token [1, P] int, prompt_feat [1, F, 80], embedding [1, 192];
        noise: optional replacement for the fixed noise (at least T columns).
        prompt_feat_len is accepted for the official signature; the prompt length is prompt_feat.shape[1].
        flow_cache and generator are unused in v3 (accepted for the interface shared with the v1/v2 flows).
        stream_state (from `stream_state`, streaming calls only): the same mel, computing only the frames the
        request's earlier calls did not.
        """
        if token.shape[0] != 1:
            raise ValueError("CausalMaskedDiffWithDiT.inference takes one utterance (batch 1)")
        mel = flow_stream.serve(self, stream_state, streaming, finalize, token, prompt_token, prompt_feat, embedding,
                                noise)
        if mel is not None:
            return mel
        mu, mask, spks, cond = self.decoder_inputs(
            token, token_len, prompt_token, prompt_token_len, prompt_feat, embedding, finalize=finalize
        )
        z = start_noise(self.rand_noise, noise, mu)
        mel = self.decoder(z, mask, mu, spks, cond, streaming=streaming)
        return mel[:, :, prompt_feat.shape[1]:].float()

    def inference_with_cache(self, *args: Any, **kwargs: Any) -> tuple[torch.Tensor, None]:
        """Uniform interface with the v1 flow: (mel, None) - v3 carries no flow cache."""
        return self.inference(*args, **kwargs), None

    def stream_state(self, max_bytes: int = flow_stream.DEFAULT_MAX_BYTES) -> flow_stream.FlowStreamState | None:
        """A fresh per-request state for incremental streaming calls, or None when this flow as wired now cannot
        run them (`flow_stream.why_not_incremental` says why)."""
        return flow_stream.new_state(self, max_bytes)
