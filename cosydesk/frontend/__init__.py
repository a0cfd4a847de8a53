"""Everything between the user's text / prompt recording and the model's input tensors.

text.py (normalisation, sentence splitting), tokenizer.py (v1 whisper BPE, v2/v3 Qwen),
audio_io.py (decoding, validation, resampling), features.py (fbank, whisper log-mel,
flow prompt mel), prompt.py (ONNX speaker encoder / speech tokenizer, zero-shot prompt).
Import from the submodules; this package file stays free of heavy imports.
"""
