"""CUDA-graph backend pieces: shape buckets, a static-KV-cache Qwen2 LM, graph-captured flow encoder, CFM steps
and HiFT, hand-written Triton kernels for the LLM decode step (``decode_kernels``), its next-id choice
(``select_kernel``) and the estimator's transformer blocks (``flow_kernels``), launched with programmatic
dependent launch where the GPU has it (``pdl``), regional torch.compile of the hot blocks, and the estimator
rewrites (fused q/k/v, convolutions as GEMMs, masked GroupNorm).

Everything here is float16-first with float32 statistics (RMSNorm, softmax inside SDPA, the CFM Euler update),
allocates its buffers once at load and captures every graph at load (``build_graph_model``); a request then
only copies inputs into those buffers and replays. Every graphed part keeps its buffers and graphs in one
``graph_table.GraphTable`` (pick the bucket, replay or run eagerly, count the eager fallbacks); the bucket lists
come from the core's ``cosydesk.runtime.buckets``, the per-version sizes from ``cosydesk.model.versions``. Not here: model math of record (cosydesk.model), threads.
"""
