"""The CosyVoice v1 text-to-speech-token language model (official ``cosyvoice.llm.llm.TransformerLM``).

Sequence fed to the LM body (one utterance, batch 1):
    [sos, speaker, text_encoder_affine_layer(text_encoder(text_embedding(prompt_text ++ text))), task_id,
     speech_embedding(prompt_speech_tokens)]
- sos / task_id are rows 0 / 1 of ``llm_embedding``;
- speaker = spk_embed_affine_layer(L2-normalised x-vector), left out when no embedding is given;
- the text encoder is causal (static chunk size 1 in the yaml);
- the body is a TransformerEncoder decoded incrementally with a key/value cache: the prompt in one
  causal pass, then one generated token at a time (its ``speech_embedding`` row);
- logits = ``llm_decoder`` (speech_token_size + 1 outputs; the last one, 4096, is eos).

This module is the model and its parity entry points. Sampling (RAS, top-k/top-p, stopping rules) lives
in the shared generation loop; here only ``greedy_tokens`` reproduces the official greedy run for tests.
No threads, no device-specific code.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from cosydesk.model import sampling
from cosydesk.model.config import ConfigError, Node
from cosydesk.model.transformer import ConformerEncoder, EncoderKVCache, TransformerEncoder


@dataclass
class TransformerLMState:
    """Decoding state: the LM body's key/value cache (mutated in place by ``decode_step``)."""

    cache: EncoderKVCache
    n_steps: int = 0  # logits produced so far (prefill counts as one)


def _as_ids(ids: torch.Tensor, device: torch.device) -> torch.Tensor:
    ids = torch.as_tensor(ids, device=device).to(torch.long)
    return ids.view(1, -1)


