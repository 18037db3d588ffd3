"""onset's model as a torch.nn.Module whose parameter names are onset's own.

`onset-train export` names every tensor as the trainer's module does (`wte.weight`,
`h0.mixer.qkv.weight`, ...; docs/export.md). This file lays out a module tree with exactly those
names and shapes, computed from the canonical cell config, so that `model.safetensors` loads
into it one to one with `load_state_dict`, and runs it through fast.py: the plain-PyTorch
reference's math (reference.py, the spec) with every position at once, the L and D mixers in
their chunked form, optionally continuing from a cache. It needs torch and the files beside it
(fast.py, chunked.py, reference.py, vocabulary.py): the Hugging Face directories of onset.hf
carry a copy of each.
"""

import torch
from torch import nn

from .fast import forward as fast_forward
from .vocabulary import padded_size, text_tokens


def _short_conv_letters(model):
    """model.short_conv as the layer letters that have the convolution: true means "LD"."""
    value = model.get("short_conv", "")
    if value is True:
        return "LD"
    if value is False or value is None:
        return ""
    return str(value)


def mlp_hidden(model):
    """The SwiGLU hidden width: model.mlp_hidden, or 8/3 d_model rounded up to a multiple of 32."""
    if model.get("mlp_hidden", 0) > 0:
        return model["mlp_hidden"]
    return ((8 * model["d_model"] + 2) // 3 + 31) // 32 * 32


def parameter_shapes(config):
    """{parameter name: shape} of the model of a canonical cell config, as docs/export.md
    tabulates them. `lm_head.weight` is absent when model.tie_embeddings."""
    model = config["model"]
    C, H = model["d_model"], model["heads"]
    G = model.get("kv_heads") or H
    D = C // H
    F = mlp_hidden(model)
    V = padded_size(text_tokens(config))
    K = model.get("short_conv_kernel", 4)
    conv_letters = _short_conv_letters(model)
    shapes = {"wte.weight": (V, C)}
    for i, kind in enumerate(model["pattern"]):
        p = f"h{i}."
        shapes[p + "norm1.weight"] = (C,)
        if kind in "FS":
            shapes[p + "mixer.qkv.weight"] = ((H + 2 * G) * D, C)
            if kind in conv_letters:
                shapes[p + "mixer.conv.weight"] = ((H + 2 * G) * D, K)
            if model.get("qk_norm", True):
                shapes[p + "mixer.qk_norm_weight"] = (2, 1, D)
            shapes[p + "mixer.out.weight"] = (C, C)
        elif kind in "LD":
            scalars = H if kind == "L" else 2 * H
            shapes[p + "mixer.in_proj.weight"] = (4 * C + scalars, C)
            if kind == "D":
                shapes[p + "mixer.a_log"] = (H,)
                shapes[p + "mixer.dt_bias"] = (H,)
            if kind in conv_letters:
                shapes[p + "mixer.conv.weight"] = (3 * C, K)
            shapes[p + "mixer.head_norm_weight"] = (D,)
            shapes[p + "mixer.out.weight"] = (C, C)
        else:
            raise ValueError(f"model.pattern {model['pattern']!r}: unknown layer kind {kind!r}")
        shapes[p + "norm2.weight"] = (C,)
        shapes[p + "mlp.gate_up.weight"] = (2 * F, C)
        shapes[p + "mlp.down.weight"] = (C, F)
    shapes["norm_f.weight"] = (C,)
    if not model.get("tie_embeddings", True):
        shapes["lm_head.weight"] = (V, C)
    return shapes


def add_parameters(root, config, with_lm_head=None, dtype=None):
    """Registers the model's parameters on `root` under onset's names, uninitialised: `wte` as an
    nn.Embedding, `lm_head` as a bias-free nn.Linear, every other tensor a Parameter of a plain
    container module (`h0` > `mixer` > `qkv` > `weight`). `with_lm_head` (default: whether the
    model has a separate output matrix) adds `lm_head` to tie to `wte` all the same. `dtype`:
    that of the new tensors (default: torch's default dtype). Every module that holds
    parameters knows its own name as `onset_name` (see init_module)."""
    shapes = parameter_shapes(config)
    V, C = shapes["wte.weight"]
    root.wte = nn.Embedding(V, C, dtype=dtype)
    root.wte.onset_name = "wte"
    if with_lm_head is None:
        with_lm_head = "lm_head.weight" in shapes
    if with_lm_head:
        root.lm_head = nn.Linear(C, V, bias=False, dtype=dtype)
        root.lm_head.onset_name = "lm_head"
    for name, shape in shapes.items():
        if name in ("wte.weight", "lm_head.weight"):
            continue
        *path, leaf = name.split(".")
        module = root
        for i, part in enumerate(path):
            if part not in module._modules:
                module.add_module(part, nn.Module())
                module._modules[part].onset_name = ".".join(path[:i + 1])
            module = module._modules[part]
        module.register_parameter(leaf, nn.Parameter(torch.empty(shape, dtype=dtype)))


def initial_value(name):
    """How a fresh model starts parameter `name`: "ones" (the norm gains), "zeros" (the D mixers'
    a_log and dt_bias) or "normal" (every matrix)."""
    *path, leaf = name.split(".")
    if leaf.endswith("norm_weight") or (path and path[-1].startswith("norm")):
        return "ones"
    if leaf in ("a_log", "dt_bias"):
        return "zeros"
    return "normal"


def init_module(module, std, functions=nn.init):
    """Gives the parameters `module` holds itself (not its children's) a fresh model's values:
    norm gains 1, a_log and dt_bias 0, every matrix normal(0, std), by their onset names.
    `functions` provides ones_, zeros_ and normal_: torch.nn.init, or transformers.initialization,
    which leaves loaded parameters alone. The trainer's own initialisation differs in details:
    use trained weights for anything but a smoke test."""
    prefix = getattr(module, "onset_name", "")
    with torch.no_grad():
        for leaf, param in module.named_parameters(recurse=False):
            kind = initial_value(f"{prefix}.{leaf}" if prefix else leaf)
            if kind == "ones":
                functions.ones_(param)
            elif kind == "zeros":
                functions.zeros_(param)
            else:
                functions.normal_(param, mean=0.0, std=std)


def forward(root, config, tokens, cache=None, last=0):
    """tokens (B, T) int64 -> logits (B, T, V), by fast.forward over root's parameters (a tied
    lm_head is the embedding itself, which fast.forward uses when lm_head is absent); `cache`
    and `last` as fast.forward takes them."""
    params = dict(root.named_parameters())
    return fast_forward(params, config, tokens, cache, last)


class OnsetNetwork(nn.Module):
    """onset's model with onset's parameter names: `state_dict()` keys are the tensor names of
    `model.safetensors`. Build it from a canonical cell config, load the weights with
    `load_state_dict`, call it on tokens (B, T) int64 for logits (B, T, V)."""

    def __init__(self, config, dtype=torch.float32):
        super().__init__()
        self.onset_config = config
        add_parameters(self, config, dtype=dtype)

    def forward(self, tokens):
        return forward(self, self.onset_config, tokens)
