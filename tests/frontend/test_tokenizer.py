"""Text tokenizers: v1 ids against the official fixture, v2/v3 special-token ids."""

from __future__ import annotations

import json
import shutil

import pytest

from cosydesk.frontend.text import normalize, split_sentences
from cosydesk.frontend.tokenizer import (
    BLANKEN_DIR_NAME,
    V2_EXTRA_SPECIALS,
    V3_EXTRA_SPECIALS,
    TokenizerFilesMissing,
    load_tokenizer,
)
from cosydesk.synthetic.tiny_assets import write_blanken_tokenizer
from tests.support.paths import fixture_dir


def test_v1_ids_match_official_fixture(golden_v1):
    cases = json.loads(str(golden_v1["tokenizer_json"]))
    assert len(cases) >= 4
    tokenizer = load_tokenizer("v1", fixture_dir("v1") / "model")
    for case in cases:
        assert tokenizer.encode(case["text"]) == case["ids"], case["text"]
        assert tokenizer.decode(case["ids"]) == case["text"]


def test_v1_vocabulary_layout():
    tokenizer = load_tokenizer("v1", fixture_dir("v1") / "model")
    assert tokenizer.vocab_size == 51866
    assert tokenizer.encode("<|endoftext|>") == [50257]
    assert tokenizer.encode("<|en|><|zh|><|yue|>") == [50259, 50260, 50358]
    assert tokenizer.encode("<|notimestamps|>") == [50364]
    assert tokenizer.encode("<|30.00|>") == [51865]


@pytest.fixture(scope="module")
def model_dir_with_blanken(tmp_path_factory):
    model_dir = tmp_path_factory.mktemp("model")
    write_blanken_tokenizer(model_dir / BLANKEN_DIR_NAME)
    return model_dir


@pytest.fixture(scope="module")
def v2_tokenizer(model_dir_with_blanken):
    return load_tokenizer("v2", model_dir_with_blanken)


def test_v2_endofprompt_id(v2_tokenizer):
    assert v2_tokenizer.encode("<|endofprompt|>") == [151646]
    # BlankEN's own three specials keep their ids; the rest follow in the official order.
    assert v2_tokenizer.encode("<|endoftext|><|im_start|><|im_end|>") == [151643, 151644, 151645]
    assert [v2_tokenizer.token_id(t) for t in V2_EXTRA_SPECIALS[2:]] == list(range(151646, 151663))
    assert v2_tokenizer.vocab_size == 151663


def test_v2_ordinary_text_matches_the_plain_qwen_bpe(v2_tokenizer):
    # Independent path: the `tokenizers` runtime on the package's own tokenizer.json.
    from tokenizers import Tokenizer

    from cosydesk.synthetic.tiny_assets import _qwen_files

    plain = Tokenizer.from_file(str(_qwen_files() / "tokenizer.json"))
    text = "Hello world, 你好！收到好友从远方寄来的生日礼物。 123 apples"
    assert v2_tokenizer.encode(text) == plain.encode(text, add_special_tokens=False).ids


def test_v2_specials_inside_text_and_decode(v2_tokenizer):
    ids = v2_tokenizer.encode("You are a helpful assistant.<|endofprompt|>[breath]你好")
    assert 151646 in ids and v2_tokenizer.token_id("[breath]") in ids
    assert v2_tokenizer.decode(ids) == "You are a helpful assistant.你好"


def test_v3_adds_pronunciation_tokens_in_official_order(model_dir_with_blanken):
    tokenizer = load_tokenizer("v3", model_dir_with_blanken)
    assert len(V3_EXTRA_SPECIALS) == 280 and len(set(V3_EXTRA_SPECIALS)) == 280
    assert tokenizer.encode("<|endofprompt|>") == [151646]
    assert tokenizer.token_id("<|endofsystem|>") == 151663
    assert tokenizer.token_id("[AA]") == 151664
    # 280 additions, of which <|im_start|>/<|im_end|> already exist: 278 new ids from 151646.
    assert tokenizer.token_id("[ǜ]") == 151646 + 278 - 1
    assert tokenizer.encode("[HH][AH0][L][OW1]") == [tokenizer.token_id(t) for t in ("[HH]", "[AH0]", "[L]", "[OW1]")]


def test_missing_blanken_files_are_named(tmp_path):
    # The official fixtures ship BlankEN without tokenizer files.
    with pytest.raises(TokenizerFilesMissing, match="vocab.json, merges.txt, tokenizer_config.json"):
        load_tokenizer("v2", fixture_dir("v2") / "model")
    blanken = tmp_path / BLANKEN_DIR_NAME
    write_blanken_tokenizer(blanken)
    (blanken / "merges.txt").unlink()
    with pytest.raises(FileNotFoundError, match=r"merges\.txt in .*CosyVoice-BlankEN"):
        load_tokenizer("v3", tmp_path)


def test_unknown_version(tmp_path):
    with pytest.raises(ValueError):
        load_tokenizer("v4", tmp_path)


def test_split_long_mixed_english_paragraph_with_real_tokens():
    tokenizer = load_tokenizer("v1", fixture_dir("v1") / "model")
    paragraph = normalize(
        2 * "On March 3rd, 2021, we shipped version 2 of the app. Users loved it! "
        "However, some asked: why does it take 15 seconds to start? We measured everything; "
        "the culprit was a 300 MB cache that was rebuilt at every launch. "
        "After the fix, start-up took under 2 seconds, and memory use dropped by 40%. "
        "Thank you all for the patience and the many detailed reports you sent us. ",
        "v1",
    )
    parts = split_sentences(paragraph, tokenizer.encode, "en")
    assert len(parts) >= 2
    assert "".join(parts) == paragraph
    lengths = [len(tokenizer.encode(p)) for p in parts]
    assert all(n <= 80 + 40 for n in lengths), lengths  # one sentence may overshoot the max
    assert all(n >= 20 for n in lengths), lengths  # a short tail is merged
    assert not any(ch.isdigit() for ch in paragraph)
