"""What onset's model keeps of the tokens it has seen, so that generate() runs one position per
new token: a transformers Cache that fast.forward reads and updates, one entry per layer.

    F layer   the keys and values (B, G, P, D) of every position seen, as attention reads them:
              after the short convolution, QK-norm and RoPE
    S layer   the same, of the last window - 1 positions only: the next query sees no further
    L, D      the state S (B, H, D, D) after the last position, in float32 (float64 for a
              float64 model), as the chunked mixers carry it from chunk to chunk
    and every layer with the short convolution: its last K - 1 inputs (B, K-1, N)

and the number of positions seen: the next token's position, from which RoPE and log-n scaling
go on. Every tensor has the batch first, so beam search (reorder_cache) and several sequences
per prompt (batch_repeat_interleave) work on it as on transformers' own caches. It cannot be
cropped (assisted decoding needs that): the L and D states keep no history.

Needs torch and transformers; the Hugging Face directories of onset.hf carry a copy of it.
Dimension letters as in fast.py: B batch, P positions kept, G key/value heads, H heads,
D head dim, K convolution taps, N channels of the convolution.
"""

import torch
from transformers import Cache


class LayerCache:
    """One layer's tensors (the attribute names in FIELDS, None until the first tokens), all
    with the batch first."""

    FIELDS = ()
    is_compileable = False  # its shapes grow: not for torch.compile's static caches
    is_croppable = False
    is_sliding = False
    supports_early_init = False

    def __init__(self):
        self.reset()

    def reset(self):
        for name in self.FIELDS:
            setattr(self, name, None)

    def _map(self, function):
        for name in self.FIELDS:
            value = getattr(self, name)
            if value is not None:
                setattr(self, name, function(value))

    def reorder_cache(self, beam_idx):
        self._map(lambda t: t.index_select(0, beam_idx.to(t.device)))

    def batch_repeat_interleave(self, repeats):
        self._map(lambda t: t.repeat_interleave(repeats, dim=0))

    def batch_select_indices(self, indices):
        self._map(lambda t: t[indices])


class AttentionLayerCache(LayerCache):
    """An F layer (window 0) or S layer: keys, values (B, G, P, D) and the convolution's tail
    `conv` (B, K-1, N)."""

    FIELDS = ("keys", "values", "conv")

    def __init__(self, window):
        self.window = window
        self.is_sliding = window > 0
        super().__init__()

    def update(self, keys, values):
        """Adds the keys and values (B, G, T, D) of T new positions and returns those the new
        queries attend to: the kept ones, then the new ones (B, G, P+T, D). An S layer then
        keeps only the last window - 1."""
        if self.keys is not None:
            keys = torch.cat([self.keys, keys], 2)                   # (B, G, P+T, D)
            values = torch.cat([self.values, values], 2)             # (B, G, P+T, D)
        kept = keys.shape[2]
        if self.window > 0:
            kept = min(kept, self.window - 1)
        self.keys = keys[:, :, keys.shape[2] - kept:]                # (B, G, kept, D)
        self.values = values[:, :, values.shape[2] - kept:]          # (B, G, kept, D)
        return keys, values


class RecurrentLayerCache(LayerCache):
    """An L or D layer: the state (B, H, D, D) and the convolution's tail `conv` (B, K-1, 3C)."""

    FIELDS = ("state", "conv")


class OnsetCache(Cache):
    """The cache of one onset model, from its canonical cell config (OnsetConfig.onset): empty,
    at position 0. The model makes one when called with use_cache and no cache, and returns it
    (outputs.cache); pass that back with the next tokens only."""

    def __init__(self, onset_config):
        model = onset_config["model"]
        layers = [AttentionLayerCache(model["window"] if kind == "S" else 0) if kind in "FS"
                  else RecurrentLayerCache() for kind in model["pattern"]]
        super().__init__(layers=layers)
        self.seen = 0

    def get_seq_length(self, layer_idx=0):
        """The number of positions seen (every layer has seen them all)."""
        return self.seen

    def advance(self, positions):
        """Counts `positions` more as seen: fast.forward calls it after updating every layer."""
        self.seen += positions

    def reset(self):
        super().reset()
        self.seen = 0
