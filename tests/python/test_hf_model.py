"""onset.hf: every kind of model, converted, loads with transformers' AutoModelForCausalLM
(trust_remote_code) and reproduces onset-train's logits."""

import json
import os

import pytest

from conftest import KIND_NAMES


def load(transformers, directory):
    return transformers.AutoModelForCausalLM.from_pretrained(
        directory, trust_remote_code=True, output_loading_info=True)


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_logits_equal_trainer_logits(kind, torch, transformers, models, logit_differences):
    from trained_models import TOKENS, TOLERANCE

    model, info = load(transformers, models.hf(kind).hf)
    assert not any(info[k] for k in ("missing_keys", "unexpected_keys", "mismatched_keys"))
    assert type(model).__name__ == "OnsetForCausalLM"
    with torch.no_grad():
        got = model(input_ids=torch.tensor([TOKENS])).logits[0]
    want = torch.tensor(models.dump_logits(kind))
    assert got.dtype == torch.float32 and got.shape == want.shape
    diff = (got - want).abs().max().item()
    logit_differences[kind] = diff
    assert diff <= TOLERANCE


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_logits_continuing_a_cache_equal_trainer_logits(kind, torch, transformers, models):
    """The sequence in three calls, each continuing the cache the last returned: positions go on
    from the cache's length, and every position's logits are onset-train's."""
    from trained_models import TOKENS, TOLERANCE

    model, _ = load(transformers, models.hf(kind).hf)
    tokens = torch.tensor([TOKENS])
    got, cache = [], None
    with torch.no_grad():
        for begin, end in [(0, 13), (13, 14), (14, len(TOKENS))]:
            out = model(input_ids=tokens[:, begin:end], cache=cache, use_cache=True)
            got.append(out.logits[0])
            cache = out.cache
    assert cache.get_seq_length() == len(TOKENS)
    want = torch.tensor(models.dump_logits(kind))
    assert (torch.cat(got) - want).abs().max().item() <= TOLERANCE


@pytest.mark.parametrize("kind", ["F", "GQA-kv1"])  # tied and separate output matrices
def test_parameter_names_are_onsets(kind, torch, transformers, models):
    from safetensors.torch import load_file

    directory = models.hf(kind).hf
    model, _ = load(transformers, directory)
    tensors = load_file(os.path.join(directory, "model.safetensors"))
    names = set(model.state_dict())
    tied = model.config.tie_word_embeddings
    assert tied == ("lm_head.weight" not in tensors)
    if tied:  # the output matrix is the embedding, under both names
        assert model.lm_head.weight is model.wte.weight
        names.discard("lm_head.weight")
    assert names == set(tensors)
    for name, tensor in tensors.items():
        assert torch.equal(model.state_dict()[name], tensor), name


def test_directory_contents(models):
    model = models.hf("LDDF-conv")
    with open(os.path.join(model.hf, "config.json")) as f:
        config = json.load(f)
    with open(os.path.join(model.export, "config.json")) as f:
        onset_config = json.load(f)
    assert config["model_type"] == "onset"
    assert config["architectures"] == ["OnsetForCausalLM"]
    assert config["auto_map"] == {
        "AutoConfig": "configuration_onset.OnsetConfig",
        "AutoModelForCausalLM": "modeling_onset.OnsetForCausalLM",
        "AutoTokenizer": ["tokenization_onset.OnsetTokenizer", None]}
    assert config["onset"] == onset_config
    assert (config["vocab_size"], config["hidden_size"], config["num_hidden_layers"],
            config["num_attention_heads"]) == (264, 32, 4, 4)
    assert config["tie_word_embeddings"] is True
    assert (config["bos_token_id"], config["eos_token_id"], config["pad_token_id"]) == \
        (256, None, None)
    assert config["torch_dtype"] == "float32" and config["onset_vocabulary"] == "bytes"
    assert config["use_cache"] is True
    with open(os.path.join(model.export, "model.safetensors"), "rb") as a, \
            open(os.path.join(model.hf, "model.safetensors"), "rb") as b:
        assert a.read() == b.read()  # copied as it is
    for name in ("configuration_onset.py", "modeling_onset.py", "network.py", "fast.py",
                 "chunked.py", "cache.py", "reference.py", "vocabulary.py",
                 "tokenization_onset.py", "tokenizer_config.json", "special_tokens_map.json",
                 "generation_config.json"):
        assert os.path.isfile(os.path.join(model.hf, name)), name
    # Files with the mode any new file gets (others may read a shared model), not mkstemp's 0600.
    umask = os.umask(0)
    os.umask(umask)
    for name in os.listdir(model.hf):
        if not name.startswith("."):
            mode = os.stat(os.path.join(model.hf, name)).st_mode & 0o777
            assert mode == 0o666 & ~umask, (name, oct(mode))


def test_bf16_export(tmp_path, torch, transformers, models):
    """An export stored in bfloat16 loads in bfloat16, and its logits stay near float32's."""
    from export_test import run
    from onset.hf import convert
    from trained_models import TOKENS

    model = models.get("SSSF-w8")
    bf16 = str(tmp_path / "bf16")
    run([models.trainer, "export", "--config", model.config, "--checkpoint", model.checkpoint,
         "--out", bf16, "--dtype", "bf16"])
    converted, _ = load(transformers, convert(bf16, str(tmp_path / "hf_bf16")))
    assert converted.config.dtype == torch.bfloat16
    assert converted.wte.weight.dtype == torch.bfloat16
    with torch.no_grad():
        got = converted(input_ids=torch.tensor([TOKENS])).logits[0].float()
    want = torch.tensor(models.dump_logits("SSSF-w8"))
    assert (got - want).abs().max().item() < 0.5


def test_model_from_config_alone(torch, transformers, models):
    """AutoConfig and from_config make a fresh model of the same shapes (norm gains 1)."""
    directory = models.hf("DDDF").hf
    config = transformers.AutoConfig.from_pretrained(directory, trust_remote_code=True)
    fresh = transformers.AutoModelForCausalLM.from_config(config, trust_remote_code=True)
    trained, _ = load(transformers, directory)
    assert {k: v.shape for k, v in fresh.state_dict().items()} == \
        {k: v.shape for k, v in trained.state_dict().items()}
    assert torch.equal(fresh.h0.norm1.weight, torch.ones(32))
    assert torch.equal(fresh.h0.mixer.a_log, torch.zeros(4))
    assert fresh.wte.weight.std().item() < 0.1


def test_labels_give_the_next_token_loss(torch, transformers, models):
    from trained_models import TOKENS

    model, _ = load(transformers, models.hf("F").hf)
    tokens = torch.tensor([TOKENS])
    with torch.no_grad():
        out = model(input_ids=tokens, labels=tokens)
    want = torch.nn.functional.cross_entropy(out.logits[0, :-1], tokens[0, 1:])
    assert abs(out.loss.item() - want.item()) < 1e-6


def test_padding_is_refused(torch, transformers, models):
    model, _ = load(transformers, models.hf("F").hf)
    with pytest.raises(ValueError, match="unpadded"):
        model(input_ids=torch.tensor([[256, 1, 2]]), attention_mask=torch.tensor([[0, 1, 1]]))
