"""onset's language model for transformers: AutoModelForCausalLM with trust_remote_code.

The module's parameters carry onset's own names (`wte.weight`, `h0.mixer.qkv.weight`, ...), so
the `model.safetensors` of `onset-train export` loads as it is, and the forward pass is the
plain-PyTorch reference's (reference.py, by way of network.py): the math is written once. It runs
on the CPU, written for reading rather than speed. generate() works without a key/value cache:
every step runs the whole sequence again. A copy of this file sits in every directory that
onset.hf writes.
"""

import torch
from transformers import GenerationMixin, PreTrainedModel
from transformers import initialization as init
from transformers.modeling_outputs import CausalLMOutputWithPast

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
        return False

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

    def forward(self, input_ids=None, attention_mask=None, labels=None, return_dict=None,
                **kwargs):
        """Logits of every position; with `labels`, also the mean next-token cross-entropy
        (labels shifted inside, -100 ignored). `attention_mask` must be all ones: onset's
        model knows no padding."""
        if input_ids is None:
            raise ValueError("onset models take input_ids (token ids), not inputs_embeds")
        if attention_mask is not None and not bool(attention_mask.all()):
            raise ValueError("onset models take unpadded sequences: attention_mask must be all "
                             "ones (generate one prompt at a time, or prompts of one length)")
        logits = network_forward(self, self.config.onset, input_ids)
        loss = None
        if labels is not None:
            loss = torch.nn.functional.cross_entropy(
                logits[:, :-1].reshape(-1, logits.shape[-1]).float(),
                labels[:, 1:].reshape(-1), ignore_index=-100)
        return CausalLMOutputWithPast(loss=loss, logits=logits)

    def prepare_inputs_for_generation(self, input_ids, **kwargs):
        """Every step sees the whole sequence: there is no cache to continue from."""
        return {"input_ids": input_ids}
