"""onset's language model, computed fast: reference.py's math with every position at once, and
continuing from a cache.

reference.py is the spec and stays written for reading: attention scores in full, the short
convolution tap by tap, the L and D mixers token by token. This file computes the same function
the way one runs it: attention through F.scaled_dot_product_attention, the convolution over the
whole sequence at once, the L and D mixers in their chunked parallel form (chunked.py, chunks
of model.chunk_size as the trainer's). tests/python/test_fast.py holds it to the reference.

With a cache (cache.py's OnsetCache, or any object with its get_seq_length, layers and advance)
the tokens continue the sequence the cache has seen: positions (RoPE, log-n scaling) go on from
its length, F and S layers attend to its keys and values as well, L and D layers start from its
state, and every short convolution reads the inputs before the first token from its tail; the
cache is then updated in place. Without one the tokens start at position 0.

    logits = forward(params, config, tokens)                       # (B, T, V)
    logits = forward(params, config, tokens, cache, last=1)        # (B, 1, V), cache updated

Needs torch and the files beside it (reference.py, chunked.py); the Hugging Face directories of
onset.hf carry a copy of each. Dimension letters: B batch, T positions, P positions in the cache,
C d_model, H heads, G key/value heads, D head dim, K convolution taps, V vocab.
"""

import math

import torch
import torch.nn.functional as F

from .chunked import delta_rule, linear_attention
from .reference import (GLA_GATE_TEMPERATURE, NORM_EPS, l2_normalize, layer_uses_rope,
                        logn_applies, swiglu)

DEFAULT_CHUNK = 64  # model.chunk_size when a config has none (model/config/cell_config.h)


def rms_norm(x, weight):
    """reference.rms_norm as one operation (weight None: no gain). x (..., N), weight (N) ->
    (..., N)."""
    return torch.rms_norm(x, x.shape[-1:], weight, NORM_EPS)


def rope_tables(T, D, base, start, dtype, device):
    """cos, sin (1, T, 1, D/2) of reference.rope's rotation at positions start, start + 1, ...:
    float64 angles, as the trainer computes its tables, then the model's dtype."""
    f64 = {"dtype": torch.float64, "device": device}
    inv_freq = base ** (-torch.arange(0, D, 2, **f64) / D)                          # (D/2)
    angles = torch.outer(torch.arange(start, start + T, **f64), inv_freq)           # (T, D/2)
    cos = angles.cos().to(dtype)[None, :, None, :]                                  # (1, T, 1, D/2)
    sin = angles.sin().to(dtype)[None, :, None, :]                                  # (1, T, 1, D/2)
    return cos, sin


