"""The byte tokenizer of a converted directory: any byte sequence round-trips as text, the six
specials of model/config/vocab.h and the two padding rows have their names and ids, and no text
of bytes can be read as a special."""

import os

import pytest

SPECIALS = ["\u27e8BOS\u27e9", "\u27e8K\u27e9", "\u27e8V\u27e9", "\u27e8Q\u27e9", "\u27e8A\u27e9",
            "\u27e8N\u27e9"]
PADDING = ["\u27e8PAD0\u27e9", "\u27e8PAD1\u27e9"]


@pytest.fixture(scope="module")
def tokenizer(transformers, models):
    return transformers.AutoTokenizer.from_pretrained(models.hf("F").hf, trust_remote_code=True)


def test_every_byte_round_trips(tokenizer):
    text = bytes(range(256)).decode("latin-1")
    ids = tokenizer.encode(text)
    assert ids == [256] + list(range(256))  # <BOS> first, then one id per byte
    assert tokenizer.decode(ids, skip_special_tokens=True) == text
    assert tokenizer.decode(ids[1:]).encode("latin-1") == bytes(range(256))
    assert tokenizer.decode(tokenizer.encode(" a  b \n", add_special_tokens=False)) == " a  b \n"


def test_a_text_that_starts_with_bos_gets_no_second_one(tokenizer):
    """prompts.jsonl's prompts (and every decoded sequence) start with <BOS>: tokenizer(prompt)
    with its defaults must give the ids onset evaluated, one <BOS> first."""
    prompt = SPECIALS[0] + SPECIALS[1] + "ab" + SPECIALS[2] + "c" + SPECIALS[3] + "ab" + \
        SPECIALS[4]
    ids = [256, 257, 97, 98, 258, 99, 259, 97, 98, 260]
    assert tokenizer(prompt)["input_ids"] == ids
    assert tokenizer(prompt, add_special_tokens=False)["input_ids"] == ids
    assert tokenizer.encode(tokenizer.decode(ids)) == ids
    assert tokenizer(prompt, return_special_tokens_mask=True)["special_tokens_mask"] == \
        [1] + [0] * 9
    assert tokenizer("ab")["input_ids"] == [256, 97, 98]  # still added where missing


def test_specials_by_name(tokenizer):
    assert type(tokenizer).__name__ == "OnsetTokenizer"
    assert tokenizer.convert_tokens_to_ids(SPECIALS + PADDING) == list(range(256, 264))
    assert tokenizer.convert_ids_to_tokens(list(range(256, 264))) == SPECIALS + PADDING
    assert tokenizer.bos_token == SPECIALS[0] and tokenizer.bos_token_id == 256
    # No end or padding token in the data: the first padding row stands for both.
    assert tokenizer.eos_token_id == 262 and tokenizer.pad_token_id == 262
    assert (tokenizer.vocab_size, len(tokenizer)) == (256, 264)
    K, V, Q, A, N = SPECIALS[1:]
    text = f"{K}ab{V}c{Q}ab{A}c{N}"
    ids = tokenizer.encode(text, add_special_tokens=False)
    assert ids == [257, 97, 98, 258, 99, 259, 97, 98, 260, 99, 261]
    assert tokenizer.decode(ids) == text
    assert tokenizer.decode(ids, skip_special_tokens=True) == "abcabc"
    assert tokenizer.decode([263, 262, 65]) == PADDING[1] + PADDING[0] + "A"
    assert tokenizer.decode([263, 262, 65], skip_special_tokens=True) == "A"


def test_bytes_spelling_an_ascii_marker_stay_bytes(tokenizer):
    """"<K>" is three bytes, not a marker: only the bracketed names, which no byte spells, are."""
    ids = tokenizer.encode("<K>x<BOS>", add_special_tokens=False)
    assert ids == list(b"<K>x<BOS>")
    assert tokenizer.decode(ids) == "<K>x<BOS>"


def test_bytes_api(tokenizer):
    data = (SPECIALS[1] + "é").encode("utf-8")  # the bytes of a special's name are bytes
    ids = tokenizer.encode_bytes(data)
    assert ids == [256] + list(data)
    assert tokenizer.decode_bytes(ids) == data


def test_no_byte_is_refused(tokenizer):
    with pytest.raises(ValueError, match="no byte"):
        tokenizer.encode("snow \u2603")


def test_files(models):
    directory = models.hf("F").hf
    for name in ("tokenization_onset.py", "tokenizer_config.json", "special_tokens_map.json"):
        assert os.path.isfile(os.path.join(directory, name)), name


def test_tokenizer_feeds_the_model(torch, transformers, tokenizer, models):
    model = transformers.AutoModelForCausalLM.from_pretrained(models.hf("F").hf,
                                                              trust_remote_code=True)
    K, V, Q, A = SPECIALS[1:5]
    inputs = tokenizer([f"{K}ab{V}cd{Q}ab{A}"], return_tensors="pt")
    out = model.generate(**inputs, max_new_tokens=3, do_sample=False)
    assert out.shape == (1, inputs["input_ids"].shape[1] + 3)
    assert isinstance(tokenizer.decode(out[0]), str)
