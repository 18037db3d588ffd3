"""onset.cache: a sequence fed to fast.forward in pieces through an OnsetCache gives the logits
of the whole sequence at once (positions, RoPE and log-n scaling going on from the cache's
length; attention to the kept keys; the L and D states and the convolutions' tails carried),
for every kind of random_models.KINDS on random weights; what each layer keeps; and the batch
operations transformers' generate() uses on it."""

import pytest

import random_models

# One position, part of a chunk, one, one, several chunks and windows, ...: 29 positions.
PIECES = [1, 3, 1, 1, 13, 2, 8]


def model(torch, kind, seed=0, dtype=None):
    cfg = random_models.config(kind)
    return cfg, random_models.params(torch, cfg, seed, dtype or torch.float64)


def in_pieces(torch, params, cfg, tokens, pieces, cache):
    """fast.forward on consecutive pieces of `tokens` (B, T) through `cache`: (B, T, V)."""
    from onset import fast

    out, begin = [], 0
    with torch.no_grad():
        for n in pieces:
            out.append(fast.forward(params, cfg, tokens[:, begin:begin + n], cache))
            begin += n
    return torch.cat(out, 1)


@pytest.mark.parametrize("kind", list(random_models.KINDS))
@pytest.mark.parametrize("seed", [0, 1])
def test_pieces_through_the_cache_equal_the_whole(kind, seed, torch, transformers):
    from onset import reference
    from onset.cache import OnsetCache

    cfg, params = model(torch, kind, seed)
    tokens = random_models.tokens(torch, 2, sum(PIECES), seed)
    cache = OnsetCache(cfg)
    got = in_pieces(torch, params, cfg, tokens, PIECES, cache)
    with torch.no_grad():
        want = reference.forward(params, cfg, tokens)
    assert cache.get_seq_length() == sum(PIECES)
    assert (got - want).abs().max().item() < 1e-10 * max(1.0, want.abs().max().item())


def test_one_position_at_a_time_in_float32(torch, transformers):
    from onset import fast
    from onset.cache import OnsetCache

    cfg, params = model(torch, "SLDF-conv-everywhere", 2, torch.float32)
    tokens = random_models.tokens(torch, 1, 21, 2)
    cache = OnsetCache(cfg)
    got = in_pieces(torch, params, cfg, tokens, [1] * 21, cache)
    with torch.no_grad():
        want = fast.forward(params, cfg, tokens)
    assert got.dtype == torch.float32
    assert (got - want).abs().max().item() < 1e-4


def test_positions_go_on_from_the_cache(torch, transformers):
    """A token decoded at position p from a cache gets position p's logits, not position 0's:
    RoPE rotates by the absolute position (and log-n scales by it)."""
    from onset import fast
    from onset.cache import OnsetCache

    for kind in ("F", "F-rope-S-nope-logn"):
        cfg, params = model(torch, kind)
        tokens = random_models.tokens(torch, 1, 12, 3)
        with torch.no_grad():
            whole = fast.forward(params, cfg, tokens)
            cache = OnsetCache(cfg)
            fast.forward(params, cfg, tokens[:, :11], cache)
            assert cache.get_seq_length() == 11
            continued = fast.forward(params, cfg, tokens[:, 11:], cache)
            fresh = fast.forward(params, cfg, tokens[:, 11:])     # the same token at position 0
        assert (continued[0, 0] - whole[0, 11]).abs().max().item() < 1e-10
        assert (fresh[0, 0] - whole[0, 11]).abs().max().item() > 1e-3, kind


def test_what_each_layer_keeps(torch, transformers):
    """F keeps every position's keys and values, S the last window - 1, L and D their state;
    a layer with the short convolution its last K - 1 inputs."""
    from onset.cache import AttentionLayerCache, OnsetCache, RecurrentLayerCache

    cfg, params = model(torch, "SLDF-conv-everywhere")    # window 5, kernel 3, d_model 16
    cache = OnsetCache(cfg)
    s, l, d, f = cache.layers
    assert [type(x) for x in cache.layers] == [AttentionLayerCache, RecurrentLayerCache,
                                               RecurrentLayerCache, AttentionLayerCache]
    assert s.is_sliding and not f.is_sliding
    for seen, pieces in ((3, [3]), (20, [3, 1, 16])):
        cache = OnsetCache(cfg)
        s, l, d, f = cache.layers
        in_pieces(torch, params, cfg, random_models.tokens(torch, 2, seen, 0), pieces, cache)
        assert s.keys.shape == s.values.shape == (2, 4, min(seen, 4), 4)    # (B, G, kept, D)
        assert f.keys.shape == f.values.shape == (2, 4, seen, 4)
        assert l.state.shape == d.state.shape == (2, 4, 4, 4)              # (B, H, D, D)
        assert s.conv.shape == f.conv.shape == (2, 2, 48)                  # (B, K-1, (H+2G) D)
        assert l.conv.shape == d.conv.shape == (2, 2, 48)                  # (B, K-1, 3C)


def test_a_window_of_one_keeps_no_keys(torch, transformers):
    from onset.cache import OnsetCache

    cfg, params = model(torch, "S-window-1")
    cache = OnsetCache(cfg)
    in_pieces(torch, params, cfg, random_models.tokens(torch, 1, 6, 0), [4, 1, 1], cache)
    assert cache.layers[0].keys.shape[2] == 0


def test_batch_operations(torch, transformers):
    """reorder_cache (beam search), batch_repeat_interleave (several sequences per prompt) and
    batch_select_indices move every layer's tensors along the batch: continuing afterwards
    equals running the rearranged sequences from the start."""
    from onset import fast
    from onset.cache import OnsetCache

    cfg, params = model(torch, "SLDF-conv-everywhere")
    tokens = random_models.tokens(torch, 2, 10, 4)
    cases = [(lambda c: c.reorder_cache(torch.tensor([1, 0])), [1, 0]),
             (lambda c: c.batch_repeat_interleave(2), [0, 0, 1, 1]),
             (lambda c: c.batch_select_indices(torch.tensor([1])), [1])]
    for operation, rows in cases:
        cache = OnsetCache(cfg)
        with torch.no_grad():
            fast.forward(params, cfg, tokens[:, :7], cache)
            operation(cache)
            got = fast.forward(params, cfg, tokens[rows, 7:], cache)
            want = fast.forward(params, cfg, tokens[rows])[:, 7:]
        assert (got - want).abs().max().item() < 1e-10


def test_reset_starts_over(torch, transformers):
    from onset import fast
    from onset.cache import OnsetCache

    cfg, params = model(torch, "LD-conv")
    tokens = random_models.tokens(torch, 1, 9, 5)
    cache = OnsetCache(cfg)
    with torch.no_grad():
        first = fast.forward(params, cfg, tokens, cache)
        cache.reset()
        assert cache.get_seq_length() == 0
        assert all(layer.state is None and layer.conv is None for layer in cache.layers[:2])
        again = fast.forward(params, cfg, tokens, cache)
    assert torch.equal(first, again)


def test_a_cache_transformers_made_is_refused(torch, transformers):
    """The model decodes from its own cache only: a DynamicCache has no room for the L and D
    states, so passing one is an error that says what to pass instead."""
    from onset.configuration_onset import OnsetConfig
    from onset.modeling_onset import OnsetForCausalLM

    cfg = random_models.config("D")
    net = OnsetForCausalLM(OnsetConfig(onset=cfg))
    with pytest.raises(ValueError, match="own cache"):
        net(input_ids=torch.tensor([[32, 1, 2]]), cache=transformers.DynamicCache())