def rope(x, rotation):
    """reference.rope by the tables of rope_tables: x (B, T, N, D) -> (B, T, N, D)."""
    cos, sin = rotation                                              # 2 x (1, T, 1, D/2)
    D = x.shape[-1]
    x1, x2 = x[..., :D // 2], x[..., D // 2:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1)  # (B, T, N, D)


def short_conv(x, weight, tail=None):
    """reference.short_conv after the K - 1 inputs `tail` (B, K-1, N) (None: zeros, the start
    of a sequence). x (B, T, N), weight (N, K) -> (output (B, T, N), the new tail (B, K-1, N))."""
    B, T, N = x.shape
    K = weight.shape[1]
    if tail is None:
        tail = x.new_zeros(B, K - 1, N)                              # (B, K-1, N)
    seen = torch.cat([tail, x], 1)                                   # (B, K-1+T, N)
    # Output t reads seen[t + j] at tap j: one product with the windows of `seen` (a view),
    # summed over the taps. For a decoding step's one position a tenth of conv1d's cost; over
    # thousands of positions it costs milliseconds, as conv1d does.
    windows = seen.unfold(1, K, 1)                                   # (B, T, N, K)
    y = (windows * weight).sum(-1)                                   # (B, T, N)
    return F.silu(y), seen[:, T:]                                    # (B, T, N), (B, K-1, N)


def convolve(p, x, layer):
    """The mixer's short convolution when it has one (p["conv.weight"]), continuing from the
    tail in the layer's cache and leaving the new tail there. x (B, T, N) -> (B, T, N)."""
    if "conv.weight" not in p:
        return x
    y, tail = short_conv(x, p["conv.weight"], layer.conv if layer is not None else None)
    if layer is not None:
        layer.conv = tail                                            # (B, K-1, N)
    return y


def attention_mask(T, P, window, device=None):
    """Which of the P cached and T new keys each new query sees, the keys numbered from the
    oldest cached one and query i being key P + i: key j where j <= P + i and, for S, where
    P + i - j < window. (T, P+T) bool, or None where no mask is needed: one new query (it sees
    every key the cache keeps, an S layer's keeping only its window) or plain causal attention
    (nothing cached, no window shorter than T)."""
    if T == 1 or (P == 0 and (window == 0 or window >= T)):
        return None
    i = torch.arange(P, P + T, device=device)[:, None]               # (T, 1)
    j = torch.arange(P + T, device=device)[None, :]                  # (1, P+T)
    allowed = j <= i
    if window > 0:
        allowed = allowed & (i - j < window)
    return allowed                                                   # (T, P+T)


def attention(p, x, model, window, rotation, start, layer):
    """F (window 0) or S layer, as reference.attention, its queries at positions start, ...
    `rotation`: the RoPE tables of those positions (rope_tables) for a RoPE layer, else None.
    `layer`: the layer's cache (its conv tail, keys and values) or None."""
    B, T, C = x.shape
    H = model["heads"]
    G = model["kv_heads"] or H
    D = C // H
    qkv = x @ p["qkv.weight"].T                                      # (B, T, (H+2G) D)
    qkv = convolve(p, qkv, layer)                                   # (B, T, (H+2G) D)
    qkv = qkv.view(B, T, H + 2 * G, D)                               # (B, T, H+2G, D)
    qk, v = qkv[:, :, :H + G], qkv[:, :, H + G:]                     # (B, T, H+G|G, D)
    if "qk_norm_weight" in p:
        w = p["qk_norm_weight"]                                      # (2, 1, D)
        gains = torch.cat([w[0].expand(H, D), w[1].expand(G, D)])    # (H+G, D)
        qk = rms_norm(qk, None) * gains                              # (B, T, H+G, D)
    if rotation is not None:
        qk = rope(qk, rotation)                                      # (B, T, H+G, D)
    q, k = qk[:, :, :H], qk[:, :, H:]                                # (B, T, H|G, D)
    if rotation is None and logn_applies(model, window):
        p1 = torch.arange(start + 1, start + T + 1, dtype=torch.float32, device=x.device)  # (T)
        scale = (p1.log() / math.log(model["seq_len"])).clamp_min(1.0)                   # (T)
        q = q * scale.to(q.dtype)[None, :, None, None]               # (B, T, H, D)
    q, k, v = (t.transpose(1, 2) for t in (q, k, v))                 # (B, H|G|G, T, D)
    if layer is not None:
        k, v = layer.update(k, v)                                    # (B, G, P+T, D)
    mask = attention_mask(T, k.shape[2] - T, window, x.device)       # (T, P+T) or None
    if G < H:
        k = k.repeat_interleave(H // G, dim=1)                       # (B, H, P+T, D)
        v = v.repeat_interleave(H // G, dim=1)                       # (B, H, P+T, D)
    y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                       is_causal=mask is None and T > 1)  # (B, H, T, D)
    return y.transpose(1, 2).reshape(B, T, C) @ p["out.weight"].T    # (B, T, C)


def recurrent_mixer(p, x, model, kind, layer):
    """L or D layer, as reference.recurrent_mixer, in the chunked form. `layer`: the layer's
    cache (its conv tail and state) or None."""
    B, T, C = x.shape
    H = model["heads"]
    D = C // H
    proj = x @ p["in_proj.weight"].T                                 # (B, T, 4C + H|2H)
    qkv = proj[..., :3 * C]                                          # (B, T, 3C)
    qkv = convolve(p, qkv, layer)                                   # (B, T, 3C)
    qkv = qkv.view(B, T, 3, H, D).transpose(1, 3)                    # (B, H, 3, T, D)
    qk = l2_normalize(qkv[:, :, :2])                                 # (B, H, 2, T, D)
    q, k, v = qk[:, :, 0] / math.sqrt(D), qk[:, :, 1], qkv[:, :, 2]  # (B, H, T, D)
    gate = proj[..., 3 * C:4 * C]                                    # (B, T, C)
    scalars = proj[..., 4 * C:].transpose(1, 2)                      # (B, H|2H, T)
    chunk = model.get("chunk_size") or DEFAULT_CHUNK
    state = layer.state if layer is not None else None          # (B, H, D, D) or None
    if kind == "L":
        g = F.logsigmoid(scalars) / GLA_GATE_TEMPERATURE             # (B, H, T)
        y, state = linear_attention(q, k, v, g, chunk, state)
    else:
        beta = torch.sigmoid(scalars[:, :H])                         # (B, H, T)
        dt = F.softplus(scalars[:, H:] + p["dt_bias"][:, None])      # (B, H, T)
        g = -torch.exp(p["a_log"])[:, None] * dt                     # (B, H, T)
        y, state = delta_rule(q, k, v, g, beta, chunk, state)
    if layer is not None:
        layer.state = state
    y = rms_norm(y.transpose(1, 2), p["head_norm_weight"].to(y.dtype))  # (B, T, H, D)
    y = y.reshape(B, T, C).to(x.dtype)                               # (B, T, C)
    return (y * F.silu(gate)) @ p["out.weight"].T                    # (B, T, C)


def forward(params, config, tokens, cache=None, last=0):
    """tokens (B, T) int64 -> logits (B, T, V) in the parameters' dtype, of the last `last`
    positions only when last > 0 (B, last, V). Positions start at the cache's length (0
    without one); the cache is updated in place."""
    model = config["model"]
    start = cache.get_seq_length() if cache is not None else 0
    x = params["wte.weight"][tokens]                                 # (B, T, C)
    B, T, C = x.shape
    uses_rope = [layer_uses_rope(model, i) for i in range(len(model["pattern"]))]
    rotation = None                                                  # the RoPE layers' tables
    if any(uses_rope):
        rotation = rope_tables(T, C // model["heads"], model["rope_base"], start, x.dtype,
                               x.device)                             # 2 x (1, T, 1, D/2)
    for i, kind in enumerate(model["pattern"]):
        prefix = f"h{i}."
        p = {k[len(prefix):]: v for k, v in params.items() if k.startswith(prefix)}
        mixer = {k[len("mixer."):]: v for k, v in p.items() if k.startswith("mixer.")}
        layer = cache.layers[i] if cache is not None else None
        h = rms_norm(x, p["norm1.weight"])                           # (B, T, C)
        if kind in "FS":
            window = model["window"] if kind == "S" else 0
            x = x + attention(mixer, h, model, window, rotation if uses_rope[i] else None,
                              start, layer)
        else:
            x = x + recurrent_mixer(mixer, h, model, kind, layer)
        mlp = {k[len("mlp."):]: v for k, v in p.items() if k.startswith("mlp.")}
        x = x + swiglu(mlp, rms_norm(x, p["norm2.weight"]))         # (B, T, C)
    if cache is not None:
        cache.advance(T)
    if last > 0:
        x = x[:, -last:]                                             # (B, last, C)
    x = rms_norm(x, params["norm_f.weight"])                         # (B, T|last, C)
    head = params.get("lm_head.weight", params["wte.weight"])        # tied: the embedding
    return x @ head.T                                                # (B, T|last, V)
