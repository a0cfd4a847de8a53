"""v2 Qwen2LM / v3 CosyVoice3LM against the official tiny fixtures (lm_input, logits, greedy tokens) and sizes."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch

from cosydesk.model.checkpoint import load_checkpoint, read_state_dict
from cosydesk.model.config import ConfigError, read_yaml
from cosydesk.model.llm_qwen import (
    BLANKEN_DIR,
    END_OF_PROMPT_ID,
    CosyVoice3LM,
    Qwen2LM,
    build_qwen_lm,
    count_parameters,
    has_end_of_prompt,
)
from tests.conftest import assert_close
from tests.support.paths import fixture_dir

YAML = {"v2": "cosyvoice2.yaml", "v3": "cosyvoice3.yaml"}
NO_IDS = torch.zeros(1, 0, dtype=torch.int32)


def _t(array: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.asarray(array))


def _load(version: str):
    model_dir = fixture_dir(version) / "model"
    model = build_qwen_lm(read_yaml(model_dir / YAML[version])["llm"], model_dir)
    load_checkpoint(model, model_dir / "llm.pt")
    if version == "v3":
        model.token_alias = {END_OF_PROMPT_ID: 999}  # README V3-7: the tiny text table has no row 151646
    return model


@pytest.fixture(scope="module")
def lm_v2():
    return _load("v2")


@pytest.fixture(scope="module")
def lm_v3():
    return _load("v3")


def _case(golden, version: str, case: str):
    """(text, prompt_text, prompt_speech_token, embedding) as the fixture generator passed them."""
    text = _t(golden["llm_text"])
    if case == "zs":
        return text, _t(golden["spk_zeroshot_prompt_text"]), _t(golden["spk_zeroshot_prompt_speech_token"]), _t(golden["spk_zeroshot_embedding"])
    if case == "sft":
        return text, NO_IDS, NO_IDS, _t(golden["spk_sft_embedding"])
    # v3 instruct cases: instruct text as prompt_text, no prompt speech, zero-shot embedding (ignored)
    return text, _t(golden[f"llm_{case}_prompt_text"]), NO_IDS, _t(golden["spk_zeroshot_embedding"])


V2_CASES = ["zs", "sft"]
V3_CASES = ["zs", "instruct"]


@pytest.mark.parametrize("case", V2_CASES)
def test_v2_lm_input(lm_v2, golden_v2, case):
    assert_close(lm_v2.lm_input(*_case(golden_v2, "v2", case)), golden_v2[f"llm_{case}_lm_input"], 1e-6, f"v2 {case} lm_input")


@pytest.mark.parametrize("case", V2_CASES)
def test_v2_teacher_forced_logits(lm_v2, golden_v2, case):
    logits = lm_v2.teacher_forced_logits(*_case(golden_v2, "v2", case), golden_v2[f"llm_{case}_tf_tokens"])
    assert logits.dtype == torch.float32
    assert_close(logits, golden_v2[f"llm_{case}_tf_logits"], 1e-4, f"v2 {case} teacher-forced logits")


@pytest.mark.parametrize("case", V2_CASES)
def test_v2_greedy_tokens(lm_v2, golden_v2, case):
    tokens = lm_v2.greedy_tokens(*_case(golden_v2, "v2", case), 20)
    assert tokens == golden_v2[f"llm_{case}_greedy_tokens"].tolist()


@pytest.mark.parametrize("case", V3_CASES)
def test_v3_lm_input(lm_v3, golden_v3, case):
    assert_close(lm_v3.lm_input(*_case(golden_v3, "v3", case)), golden_v3[f"llm_{case}_lm_input"], 1e-6, f"v3 {case} lm_input")


@pytest.mark.parametrize("case", V3_CASES)
def test_v3_teacher_forced_logits(lm_v3, golden_v3, case):
    logits = lm_v3.teacher_forced_logits(*_case(golden_v3, "v3", case), golden_v3[f"llm_{case}_tf_tokens"])
    assert_close(logits, golden_v3[f"llm_{case}_tf_logits"], 1e-4, f"v3 {case} teacher-forced logits")


@pytest.mark.parametrize("case", V3_CASES)
def test_v3_greedy_tokens(lm_v3, golden_v3, case):
    tokens = lm_v3.greedy_tokens(*_case(golden_v3, "v3", case), 20)
    assert tokens == golden_v3[f"llm_{case}_greedy_tokens"].tolist()


def test_v3_instruct_stop_ends_on_extra_id_despite_min_len(lm_v3, golden_v3):
    inputs = _case(golden_v3, "v3", "instruct_stop")
    assert lm_v3.greedy_tokens(*inputs, 20) == golden_v3["llm_instruct_stop_greedy_tokens"].tolist() == [6512, 882]
    logits = lm_v3.teacher_forced_logits(*inputs, [6512, 882, 0])
    assert_close(logits, golden_v3["llm_instruct_stop_logits"], 1e-4, "v3 instruct_stop logits")
    assert int(logits[2].argmax()) == 6686 and 6686 in lm_v3.stop_ids


def test_prefill_and_decode_step_api(lm_v2):
    text = torch.tensor([[5, 6, 7]], dtype=torch.int32)
    logits, state = lm_v2.prefill(text, NO_IDS, NO_IDS, None)
    assert logits.shape == (6564,) and logits.dtype == torch.float32
    assert state.length == 1 + 3 + 1
    logits2, state = lm_v2.decode_step(torch.tensor(42), state)
    assert logits2.shape == (6564,) and state.length == 6
    # decoding a different token from the same prefix gives different logits (the token is really fed)
    _, other = lm_v2.prefill(text, NO_IDS, NO_IDS, None)
    logits3, _ = lm_v2.decode_step(43, other)
    assert not torch.equal(logits2, logits3)


def test_token_conventions(lm_v2, lm_v3):
    assert isinstance(lm_v2, Qwen2LM) and isinstance(lm_v3, CosyVoice3LM)
    assert (lm_v2.speech_token_size, lm_v2.eos_id, lm_v2.min_len_masked_ids) == (6561, 6561, (6561,))
    assert lm_v2.stop_ids == frozenset({6561, 6562, 6563})
    assert (lm_v3.speech_token_size, lm_v3.eos_id, lm_v3.min_len_masked_ids) == (6561, 6562, (6561,))
    assert lm_v3.stop_ids == frozenset(range(6561, 6761))
    assert lm_v3.silent_tokens == (1, 2, 28, 29, 55, 248, 494, 2241, 2242, 2322, 2323)
    assert lm_v3.llm_decoder.bias is None and lm_v3.llm_decoder.weight.shape == (6761, 64)


def test_weights_come_from_llm_pt_with_tied_lm_head(lm_v2):
    state = read_state_dict(fixture_dir("v2") / "model" / "llm.pt")
    backbone = lm_v2.llm.model
    assert backbone.lm_head.weight is backbone.model.embed_tokens.weight
    assert torch.equal(backbone.model.embed_tokens.weight, state["llm.model.model.embed_tokens.weight"])
    assert torch.equal(lm_v2.llm_embedding.weight, state["llm_embedding.weight"])
    assert set(lm_v2.state_dict()) == set(state)


def test_v3_alias_only_changes_the_text_lookup(lm_v3):
    ids = torch.tensor([[3, END_OF_PROMPT_ID, 4]])
    table = lm_v3.llm.embed_tokens.weight
    assert torch.equal(lm_v3.embed_text(ids)[0], table[[3, 999, 4]])
    assert lm_v3.token_alias == {END_OF_PROMPT_ID: 999}


def test_v3_parity_entry_accepts_text_without_end_of_prompt(lm_v3, golden_v3):
    text = _t(golden_v3["llm_text"])
    assert not has_end_of_prompt(NO_IDS, text)
    tokens = lm_v3.greedy_tokens(text, NO_IDS, NO_IDS, None, 3)
    assert 1 <= len(tokens) <= 3
    assert has_end_of_prompt(_t(golden_v3["llm_instruct_prompt_text"]), text)


def test_from_config_rejects_mismatches(tmp_path):
    model_dir = fixture_dir("v2") / "model"
    node = read_yaml(model_dir / YAML["v2"])["llm"]
    with pytest.raises(ConfigError, match="CosyVoice3LM"):
        CosyVoice3LM.from_config(node, model_dir)
    with pytest.raises(ConfigError, match="config.json"):
        Qwen2LM.from_config(node, tmp_path)
    node.args["llm_input_size"] = 32
    with pytest.raises(ConfigError, match="hidden_size"):
        Qwen2LM.from_config(node, model_dir)


def _full_size_dir(tmp_path):
    """A model dir whose BlankEN config.json has the released Qwen2-0.5B sizes."""
    config = json.loads((fixture_dir("v2") / "model" / BLANKEN_DIR / "config.json").read_text())
    config.update(hidden_size=896, num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
                  intermediate_size=4864, vocab_size=151936, tie_word_embeddings=True)
    (tmp_path / BLANKEN_DIR).mkdir()
    (tmp_path / BLANKEN_DIR / "config.json").write_text(json.dumps(config))
    return tmp_path


@pytest.mark.parametrize(("version", "expected"), [("v2", 505_803_812), ("v3", 506_148_480)])
def test_full_size_parameter_count(tmp_path, version, expected):
    node = read_yaml(fixture_dir(version) / "model" / YAML[version])["llm"]
    node.args.update(llm_input_size=896, llm_output_size=896)  # the released yaml's values
    model = build_qwen_lm(node, _full_size_dir(tmp_path))
    assert count_parameters(model) == expected
    backbone = model.llm.model
    assert backbone.lm_head.weight is backbone.model.embed_tokens.weight
    assert count_parameters(backbone) == 494_032_768
    # rotary tables must be real numbers (they are not in llm.pt, so meta construction must rebuild them)
    inv_freq = backbone.model.rotary_emb.inv_freq
    assert torch.allclose(inv_freq, 1.0 / (1e6 ** (torch.arange(0, 64, 2, dtype=torch.float32) / 64)))
    del model
    shutil.rmtree(tmp_path / BLANKEN_DIR)
