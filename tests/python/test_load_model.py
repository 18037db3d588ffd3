"""onset.load_model: an export (and a converted directory) as a torch module that reproduces
onset-train's logits for every kind of model."""

import pytest

from conftest import KIND_NAMES


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_export_reproduces_trainer_logits(kind, torch, models):
    import onset
    from trained_models import TOKENS, TOLERANCE

    model = onset.load_model(models.get(kind).export)
    assert isinstance(model, torch.nn.Module) and not model.training
    with torch.no_grad():
        got = model(torch.tensor([TOKENS]))[0]
    want = torch.tensor(models.dump_logits(kind))
    assert got.shape == want.shape
    assert (got - want).abs().max().item() <= TOLERANCE


def test_state_dict_keys_are_the_export_names(torch, models):
    import onset
    from safetensors.torch import load_file

    for kind in ("F", "GQA-kv1"):  # tied and separate output matrices
        export = models.get(kind).export
        model = onset.load_model(export)
        tensors = load_file(f"{export}/model.safetensors")
        assert set(model.state_dict()) == set(tensors)
        for name, tensor in tensors.items():
            assert torch.equal(model.state_dict()[name], tensor), name


def test_converted_directory_loads_too(torch, models):
    import onset
    from trained_models import TOKENS

    converted = onset.load_model(models.hf("SSSF-w8").hf)
    exported = onset.load_model(models.get("SSSF-w8").export)
    tokens = torch.tensor([TOKENS])
    with torch.no_grad():
        assert torch.equal(converted(tokens), exported(tokens))


def test_float64_weights(torch, models):
    import onset
    from trained_models import TOKENS, TOLERANCE

    model = onset.load_model(models.get("DDDF").export, dtype=torch.float64)
    assert model.wte.weight.dtype == torch.float64
    with torch.no_grad():
        got = model(torch.tensor([TOKENS]))[0]
    want = torch.tensor(models.dump_logits("DDDF"), dtype=torch.float64)
    assert (got - want).abs().max().item() <= TOLERANCE


def test_not_an_export(tmp_path, torch):
    import json

    import onset

    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    with pytest.raises(ValueError, match="neither"):
        onset.load_model(str(tmp_path))
