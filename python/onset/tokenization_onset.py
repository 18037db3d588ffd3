"""The tokenizer of onset's byte vocabulary, for transformers (AutoTokenizer, trust_remote_code).

Ids 0-255 are the byte values, shown as the characters U+0000-U+00FF (byte b is chr(b)), so any
byte sequence is a text: `data.decode("latin-1")` turns bytes into the text whose encoding gives
them back, and `text.encode("latin-1")` the other way. Ids 256-261 are the specials of
model/config/vocab.h, by name: \u27e8BOS\u27e9 (every sequence starts with it; encode() puts it
first unless the text starts with it), \u27e8K\u27e9 and \u27e8V\u27e9 (a record's key and value
follow), \u27e8Q\u27e9 and \u27e8A\u27e9 (a query's key and its answer follow) and
\u27e8N\u27e9 (the answer to a query whose key no record has). The brackets are U+27E8 and
U+27E9, which no byte is: a text of bytes never holds a special's name, so every text encodes to
exactly one sequence of ids and decodes back.
Ids 262 and 263 (\u27e8PAD0\u27e9, \u27e8PAD1\u27e9) pad the embedding to a multiple of 8 and are
never in the data; onset has no end-of-text or padding token, so the first of them stands for
both (eos_token, pad_token) for tools that need one, e.g. lm-evaluation-harness's stop sequence.
A trained model gives it negligible probability, and generate() does not stop at it (the model's
config has no eos_token_id). Characters above U+00FF are no byte: encode such text as bytes first
(`tokenizer.encode_bytes(text.encode("utf-8"))`). A copy of this file sits in every directory that
onset.hf writes for a model of the byte vocabulary.
"""

from transformers import AddedToken, PreTrainedTokenizer

from .vocabulary import BYTE_TOKENS, SPECIAL_TOKENS, padding_ids, special_ids


class OnsetTokenizer(PreTrainedTokenizer):
    """Bytes as characters U+0000-U+00FF, and the six specials by name."""

    model_input_names = ["input_ids", "attention_mask"]

    def __init__(self, **kwargs):
        specials = {**special_ids(BYTE_TOKENS), **padding_ids(BYTE_TOKENS)}
        self._added_tokens_decoder = {
            i: AddedToken(name, special=True, normalized=False, lstrip=False, rstrip=False)
            for name, i in specials.items()}
        for key in ("bos_token", "eos_token", "pad_token", "extra_special_tokens",
                    "additional_special_tokens", "special_tokens_pattern",
                    "clean_up_tokenization_spaces"):
            kwargs.pop(key, None)
        padding = list(padding_ids(BYTE_TOKENS))
        super().__init__(
            bos_token=SPECIAL_TOKENS[0],
            eos_token=padding[0],
            pad_token=padding[0],
            extra_special_tokens=list(SPECIAL_TOKENS[1:]) + padding[1:],
            special_tokens_pattern="bos",  # encode() starts every sequence with <BOS>
            clean_up_tokenization_spaces=False,
            **kwargs)

    @property
    def vocab_size(self):
        """The byte tokens; the specials and padding rows come on top as added tokens
        (len(tokenizer) is 264)."""
        return BYTE_TOKENS

    def get_vocab(self):
        vocab = {chr(i): i for i in range(BYTE_TOKENS)}
        vocab.update(self._added_tokens_encoder)
        return vocab

    def _tokenize(self, text, **kwargs):
        """One token per character, each of which must be a byte (U+0000-U+00FF)."""
        for i, c in enumerate(text):
            if ord(c) >= BYTE_TOKENS:
                raise ValueError(
                    f"character {c!r} (U+{ord(c):04X}) at {i} is no byte: onset's vocabulary is "
                    "bytes; encode the text first, e.g. tokenizer.encode_bytes(text.encode())")
        return list(text)

    def _convert_token_to_id(self, token):
        return ord(token)

    def _convert_id_to_token(self, index):
        if 0 <= index < BYTE_TOKENS:
            return chr(index)
        raise ValueError(f"token id {index} is outside the byte vocabulary's 264 ids")

    def convert_tokens_to_string(self, tokens):
        return "".join(tokens)

    def build_inputs_with_special_tokens(self, token_ids_0, token_ids_1=None):
        """<BOS> first, unless the text already starts with it (a prompt that onset wrote, e.g.
        prompts.jsonl's, or a decoded sequence): tokenizer(text) gives one <BOS> either way, so
        that encode(decode(ids)) == ids."""
        if token_ids_1 is None and token_ids_0[:1] == [self.bos_token_id]:
            return list(token_ids_0)
        return super().build_inputs_with_special_tokens(token_ids_0, token_ids_1)

    def get_special_tokens_mask(self, token_ids_0, token_ids_1=None,
                                already_has_special_tokens=False):
        if (not already_has_special_tokens and token_ids_1 is None
                and token_ids_0[:1] == [self.bos_token_id]):
            return [1] + [0] * (len(token_ids_0) - 1)
        return super().get_special_tokens_mask(token_ids_0, token_ids_1,
                                               already_has_special_tokens)

    def encode_bytes(self, data, add_bos=True):
        """The ids of a byte string, <BOS> first unless add_bos is false; special-token names in
        the data are bytes like any other."""
        return ([self.bos_token_id] if add_bos else []) + list(bytes(data))

    def decode_bytes(self, ids):
        """The bytes of a sequence of ids, the specials left out."""
        return bytes(i for i in ids if 0 <= int(i) < BYTE_TOKENS)

    def save_vocabulary(self, save_directory, filename_prefix=None):
        """The vocabulary is fixed (bytes and specials): no file holds it."""
        return ()
