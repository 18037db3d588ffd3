"""onset's vocabulary, as model/config/vocab.h defines it.

Ids 0 .. text_tokens - 1 are text: the 256 byte values for the built-in Markov background, or a
token file's ids (`data.background: file`, `data.vocab_size` of them). The six specials follow,
then padding rows up to a multiple of 8 that the data never produces. This file needs nothing
but the standard library: the Hugging Face directories of onset.hf carry a copy of it.
"""

BYTE_TOKENS = 256

# The specials in id order after the text tokens: the start of every sequence, then the record
# and query markers (<K> key, <V> value, <Q> query, <A> answer) and <N>, the answer to a query
# whose key no record has.
SPECIAL_TOKENS = ("<BOS>", "<K>", "<V>", "<Q>", "<A>", "<N>")


def text_tokens(config):
    """The number of text tokens of a canonical cell config (dict with a "data" section)."""
    data = config.get("data", {})
    if data.get("background", "markov") == "file":
        return int(data.get("vocab_size", BYTE_TOKENS))
    return BYTE_TOKENS


def padded_size(n_text_tokens):
    """Embedding rows: the text tokens and the specials, rounded up to a multiple of 8."""
    return (n_text_tokens + len(SPECIAL_TOKENS) + 7) // 8 * 8


def special_ids(n_text_tokens):
    """{special token name: id}: the specials follow the text tokens."""
    return {name: n_text_tokens + i for i, name in enumerate(SPECIAL_TOKENS)}


def is_bytes(config):
    """Whether the model's text tokens are bytes (the Markov background) rather than the ids of a
    token file, whose meaning only the file's own tokenizer knows."""
    return config.get("data", {}).get("background", "markov") != "file"