class TransformerLM(nn.Module):
    """Official key names: text_embedding, text_encoder, text_encoder_affine_layer, llm_embedding, llm,
    llm_decoder, speech_embedding, spk_embed_affine_layer."""

    silent_tokens: tuple[int, ...] = ()  # v1 emits no ids the caller drops (v3's breath ids, llm_qwen)
    sos_row = 0
    task_id_row = 1

    def __init__(
        self,
        text_encoder_input_size: int,
        llm_input_size: int,
        llm_output_size: int,
        text_token_size: int,
        speech_token_size: int,
        text_encoder: ConformerEncoder,
        llm: TransformerEncoder,
        spk_embed_dim: int = 192,
    ):
        super().__init__()
        self.llm_input_size = llm_input_size
        self.speech_token_size = speech_token_size
        self.eos_id = speech_token_size
        self.stop_ids = frozenset({speech_token_size})
        self.min_len_masked_ids = (speech_token_size,)

        self.text_embedding = nn.Embedding(text_token_size, text_encoder_input_size)
        self.text_encoder = text_encoder
        self.text_encoder_affine_layer = nn.Linear(text_encoder.output_size(), llm_input_size)
        self.llm_embedding = nn.Embedding(2, llm_input_size)
        self.llm = llm
        self.llm_decoder = nn.Linear(llm_output_size, speech_token_size + 1)
        self.speech_embedding = nn.Embedding(speech_token_size, llm_input_size)
        self.spk_embed_affine_layer = nn.Linear(spk_embed_dim, llm_input_size)

    @classmethod
    def from_config(cls, node: Node) -> "TransformerLM":
        text_encoder_node, llm_node = node["text_encoder"], node["llm"]
        if not isinstance(text_encoder_node, Node) or text_encoder_node.class_name != "ConformerEncoder":
            raise ConfigError(f"{node.target}: text_encoder must be a ConformerEncoder")
        if not isinstance(llm_node, Node) or llm_node.class_name != "TransformerEncoder":
            raise ConfigError(f"{node.target}: llm must be a TransformerEncoder")
        return cls(
            text_encoder_input_size=int(node["text_encoder_input_size"]),
            llm_input_size=int(node["llm_input_size"]),
            llm_output_size=int(node["llm_output_size"]),
            text_token_size=int(node["text_token_size"]),
            speech_token_size=int(node["speech_token_size"]),
            text_encoder=ConformerEncoder.from_config(text_encoder_node),
            llm=TransformerEncoder.from_config(llm_node),
            spk_embed_dim=int(node.get("spk_embed_dim", 192)),
        )

    # ------------------------------------------------------------------------------------------ input

    def _device(self) -> torch.device:
        return self.llm_decoder.weight.device

    def _dtype(self) -> torch.dtype:
        return self.llm_decoder.weight.dtype

    def lm_input(
        self,
        text: torch.Tensor,
        prompt_text: torch.Tensor,
        prompt_speech_token: torch.Tensor,
        embedding: torch.Tensor,
    ) -> torch.Tensor:
        """The embedding sequence of the first step, [1, L, llm_input_size].

        text / prompt_text: int ids [1,N] (prompt may be empty); prompt_speech_token [1,P] (P may be 0);
        embedding [1,spk_embed_dim] or an empty tensor (no speaker vector in the sequence).
        """
        device, dtype = self._device(), self._dtype()
        all_text = torch.cat([_as_ids(prompt_text, device), _as_ids(text, device)], dim=1)
        encoded, _ = self.text_encoder(self.text_embedding(all_text), torch.tensor([all_text.size(1)], device=device), decoding_chunk_size=1)
        encoded = self.text_encoder_affine_layer(encoded)

        parts = [self.llm_embedding.weight[self.sos_row].view(1, 1, -1)]
        embedding = torch.as_tensor(embedding, device=device)
        if embedding.numel() > 0:
            speaker = F.normalize(embedding.to(dtype).view(1, -1), dim=1)
            parts.append(self.spk_embed_affine_layer(speaker).unsqueeze(1))
        parts += [encoded, self.llm_embedding.weight[self.task_id_row].view(1, 1, -1)]
        speech = _as_ids(prompt_speech_token, device)
        if speech.size(1) > 0:
            parts.append(self.speech_embedding(speech))
        return torch.cat(parts, dim=1)

    # ------------------------------------------------------------------------------------------ decoding

    def _logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.llm_decoder(hidden[0, -1]).float()

    def prefill(
        self,
        text: torch.Tensor,
        prompt_text: torch.Tensor,
        prompt_speech_token: torch.Tensor,
        embedding: torch.Tensor,
        max_new_tokens: int = 0,
    ) -> tuple[torch.Tensor, TransformerLMState]:
        """Run the prompt; return (raw llm_decoder logits [V] float32 for the first step, state).

        ``max_new_tokens`` only sizes the preallocated cache (it grows on demand anyway).
        """
        inputs = self.lm_input(text, prompt_text, prompt_speech_token, embedding)
        cache = self.llm.new_cache(initial_capacity=max(256, inputs.size(1) + max_new_tokens))
        hidden = self.llm.forward_incremental(inputs, cache)
        return self._logits(hidden), TransformerLMState(cache=cache, n_steps=1)

    def decode_step(self, token: torch.Tensor, state: TransformerLMState) -> tuple[torch.Tensor, TransformerLMState]:
        """Feed the chosen speech token (long scalar or [1]); return (logits [V] float32, the same state)."""
        token = torch.as_tensor(token, device=self._device()).to(torch.long).view(1, 1)
        hidden = self.llm.forward_incremental(self.speech_embedding(token), state.cache)
        state.n_steps += 1
        return self._logits(hidden), state

    # ------------------------------------------------------------------------------------------ parity

    @torch.inference_mode()
    def teacher_forced_logits(
        self,
        text: torch.Tensor,
        prompt_text: torch.Tensor,
        prompt_speech_token: torch.Tensor,
        embedding: torch.Tensor,
        forced_tokens,
    ) -> torch.Tensor:
        """[len(forced), V] raw logits; row k is the step that has seen forced tokens 0..k-1."""
        forced = [int(t) for t in forced_tokens]
        logits, state = self.prefill(text, prompt_text, prompt_speech_token, embedding, len(forced))
        rows = [logits]
        for token in forced[:-1]:
            logits, state = self.decode_step(torch.tensor(token), state)
            rows.append(logits)
        return torch.stack(rows)

    @torch.inference_mode()
    def greedy_tokens(
        self,
        text: torch.Tensor,
        prompt_text: torch.Tensor,
        prompt_speech_token: torch.Tensor,
        embedding: torch.Tensor,
        n: int,
    ) -> list[int]:
        """First ``n`` argmax tokens as the official loop yields them: eos masked during the first
        min_len = 2 * len(text) steps (target text only), generation ends at eos (not yielded)."""
        return sampling.greedy_tokens(self, text, prompt_text, prompt_speech_token, embedding, n)
