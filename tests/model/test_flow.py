"""v1/v2 token -> mel flow models against the official fixtures (golden.npz section (b))."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from cosydesk.model.checkpoint import load_strict, read_state_dict
from cosydesk.model.config import read_yaml
from cosydesk.model.flow import CausalMaskedDiffWithXvec, MaskedDiffWithXvec, build_flow
from cosydesk.model.length_regulator import InterpolateRegulator, frames_for_tokens
from tests.conftest import assert_close
from tests.support.paths import fixture_dir

YAML = {"v1": "cosyvoice.yaml", "v2": "cosyvoice2.yaml"}


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """Tiny models gain nothing from intra-op threads; on a busy 2-core box they only add contention."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _flow(version: str):
    flow = build_flow(read_yaml(fixture_dir(version) / "model" / YAML[version])["flow"]).eval()
    load_strict(flow, read_state_dict(fixture_dir(version) / "model" / "flow.pt"), "flow.pt")
    return flow


@pytest.fixture(scope="module")
def flow_v1():
    return _flow("v1")


@pytest.fixture(scope="module")
def flow_v2():
    return _flow("v2")


def _i32(n: int) -> torch.Tensor:
    return torch.tensor([n], dtype=torch.int32)


def _args(golden, tokens: np.ndarray, prompt: bool):
    """Positional flow.inference arguments with the official types (int32 ids and lengths)."""
    token = torch.from_numpy(tokens)
    if prompt:
        prompt_token = torch.from_numpy(golden["spk_zeroshot_prompt_speech_token"])
        prompt_feat = torch.from_numpy(golden["spk_zeroshot_prompt_speech_feat"])
        embedding = torch.from_numpy(golden["spk_zeroshot_embedding"])
    else:
        prompt_token = torch.zeros(1, 0, dtype=torch.int32)
        prompt_feat = torch.zeros(1, 0, 80)
        embedding = torch.from_numpy(golden["spk_sft_embedding"])
    return (token, _i32(token.shape[1]), prompt_token, _i32(prompt_token.shape[1]), prompt_feat,
            _i32(prompt_feat.shape[1]), embedding)


# ---------------------------------------------------------------------------------------------- v1


V1_CASES = {
    "prompt": ("flow_tokens60", slice(None), True, None),
    "noprompt": ("flow_tokens25", slice(None), False, None),
    "stream_chunk1": ("flow_tokens150", slice(0, 120), True, None),
    "stream_chunk2": ("flow_tokens150", slice(100, 150), True, "flow_stream_chunk1_cache_out"),
}


@pytest.mark.parametrize("case", list(V1_CASES))
def test_v1_flow(flow_v1, golden_v1, case):
    tokens_key, window, prompt, cache_key = V1_CASES[case]
    args = _args(golden_v1, golden_v1[tokens_key][:, window], prompt)
    cache = torch.from_numpy(golden_v1[cache_key]) if cache_key else None
    noise = torch.from_numpy(golden_v1[f"flow_{case}_noise"])
    with torch.no_grad():
        if f"flow_{case}_decoder_mu" in golden_v1:
            conditioning = flow_v1.condition(*args)
            assert_close(conditioning.mu, golden_v1[f"flow_{case}_decoder_mu"], 1e-4, f"v1 {case} decoder_mu")
            assert_close(conditioning.spks, golden_v1[f"flow_{case}_decoder_spks"], 1e-4, f"v1 {case} decoder_spks")
        mel, cache_out = flow_v1.inference_with_cache(*args, noise=noise, flow_cache=cache)
    assert mel.dtype == torch.float32
    assert_close(mel, golden_v1[f"flow_{case}_mel"], 1e-4, f"v1 {case} mel")
    assert_close(cache_out, golden_v1[f"flow_{case}_cache_out"], 1e-4, f"v1 {case} cache_out")


def test_v1_inference_returns_the_mel_only(flow_v1, golden_v1):
    args = _args(golden_v1, golden_v1["flow_tokens25"], False)
    with torch.no_grad():
        mel = flow_v1.inference(*args, noise=torch.from_numpy(golden_v1["flow_noprompt_noise"]))
    assert_close(mel, golden_v1["flow_noprompt_mel"], 1e-4, "v1 noprompt mel via inference()")


def test_v1_draws_noise_from_the_given_generator(flow_v1, golden_v1):
    args = _args(golden_v1, golden_v1["flow_tokens25"], False)
    with torch.no_grad():
        first = flow_v1.inference(*args, generator=torch.Generator().manual_seed(7))
        again = flow_v1.inference(*args, generator=torch.Generator().manual_seed(7))
        other = flow_v1.inference(*args, generator=torch.Generator().manual_seed(8))
    assert torch.equal(first, again)
    assert float((first - other).abs().max()) > 1e-3


def test_v1_length_regulator_edges_are_chunk_independent(flow_v1):
    """Above 40 tokens the first/last 20 tokens are stretched to 34 frames on their own."""
    regulator: InterpolateRegulator = flow_v1.length_regulator
    assert frames_for_tokens(60, 50) == 103 and frames_for_tokens(20, 50) == 34 and frames_for_tokens(25, 50) == 43
    torch.manual_seed(0)
    long, short = torch.randn(1, 120, 80), torch.randn(1, 50, 80)
    short[:, :20] = long[:, :20]
    empty = torch.zeros(1, 0, 80)
    head_long = regulator.stretch_for_inference(empty, long, 0, frames_for_tokens(120, 50))
    head_short = regulator.stretch_for_inference(empty, short, 0, frames_for_tokens(50, 50))
    assert head_long.shape == (1, 80, 206) and head_short.shape == (1, 80, 86)
    assert torch.equal(head_long[:, :, :34], head_short[:, :, :34])
    # Tail: the last 20 tokens alone give the last 34 frames.
    tail = regulator.stretch_for_inference(empty, long[:, -20:], 0, 34)
    assert torch.equal(head_long[:, :, -34:], tail)
    # 40 tokens or fewer: one plain interpolation (the whole chunk would differ from a separate head).
    plain = regulator.stretch_for_inference(empty, long[:, :40], 0, frames_for_tokens(40, 50))
    assert not torch.equal(plain[:, :, :34], head_long[:, :, :34])
    with torch.no_grad():
        out, n = regulator.inference(empty, long, 0, 206)
    assert n == 206 and out.shape == (1, 206, 80)


