"""Assemble the cudagraph backend: one float16 model, one graph memory pool per stream, every graph captured at load.

Graph pools: one for the LLM graphs, one for the flow + vocoder graphs (they run concurrently on two streams).
v2/v3: the LLM is ``StaticQwenLM`` (decode step of Triton kernels + prefill buckets captured); v1's wenet-style
LLM is ``StaticTransformerLM`` (decode step compiled and captured, prefill captured per length bucket). All
versions: the U-Net estimator's transformer blocks run the Triton kernels of ``flow_kernels.py``; v2's estimator
computes on time-major rows with its resnets as conv kernels (``row_estimator.py``), v1's other blocks are
compiled (``compile.py``); one Euler step of the CFM solver is captured per mel-length bucket (``GraphedSampler``).
v2: HiFT is captured for every non-final streaming chunk shape (``GraphedHift``) and the final chunk's padded
form per mel bucket (``COSYDESK_FINAL_HIFT_GRAPHS=0`` keeps it eager) and the flow encoder per token
bucket (``GraphedEncoder``). v1: HiFT's padded form per mel bucket (``COSYDESK_V1_HIFT_GRAPHS=0`` keeps it
eager) and the flow encoder per token bucket (``GraphedFullAttentionEncoder``; ``COSYDESK_V1_ENCODER_GRAPHS=0``
keeps it eager; its length regulator stays eager: interpolation is not padding-safe). v2's encoder attends in
query blocks past the fine buckets (``blocked_attention.py``). v3: the DiT's time modulations (a table; their
weights released) and attention mask are prepared outside the captured step (``dit_prepared.py``: one graph per
bucket for both modes), its blocks compiled, its position convs Triton kernels on rows (``dit_conv.py``); the
causal HiFT stream's windows replay padded graphs per frame bucket (``causal_hift.py``;
``COSYDESK_V3_HIFT_GRAPHS=0`` keeps them eager).
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import torch

from cosydesk.frontend.limits import MAX_PROMPT_SECONDS
from cosydesk.model.sampling import RepetitionAwareSampler
from cosydesk.model.transformer import ConformerEncoder
from cosydesk.model.upsample_encoder import UpsampleConformerEncoder
from cosydesk.model.versions import per_version
from cosydesk.runtime.buckets import step_buckets, tiered_buckets
from cosydesk.runtime.backends.cudagraph.cfm import GraphedSampler
from cosydesk.runtime.backends.cudagraph.compile import ESTIMATOR_BLOCKS, compile_blocks, compile_enabled
from cosydesk.runtime.options import active as active_options
from cosydesk.runtime.backends.cudagraph.encoder import GraphedEncoder, GraphedFullAttentionEncoder
from cosydesk.runtime.backends.cudagraph.fuse import (convs_as_gemm, fuse_estimator_attention, mask_group_norms,
                                                     speaker_projection_without_cublas)
from cosydesk.runtime.backends.cudagraph.hift import (GraphedHift, final_hift_graphs_wanted, final_hift_shapes,
                                            streaming_hift_shapes, v1_hift_graphs_wanted, v1_hift_shapes)
from cosydesk.runtime.backends.cudagraph.qwen import StaticQwenLM
from cosydesk.runtime.backends.cudagraph.transformer_lm import StaticTransformerLM, supports as static_v1_supports

FLOW_BUCKET_STEP = 32
ENCODER_BUCKET_STEP = 32  # tokens; the encoder is launch-bound, so coarse buckets cost little and save graphs
FLOW_MAX_FRAMES = {"v1": 448, "v2": 576, "v3": 576}
# v2/v3: coarser buckets past FLOW_MAX_FRAMES up to the flow calls of long sentences (each flow call sees prompt +
# every token so far, 2 frames a token): 1408 frames = 704 tokens, the bench's longest long-corpus sentence
# (106 characters, 663 tokens) with its 20-token prompt, or an 80-character segment (500 tokens) after a 8-s
# prompt. Without them those calls ran the eager solver, ~200-265 ms each on the H200 instead of ~30-60.
FLOW_LONG_MAX_FRAMES = {"v2": 1408, "v3": 1408}
FLOW_LONG_BUCKET_STEP = 64
ENCODER_LONG_BUCKET_STEP = 64


def v1_encoder_graphs_wanted(encoder) -> bool:
    """v1's flow encoder as graphs: on by default (``EngineOptions.v1_encoder_graphs=False`` keeps it eager),
    for the full-attention encoders the released v1 configs have."""
    return (active_options().v1_encoder_graphs and not encoder.static_chunk_size
            and not encoder.use_dynamic_chunk)


def flow_kernels_wanted(device: torch.device) -> bool:
    """On CUDA with Triton the estimator's transformer blocks run the Triton kernels of ``flow_kernels.py``
    instead of compiled torch ops; ``EngineOptions.flow_kernels=False`` turns them off, and ``compile=False``
    (no generated kernels at all) too."""
    return active_options().flow_kernels and compile_enabled(device)


# speech tokens per second of the LLM's vocabulary (v1's tokenizer runs at 50 Hz, v2/v3's at 25 Hz)
SPEECH_TOKENS_PER_SECOND = per_version("speech_tokens_per_second")


def llm_cache_positions(version: str) -> int:
    """Static KV-cache positions for the longest request the app accepts: the speech tokens of a zero-shot prompt
    of ``MAX_PROMPT_SECONDS``, 256 text ids (its transcript and the sentence) and as much generated speech again
    as the prompt, rounded up to 256: 1792 (v2/v3), 3328 (v1). A 512-position cache refused prompts of ~8 s (v2)
    or ~4 s (v1). The cache costs 12 KB (v2) / 86 KB (v1) per position; the steps' attention does not grow with
    it (v2/v3: the kernel stops at the position; v1: attention-length buckets)."""
    tokens = 2 * MAX_PROMPT_SECONDS * SPEECH_TOKENS_PER_SECOND[version] + 256
    return int(math.ceil(tokens / 256) * 256)


def static_llm(model, max_len: int | None = None, pool=None, progress=None):
    """The model's LLM with a static KV cache and its decode step captured: ``StaticQwenLM`` (v2/v3),
    ``StaticTransformerLM`` (v1); the module itself where its layout is not supported (a warning says so).
    Sampling follows the model config's ``llm.sampling``. Off CUDA nothing is captured (the same bodies run).
    ``max_len``: static cache positions (default ``llm_cache_positions``)."""
    kwargs = dict(max_len=max_len or llm_cache_positions(model.version), pool=pool, progress=progress,
                  use_graphs=model.device.type == "cuda",
                  sampling=RepetitionAwareSampler.for_model_config(model.config))
    if model.version in ("v2", "v3"):
        return StaticQwenLM(model.llm, **kwargs)
    why_not = static_v1_supports(model.llm)
    if why_not:
        warnings.warn(f"the v1 LLM runs uncaptured ({why_not})", RuntimeWarning, stacklevel=2)
        return model.llm
    return StaticTransformerLM(model.llm, **kwargs)


def prepare_on_host(model, dtype: torch.dtype) -> None:
    """What ``build_graph_model`` would otherwise compute on the GPU and then free, done while ``model`` is still on
    the host (``place_model`` calls it before the move): v3's DiT modulation table, so its time weights never reach
    the GPU (``dit_prepared.prepare_dit_on_host``). ``dtype``: the one the flow will run in."""
    from cosydesk.runtime.backends.cudagraph.dit_prepared import prepare_dit_on_host

    prepare_dit_on_host(model.flow.decoder, dtype)


def build_graph_model(model, progress=None, llm_max_len: int | None = None, flow_max_frames: int | None = None,
                      flow_long_max_frames: int | None = None):
    """``model`` already float16 on CUDA; returns the dataclass copy with graph-backed llm / flow.decoder.
    ``flow_max_frames``: the fine buckets' end (default FLOW_MAX_FRAMES); ``flow_long_max_frames``: the coarse
    buckets' end (default FLOW_LONG_MAX_FRAMES; 0 or at most flow_max_frames: none)."""
    # One pool per stream: graphs sharing a pool reuse each other's temporaries, which is only safe when they
    # never run at the same time. The LLM (stream A) and the flow (stream B) do run concurrently.
    llm_pool, flow_pool = torch.cuda.graph_pool_handle(), torch.cuda.graph_pool_handle()
    llm = static_llm(model, llm_max_len, llm_pool, progress)
    flow = model.flow
    max_frames = flow_max_frames or FLOW_MAX_FRAMES[model.version]
    long_frames = FLOW_LONG_MAX_FRAMES.get(model.version, 0) if flow_long_max_frames is None else flow_long_max_frames
    # the flow encoder is captured per token bucket (v3's flow has none)
    encoder = getattr(flow, "encoder", None)
    if type(encoder) is UpsampleConformerEncoder:
        tokens, long_tokens = max_frames // flow.encoder.up_stride, long_frames // flow.encoder.up_stride
        # the projection to mel width inside the graphs: no cuBLAS product is left outside them on a request
        flow.encoder = GraphedEncoder(flow.encoder, tiered_buckets(tokens, ENCODER_BUCKET_STEP, long_tokens,
                                                                   ENCODER_LONG_BUCKET_STEP),
                                      projection=flow.encoder_proj)
        flow.encoder_proj = torch.nn.Identity()
        # past the fine buckets, attention in query blocks: the long buckets' scores no longer set the pool's size
        from cosydesk.runtime.backends.cudagraph.blocked_attention import use_query_blocks

        use_query_blocks(flow.encoder.encoder, threshold=max_frames)
        flow.encoder.capture(pool=flow_pool, progress=progress)
    elif type(encoder) is ConformerEncoder and v1_encoder_graphs_wanted(flow.encoder):
        # prompt + new tokens of the longest flow call (frames per token: sample rate / hop / token rate)
        tokens = math.ceil(max_frames * flow.input_frame_rate * flow.hop / flow.sample_rate)
        flow.encoder = GraphedFullAttentionEncoder(flow.encoder, step_buckets(tokens, ENCODER_BUCKET_STEP))
        flow.encoder.capture(pool=flow_pool, progress=progress)
    speaker_projection_without_cublas(flow)  # the request's one eager product: no cuBLAS workspace per stream
    sampler = flow.decoder
    fuse_estimator_attention(sampler.estimator)
    mask_group_norms(sampler.estimator)  # v1: padding to a bucket must not move GroupNorm statistics
    convs_as_gemm(sampler.estimator)
    if flow_kernels_wanted(model.device):  # Triton kernels for the transformer blocks and (v2) the resnets
        from cosydesk.runtime.backends.cudagraph.flow_kernels import use_flow_kernels
        from cosydesk.runtime.backends.cudagraph.row_estimator import use_row_estimator

        use_flow_kernels(sampler.estimator)  # those blocks become a subclass, not in ESTIMATOR_BLOCKS: not compiled
        if active_options().row_estimator:
            use_row_estimator(sampler.estimator)  # v2: no transposes, each resnet two conv kernels
    from cosydesk.runtime.backends.cudagraph.dit_prepared import PreparedDiT, use_prepared_dit

    use_prepared_dit(sampler)  # v3: modulations and mask outside the step (already, when placed by prepare_on_host)
    if isinstance(sampler.estimator, PreparedDiT) and flow_kernels_wanted(model.device):
        from cosydesk.runtime.backends.cudagraph.dit_conv import use_row_position_convs

        use_row_position_convs(sampler.estimator.dit)  # its position convs as one Triton kernel each, on rows
    compile_blocks(sampler.estimator, ESTIMATOR_BLOCKS, model.device)
    buckets = tiered_buckets(max_frames, FLOW_BUCKET_STEP, long_frames, FLOW_LONG_BUCKET_STEP, start=64)
    modes = (False,) if model.version == "v1" else (False, True)
    graphed = GraphedSampler(sampler, buckets, modes)
    graphed.capture(pool=flow_pool, progress=progress)
    flow.decoder = graphed
    hift = model.hift
    if model.version == "v2":
        final = final_hift_shapes() if final_hift_graphs_wanted() else ()
        hift = GraphedHift(model.hift, streaming_hift_shapes(), pool=flow_pool, progress=progress, padded_shapes=final)
    elif model.version == "v3" and active_options().v3_hift_graphs:
        from cosydesk.runtime.backends.cudagraph.causal_hift import GraphedCausalHift

        hift = GraphedCausalHift(model.hift, pool=flow_pool, progress=progress)
    elif model.version == "v1" and v1_hift_graphs_wanted():
        hift = GraphedHift(model.hift, [], pool=flow_pool, progress=progress, padded_shapes=v1_hift_shapes())
    torch.cuda.synchronize()
    # what loading freed outside the graph pools (the text table moved to the host: 272 MB) back to the driver
    torch.cuda.empty_cache()
    return dataclasses.replace(model, llm=llm, flow=flow, hift=hift)
