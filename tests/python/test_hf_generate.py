"""generate() with greedy decoding, from the model's cache: the same tokens as onset-train's own
greedy decoding, as picking each step's largest logit of the reference by hand, and as
generate() without the cache; one position per step after the prompt; a batch of prompts of one
length; beam search, which reorders the cache."""

import pytest

from conftest import KIND_NAMES

STEPS = 8


def prompt():
    from trained_models import TOKENS

    return TOKENS[:12]


def load(transformers, directory):
    return transformers.AutoModelForCausalLM.from_pretrained(directory, trust_remote_code=True)


def hf_generate(torch, transformers, directory, prompt, steps):
    model = load(transformers, directory)
    assert model.generation_config.use_cache
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
    from onset import reference

    params, config = reference.load_export(models.get(kind).export)
    tokens = list(prompt())
    with torch.no_grad():
        for _ in range(STEPS):
            logits = reference.forward(params, config, torch.tensor([tokens]))
            tokens.append(int(logits[0, -1].argmax()))
    got = hf_generate(torch, transformers, models.hf(kind).hf, prompt(), STEPS)
    assert got == tokens[len(prompt()):]


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_generation_with_the_cache_equals_without(kind, torch, transformers, models):
    """use_cache=False runs the whole sequence every step, and gives the same tokens: past the
    S layers' window and, for the log-n kinds, past seq_len."""
    model = load(transformers, models.hf(kind).hf)
    inputs = torch.tensor([prompt()])
    cached = model.generate(inputs, max_new_tokens=STEPS, do_sample=False)
    plain = model.generate(inputs, max_new_tokens=STEPS, do_sample=False, use_cache=False)
    assert torch.equal(cached, plain)


def test_one_position_per_new_token(torch, transformers, models):
    """The prompt runs once; every further step feeds the model the new token alone (and
    without the cache, the whole sequence every step)."""
    model = load(transformers, models.hf("SLDF-conv-everywhere").hf)
    lengths = []
    model.register_forward_pre_hook(
        lambda module, args, kwargs: lengths.append(kwargs["input_ids"].shape[1]),
        with_kwargs=True)
    model.generate(torch.tensor([prompt()]), max_new_tokens=5, do_sample=False)
    assert lengths == [12, 1, 1, 1, 1]
    lengths.clear()
    model.generate(torch.tensor([prompt()]), max_new_tokens=5, do_sample=False, use_cache=False)
    assert lengths == [12, 13, 14, 15, 16]


def test_generation_continues_a_returned_cache(torch, transformers, models):
    """generate() with the cache an earlier call returned feeds only the tokens it has not
    seen, and goes on as one call would have."""
    model = load(transformers, models.hf("SLDF-conv-everywhere").hf)
    inputs = torch.tensor([prompt()])
    first = model.generate(inputs, max_new_tokens=3, do_sample=False,
                           return_dict_in_generate=True)
    assert first.cache.get_seq_length() == len(prompt()) + 2  # the last token not yet fed
    more = model.generate(first.sequences, cache=first.cache, max_new_tokens=5,
                          do_sample=False)
    whole = model.generate(inputs, max_new_tokens=8, do_sample=False)
    assert torch.equal(more, whole)


def test_a_batch_of_prompts_of_one_length(torch, transformers, models):
    model = load(transformers, models.hf("LDDF-conv").hf)
    from trained_models import TOKENS

    prompts = [TOKENS[:12], TOKENS[:4] + TOKENS[16:24]]
    batch = model.generate(torch.tensor(prompts), max_new_tokens=STEPS, do_sample=False)
    for row, one in zip(batch, prompts):
        alone = model.generate(torch.tensor([one]), max_new_tokens=STEPS, do_sample=False)
        assert torch.equal(row, alone[0])


def test_beam_search_reorders_the_cache(torch, transformers, models):
    model = load(transformers, models.hf("SLDF-conv-everywhere").hf)
    inputs = torch.tensor([prompt()])
    kwargs = {"max_new_tokens": 6, "do_sample": False, "num_beams": 3,
              "num_return_sequences": 2}
    cached = model.generate(inputs, **kwargs)
    plain = model.generate(inputs, use_cache=False, **kwargs)
    assert cached.shape == (2, 18)
    assert torch.equal(cached, plain)
