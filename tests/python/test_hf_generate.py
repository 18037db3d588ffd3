"""generate() with greedy decoding: the same tokens as onset-train's own greedy decoding, and
as picking each step's largest logit by hand."""

import pytest

from conftest import KIND_NAMES

STEPS = 8


def prompt():
    from trained_models import TOKENS

    return TOKENS[:12]


def hf_generate(torch, transformers, directory, prompt, steps):
    model = transformers.AutoModelForCausalLM.from_pretrained(directory, trust_remote_code=True)
    out = model.generate(torch.tensor([prompt]), max_new_tokens=steps, do_sample=False)
    assert out.shape == (1, len(prompt) + steps)
    assert out[0, :len(prompt)].tolist() == prompt
    return out[0, len(prompt):].tolist()


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_greedy_generation_equals_onset_train(kind, torch, transformers, models):
    expected = models.generate(kind, prompt(), STEPS)
    assert expected["tokens"] == prompt()
    got = hf_generate(torch, transformers, models.hf(kind).hf, prompt(), STEPS)
    assert got == expected["generated"]


@pytest.mark.parametrize("kind", ["SLDF-conv-everywhere", "GQA-kv1"])
def test_greedy_generation_equals_argmax_by_hand(kind, torch, transformers, models):
    import onset

    reference = onset.load_model(models.get(kind).export)
    tokens = list(prompt())
    with torch.no_grad():
        for _ in range(STEPS):
            tokens.append(int(reference(torch.tensor([tokens]))[0, -1].argmax()))
    got = hf_generate(torch, transformers, models.hf(kind).hf, prompt(), STEPS)
    assert got == tokens[len(prompt()):]


def test_generation_ignores_a_requested_cache(torch, transformers, models):
    """use_cache=True changes nothing: every step still runs the whole sequence."""
    directory = models.hf("DDDF").hf
    model = transformers.AutoModelForCausalLM.from_pretrained(directory, trust_remote_code=True)
    inputs = torch.tensor([prompt()])
    plain = model.generate(inputs, max_new_tokens=4, do_sample=False)
    cached = model.generate(inputs, max_new_tokens=4, do_sample=False, use_cache=True)
    assert torch.equal(plain, cached)
