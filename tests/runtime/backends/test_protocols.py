"""The backend contract (runtime/backends/protocols.py): what each backend's parts declare. (That the runtime core
imports no backend internals and the backends none of each other: tests/test_import_graph.py.)"""

from __future__ import annotations

import copy

import pytest
import torch

from cosydesk.model import load
from cosydesk.runtime.backends import HalfHift, accelerate
from cosydesk.runtime.backends.protocols import (BackendModel, DeviceLoopLM, Flow, FlowSolver, IncrementalFlow,
                                                 SpeechLM, SteppedSolver, Vocoder)
from tests.conftest import tiny_model


@pytest.mark.parametrize("version", ["v1", "v2", "v3"])
def test_eager_parts_satisfy_the_protocols(version, tmp_path_factory):
    model = accelerate(load(tiny_model(version, tmp_path_factory.getbasetemp())), "eager-fp32")
    assert isinstance(model, BackendModel)
    assert isinstance(model.llm, SpeechLM) and not isinstance(model.llm, DeviceLoopLM)  # the host loop drives it
    assert isinstance(model.flow, Flow) and isinstance(model.flow.decoder, FlowSolver)
    assert not isinstance(model.flow.decoder, SteppedSolver)  # no per-step hook: the pipeline releases the LLM later
    assert isinstance(model.flow, IncrementalFlow) == (version != "v1")
    assert isinstance(model.hift, Vocoder)
    assert isinstance(model.llm.silent_tokens, tuple) and bool(model.llm.silent_tokens) == (version == "v3")


def test_graph_backend_parts_declare_their_capabilities(tmp_path_factory, monkeypatch):
    """The graph backend's LLM and solver (built on the CPU: nothing captured) declare the device loop and the step
    hook; its wrappers forward nothing they do not declare."""
    from cosydesk.runtime.backends.cudagraph import hift as graphed_hift
    from cosydesk.runtime.backends.cudagraph.cfm import GraphedSampler
    from cosydesk.runtime.backends.cudagraph.qwen import StaticQwenLM

    model = load(tiny_model("v2", tmp_path_factory.getbasetemp()))
    lm = copy.deepcopy(model.llm)
    static = StaticQwenLM(lm, max_len=96, prefill_buckets=(48,), use_graphs=False)
    assert isinstance(static, DeviceLoopLM)
    assert (static.stop_ids, static.min_len_masked_ids, static.silent_tokens, static.eos_id) == (
        lm.stop_ids, lm.min_len_masked_ids, lm.silent_tokens, lm.eos_id)
    assert not hasattr(static, "lm_input")  # no __getattr__ forwarding to the module
    sampler = GraphedSampler(model.flow.decoder, [64], (False, True))
    assert isinstance(sampler, SteppedSolver) and sampler.n_steps == model.flow.decoder.n_steps
    half = HalfHift(copy.deepcopy(model.hift), torch.float32)
    monkeypatch.setattr(graphed_hift, "capture_graphs", lambda jobs, *args, **kwargs: {})  # no CUDA here
    graphed = graphed_hift.GraphedHift(half, [])
    for part in (half, graphed):
        assert isinstance(part, Vocoder) and not hasattr(part, "samples_per_frame")


def test_the_backend_names_are_read_without_torch():
    """The CLI, the settings and the app read BACKENDS / CHOICES before any model loads: no torch import."""
    import subprocess
    import sys

    code = ("import sys; from cosydesk.runtime.backends import BACKENDS, CHOICES; import cosydesk.settings; "
            "assert 'torch' not in sys.modules, 'torch imported'; print(','.join(CHOICES))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "auto,eager,cudagraph,tensorrt"
