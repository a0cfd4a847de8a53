"""Bench inputs: the corpora, seeded forced sentences, and the LLM token source that forces their ids."""

from __future__ import annotations

import dataclasses
import threading
import time
from pathlib import Path

from cosydesk.model.versions import V2, VERSIONS, per_version



def _resources_dir() -> Path:
    """resources/ of a checkout, or the installed package's cosydesk/resources."""
    here = Path(__file__).resolve()
    for candidate in (here.parents[1] / "resources", here.parents[2] / "resources"):
        if (candidate / "bench_corpus_zh.txt").is_file():
            return candidate
    return here.parents[2] / "resources"


_RESOURCES = _resources_dir()
# Named corpora: `short` (8-20 characters, the app's typical line) and `long` (20-80 characters, what the
# frontend's splitter makes of paragraphs); --corpus also takes a file.
CORPORA = {"short": _RESOURCES / "bench_corpus_zh.txt", "long": _RESOURCES / "bench_corpus_zh_long.txt"}
DEFAULT_CORPUS = CORPORA["short"]
TOKENS_PER_SECOND = V2.speech_tokens_per_second  # the forced-token rate of every version's run (as before)
CHARS_PER_SECOND = 4
PROMPT_TOKENS = 20
# (prompt speech tokens, prompt mel frames): v1 (20, 34), v2/v3 (20, 40)
PROMPT = {v: (PROMPT_TOKENS, c.mel_frames_for_tokens(PROMPT_TOKENS)) for v, c in VERSIONS.items()}
SPEECH_VOCAB = per_version("speech_vocab")
PROMPT_TEXT_IDS = 8


# --------------------------------------------------------------------------------------------------------
# inputs
# --------------------------------------------------------------------------------------------------------
def corpus_path(name_or_path: str | Path) -> Path:
    """A named corpus (short, long) or a file path."""
    return CORPORA.get(str(name_or_path), Path(name_or_path))


def read_corpus(path: str | Path, limit: int | None = None) -> list[str]:
    lines = [line.strip() for line in corpus_path(path).read_text(encoding="utf-8").splitlines()]
    lines = [line for line in lines if line and not line.startswith("#")]
    return lines[:limit] if limit else lines


def corpus_stats(texts: list[str]) -> dict[str, float]:
    """Sentence lengths in characters (min / mean / max): which shape a run measured."""
    lengths = [len(text) for text in texts] or [0]
    return {"min": min(lengths), "mean": sum(lengths) / len(lengths), "max": max(lengths)}


def forced_token_count(text: str) -> int:
    """25 tokens per second of audio, audio seconds = characters / 4."""
    return max(1, round(TOKENS_PER_SECOND * len(text) / CHARS_PER_SECOND))


@dataclasses.dataclass
class ForcedSentence:
    text: str
    inputs: object          # runtime.pipeline.SentenceInputs (CPU tensors)
    speech_ids: list[int]   # forced LLM output


def make_forced_sentences(version: str, texts: list[str], seed: int = 0) -> list[ForcedSentence]:
    """Seeded, backend-independent inputs: one shared zero-shot prompt, per-sentence text ids and tokens."""
    import torch

    from cosydesk.runtime.pipeline import SentenceInputs

    gen = torch.Generator().manual_seed(seed)
    n_prompt, n_frames = PROMPT[version]
    vocab = SPEECH_VOCAB[version]
    prompt_speech = torch.randint(0, vocab, (1, n_prompt), generator=gen, dtype=torch.int32)
    prompt_text = torch.randint(1000, 20000, (1, PROMPT_TEXT_IDS), generator=gen, dtype=torch.int32)
    prompt_feat = torch.randn(1, n_frames, 80, generator=gen) * 0.5 - 5.0  # log-mel-like range
    embedding = torch.randn(1, 192, generator=gen)
    out = []
    for text in texts:
        text_ids = torch.randint(1000, 20000, (1, len(text)), generator=gen, dtype=torch.int32)
        speech = torch.randint(0, vocab, (forced_token_count(text),), generator=gen).tolist()
        inputs = SentenceInputs(text=text_ids, prompt_text=prompt_text, llm_prompt_speech_token=prompt_speech,
                                llm_embedding=embedding, flow_prompt_speech_token=prompt_speech,
                                prompt_speech_feat=prompt_feat, flow_embedding=embedding)
        out.append(ForcedSentence(text, inputs, speech))
    return out


