#!/usr/bin/env python3
"""A plain-PyTorch reference of onset's language model, built from an export.

`onset-train export` writes DIR/config.json (the canonical cell config) and DIR/model.safetensors
(every parameter under its module name; docs/export.md). This file rebuilds the model's forward
pass from those two files alone, written for reading rather than speed: explicit attention
scores and masks, the short convolution tap by tap, and the L and D mixers in their
token-by-token recurrent form. It is the spec: onset's modules (onset.load_model, the Hugging
Face model) compute the same function faster (fast.py), and the tests hold them to this file. It
needs torch and nothing else (the safetensors reader is below), so that this one file can
travel: the Hugging Face directories that onset.hf writes carry a copy of it.

    python -m onset.reference DIR --tokens 256,1,2,3      # prints logits as JSON

    from onset.reference import load_export, forward
    params, config = load_export("DIR")
    logits = forward(params, config, torch.tensor([[256, 1, 2, 3]]))  # (B, T, V)

Dimension letters: B batch, T positions, C d_model, H heads, G key/value heads, D head dim,
F MLP hidden, V vocab.
"""

import argparse
import json
import math
import os
import struct
import sys

import torch
import torch.nn.functional as F

NORM_EPS = 1e-6  # every RMSNorm and the L2 normalisation of the L and D mixers
GLA_GATE_TEMPERATURE = 16.0  # the L mixer's gate: logsigmoid(x) / 16

_DTYPES = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
    "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8,
    "U8": torch.uint8, "BOOL": torch.bool,
}


