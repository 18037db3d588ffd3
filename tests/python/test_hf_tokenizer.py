"""The byte tokenizer of a converted directory: any byte sequence round-trips as text, and the
six specials of model/config/vocab.h have their names and ids."""

import os

import pytest

SPECIALS = ["<BOS>", "<K>", "<V>", "<Q>", "<A>", "<N>"]


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


def test_specials_by_name(tokenizer):
    assert type(tokenizer).__name__ == "OnsetTokenizer"
    assert tokenizer.convert_tokens_to_ids(SPECIALS) == list(range(256, 262))
    assert tokenizer.convert_ids_to_tokens(list(range(256, 262))) == SPECIALS
    assert tokenizer.bos_token == "<BOS>" and tokenizer.bos_token_id == 256
    assert tokenizer.eos_token is None and tokenizer.pad_token is None
    assert (tokenizer.vocab_size, len(tokenizer)) == (256, 262)
    text = "<K>ab<V>c<Q>ab<A>c<N>"
    ids = tokenizer.encode(text, add_special_tokens=False)
    assert ids == [257, 97, 98, 258, 99, 259, 97, 98, 260, 99, 261]
    assert tokenizer.decode(ids) == text
    assert tokenizer.decode(ids, skip_special_tokens=True) == "abcabc"


def test_bytes_api(tokenizer):
    data = "<K>é".encode("utf-8")  # the bytes of a special's name are bytes like any other
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
    inputs = tokenizer(["<K>ab<V>cd<Q>ab<A>"], return_tensors="pt")
    out = model.generate(**inputs, max_new_tokens=3, do_sample=False)
    assert out.shape == (1, inputs["input_ids"].shape[1] + 3)
    assert isinstance(tokenizer.decode(out[0]), str)
