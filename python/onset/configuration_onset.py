"""The Hugging Face configuration of an onset model (model_type "onset").

The whole canonical cell config travels under the key "onset" (what `onset-train export` wrote to
its config.json): it is what the model is built from. The usual transformers fields (vocab_size,
hidden_size, ...) are derived from it, for the tools that read them. A copy of this file sits in
every directory that onset.hf writes.
"""

from transformers import PreTrainedConfig

from .vocabulary import BOS, BYTE_TOKENS, is_bytes, padded_size, special_ids, text_tokens


class OnsetConfig(PreTrainedConfig):
    """`onset`: the canonical cell config; `onset_vocabulary`: "bytes" (ids 0-255 are bytes and
    the specials follow, the built-in Markov background) or "ids" (a token file's ids: inputs are
    token ids, and no tokenizer comes with the model)."""

    model_type = "onset"

    onset: dict | None = None
    onset_vocabulary: str = "bytes"
    vocab_size: int = padded_size(BYTE_TOKENS)
    hidden_size: int = 0
    num_hidden_layers: int = 0
    num_attention_heads: int = 0
    initializer_range: float = 0.02
    tie_word_embeddings: bool = True
    bos_token_id: int | None = BYTE_TOKENS
    eos_token_id: int | None = None
    pad_token_id: int | None = None
    # Generation decodes from the model's own cache (OnsetCache), one position per new token.
    use_cache: bool = True

    def __post_init__(self, **kwargs):
        if self.onset is not None:
            model = self.onset["model"]
            text = text_tokens(self.onset)
            self.onset_vocabulary = "bytes" if is_bytes(self.onset) else "ids"
            self.vocab_size = padded_size(text)
            self.hidden_size = model["d_model"]
            self.num_hidden_layers = model["layers"]
            self.num_attention_heads = model["heads"]
            self.initializer_range = model.get("init_std", 0.02)
            self.tie_word_embeddings = bool(model.get("tie_embeddings", True))
            self.bos_token_id = special_ids(text)[BOS]
        super().__post_init__(**kwargs)