def read_safetensors(path):
    """Returns ({name: tensor}, metadata) from a safetensors file."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    metadata = header.pop("__metadata__", {})
    tensors = {}
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        dtype = _DTYPES[entry["dtype"]]
        raw = bytearray(data[8 + n + begin:8 + n + end])
        flat = torch.frombuffer(raw, dtype=dtype) if raw else torch.empty(0, dtype=dtype)
        tensors[name] = flat.reshape(entry["shape"]).clone()
    return tensors, metadata


def load_export(directory, dtype=torch.float32):
    """Reads DIR/model.safetensors and DIR/config.json; floating tensors converted to dtype."""
    tensors, _ = read_safetensors(os.path.join(directory, "model.safetensors"))
    with open(os.path.join(directory, "config.json")) as f:
        config = json.load(f)
    params = {k: (v.to(dtype) if v.is_floating_point() else v) for k, v in tensors.items()}
    return params, config


def rms_norm(x, weight=None):
    x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + NORM_EPS)
    return x * weight if weight is not None else x


def l2_normalize(x):
    return x * torch.rsqrt(x.pow(2).sum(-1, keepdim=True) + NORM_EPS)


def layer_uses_rope(model, i):
    """pos: rope, nope, nope-full, or the per-type form "F:rope,S:nope" (a type left out: RoPE)."""
    kind, pos = model["pattern"][i], model["pos"]
    if kind not in "FS" or pos == "nope":
        return False
    if pos in ("rope", "nope-full"):
        return not (pos == "nope-full" and kind == "F")
    return dict(e.split(":") for e in pos.split(",")).get(kind, "rope") == "rope"


def rope(x, base):
    """Half-split RoPE on x (B, T, N, D): features p and p + D/2 form pair p, which rotates by
    position * base^(-2p / D). Angles in float64, as the trainer computes its tables."""
    T, D = x.shape[1], x.shape[-1]
    inv_freq = base ** (-torch.arange(0, D, 2, dtype=torch.float64) / D)           # (D/2)
    angles = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)           # (T, D/2)
    cos = angles.cos().to(x.dtype)[None, :, None, :]                               # (1, T, 1, D/2)
    sin = angles.sin().to(x.dtype)[None, :, None, :]                               # (1, T, 1, D/2)
    x1, x2 = x[..., :D // 2], x[..., D // 2:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1)               # (B, T, N, D)


def logn_applies(model, window):
    """model.logn_scaling: "full" (or true) scales NoPE F layers, "all" NoPE F and S layers."""
    mode = model.get("logn_scaling", "off")
    if mode is True:
        mode = "full"
    return mode == "all" or (mode == "full" and window == 0)


def short_conv(x, weight):
    """The short causal depthwise convolution, then SiLU: channel c of position t is
    silu(sum_j weight[c, j] * x[t - K + 1 + j, c]), positions before 0 being zeros.
    x (B, T, N), weight (N, K) -> (B, T, N)."""
    T, K = x.shape[1], weight.shape[1]
    out = torch.zeros_like(x)
    for j in range(K):
        lag = K - 1 - j                                              # tap j reads t - lag
        if lag < T:
            out[:, lag:] += x[:, :T - lag] * weight[:, j]
    return F.silu(out)                                               # (B, T, N)


def attention(p, x, model, window, use_rope):
    """F (window 0) or S layer: causal softmax attention, query i sees keys j with j <= i and,
    for S, i - j < window. GQA: query head h reads key/value head h // (H / G). With the
    short convolution (model.short_conv), q, k, v are convolved first."""
    B, T, C = x.shape
    H = model["heads"]
    G = model["kv_heads"] or H
    D = C // H
    qkv = x @ p["qkv.weight"].T                                      # (B, T, (H+2G) D)
    if "conv.weight" in p:
        qkv = short_conv(qkv, p["conv.weight"])
    qkv = qkv.view(B, T, H + 2 * G, D)                               # (B, T, H+2G, D)
    q, k, v = qkv[:, :, :H], qkv[:, :, H:H + G], qkv[:, :, H + G:]  # (B, T, H|G|G, D)
    if "qk_norm_weight" in p:
        q = rms_norm(q, p["qk_norm_weight"][0])                      # (B, T, H, D)
        k = rms_norm(k, p["qk_norm_weight"][1])                      # (B, T, G, D)
    if use_rope:
        q, k = rope(q, model["rope_base"]), rope(k, model["rope_base"])
    elif logn_applies(model, window):
        # Beyond the training length, NoPE queries sharpen by log(p + 1) / log(seq_len).
        p1 = torch.arange(1, T + 1, dtype=torch.float32)
        scale = (p1.log() / math.log(model["seq_len"])).clamp_min(1.0)
        q = q * scale.to(q.dtype)[None, :, None, None]              # (B, T, H, D)
    k = k.repeat_interleave(H // G, dim=2)                           # (B, T, H, D)
    v = v.repeat_interleave(H // G, dim=2)                           # (B, T, H, D)
    scores = torch.einsum("bihd,bjhd->bhij", q, k) / math.sqrt(D)    # (B, H, T, T)
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    allowed = j <= i
    if window > 0:
        allowed = allowed & (i - j < window)                         # (T, T)
    scores = scores.masked_fill(~allowed, float("-inf"))
    y = torch.einsum("bhij,bjhd->bihd", scores.softmax(-1), v)      # (B, T, H, D)
    return y.reshape(B, T, C) @ p["out.weight"].T                    # (B, T, C)


def recurrence(q, k, v, g, beta=None):
    """L (beta None): S_t = a_t S_{t-1} + k_t^T v_t; D (delta rule): S_t = a_t S_{t-1} + k_t^T u_t
    with u_t = beta_t (v_t - a_t k_t S_{t-1}). Both o_t = q_t S_t, S (D, D) per head starting at
    zeros, a_t = exp(g_t). q, k, v (B, T, H, D), g, beta (B, T, H) -> o (B, T, H, D)."""
    B, T, H, D = q.shape
    S = torch.zeros(B, H, D, D, dtype=q.dtype)                       # (B, H, D, D)
    outputs = []
    for t in range(T):
        a = g[:, t].exp()[..., None, None]                           # (B, H, 1, 1)
        kt, vt = k[:, t, :, :, None], v[:, t, :, None, :]            # (B, H, D, 1), (B, H, 1, D)
        if beta is None:
            S = a * S + kt * vt                                      # (B, H, D, D)
        else:
            S = a * S
            predicted = (k[:, t, :, None, :] @ S)                    # (B, H, 1, D)
            u = beta[:, t, :, None, None] * (vt - predicted)         # (B, H, 1, D)
            S = S + kt * u                                           # (B, H, D, D)
        outputs.append((q[:, t, :, None, :] @ S)[:, :, 0])           # (B, H, D)
    return torch.stack(outputs, 1)                                   # (B, T, H, D)


def recurrent_mixer(p, x, model, kind):
    """L or D layer: q, k, v (with the short convolution, on by default, its output), q and k
    L2-normalised, through the recurrence (above) with the layer's decay and, for D, beta.
    Then per-head RMSNorm, times silu(gate), output projection."""
    B, T, C = x.shape
    H = model["heads"]
    D = C // H
    proj = x @ p["in_proj.weight"].T                                 # (B, T, 4C + H|2H)
    qkv = proj[..., :3 * C]                                          # (B, T, 3C)
    if "conv.weight" in p:
        qkv = short_conv(qkv, p["conv.weight"])
    q, k, v = (qkv[..., n * C:(n + 1) * C].reshape(B, T, H, D) for n in range(3))
    gate = proj[..., 3 * C:4 * C]                                    # (B, T, C)
    q = l2_normalize(q) / math.sqrt(D)                               # (B, T, H, D)
    k = l2_normalize(k)                                              # (B, T, H, D)
    scalars = proj[..., 4 * C:]                                      # (B, T, H|2H)
    if kind == "L":
        g = F.logsigmoid(scalars) / GLA_GATE_TEMPERATURE             # (B, T, H)
        y = recurrence(q, k, v, g)                                   # (B, T, H, D)
    else:
        beta = torch.sigmoid(scalars[..., :H])                       # (B, T, H)
        dt = F.softplus(scalars[..., H:] + p["dt_bias"])             # (B, T, H)
        g = -torch.exp(p["a_log"]) * dt                              # (B, T, H)
        y = recurrence(q, k, v, g, beta)                             # (B, T, H, D)
    y = rms_norm(y, p["head_norm_weight"]).reshape(B, T, C)          # (B, T, C)
    return (y * F.silu(gate)) @ p["out.weight"].T                    # (B, T, C)


def swiglu(p, x):
    """gate_up.weight stacks the gate rows [0, F) over the up rows [F, 2F)."""
    gate, up = (x @ p["gate_up.weight"].T).chunk(2, -1)              # 2 x (B, T, F)
    return (F.silu(gate) * up) @ p["down.weight"].T                  # (B, T, C)


def forward(params, config, tokens):
    """tokens (B, T) int64 -> logits (B, T, V) in the parameters' dtype. Positions start at 0."""
    model = config["model"]
    x = params["wte.weight"][tokens]                                 # (B, T, C)
    for i, kind in enumerate(model["pattern"]):
        prefix = f"h{i}."
        p = {k[len(prefix):]: v for k, v in params.items() if k.startswith(prefix)}
        mixer = {k[len("mixer."):]: v for k, v in p.items() if k.startswith("mixer.")}
        h = rms_norm(x, p["norm1.weight"])                           # (B, T, C)
        if kind in "FS":
            window = model["window"] if kind == "S" else 0
            x = x + attention(mixer, h, model, window, layer_uses_rope(model, i))
        else:
            x = x + recurrent_mixer(mixer, h, model, kind)
        mlp = {k[len("mlp."):]: v for k, v in p.items() if k.startswith("mlp.")}
        x = x + swiglu(mlp, rms_norm(x, p["norm2.weight"]))         # (B, T, C)
    x = rms_norm(x, params["norm_f.weight"])                         # (B, T, C)
    head = params.get("lm_head.weight", params["wte.weight"])        # tied: the embedding
    return x @ head.T                                                # (B, T, V)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("export_dir")
    parser.add_argument("--tokens", required=True, help="comma-separated token ids")
    parser.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    params, config = load_export(args.export_dir, getattr(torch, args.dtype))
    tokens = torch.tensor([[int(t) for t in args.tokens.split(",")]])
    with torch.no_grad():
        logits = forward(params, config, tokens)[0]
    json.dump({"tokens": tokens[0].tolist(), "logits": logits.tolist()}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
