"""load_model: an onset model as a torch.nn.Module, from an export or a Hugging Face directory."""

import json
import os

import torch

from .network import OnsetNetwork


def read_onset_config(directory):
    """The canonical cell config of an `onset-train export` directory (its config.json) or of a
    Hugging Face directory written by onset.hf (config.json's "onset" key)."""
    path = os.path.join(directory, "config.json")
    with open(path) as f:
        config = json.load(f)
    if config.get("model_type") == "onset":
        return config["onset"]
    if "model" in config and "pattern" in config["model"]:
        return config
    raise ValueError(f"{path}: neither an onset export's config nor an onset Hugging Face config")


def load_model(path, dtype=None):
    """An OnsetNetwork (torch.nn.Module, eval mode, on the CPU) with the weights of `path`: a
    directory `onset-train export` wrote (model.safetensors + config.json) or one that
    onset.hf.convert wrote. Call it on tokens (B, T) int64 for logits (B, T, V); its
    `state_dict()` keys are onset's tensor names. `dtype` (default: the file's) converts the
    floating weights, e.g. torch.float64 for a more exact reference."""
    from safetensors.torch import load_file

    config = read_onset_config(path)
    tensors = load_file(os.path.join(path, "model.safetensors"))
    if dtype is None:
        dtype = tensors["wte.weight"].dtype
    model = OnsetNetwork(config, dtype=dtype)
    tied = config["model"].get("tie_embeddings", True)
    if tied and "lm_head.weight" in tensors:
        # A directory written by save_pretrained may store the tied matrix under both names.
        if not torch.equal(tensors["lm_head.weight"], tensors["wte.weight"]):
            raise ValueError(f"{path}: lm_head.weight differs from wte.weight, but the config "
                             "says model.tie_embeddings")
        del tensors["lm_head.weight"]
    model.load_state_dict({k: v.to(dtype) for k, v in tensors.items()}, strict=True)
    return model.eval()
