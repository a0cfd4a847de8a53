"""Text tokenizers of the three CosyVoice generations, loaded fully offline.

* v1 (CosyVoice-300M family): the openai-whisper multilingual byte-level BPE with the
  special tokens of a 100-language whisper tokenizer (51866 ids). Every special token
  may appear in the text (`allowed_special='all'` in the official code), so `<|zh|>` or
  `<|endoftext|>` written in the text become single ids. The BPE ranks ship with this
  package (assets/whisper-multilingual.tiktoken, MIT, see the LICENSE file beside it).
* v2 / v3: the Qwen2 tokenizer stored in `<model_dir>/CosyVoice-BlankEN`, extended with
  CosyVoice's own special tokens, appended in the official order so that ids match the
  released LLM tables (`<|endofprompt|>` becomes 151646).

This module must not normalise text or split sentences (see text.py) and never downloads.
"""

from __future__ import annotations

import base64
from functools import lru_cache
from pathlib import Path
from typing import Protocol

ASSETS_DIR = Path(__file__).resolve().parent / "assets"
WHISPER_VOCAB_FILE = ASSETS_DIR / "whisper-multilingual.tiktoken"

# Language tags in whisper's order; their position decides their token id.
WHISPER_LANGUAGE_CODES = (
    "en zh de es ru ko fr ja pt tr pl ca nl ar sv it id hi fi vi he uk el ms cs ro da hu ta no "
    "th ur hr bg lt la mi ml cy sk te fa lv bn sr az sl kn et mk br eu is hy ne mn bs kk sq sw "
    "gl mr pa si km sn yo so af oc ka be tg sd gu am yi lo uz fo ht ps tk nn mt sa lb my bo tl "
    "mg as tt haw ln ha ba jw su yue"
).split()
V1_NUM_LANGUAGES = 100
# Whisper's pre-tokenisation pattern (GPT-2 style), part of the vocabulary's definition.
_WHISPER_SPLIT_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

BLANKEN_DIR_NAME = "CosyVoice-BlankEN"
# Files AutoTokenizer needs from BlankEN (the official fixtures ship none of them).
BLANKEN_TOKENIZER_FILES = ("vocab.json", "merges.txt", "tokenizer_config.json")

# CosyVoice2 additions, in the order that fixes their ids (151644.. with the real vocab;
# the first two already exist in BlankEN and keep their ids).
V2_EXTRA_SPECIALS = (
    "<|im_start|>", "<|im_end|>", "<|endofprompt|>",
    "[breath]", "<strong>", "</strong>", "[noise]",
    "[laughter]", "[cough]", "[clucking]", "[accent]",
    "[quick_breath]",
    "<laughter>", "</laughter>",
    "[hissing]", "[sigh]", "[vocalized-noise]",
    "[lipsmack]", "[mn]",
)  # fmt: skip

# CosyVoice3 adds a system-prompt terminator, then ARPAbet phones (CMU dictionary, with
# stress digits) and pinyin finals/initials with tones, used to force pronunciations.
_V3_CMU_PHONES = (
    "AA AA0 AA1 AA2 AE AE0 AE1 AE2 AH AH0 AH1 AH2 AO AO0 AO1 AO2 AW AW0 AW1 AW2 AY AY0 AY1 AY2 "
    "B CH D DH EH EH0 EH1 EH2 ER ER0 ER1 ER2 EY EY0 EY1 EY2 F G HH IH IH0 IH1 IH2 IY IY0 IY1 IY2 "
    "JH K L M N NG OW OW0 OW1 OW2 OY OY0 OY1 OY2 P R S SH T TH UH UH0 UH1 UH2 UW UW0 UW1 UW2 "
    "V W Y Z ZH"
).split()
_V3_PINYIN_UNITS = (
    "a ai an ang ao b c ch d e ei en eng f g h i ian in ing iu ià iàn iàng iào iá ián iáng iáo "
    "iè ié iòng ióng iù iú iā iān iāng iāo iē iě iōng iū iǎ iǎn iǎng iǎo iǒng iǔ j k l m n o ong "
    "ou p q r s sh t u uang ue un uo uà uài uàn uàng uá uái uán uáng uè ué uì uí uò uó uā uāi uān "
    "uāng uē uě uī uō uǎ uǎi uǎn uǎng uǐ uǒ vè w x y z zh à ài àn àng ào á ái án áng áo è èi èn "
    "èng èr é éi én éng ér ì ìn ìng í ín íng ò òng òu ó óng óu ù ùn ú ún ā āi ān āng āo ē ēi ēn "
    "ēng ě ěi ěn ěng ěr ī īn īng ō ōng ōu ū ūn ǎ ǎi ǎn ǎng ǎo ǐ ǐn ǐng ǒ ǒng ǒu ǔ ǔn ǘ ǚ ǜ"
).split()
V3_EXTRA_SPECIALS = (
    V2_EXTRA_SPECIALS
    + ("<|endofsystem|>",)
    + tuple(f"[{p}]" for p in _V3_CMU_PHONES)
    + tuple(f"[{p}]" for p in _V3_PINYIN_UNITS)
)


