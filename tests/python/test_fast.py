"""onset.fast: the whole model computed fast equals the reference (reference.forward, the spec)
on random weights, for every kind of random_models.KINDS, several seeds and lengths (one
position, a part of a chunk, lengths that are and are not multiples of the chunk and longer
than the window), in float64, where any difference beyond rounding is a fault, and in
float32. The trained models' logits against onset-train's are test_load_model.py's and
test_hf_model.py's."""

import pytest

import random_models

LENGTHS = [1, 3, 8, 13, 37]
SEEDS = [0, 1, 2]


def both(torch, kind, seed, T, dtype, batch=2):
    """(fast.forward's logits, reference.forward's) of random tokens on a random model."""
    from onset import fast, reference

    cfg = random_models.config(kind)
    params = random_models.params(torch, cfg, seed, dtype)
    tokens = random_models.tokens(torch, batch, T, seed)
    with torch.no_grad():
        return fast.forward(params, cfg, tokens), reference.forward(params, cfg, tokens)


@pytest.mark.parametrize("kind", list(random_models.KINDS))
@pytest.mark.parametrize("T", LENGTHS)
def test_fast_equals_the_reference(kind, T, torch):
    for seed in SEEDS:
        got, want = both(torch, kind, seed, T, torch.float64)
        assert got.shape == want.shape == (2, T, 40) and got.dtype == torch.float64
        scale = max(1.0, want.abs().max().item())
        assert (got - want).abs().max().item() < 1e-10 * scale, seed


@pytest.mark.parametrize("kind", list(random_models.KINDS))
def test_fast_equals_the_reference_in_float32(kind, torch):
    got, want = both(torch, kind, 5, 29, torch.float32)
    assert got.dtype == torch.float32
    scale = max(1.0, want.abs().max().item())
    assert (got - want).abs().max().item() < 2e-5 * scale


def test_the_last_positions_only(torch):
    from onset import fast

    cfg = random_models.config("SLDF-conv-everywhere")
    params = random_models.params(torch, cfg, 0, torch.float64)
    tokens = random_models.tokens(torch, 2, 11, 0)
    with torch.no_grad():
        every = fast.forward(params, cfg, tokens)
        last = fast.forward(params, cfg, tokens, last=3)
    assert last.shape == (2, 3, 40)
    assert torch.equal(last, every[:, -3:])


def test_sequences_of_a_batch_are_independent(torch):
    from onset import fast

    cfg = random_models.config("SLDF-conv-everywhere")
    params = random_models.params(torch, cfg, 1, torch.float64)
    tokens = random_models.tokens(torch, 3, 17, 1)
    with torch.no_grad():
        batch = fast.forward(params, cfg, tokens)
        for b in range(3):
            alone = fast.forward(params, cfg, tokens[b:b + 1])
            assert (batch[b] - alone[0]).abs().max().item() < 1e-12


def test_attention_mask():
    """Query i of T new ones is key P + i; an S layer's query sees the window back."""
    from onset.fast import attention_mask

    assert attention_mask(5, 0, 0) is None                           # plain causal
    assert attention_mask(5, 0, 8) is None                           # the window covers T
    assert attention_mask(1, 9, 4) is None                           # one query sees all kept
    mask = attention_mask(3, 2, 3)                                   # 2 kept keys, window 3
    assert mask.tolist() == [[True, True, True, False, False],
                             [False, True, True, True, False],
                             [False, False, True, True, True]]
    full = attention_mask(2, 3, 0)
    assert full.tolist() == [[True, True, True, True, False], [True] * 5]
