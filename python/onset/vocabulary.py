"""onset's vocabulary, as model/config/vocab.h defines it.

Ids 0 .. text_tokens - 1 are text: the 256 byte values for the built-in Markov background, or a
token file's ids (`data.background: file`, `data.vocab_size` of them). The six specials follow,
then padding rows up to a multiple of 8 that the data never produces. This file needs nothing
but the standard library: the Hugging Face directories of onset.hf carry a copy of it.
"""

BYTE_TOKENS = 256

# The specials in id order after the text tokens: the start of every sequence, then the record
# and query markers (K key, V value, Q query, A answer) and N, the answer to a query whose key
# no record has. Their names are bracketed by U+27E8 and U+27E9, characters no byte is: a text
# of bytes never holds a name, so every text reads back as exactly one sequence of ids
# (model/config/vocab.h names them the same).
SPECIAL_TOKENS = ("\u27e8BOS\u27e9", "\u27e8K\u27e9", "\u27e8V\u27e9", "\u27e8Q\u27e9",
                  "\u27e8A\u27e9", "\u27e8N\u27e9")
BOS = SPECIAL_TOKENS[0]


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


def padding_ids(n_text_tokens):
    """{name: id} of the padding rows after the specials: \u27e8PAD0\u27e9, \u27e8PAD1\u27e9,
    ..."""
    first = n_text_tokens + len(SPECIAL_TOKENS)
    return {f"\u27e8PAD{i}\u27e9": first + i
            for i in range(padded_size(n_text_tokens) - first)}


def byte_text(ids):
    """The text of ids of the byte vocabulary: byte b as chr(b), the specials and padding rows by
    name. Raises ValueError for an id outside the vocabulary."""
    names = {i: name for name, i in {**special_ids(BYTE_TOKENS),
                                     **padding_ids(BYTE_TOKENS)}.items()}
    out = []
    for i in ids:
        i = int(i)
        if 0 <= i < BYTE_TOKENS:
            out.append(chr(i))
        elif i in names:
            out.append(names[i])
        else:
            raise ValueError(f"token id {i} is outside the byte vocabulary's "
                             f"{padded_size(BYTE_TOKENS)} ids")
    return "".join(out)


def is_bytes(config):
    """Whether the model's text tokens are bytes (the Markov background) rather than the ids of a
    token file, whose meaning only the file's own tokenizer knows."""
    return config.get("data", {}).get("background", "markov") != "file"
