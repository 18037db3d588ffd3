"""onset's language model for transformers: AutoModelForCausalLM with trust_remote_code.

The module's parameters carry onset's own names (`wte.weight`, `h0.mixer.qkv.weight`, ...), so
the `model.safetensors` of `onset-train export` loads as it is. The forward pass is fast.py's (by
way of network.py): the plain-PyTorch reference's math (reference.py, the spec, against which
the tests hold it) with every position at once, attention through scaled_dot_product_attention
and the L and D mixers in their chunked parallel form (chunked.py).

generate() decodes from a cache (cache.py's OnsetCache: F and S layers' keys and values, S only
its window, L and D layers' state, every short convolution's last inputs): the first call of
generate runs the prompt at once and returns the cache, each further step runs the new token
alone, its position going on from the cache's length. use_cache=False runs the whole sequence
every step instead, to the same tokens. A copy of this file sits in every directory that
onset.hf writes.
"""

import torch
from transformers import GenerationMixin, PreTrainedModel
from transformers import initialization as init
from transformers.modeling_outputs import CausalLMOutputWithPast
from transformers.modeling_utils import slice_logits_to_keep
from transformers.utils.deprecation import deprecate_kwarg

from .cache import OnsetCache
from .network import add_parameters, init_module
from .network import forward as network_forward
from .configuration_onset import OnsetConfig


class OnsetForCausalLM(PreTrainedModel, GenerationMixin):
    """onset's model: input_ids (B, T) int64 -> logits (B, T, V), positions from 0; the first
    token of a sequence should be <BOS>, as every training sequence starts with it."""

    config_class = OnsetConfig
    base_model_prefix = ""
    main_input_name = "input_ids"
    # The output matrix is the embedding when the model ties them (model.tie_embeddings); the
    # export then has no lm_head.weight.
    _tied_weights_keys = {"lm_head.weight": "wte.weight"}

    def __init__(self, config):
        if config.onset is None:
            raise ValueError("an onset model is built from its canonical cell config: "
                             "OnsetConfig(onset=CONFIG), as config.json of onset.hf holds it")
        super().__init__(config)
        add_parameters(self, config.onset, with_lm_head=True, dtype=None)
        self.post_init()

    @classmethod
    def _supports_default_dynamic_cache(cls):
        """No DynamicCache from generate(): the model makes its own OnsetCache in generate's
        first forward pass (use_cache and no cache) and returns it; generate passes it back
        with the new token (prepare_inputs_for_generation)."""
        return False

    def prepare_inputs_for_generation(self, input_ids, next_sequence_length=None, cache=None,
                                      attention_mask=None, use_cache=None, logits_to_keep=None,
                                      **kwargs):
        """What each forward pass of generate() takes: the tokens the cache has not seen (the
        last `next_sequence_length` of input_ids, which generate sets to 1 after the prompt
        when it uses a cache; all of them without one) and the cache. This model takes
        nothing else (no positions, embeddings or 4-D masks), so GenerationMixin's general
        preparation, which costs a good part of a decoding step here, is not needed."""
        if kwargs.get("inputs_embeds") is not None:
            raise ValueError("onset models take input_ids (token ids), not inputs_embeds")
        if next_sequence_length is not None:
            input_ids = input_ids[:, -next_sequence_length:]
        inputs = {"input_ids": input_ids, "cache": cache, "attention_mask": attention_mask,
                  "use_cache": use_cache}
        if logits_to_keep is not None:
            inputs["logits_to_keep"] = logits_to_keep
        return inputs

    def get_input_embeddings(self):
        return self.wte

    def set_input_embeddings(self, value):
        self.wte = value

    def get_output_embeddings(self):
        return self.lm_head

    def set_output_embeddings(self, value):
        self.lm_head = value

    def _init_weights(self, module):
        """Values for the parameters no checkpoint gave (a model made from its config alone):
        norm gains 1, a_log and dt_bias 0, every matrix normal(0, initializer_range).
        transformers' init functions leave loaded parameters alone."""
        init_module(module, self.config.initializer_range, init)

    @deprecate_kwarg("past_key_values", "5.40.0", new_name="cache")
    def forward(self, input_ids=None, attention_mask=None, cache=None, use_cache=None,
                labels=None, logits_to_keep=0, return_dict=None, **kwargs):
        """Logits of every position (of the last `logits_to_keep` when it is a positive int, or
        of the positions a tensor of them names); with `labels`, also the mean next-token
        cross-entropy (labels shifted inside, -100 ignored). `attention_mask` must be all ones:
        onset's model knows no padding. The tokens continue `cache` (an OnsetCache that an
        earlier call returned) or start a sequence; with use_cache (config.use_cache by
        default) the cache, updated or new, comes back as outputs.cache."""
        if input_ids is None:
            raise ValueError("onset models take input_ids (token ids), not inputs_embeds")
        if attention_mask is not None and not bool(attention_mask.all()):
            raise ValueError("onset models take unpadded sequences: attention_mask must be all "
                             "ones (generate one prompt at a time, or prompts of one length)")
        if cache is not None and not isinstance(cache, OnsetCache):
            raise ValueError(f"onset models decode from their own cache, not a "
                             f"{type(cache).__name__}: pass none (generate makes one) or the "
                             "outputs.cache of an earlier call")
        if use_cache is None:
            use_cache = self.config.use_cache
        if use_cache and cache is None:
            cache = OnsetCache(self.config.onset)
        last = logits_to_keep if isinstance(logits_to_keep, int) else 0
        logits = network_forward(self, self.config.onset, input_ids, cache, last)
        if not isinstance(logits_to_keep, int):
            logits = slice_logits_to_keep(logits, logits_to_keep)
        loss = None
        if labels is not None:
            loss = torch.nn.functional.cross_entropy(
                logits[:, :-1].reshape(-1, logits.shape[-1]).float(),
                labels[:, 1:].reshape(-1), ignore_index=-100)
        return CausalLMOutputWithPast(loss=loss, logits=logits, cache=cache)