# ---------------------------------------------------------------------------------------------- v2


V2_CASES = {
    "prompt_nonstream": ("flow_tokens60", True, False, True),
    "prompt_stream_finalize": ("flow_tokens60", True, True, True),
    "prompt_stream_chunk": ("flow_tokens60", True, True, False),
    "noprompt_nonstream": ("flow_tokens30", False, False, True),
}


@pytest.mark.parametrize("case", list(V2_CASES))
def test_v2_flow(flow_v2, golden_v2, case):
    tokens_key, prompt, streaming, finalize = V2_CASES[case]
    args = _args(golden_v2, golden_v2[tokens_key], prompt)
    with torch.no_grad():
        conditioning = flow_v2.condition(*args, streaming=streaming, finalize=finalize)
        mel = flow_v2.inference(*args, streaming=streaming, finalize=finalize)
    if f"flow_{case}_decoder_mu" in golden_v2:
        assert_close(conditioning.mu, golden_v2[f"flow_{case}_decoder_mu"], 1e-4, f"v2 {case} decoder_mu")
    assert_close(conditioning.spks, golden_v2[f"flow_{case}_decoder_spks"], 1e-4, f"v2 {case} decoder_spks")
    assert mel.dtype == torch.float32
    assert_close(mel, golden_v2[f"flow_{case}_mel"], 1e-4, f"v2 {case} mel")


def test_v2_noise_table(flow_v2, golden_v2):
    assert_close(flow_v2.rand_noise[:, :, :256], golden_v2["flow_rand_noise_head"], 0.0, "v2 rand_noise head")
    assert tuple(flow_v2.rand_noise.shape) == (1, 80, 15000)
    assert "rand_noise" not in flow_v2.state_dict()


def test_v2_noise_table_ignores_the_global_rng(flow_v2):
    """The table comes from a private seed-0 generator, whatever the global RNG state is."""
    torch.manual_seed(5)
    fresh = CausalMaskedDiffWithXvec.from_config(read_yaml(fixture_dir("v2") / "model" / YAML["v2"])["flow"])
    assert torch.equal(fresh.rand_noise, flow_v2.rand_noise)


# ---------------------------------------------------------------------------------------------- both


def test_estimator_and_key_layout(flow_v1, flow_v2):
    for flow in (flow_v1, flow_v2):
        assert flow.estimator is flow.decoder.estimator
        keys = flow.state_dict().keys()
        assert any(k.startswith("decoder.estimator.") for k in keys)
        assert not any(k.startswith("estimator.") for k in keys)
    assert isinstance(flow_v1, MaskedDiffWithXvec) and isinstance(flow_v2, CausalMaskedDiffWithXvec)


def _official_sizes(version: str, tmp_path):
    """The tiny yaml with every '# tiny; official: X' value put back to X."""
    text = (fixture_dir(version) / "model" / YAML[version]).read_text(encoding="utf-8")
    text = re.sub(r"^(\s*\w+:\s*)(.*?)\s*# tiny; official: (.*)$", r"\1\3", text, flags=re.M)
    path = tmp_path / YAML[version]
    path.write_text(text, encoding="utf-8")
    return read_yaml(path)


@pytest.mark.parametrize("version,count", [("v1", 104_874_752), ("v2", 112_549_360)])
def test_full_size_parameter_counts(version, count, tmp_path):
    flow = build_flow(_official_sizes(version, tmp_path)["flow"])
    assert sum(p.numel() for p in flow.parameters()) == count


def test_build_flow_rejects_unknown_classes():
    class FakeNode:
        class_name = "SomethingElse"
        target = "x.y.SomethingElse"

    with pytest.raises(ValueError, match="unsupported flow model"):
        build_flow(FakeNode())


def test_build_flow_dispatches_v3():
    from cosydesk.model.flow_v3 import CausalMaskedDiffWithDiT

    flow = build_flow(read_yaml(fixture_dir("v3") / "model" / "cosyvoice3.yaml")["flow"])
    assert isinstance(flow, CausalMaskedDiffWithDiT)


def test_start_noise_window_and_errors():
    """v2 and v3 share the starting-noise window: the first T frames, on mu's device/dtype, or a clear error."""
    from cosydesk.model.flow import start_noise

    table = torch.arange(2 * 80 * 10, dtype=torch.float32).reshape(2, 80, 10)[:1]
    mu = torch.zeros(1, 80, 6, dtype=torch.float64)
    z = start_noise(table, None, mu)
    assert z.dtype == torch.float64 and torch.equal(z, table[:, :, :6].double())
    given = torch.ones(1, 80, 8)
    assert torch.equal(start_noise(table, given, mu), torch.ones(1, 80, 6, dtype=torch.float64))
    with pytest.raises(ValueError, match="exceeds the 10-frame noise table"):
        start_noise(table, None, torch.zeros(1, 80, 11))
    with pytest.raises(ValueError, match="exceeds the given 8-frame noise"):
        start_noise(table, given, torch.zeros(1, 80, 9))
