"""CosyVoice3 flow (CausalMaskedDiffWithDiT) against the official v3-tiny fixtures (README V3-5b)."""

from __future__ import annotations

import copy

import pytest
import torch

from cosydesk.model.checkpoint import load_strict, read_state_dict
from cosydesk.model.config import read_yaml
from cosydesk.model.dit import DiT
from cosydesk.model.cfm import fixed_start_noise as fixed_noise
from cosydesk.model.flow_v3 import CausalMaskedDiffWithDiT
from tests.conftest import assert_close
from tests.support.paths import fixture_dir

ATOL = 1e-4


def _flow_node():
    return read_yaml(fixture_dir("v3") / "model" / "cosyvoice3.yaml")["flow"]


@pytest.fixture(scope="module")
def flow() -> CausalMaskedDiffWithDiT:
    model = CausalMaskedDiffWithDiT.from_config(_flow_node()).eval()
    load_strict(model, read_state_dict(fixture_dir("v3") / "model" / "flow.pt"), "flow.pt")
    return model


def _case_args(golden, case: str) -> dict:
    meta_token = {"prompt_nonstream": "tokens60", "prompt_stream_finalize": "tokens60",
                  "prompt_stream_chunk": "tokens60", "noprompt_nonstream": "tokens30"}[case]
    token = torch.from_numpy(golden[f"flow_{meta_token}"])
    if case.startswith("prompt"):
        prompt_token = torch.from_numpy(golden["spk_zeroshot_prompt_speech_token"])
        prompt_feat = torch.from_numpy(golden["spk_zeroshot_prompt_speech_feat"])
        embedding = torch.from_numpy(golden["spk_zeroshot_embedding"])
    else:
        prompt_token = torch.zeros(1, 0, dtype=torch.int32)
        prompt_feat = torch.zeros(1, 0, 80)
        embedding = torch.from_numpy(golden["spk_sft_embedding"])
    return dict(
        token=token,
        token_len=torch.tensor([token.shape[1]], dtype=torch.int32),
        prompt_token=prompt_token,
        prompt_token_len=torch.tensor([prompt_token.shape[1]], dtype=torch.int32),
        prompt_feat=prompt_feat,
        prompt_feat_len=torch.tensor([prompt_feat.shape[1]], dtype=torch.int32),
        embedding=embedding,
        streaming=case in ("prompt_stream_finalize", "prompt_stream_chunk"),
        finalize=case != "prompt_stream_chunk",
    )


CASES = ["prompt_nonstream", "prompt_stream_finalize", "prompt_stream_chunk", "noprompt_nonstream"]


@pytest.mark.parametrize("case", CASES)
def test_mel_matches_official(flow, golden_v3, case):
    mel = flow.inference(**_case_args(golden_v3, case))
    assert mel.dtype == torch.float32
    assert_close(mel, golden_v3[f"flow_{case}_mel"], ATOL, f"{case} mel")


@pytest.mark.parametrize("case", CASES)
def test_decoder_inputs_match_official(flow, golden_v3, case):
    args = _case_args(golden_v3, case)
    with torch.no_grad():
        mu, mask, spks, cond = flow.decoder_inputs(
            args["token"], args["token_len"], args["prompt_token"], args["prompt_token_len"],
            args["prompt_feat"], args["embedding"], finalize=args["finalize"],
        )
    mu_key = "prompt_nonstream" if case == "prompt_stream_finalize" else case  # stored once (README V3-5b)
    assert_close(mu, golden_v3[f"flow_{mu_key}_decoder_mu"], ATOL, f"{case} mu")
    assert_close(spks, golden_v3[f"flow_{case}_decoder_spks"], ATOL, f"{case} spks")
    prompt_frames = args["prompt_feat"].shape[1]
    assert mask.shape == (1, 1, mu.shape[2]) and bool(mask.all())
    assert torch.equal(cond[:, :, :prompt_frames], args["prompt_feat"].transpose(1, 2))
    assert not cond[:, :, prompt_frames:].any()


def test_fixed_noise_matches_official_head(flow, golden_v3):
    assert_close(flow.rand_noise[:, :, :256], golden_v3["flow_rand_noise_head"], 0.0, "noise head")
    assert flow.rand_noise.shape == (1, 80, 15000)
    assert "rand_noise" not in flow.state_dict()


def test_noise_does_not_touch_global_rng():
    torch.manual_seed(123)
    expected = torch.rand(4)
    torch.manual_seed(123)
    fixed_noise()
    assert torch.equal(torch.rand(4), expected)


def test_explicit_noise_is_used(flow, golden_v3):
    args = _case_args(golden_v3, "noprompt_nonstream")
    same = flow.inference(**args, noise=flow.rand_noise.clone())
    other = flow.inference(**args, noise=torch.zeros(1, 80, 60))
    assert torch.equal(same, flow.inference(**args))
    assert (same - other).abs().max() > 1e-3
    mel, cache = flow.inference_with_cache(**args)
    assert cache is None and torch.equal(mel, same)


def test_estimator_is_the_decoder_dit(flow):
    assert isinstance(flow.estimator, DiT)
    assert flow.estimator is flow.decoder.estimator
    assert flow.decoder.inference_cfg_rate == pytest.approx(0.7)
    assert not any(key.startswith("estimator.") for key in flow.state_dict())


def _official_size_node():
    node = copy.deepcopy(_flow_node())
    node.args["pre_lookahead_layer"].args["channels"] = 1024
    node.args["decoder"].args["estimator"].args.update(dim=1024, depth=22, heads=16)
    return node


def test_full_size_parameter_count():
    # Built on the meta device: counts shapes without allocating 1.3 GB or running the initialisers.
    with torch.device("meta"):
        model = CausalMaskedDiffWithDiT.from_config(_official_size_node())
    assert sum(p.numel() for p in model.parameters()) == 332_257_088
    assert sum(p.numel() for p in model.estimator.parameters()) == 331_142_224
