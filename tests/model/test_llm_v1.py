"""v1 TransformerLM against the official fixtures (golden v1, section (d) of the fixtures README)."""

from __future__ import annotations

import copy

import pytest
import torch

from tests.conftest import assert_close, official_v1_llm, v1_llm_case
from tests.support.paths import fixture_dir
from cosydesk.model.config import read_yaml
from cosydesk.model.llm_v1 import TransformerLM


@pytest.fixture(scope="module")
def lm():
    return official_v1_llm()


_case = v1_llm_case


@pytest.mark.parametrize("case", ["zs", "sft"])
def test_lm_input(lm, golden_v1, case):
    with torch.inference_mode():
        ours = lm.lm_input(*_case(golden_v1, case))
    assert_close(ours, golden_v1[f"llm_{case}_lm_input"], 1e-4, f"{case} lm_input")


@pytest.mark.parametrize("case", ["zs", "sft"])
def test_teacher_forced_logits(lm, golden_v1, case):
    ours = lm.teacher_forced_logits(*_case(golden_v1, case), golden_v1[f"llm_{case}_tf_tokens"])
    assert_close(ours, golden_v1[f"llm_{case}_tf_logits"], 1e-4, f"{case} teacher-forced logits")


@pytest.mark.parametrize("case", ["zs", "sft"])
def test_greedy_tokens(lm, golden_v1, case):
    ref = golden_v1[f"llm_{case}_greedy_tokens"].tolist()
    assert lm.greedy_tokens(*_case(golden_v1, case), len(ref)) == ref


def test_runtime_api_matches_parity_entry(lm, golden_v1):
    """prefill/decode_step (what the generation loop calls) give the same logits as the parity path."""
    args = _case(golden_v1, "zs")
    forced = golden_v1["llm_zs_tf_tokens"]
    with torch.inference_mode():
        logits, state = lm.prefill(*args)
        assert logits.shape == (lm.speech_token_size + 1,) and logits.dtype == torch.float32
        rows = [logits]
        for token in forced[:-1]:
            logits, state = lm.decode_step(torch.tensor([int(token)]), state)
            rows.append(logits)
    assert_close(torch.stack(rows), golden_v1["llm_zs_tf_logits"], 1e-4, "prefill/decode_step logits")
    assert lm.eos_id == 4096 and lm.stop_ids == frozenset({4096}) and lm.min_len_masked_ids == (4096,)


def test_empty_embedding_is_left_out(lm, golden_v1):
    text, prompt, speech, emb = _case(golden_v1, "sft")
    with torch.inference_mode():
        with_spk = lm.lm_input(text, prompt, speech, emb)
        without = lm.lm_input(text, prompt, speech, torch.zeros(1, 0))
    assert without.size(1) == with_spk.size(1) - 1
    assert torch.equal(without[:, 1:], with_spk[:, 2:])


def test_min_len_masking_blocks_eos(lm, golden_v1):
    """Make eos the raw argmax of every step: the greedy run must still produce min_len tokens, then stop."""
    boosted = copy.deepcopy(lm)
    with torch.no_grad():
        boosted.llm_decoder.bias[lm.eos_id] += 1e4
    text, prompt, speech, emb = _case(golden_v1, "sft")
    tokens = boosted.greedy_tokens(text[:, :3], prompt, speech, emb, 50)
    assert len(tokens) == 6 and lm.eos_id not in tokens


def _full_size(node):
    node = copy.deepcopy(node)
    node.args.update(text_encoder_input_size=512, llm_input_size=1024, llm_output_size=1024, text_token_size=51866)
    node.args["text_encoder"].args.update(input_size=512, output_size=1024, attention_heads=16, linear_units=4096, num_blocks=6)
    node.args["llm"].args.update(input_size=1024, output_size=1024, attention_heads=16, linear_units=4096, num_blocks=14)
    return node


def test_full_size_parameter_count():
    node = _full_size(read_yaml(fixture_dir("v1") / "model" / "cosyvoice.yaml")["llm"])
    with torch.device("meta"):  # count without allocating 1.2 GB
        model = TransformerLM.from_config(node)
    assert sum(p.numel() for p in model.parameters()) == 310_718_465
