"""onset.chunked: the L and D recurrences in chunked form equal the reference's token-by-token
recurrence (reference.recurrence, the spec) on random inputs, at lengths that are and are not
multiples of the chunk, of one position, from weak decays to strong ones, and carry their state
from one call to the next as if the positions had come in one call."""

import pytest

LENGTHS = [1, 2, 7, 8, 13, 33]
SEEDS = [0, 1, 2]


def inputs(torch, seed, T, dtype=None, decay=1.0):
    """q, k, v (B, H, T, D) as the mixers make them (q and k L2-normalised), g (B, H, T)
    log-decays of about -decay per position, beta (B, H, T) in (0, 1); float64 unless dtype."""
    g = torch.Generator().manual_seed(seed)
    B, H, D = 2, 3, 5

    def randn(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float64)

    q = torch.nn.functional.normalize(randn(B, H, T, D), dim=-1) / D ** 0.5
    k = torch.nn.functional.normalize(randn(B, H, T, D), dim=-1)
    v = randn(B, H, T, D)
    log_decay = -decay * torch.rand(B, H, T, generator=g, dtype=torch.float64) * 2
    beta = torch.rand(B, H, T, generator=g, dtype=torch.float64)
    tensors = (q, k, v, log_decay, beta)
    return tuple(t.to(dtype) for t in tensors) if dtype else tensors


def spec(kind, q, k, v, g, beta):
    """reference.recurrence on the chunked functions' layout: (B, H, T, D) -> (B, H, T, D)."""
    from onset.reference import recurrence

    swap = [t.transpose(1, 2) for t in (q, k, v, g)]
    return recurrence(*swap, beta.transpose(1, 2) if kind == "D" else None).transpose(1, 2)


def chunked_form(kind, q, k, v, g, beta, chunk, state=None):
    from onset import chunked

    if kind == "L":
        return chunked.linear_attention(q, k, v, g, chunk, state)
    return chunked.delta_rule(q, k, v, g, beta, chunk, state)


@pytest.mark.parametrize("kind", ["L", "D"])
@pytest.mark.parametrize("T", LENGTHS)
@pytest.mark.parametrize("seed", SEEDS)
def test_chunked_equals_the_recurrence(kind, T, seed, torch):
    q, k, v, g, beta = inputs(torch, seed, T)
    want = spec(kind, q, k, v, g, beta)
    for chunk in (4, 64):
        got, state = chunked_form(kind, q, k, v, g, beta, chunk)
        assert got.dtype == torch.float64 and got.shape == want.shape
        assert state.shape == (2, 3, 5, 5)
        assert (got - want).abs().max().item() < 1e-12, chunk


@pytest.mark.parametrize("kind", ["L", "D"])
@pytest.mark.parametrize("decay", [1e-3, 1.0, 30.0])
def test_weak_and_strong_decays(kind, decay, torch):
    """Nearly no decay (the state sums everything) and a decay that empties the state within a
    position (exp(-60) per position underflows a chunk's products of decays)."""
    q, k, v, g, beta = inputs(torch, 3, 21, decay=decay)
    want = spec(kind, q, k, v, g, beta)
    got, _ = chunked_form(kind, q, k, v, g, beta, 8)
    assert torch.isfinite(got).all()
    assert (got - want).abs().max().item() < 1e-10 * max(1.0, want.abs().max().item())


@pytest.mark.parametrize("kind", ["L", "D"])
@pytest.mark.parametrize("seed", SEEDS)
def test_the_state_carries_across_calls(kind, seed, torch):
    """The sequence in pieces (one position, a part of a chunk, several chunks), each call
    starting from the state the last returned, gives the outputs of the whole."""
    T = 30
    q, k, v, g, beta = inputs(torch, seed, T)
    want = spec(kind, q, k, v, g, beta)
    whole, whole_state = chunked_form(kind, q, k, v, g, beta, 4)
    state, got = None, []
    for begin, end in [(0, 1), (1, 3), (3, 12), (12, 13), (13, 14), (14, 30)]:
        part = [t[:, :, begin:end] for t in (q, k, v, g, beta)]
        out, state = chunked_form(kind, *part, 4, state)
        got.append(out)
    assert (torch.cat(got, 2) - want).abs().max().item() < 1e-12
    assert (state - whole_state).abs().max().item() < 1e-12


@pytest.mark.parametrize("kind", ["L", "D"])
def test_float32_and_bfloat16_inputs_sum_in_float32(kind, torch):
    q, k, v, g, beta = inputs(torch, 4, 19)
    want = spec(kind, q, k, v, g, beta)
    for dtype, tolerance in ((torch.float32, 1e-5), (torch.bfloat16, 0.1)):
        low = [t.to(dtype) for t in (q, k, v, g, beta)]
        got, state = chunked_form(kind, *low, 8)
        assert got.dtype == torch.float32 and state.dtype == torch.float32
        assert (got.double() - want).abs().max().item() < tolerance, dtype
