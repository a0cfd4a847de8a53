"""Limits on what a request may contain, shared by the frontend (which enforces them) and the runtime (which
sizes its static buffers for them). No imports: the GPU backend reads these without loading audio libraries."""

MAX_PROMPT_SECONDS = 30.0  # the speech tokenizers refuse longer audio