class TokenizerFilesMissing(FileNotFoundError):
    """The model directory lacks the tokenizer files a version needs."""


class TextTokenizer(Protocol):
    version: str

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: list[int]) -> str: ...


def _whisper_special_tokens(num_languages: int) -> list[str]:
    timestamps = [f"<|{i * 0.02:.2f}|>" for i in range(1501)]
    return [
        "<|endoftext|>",
        "<|startoftranscript|>",
        *(f"<|{code}|>" for code in WHISPER_LANGUAGE_CODES[:num_languages]),
        "<|translate|>",
        "<|transcribe|>",
        "<|startoflm|>",
        "<|startofprev|>",
        "<|nospeech|>",
        "<|notimestamps|>",
        *timestamps,
    ]


@lru_cache(maxsize=1)
def _whisper_encoding():
    import tiktoken

    ranks: dict[bytes, int] = {}
    with open(WHISPER_VOCAB_FILE, "rb") as vocab:
        for line in vocab:
            if line.strip():
                token_b64, rank = line.split()
                ranks[base64.b64decode(token_b64)] = int(rank)
    # Special tokens take the ids right after the BPE ranks, in list order.
    first_special = len(ranks)
    specials = {tok: first_special + i for i, tok in enumerate(_whisper_special_tokens(V1_NUM_LANGUAGES))}
    return tiktoken.Encoding(
        name="cosyvoice-v1-whisper-multilingual",
        pat_str=_WHISPER_SPLIT_PATTERN,
        mergeable_ranks=ranks,
        special_tokens=specials,
        explicit_n_vocab=first_special + len(specials),
    )


class WhisperTextTokenizer:
    """v1 tokenizer: whisper multilingual BPE, every special token allowed in the text."""

    version = "v1"

    def __init__(self) -> None:
        self._encoding = _whisper_encoding()

    @property
    def vocab_size(self) -> int:
        return self._encoding.n_vocab

    def encode(self, text: str) -> list[int]:
        return self._encoding.encode(text, allowed_special="all")

    def decode(self, ids: list[int]) -> str:
        return self._encoding.decode(list(ids))


class QwenTextTokenizer:
    """v2/v3 tokenizer: BlankEN's Qwen2 BPE plus CosyVoice's special tokens.

    Special tokens are dropped by `decode` (the official tokenizer decodes with
    skip_special_tokens=True).
    """

    def __init__(self, blanken_dir: Path, version: str) -> None:
        missing = [name for name in BLANKEN_TOKENIZER_FILES if not (blanken_dir / name).is_file()]
        if missing:
            raise TokenizerFilesMissing(
                f"the {version} text tokenizer needs {', '.join(missing)} in {blanken_dir}; "
                "these files come with the released model download (CosyVoice-BlankEN)"
            )
        from cosydesk.model.hf_files import check_blanken_folder

        check_blanken_folder(blanken_dir)  # a folder asking for custom code is refused before transformers reads it
        # transformers is slow to import; only v2/v3 need it.
        from transformers import AutoTokenizer

        extras = V2_EXTRA_SPECIALS if version == "v2" else V3_EXTRA_SPECIALS
        self.version = version
        # never the folder's code, never a prompt on stdin, never the network
        try:
            self._hf = AutoTokenizer.from_pretrained(str(blanken_dir), trust_remote_code=False, local_files_only=True)
        except Exception as err:  # noqa: BLE001 - transformers and tokenizers raise many types for damaged files
            from cosydesk.model.config import ConfigError

            detail = " ".join(str(err).split())[:300]
            raise ConfigError(f"the text tokenizer files in {blanken_dir} cannot be read "
                              f"({type(err).__name__}: {detail})") from err
        self._hf.add_special_tokens(
            {"eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>", "additional_special_tokens": list(extras)}
        )

    @property
    def vocab_size(self) -> int:
        return len(self._hf)

    def token_id(self, token: str) -> int:
        """Id of one (special) token, e.g. token_id('<|endofprompt|>')."""
        return int(self._hf.convert_tokens_to_ids(token))

    def encode(self, text: str) -> list[int]:
        return list(self._hf(text)["input_ids"])

    def decode(self, ids: list[int]) -> str:
        return self._hf.decode(list(ids), skip_special_tokens=True)


def load_tokenizer(version: str, model_dir: Path) -> TextTokenizer:
    """Tokenizer for a model directory of the given version ('v1', 'v2', 'v3').

    Raises TokenizerFilesMissing (a FileNotFoundError) naming the absent BlankEN files.
    """
    if version == "v1":
        return WhisperTextTokenizer()
    if version in ("v2", "v3"):
        return QwenTextTokenizer(Path(model_dir) / BLANKEN_DIR_NAME, version)
    raise ValueError(f"unknown model version {version!r}; expected 'v1', 'v2' or 'v3'")