class LLMStats:
    """Time per token the producer thread spends getting the next id (after prefill, incl. the per-token sync)."""

    def __init__(self) -> None:
        self.prefill_s: list[float] = []
        self.decode_s = 0.0
        self.decode_steps = 0
        self.lock = threading.Lock()


SAMPLERS = ("argmax", "ras")


@dataclasses.dataclass(frozen=True)
class LoopOptions:
    """How each sentence runs: the sampler the LLM thread uses, and whether the first chunk runs alone."""

    sampler: str = "argmax"
    first_chunk_alone: bool = True  # as the app runs a request's first sentence


def make_chooser(sampler: str, seed: int):
    """How the producer reads each step's id (then discarded for the forced one): ``argmax`` is the bare host sync
    a stop check needs; ``ras`` runs the app's own sampler (repetition-aware, on the host) for its real cost."""
    import torch

    if sampler == "argmax":
        return lambda logits, decoded: int(torch.argmax(logits))
    if sampler != "ras":
        raise ValueError(f"unknown sampler {sampler!r} (choose {' or '.join(SAMPLERS)})")
    from cosydesk.model.sampling import RepetitionAwareSampler
    from cosydesk.runtime.host_sampler import HostSampler

    ras, generator = HostSampler(RepetitionAwareSampler()), torch.Generator().manual_seed(seed)
    return lambda logits, decoded: int(ras(logits, decoded, generator))


def forced_token_source(model, speech_ids: list[int], stats: LLMStats, sampler: str = "argmax", seed: int = 0):
    """A runtime TokenSource running the real LLM (and ``sampler``, see make_chooser) but emitting the forced ids,
    on the stream the pipeline's producer runs it on (the app's LLM stream)."""
    import torch

    from cosydesk.runtime.backends.protocols import DeviceLoopLM

    choose = make_chooser(sampler, seed)  # also rejects an unknown sampler name for either loop
    own_loop = model.llm.generate_speech_tokens if isinstance(model.llm, DeviceLoopLM) else None

    def generic_loop(args):
        logits, state = model.llm.prefill(*args)
        decoded: list[int] = []
        choose(logits, decoded)  # the sampler's host sync
        for token in speech_ids:
            yield token
            decoded.append(token)
            logits, state = model.llm.decode_step(token, state)
            choose(logits, decoded)  # one host sync per token, as the stop check needs

    def source(inputs, stop):
        device = model.device
        t0 = time.perf_counter()
        args = (inputs.text.to(device), inputs.prompt_text.to(device), inputs.llm_prompt_speech_token.to(device),
                inputs.llm_embedding.to(device=device, dtype=model.dtype))
        if own_loop is not None:
            tokens = own_loop(*args, greedy=sampler == "argmax", generator=torch.Generator().manual_seed(seed),
                              forced=speech_ids)
        else:
            tokens = generic_loop(args)
        # time spent producing ids only: not while suspended at ``yield`` (the pipeline may hold the LLM
        # while the first chunk runs, or the consumer may be slow to ask)
        prefill_s, decode_s, steps = None, 0.0, 0
        tokens = iter(tokens)
        while True:
            t = time.perf_counter()
            token = next(tokens, None)
            if token is None:
                break
            if prefill_s is None:
                prefill_s = time.perf_counter() - t0  # the first id read: prefill (and its choice) done
            else:
                decode_s, steps = decode_s + time.perf_counter() - t, steps + 1
            if stop.is_set():
                return
            yield token
        with stats.lock:
            if prefill_s is not None:
                stats.prefill_s.append(prefill_s)
            stats.decode_s += decode_s
            stats.decode_steps += steps

    return source
