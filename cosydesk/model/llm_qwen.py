"""Text-to-speech-token language models with a Qwen2 backbone: v2 `Qwen2LM` and v3 `CosyVoice3LM`.

Both read ``[sos, embed_tokens(prompt_text ++ text), task_id, speech_embedding(prompt_speech)]`` into a Qwen2
decoder and predict the next speech token with ``llm_decoder`` applied to the final-norm hidden state of the last
position; later positions are fed ``speech_embedding[token]`` with a KV cache.

  v2: sos / task_id are the two rows of ``llm_embedding``; 6561 speech ids + 3 extra (6561 eos, 6562, 6563 stop too).
  v3: sos / eos / task_id / fill are speech ids 6561..6564 of a 6761-row ``speech_embedding``; any of the 200 extra
      ids stops; ``llm_decoder`` has no bias.

The backbone is transformers' ``Qwen2ForCausalLM`` (kept so that the state-dict keys ``llm.model.model.*`` and
``llm.model.lm_head.weight`` of llm.pt match), built from ``<model_dir>/CosyVoice-BlankEN/config.json`` only:
the BlankEN weights are never read and the hub is never contacted. We drive its inner ``Qwen2Model`` ourselves
(embeddings in, explicit positions, a DynamicCache, no padding mask) because handing transformers 5.x the
official per-step 2-D masks silently yields wrong logits. ``lm_head`` is never evaluated.

Not here: sampling and the generation loop (model/sampling.py), tokenisation, the `<|endofprompt|>` rule for
user input (the synthesizer enforces it), threads, devices.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn
from transformers import Qwen2Config, Qwen2ForCausalLM
from transformers.cache_utils import DynamicCache

from cosydesk.model import sampling
from cosydesk.model.config import ConfigError, Node

BLANKEN_DIR = "CosyVoice-BlankEN"
END_OF_PROMPT_ID = 151646  # Qwen's <|endofprompt|>; v3 expects it in prompt_text ++ text
V3_SILENT_TOKENS = (1, 2, 28, 29, 55, 248, 494, 2241, 2242, 2322, 2323)


def _qwen_model_forward_params() -> Sequence[str]:
    from transformers.models.qwen2.modeling_qwen2 import Qwen2Model

    return tuple(inspect.signature(Qwen2Model.forward).parameters)


# transformers 5.x renamed Qwen2Model.forward's ``past_key_values`` to ``cache``
_CACHE_KWARG = "cache" if "cache" in _qwen_model_forward_params() else "past_key_values"


def read_qwen_config(model_dir: str | Path) -> Qwen2Config:
    """The backbone architecture from ``<model_dir>/CosyVoice-BlankEN/config.json`` (local file only)."""
    path = Path(model_dir) / BLANKEN_DIR / "config.json"
    if not path.is_file():
        raise ConfigError(f"{path} is missing: the Qwen2 backbone architecture is read from it")
    from cosydesk.model.hf_files import check_qwen_config_values, read_json_object, refuse_custom_code

    data = read_json_object(path, "a Qwen2 config")  # size-limited plain JSON; ConfigError names the file
    refuse_custom_code(path, data)  # Qwen2Config would ignore auto_map, but such a folder is not a released one
    check_qwen_config_values(path, data)  # 0 heads, a vocabulary of 10**12: refused before anything is built
    try:
        config = Qwen2Config.from_dict(data)
    except (TypeError, ValueError, AttributeError) as err:
        raise ConfigError(f"{path} is not a readable Qwen2 config ({err})") from err
    config._attn_implementation = "sdpa"
    return config


def build_qwen_backbone(config: Qwen2Config) -> Qwen2ForCausalLM:
    """A Qwen2ForCausalLM whose parameters are allocated but NOT initialised: load llm.pt into it before use.

    HF's random init of the full-size model takes ~20 s on a small CPU and is overwritten by llm.pt anyway, so the
    parameters are created on the meta device and materialised empty. The only non-persistent buffers (the
    rotary tables) are rebuilt for real, and the output embedding is re-tied to the input embedding.
    """
    with torch.device("meta"):
        model = Qwen2ForCausalLM(config)
    if torch.get_default_device().type == "meta":  # built for the loader's size and shape check: no memory
        return model.eval()
    model.to_empty(device="cpu")  # unties lm_head: each module gets its own new tensor
    if config.tie_word_embeddings:
        model.lm_head.weight = model.model.embed_tokens.weight
    model.model.rotary_emb = type(model.model.rotary_emb)(config=config)
    stored = set(model.state_dict())
    lost = [name for name, _ in model.named_buffers() if name not in stored and not name.startswith("model.rotary_emb.")]
    if lost:  # a future transformers added buffers that meta construction would leave as garbage
        raise RuntimeError(f"Qwen2 backbone has unexpected non-persistent buffers {lost}")
    return model.eval()


def _new_cache(config: Qwen2Config) -> DynamicCache:
    try:
        return DynamicCache(config=config)
    except TypeError:  # transformers 4.x takes no config
        return DynamicCache()


class QwenBackbone(nn.Module):
    """Holds the Qwen2ForCausalLM as ``.model`` (official key path ``llm.model.*``) and runs it on embeddings."""

    def __init__(self, config: Qwen2Config):
        super().__init__()
        self.model = build_qwen_backbone(config)

    @property
    def config(self) -> Qwen2Config:
        return self.model.config

    @property
    def embed_tokens(self) -> nn.Embedding:
        return self.model.model.embed_tokens

    def new_cache(self) -> DynamicCache:
        return _new_cache(self.config)

    def forward(self, embeds: torch.Tensor, cache: DynamicCache, past_len: int) -> torch.Tensor:
        """Final-norm hidden states [1, q, H] of ``embeds`` [1, q, H] at positions past_len.., extending ``cache``."""
        steps = embeds.shape[1]
        positions = torch.arange(past_len, past_len + steps, device=embeds.device).unsqueeze(0)
        # no attention_mask: the sequence is unpadded, so transformers' own causal masking is exact
        out = self.model.model(inputs_embeds=embeds, position_ids=positions, use_cache=True, **{_CACHE_KWARG: cache})
        return out.last_hidden_state


@dataclass
class QwenDecodeState:
    """KV cache plus the number of positions it holds."""

    cache: DynamicCache
    length: int


def _as_ids(ids: torch.Tensor) -> torch.Tensor:
    return ids.to(torch.long).reshape(1, -1)


class _QwenSpeechLM(nn.Module):
    """What v2 and v3 share: input assembly, the cached decoder steps and the parity entry points."""

    class_name = ""
    speech_token_size: int
    eos_id: int
    stop_ids: frozenset[int]
    min_len_masked_ids: tuple[int, ...]
    silent_tokens: tuple[int, ...] = ()

    def __init__(self, llm_input_size: int, llm_output_size: int, speech_token_size: int, qwen_config: Qwen2Config):
        super().__init__()
        if qwen_config.hidden_size != llm_input_size or qwen_config.hidden_size != llm_output_size:
            raise ConfigError(
                f"{self.class_name}: llm_input_size {llm_input_size} / llm_output_size {llm_output_size} do not match "
                f"the Qwen2 hidden_size {qwen_config.hidden_size} of {BLANKEN_DIR}/config.json"
            )
        self.llm_input_size = llm_input_size
        self.llm_output_size = llm_output_size
        self.speech_token_size = speech_token_size
        # text-id aliases applied only at the text-embedding lookup (tests: {151646: 999} on the 1000-row table)
        self.token_alias: dict[int, int] = {}

    @classmethod
    def from_config(cls, node: Node, model_dir: str | Path) -> _QwenSpeechLM:
        """Build from the yaml's ``llm`` entry and the BlankEN config.json of ``model_dir`` (weights: llm.pt, loaded later)."""
        if node.class_name != cls.class_name:
            raise ConfigError(f"llm is {node.target}, not {cls.class_name}")
        encoder = node.get("llm")
        if isinstance(encoder, Node) and encoder.class_name != "Qwen2Encoder":
            raise ConfigError(f"{cls.class_name}.llm is {encoder.target}, expected Qwen2Encoder")
        return cls(
            llm_input_size=int(node["llm_input_size"]),
            llm_output_size=int(node["llm_output_size"]),
            speech_token_size=int(node["speech_token_size"]),
            qwen_config=read_qwen_config(model_dir),
        )

    # --- pieces the versions define -------------------------------------------------------------------------
    def _sos_and_task(self) -> tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError

    # --- input assembly ---------------------------------------------------------------------------------------
    def embed_text(self, ids: torch.Tensor) -> torch.Tensor:
        """Qwen text embeddings [1, N, H] of ids [1, N], after applying ``token_alias``."""
        ids = _as_ids(ids)
        for source, target in self.token_alias.items():
            ids = torch.where(ids == source, torch.full_like(ids, target), ids)
        return self.llm.embed_tokens(ids)

    def lm_input(
        self,
        text: torch.Tensor,
        prompt_text: torch.Tensor,
        prompt_speech_token: torch.Tensor,
        embedding: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """[sos, text embeddings of prompt_text ++ text, task_id, speech embeddings of the prompt] as [1, L, H].

        ``embedding`` (speaker vector) is accepted for API symmetry with v1 and ignored, as in the reference.
        """
        text_ids = torch.cat([_as_ids(prompt_text), _as_ids(text)], dim=1)
        text_emb = self.embed_text(text_ids)
        sos, task = self._sos_and_task()
        speech_emb = self.speech_embedding(_as_ids(prompt_speech_token).to(text_emb.device))
        parts = [sos.reshape(1, 1, -1), text_emb, task.reshape(1, 1, -1), speech_emb.to(text_emb.dtype)]
        return torch.cat(parts, dim=1)

    # --- runtime API -----------------------------------------------------------------------------------------
    def _logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.llm_decoder(hidden[0, -1]).float()

    @torch.inference_mode()
    def prefill(
        self,
        text: torch.Tensor,
        prompt_text: torch.Tensor,
        prompt_speech_token: torch.Tensor,
        embedding: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, QwenDecodeState]:
        """Run the whole prompt; returns the logits [V] (float32) of the first speech token and the decode state."""
        embeds = self.lm_input(text, prompt_text, prompt_speech_token, embedding)
        state = QwenDecodeState(cache=self.llm.new_cache(), length=0)
        hidden = self.llm(embeds, state.cache, state.length)
        state.length += embeds.shape[1]
        return self._logits(hidden), state

    @torch.inference_mode()
    def decode_step(self, token: int | torch.Tensor, state: QwenDecodeState) -> tuple[torch.Tensor, QwenDecodeState]:
        """Feed one chosen speech token; returns the logits [V] of the next one and the advanced state."""
        embeds = self.speech_embedding.weight[token].reshape(1, 1, -1)
        hidden = self.llm(embeds, state.cache, state.length)
        state.length += 1
        return self._logits(hidden), state

    # --- parity entry points ---------------------------------------------------------------------------------
    def greedy_tokens(
        self,
        text: torch.Tensor,
        prompt_text: torch.Tensor,
        prompt_speech_token: torch.Tensor,
        embedding: torch.Tensor | None,
        n: int,
    ) -> list[int]:
        """First ``n`` argmax tokens with the official min-length masking (stops early on a stop id)."""
        return sampling.greedy_tokens(self, text, prompt_text, prompt_speech_token, embedding, n)

    def teacher_forced_logits(
        self,
        text: torch.Tensor,
        prompt_text: torch.Tensor,
        prompt_speech_token: torch.Tensor,
        embedding: torch.Tensor | None,
        forced_tokens: Sequence[int] | torch.Tensor,
    ) -> torch.Tensor:
        """Raw ``llm_decoder`` logits [k, V] of the first k steps, feeding the forced tokens."""
        return sampling.teacher_forced_logits(self, text, prompt_text, prompt_speech_token, embedding, forced_tokens)


class Qwen2LM(_QwenSpeechLM):
    """CosyVoice2 speech-token LM (official yaml class ``Qwen2LM``)."""

    class_name = "Qwen2LM"
    SOS_ROW, TASK_ROW = 0, 1  # rows of llm_embedding

    def __init__(self, llm_input_size: int, llm_output_size: int, speech_token_size: int, qwen_config: Qwen2Config):
        super().__init__(llm_input_size, llm_output_size, speech_token_size, qwen_config)
        n_ids = speech_token_size + 3  # speech ids + eos + two more stop ids
        self.llm_embedding = nn.Embedding(2, llm_input_size)
        self.llm = QwenBackbone(qwen_config)
        self.llm_decoder = nn.Linear(llm_output_size, n_ids)
        self.speech_embedding = nn.Embedding(n_ids, llm_input_size)
        self.eos_id = speech_token_size
        self.stop_ids = frozenset(range(speech_token_size, n_ids))
        self.min_len_masked_ids = (speech_token_size,)

    def _sos_and_task(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self.llm_embedding.weight[self.SOS_ROW], self.llm_embedding.weight[self.TASK_ROW]


class CosyVoice3LM(_QwenSpeechLM):
    """CosyVoice3 speech-token LM (official yaml class ``CosyVoice3LM``)."""

    class_name = "CosyVoice3LM"
    N_EXTRA_IDS = 200  # sos, eos, task_id, fill and 196 more, all of them stop generation
    silent_tokens = V3_SILENT_TOKENS

    def __init__(self, llm_input_size: int, llm_output_size: int, speech_token_size: int, qwen_config: Qwen2Config):
        super().__init__(llm_input_size, llm_output_size, speech_token_size, qwen_config)
        n_ids = speech_token_size + self.N_EXTRA_IDS
        self.llm = QwenBackbone(qwen_config)
        self.llm_decoder = nn.Linear(llm_output_size, n_ids, bias=False)
        self.speech_embedding = nn.Embedding(n_ids, llm_input_size)
        self.sos_id = speech_token_size
        self.eos_id = speech_token_size + 1
        self.task_id = speech_token_size + 2
        self.fill_id = speech_token_size + 3
        self.stop_ids = frozenset(range(speech_token_size, n_ids))
        # inherited from v2: the length rule masks id speech_token_size, which in v3 is sos, not eos
        self.min_len_masked_ids = (speech_token_size,)

    def _sos_and_task(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self.speech_embedding.weight[self.sos_id], self.speech_embedding.weight[self.task_id]


QWEN_LM_CLASSES: Mapping[str, type[_QwenSpeechLM]] = {cls.class_name: cls for cls in (Qwen2LM, CosyVoice3LM)}


def build_qwen_lm(node: Node, model_dir: str | Path) -> _QwenSpeechLM:
    """Build whichever Qwen-based LM class the yaml's ``llm`` entry names."""
    cls = QWEN_LM_CLASSES.get(node.class_name)
    if cls is None:
        raise ConfigError(f"llm class {node.target} is not a Qwen2-based CosyVoice LM")
    return cls.from_config(node, model_dir)


def has_end_of_prompt(prompt_text: torch.Tensor, text: torch.Tensor) -> bool:
    """Whether <|endofprompt|> occurs in prompt_text ++ text (the v3 input rule; checked by the synthesizer)."""
    return bool((_as_ids(prompt_text) == END_OF_PROMPT_ID).any() or (_as_ids(text) == END_OF_PROMPT_ID).any())


def count_parameters(module: nn.Module) -> int:
    """Parameters with shared (tied) tensors counted once, as ``module.parameters()`` yields them."""
    return sum(p.numel() for p in module.parameters())


__all__ = [
    "CosyVoice3LM", "Qwen2LM", "QwenBackbone", "QwenDecodeState", "build_qwen_lm", "build_qwen_backbone",
    "read_qwen_config", "has_end_of_prompt", "count_parameters", "END_OF_PROMPT_ID", "V3_SILENT_TOKENS",
]
