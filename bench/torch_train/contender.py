"""onset's language model in plain, efficient PyTorch: the "PyTorch eager / torch.compile"
contender of the training-throughput benchmark.

The math is python/onset/reference.py's (the readable reference: token-by-token recurrences,
explicit attention scores); this file computes the same logits the way onset's C++ trainer does
(model/nn/), so that the benchmark compares one algorithm in two runtimes:

  * F layers: F.scaled_dot_product_attention(is_causal=True) (attention.cc FullCausalAttention).
  * S layers: as the trainer's CPU default (attention_backend.cc, attention.cc CausalAttention):
    full causal SDPA when the window covers the sequence, the blocked sliding-window form (each
    window-sized query block attends its own and the previous key block, one SDPA call) when
    2 * window < T, else SDPA with the boolean causal band mask. `swa="band"` forces the band
    mask, `swa="blocked"` the blocked form (where the window is shorter than T).
  * GQA: keys and values expanded to the query heads (attention.cc RepeatKv), head h reading
    key/value head h // (H / G).
  * RoPE (rope.cc): half-split, float64 angles cast to float32, queries and keys rotated together.
  * Short convolution (short_conv.cc): depthwise F.conv1d, padding K - 1, the first T outputs,
    then SiLU. conv1d is a cross-correlation, so weight[c, j] multiplies x[t - (K - 1 - j)]: the
    reference's tap j.
  * L mixer (linear_attention.cc DecayedLinearAttentionChunked): chunkwise decayed linear
    attention; intra-chunk masked decayed scores, the state entering each chunk from one matmul
    with the (N, N) matrix of chunk-to-chunk decays (no loop at all).
  * D mixer (gated_delta_net.cc GatedDeltaNetChunked): chunkwise gated delta rule, the UT/WY
    transform as one unit-triangular solve per chunk, then a loop over the chunks (never over
    tokens) carrying the (D, D) state.
  * Chunk length: model.chunk_size of the config (the trainer's, default 64; min(chunk, T)).

The L and D kernels run in float32 with autocast off, as linear_mixers.cc does. Rotary tables and
attention masks are cached per (T, device) in eager mode and rebuilt inside the graph under
torch.compile (a handful of small ops).

Dimension letters: B batch, T positions, C d_model, H heads, G key/value heads, D head dim,
F MLP hidden, V vocab, N chunks, M chunk length, K conv taps, W window.

    model = ContenderModel(config)                   # config: the canonical cell config dict
    model.load_state_dict(safetensors_dict)          # onset's names (network.parameter_shapes)
    logits = model(tokens)                           # tokens (B, T) int64 -> (B, T, V)
"""

import math
import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

from onset.network import _short_conv_letters, add_parameters, mlp_hidden  # noqa: E402
from onset.reference import (GLA_GATE_TEMPERATURE, NORM_EPS, layer_uses_rope,  # noqa: E402
                             logn_applies)

DEFAULT_CHUNK = 64  # model/config/cell_config.h ModelConfig::chunk_size


def _compiling():
    return torch.compiler.is_compiling()


def short_conv(x, weight):
    """Causal depthwise convolution then SiLU. x (B, T, N), weight (N, K) -> (B, T, N)."""
    T, N, K = x.shape[1], x.shape[2], weight.shape[1]
    w = weight.to(x.dtype).unsqueeze(1)                                        # (N, 1, K)
    y = F.conv1d(x.transpose(1, 2), w, None, 1, K - 1, 1, N)                   # (B, N, T+K-1)
    return F.silu(y[:, :, :T].transpose(1, 2))                                 # (B, T, N)


def segment_decay(row, col, strict):
    """exp(row_i - col_j) where visible, 0 elsewhere: j <= i (strict=False) or j < i (strict).
    row, col (..., M) -> (..., M, M)."""
    M = row.shape[-1]
    exponent = row.unsqueeze(-1) - col.unsqueeze(-2)                           # (..., M, M)
    hidden = torch.ones(M, M, dtype=torch.bool, device=row.device).triu(0 if strict else 1)
    return exponent.masked_fill(hidden, float("-inf")).exp()                   # (..., M, M)


def _split_chunks(x, M):
    """(B, H, T, X) -> (B, H, N, M, X), zero-padded at the end."""
    B, H, T, X = x.shape
    pad = (-T) % M
    if pad:
        x = F.pad(x, (0, 0, 0, pad))                                           # (B, H, N*M, X)
    return x.reshape(B, H, -1, M, X)                                           # (B, H, N, M, X)


def _split_scalars(x, M):
    """(B, H, T) -> (B, H, N, M), zero-padded at the end."""
    B, H, T = x.shape
    pad = (-T) % M
    if pad:
        x = F.pad(x, (0, pad))                                                 # (B, H, N*M)
    return x.reshape(B, H, -1, M)                                              # (B, H, N, M)


def decayed_linear_attention_chunked(q, k, v, g, chunk):
    """The L mixer: S_t = exp(g_t) S_{t-1} + k_t^T v_t, o_t = q_t S_t, chunkwise.
    q, k, v (B, H, T, D), g (B, H, T) log-decays -> (B, H, T, D)."""
    B, H, T, D = q.shape
    M = min(chunk, T)
    qc, kc, vc = _split_chunks(q, M), _split_chunks(k, M), _split_chunks(v, M)  # (B, H, N, M, D)
    b = _split_scalars(g, M).cumsum(-1)                        # (B, H, N, M) log-decay in chunk
    b_last = b[..., M - 1:]                                    # (B, H, N, 1) whole-chunk decay
    N = b.shape[2]

    # Inside each chunk: masked, decayed attention.
    scores = (qc @ kc.transpose(-2, -1)) * segment_decay(b, b, False)           # (B, H, N, M, M)
    intra = scores @ vc                                                         # (B, H, N, M, D)

    # What each chunk adds to the state, decayed to the chunk's end.
    k_to_end = kc * (b_last - b).exp().unsqueeze(-1)                            # (B, H, N, M, D)
    added = k_to_end.transpose(-2, -1) @ vc                                     # (B, H, N, D, D)
    # State entering chunk n: sum over m < n of exp(L_{n-1} - L_m) added_m.
    l = b_last.squeeze(-1)                                                      # (B, H, N)
    L = l.cumsum(-1)                                                            # (B, H, N)
    carry = segment_decay(L - l, L, True)                                       # (B, H, N, N)
    entering = (carry @ added.reshape(B, H, N, D * D)).reshape(B, H, N, D, D)  # (B, H, N, D, D)
    inter = (qc * b.exp().unsqueeze(-1)) @ entering                             # (B, H, N, M, D)
    y = (intra + inter).reshape(B, H, N * M, D)                                 # (B, H, N*M, D)
    return y[:, :, :T]                                                          # (B, H, T, D)


def gated_delta_net_chunked(q, k, v, g, beta, chunk):
    """The D mixer: S_t = a_t S_{t-1} + k_t^T u_t, u_t = beta_t (v_t - a_t k_t S_{t-1}),
    o_t = q_t S_t, a_t = exp(g_t), chunkwise (WY form, one triangular solve per chunk).
    q, k, v (B, H, T, D), g, beta (B, H, T) -> (B, H, T, D)."""
    B, H, T, D = q.shape
    M = min(chunk, T)
    qc, kc, vc = _split_chunks(q, M), _split_chunks(k, M), _split_chunks(v, M)  # (B, H, N, M, D)
    bc = _split_scalars(beta, M).unsqueeze(-1)                                   # (B, H, N, M, 1)
    b = _split_scalars(g, M).cumsum(-1)                                          # (B, H, N, M)
    b_last = b[..., M - 1:]                                                      # (B, H, N, 1)
    decay = segment_decay(b, b, False)                                           # (B, H, N, M, M)
    N = b.shape[2]

    # UT transform: solve (I + A) [W_v | W_k] = [beta V | beta exp(b) K] in every chunk.
    kk = kc @ kc.transpose(-2, -1)                                              # (B, H, N, M, M)
    A = (kk * decay * bc).tril(-1)                                              # (B, H, N, M, M)
    eye = torch.eye(M, dtype=q.dtype, device=q.device)                         # (M, M)
    rhs = torch.cat([vc * bc, kc * (bc * b.exp().unsqueeze(-1))], -1)         # (B, H, N, M, 2D)
    W = torch.linalg.solve_triangular(A + eye, rhs, upper=False, left=True,
                                      unitriangular=True)                      # (B, H, N, M, 2D)
    w_v, w_k = W[..., :D], W[..., D:]                                          # (B, H, N, M, D)

    qk = (qc @ kc.transpose(-2, -1)) * decay                                    # (B, H, N, M, M)
    q_decayed = qc * b.exp().unsqueeze(-1)                                      # (B, H, N, M, D)
    k_to_end = (kc * (b_last - b).exp().unsqueeze(-1)).transpose(-2, -1)      # (B, H, N, D, M)
    chunk_decay = b_last.exp().unsqueeze(-1)                                    # (B, H, N, 1, 1)

    S = q.new_zeros(B, H, D, D)                       # (B, H, D, D) state entering chunk n
    out = []
    for n in range(N):
        u = w_v[:, :, n] - w_k[:, :, n] @ S                                     # (B, H, M, D)
        out.append(q_decayed[:, :, n] @ S + qk[:, :, n] @ u)                   # (B, H, M, D)
        if n + 1 < N:
            S = S * chunk_decay[:, :, n] + k_to_end[:, :, n] @ u               # (B, H, D, D)
    y = torch.cat(out, 2)                                                       # (B, H, N*M, D)
    return y[:, :, :T]                                                          # (B, H, T, D)


def rope_tables(T, D, base, device):
    """cos, sin (T, D/2) float32 of half-split RoPE: float64 angles, as the trainer."""
    inv_freq = base ** (-torch.arange(0, D, 2, dtype=torch.float64, device=device) / D)  # (D/2)
    angles = torch.outer(torch.arange(T, dtype=torch.float64, device=device), inv_freq)  # (T, D/2)
    return angles.cos().float(), angles.sin().float()                        # 2 x (T, D/2)


def apply_rope(x, cos, sin):
    """x (B, T, N, D), cos/sin (T, D/2) -> (B, T, N, D)."""
    half = x.shape[-1] // 2
    cos = cos.to(x.dtype).unsqueeze(1)                                         # (T, 1, D/2)
    sin = sin.to(x.dtype).unsqueeze(1)                                         # (T, 1, D/2)
    x1, x2 = x[..., :half], x[..., half:]                                      # (B, T, N, D/2)
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1)          # (B, T, N, D)


def band_mask(T, window, device):
    """(T, T) bool, True where query i sees key j: j <= i and i - j < window."""
    i = torch.arange(T, device=device).unsqueeze(1)                           # (T, 1)
    j = torch.arange(T, device=device).unsqueeze(0)                           # (1, T)
    return (j <= i) & (i - j < window)                                         # (T, T)


def blocked_mask(N, W, device):
    """(N, W, 2W) bool of the blocked sliding window: query a of block n is position n W + a,
    key b of its 2W keys position (n - 1) W + b; visible iff a < b <= a + W (b >= W in block 0)."""
    a = torch.arange(W, device=device).view(1, W, 1)                          # (1, W, 1)
    b = torch.arange(2 * W, device=device).view(1, 1, 2 * W)                  # (1, 1, 2W)
    n = torch.arange(N, device=device).view(N, 1, 1)                          # (N, 1, 1)
    return (b > a) & (b <= a + W) & ((n > 0) | (b >= W))                     # (N, W, 2W)


def blocked_sliding_window_attention(q, k, v, window, mask):
    """q, k, v (B, H, T, D), mask (N, W, 2W) from blocked_mask -> (B, H, T, D)."""
    B, H, T, D = q.shape
    W = window
    N = mask.shape[0]
    pad = N * W - T
    if pad:  # padded keys sit after every real query: causality hides them
        q, k, v = (F.pad(t, (0, 0, 0, pad)) for t in (q, k, v))              # (B, H, N*W, D)
    qc = q.reshape(B, H * N, W, D)                                             # (B, H*N, W, D)

    def with_previous(x):
        x = x.reshape(B, H, N, W, D)                                           # (B, H, N, W, D)
        prev = F.pad(x, (0, 0, 0, 0, 1, 0))[:, :, :N]                         # (B, H, N, W, D)
        return torch.cat([prev, x], 3).reshape(B, H * N, 2 * W, D)            # (B, H*N, 2W, D)

    m = mask.unsqueeze(0).expand(H, N, W, 2 * W).reshape(1, H * N, W, 2 * W)  # (1, H*N, W, 2W)
    y = F.scaled_dot_product_attention(qc, with_previous(k), with_previous(v), m)  # (B, H*N, W, D)
    return y.reshape(B, H, N * W, D)[:, :, :T]                                 # (B, H, T, D)


def repeat_kv(x, groups):
    """(B, G, T, D) -> (B, G*groups, T, D): head h reads key/value head h // groups."""
    if groups == 1:
        return x
    B, G, T, D = x.shape
    return x.unsqueeze(2).expand(B, G, groups, T, D).reshape(B, G * groups, T, D)


class ContenderModel(nn.Module):
    """onset's model from a canonical cell config, with onset's parameter names
    (state_dict() keys and shapes are network.parameter_shapes(config)).

    swa: how S layers attend when their window is shorter than T: "auto" (the trainer's CPU
    default: blocked when 2 * window < T, else the band mask), "band" or "blocked".
    chunk: the L and D layers' chunk length (default model.chunk_size, else 64)."""

    def __init__(self, config, dtype=None, swa="auto", chunk=None):
        super().__init__()
        if swa not in ("auto", "band", "blocked"):
            raise ValueError(f"swa {swa!r}: expected auto, band or blocked")
        model = config["model"]
        self.onset_config = config
        add_parameters(self, config, dtype=dtype)
        self.swa = swa
        self.chunk = int(chunk or model.get("chunk_size") or DEFAULT_CHUNK)
        self.d_model = model["d_model"]
        self.heads = model["heads"]
        self.kv_heads = model.get("kv_heads") or self.heads
        if self.d_model % self.heads or self.heads % self.kv_heads:
            raise ValueError("d_model must divide by heads and heads by kv_heads")
        self.head_dim = self.d_model // self.heads
        self.hidden = mlp_hidden(model)
        self.rope_base = float(model.get("rope_base", 10000.0))
        self.seq_len = model["seq_len"]
        self.tied = not hasattr(self, "lm_head")
        conv_letters = _short_conv_letters(model)
        # Per layer: (kind, window, uses rope, uses log-n, has the short convolution).
        self.layer_specs = []
        for i, kind in enumerate(model["pattern"]):
            window = 0
            use_rope = use_logn = False
            if kind in "FS":
                window = model["window"] if kind == "S" else 0
                use_rope = layer_uses_rope(model, i)
                use_logn = not use_rope and logn_applies(model, window)
            elif kind not in "LD":
                raise NotImplementedError(f"layer kind {kind!r} of pattern {model['pattern']!r}")
            self.layer_specs.append((kind, window, use_rope, use_logn, kind in conv_letters))
        self._cache = {}  # eager-mode tables and masks: {key: tensor}

    # -- tables and masks ----------------------------------------------------------------------

    def _cached(self, key, build):
        if _compiling():
            return build()
        value = self._cache.get(key)
        if value is None:
            value = self._cache[key] = build()
        return value

    def _rope(self, T, device):
        return self._cached(("rope", T, str(device)),
                            lambda: rope_tables(T, self.head_dim, self.rope_base, device))

    def _logn(self, T, device):
        def build():
            p1 = torch.arange(1, T + 1, dtype=torch.float32, device=device)            # (T)
            return (p1.log() / math.log(self.seq_len)).clamp_min(1.0)                    # (T)
        return self._cached(("logn", T, str(device)), build)

    # -- layers --------------------------------------------------------------------------------

    def _attend(self, q, k, v, window):
        """q (B, H, T, D), k, v (B, G, T, D) -> (B, H, T, D)."""
        T = q.shape[2]
        groups = self.heads // self.kv_heads
        k, v = repeat_kv(k, groups), repeat_kv(v, groups)                     # (B, H, T, D)
        if window <= 0 or window >= T:
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)    # (B, H, T, D)
        blocked = self.swa == "blocked" or (self.swa == "auto" and 2 * window < T)
        if blocked:
            N = (T + window - 1) // window
            mask = self._cached(("blocked", N, window, str(q.device)),
                                lambda: blocked_mask(N, window, q.device))     # (N, W, 2W)
            return blocked_sliding_window_attention(q, k, v, window, mask)     # (B, H, T, D)
        mask = self._cached(("band", T, window, str(q.device)),
                            lambda: band_mask(T, window, q.device))            # (T, T)
        return F.scaled_dot_product_attention(q, k, v, mask)                   # (B, H, T, D)

    def _attention(self, mixer, x, window, use_rope, use_logn, has_conv):
        """F or S layer. x (B, T, C) -> (B, T, C)."""
        B, T, C = x.shape
        H, G, D = self.heads, self.kv_heads, self.head_dim
        qkv = F.linear(x, mixer.qkv.weight)                                    # (B, T, (H+2G) D)
        if has_conv:
            qkv = short_conv(qkv, mixer.conv.weight)                           # (B, T, (H+2G) D)
        qkv = qkv.view(B, T, H + 2 * G, D)                                     # (B, T, H+2G, D)
        qk, v = qkv[:, :, :H + G], qkv[:, :, H + G:]                           # (B, T, H+G|G, D)
        if hasattr(mixer, "qk_norm_weight"):
            w = mixer.qk_norm_weight                                           # (2, 1, D)
            gains = torch.cat([w[0].expand(H, D), w[1].expand(G, D)])          # (H+G, D)
            qk = F.rms_norm(qk, (D,), None, NORM_EPS) * gains                  # (B, T, H+G, D)
        if use_rope:
            cos, sin = self._rope(T, x.device)                                 # 2 x (T, D/2)
            qk = apply_rope(qk, cos, sin)                                      # (B, T, H+G, D)
        q = qk[:, :, :H].transpose(1, 2)                                       # (B, H, T, D)
        if use_logn:
            q = q * self._logn(T, x.device).to(q.dtype).view(1, 1, T, 1)      # (B, H, T, D)
        k = qk[:, :, H:].transpose(1, 2)                                       # (B, G, T, D)
        v = v.transpose(1, 2)                                                  # (B, G, T, D)
        y = self._attend(q, k, v, window)                                      # (B, H, T, D)
        y = y.transpose(1, 2).reshape(B, T, C)                                 # (B, T, C)
        return F.linear(y, mixer.out.weight)                                   # (B, T, C)

    def _recurrent(self, mixer, x, kind, has_conv):
        """L or D layer. x (B, T, C) -> (B, T, C)."""
        B, T, C = x.shape
        H, D = self.heads, self.head_dim
        proj = F.linear(x, mixer.in_proj.weight)                               # (B, T, 4C + H|2H)
        qkv, gate, scalars = proj.split([3 * C, C, proj.shape[-1] - 4 * C], -1)
        # qkv (B, T, 3C), gate (B, T, C), scalars (B, T, H|2H)
        if has_conv:
            qkv = short_conv(qkv, mixer.conv.weight)                           # (B, T, 3C)
        with torch.autocast(x.device.type, enabled=False):
            heads = qkv.float().view(B, T, 3, H, D).permute(2, 0, 3, 1, 4)    # (3, B, H, T, D)
            q, k, v = heads[0], heads[1], heads[2]                             # (B, H, T, D)
            q = q * torch.rsqrt(q.pow(2).sum(-1, keepdim=True) + NORM_EPS) / math.sqrt(D)
            k = k * torch.rsqrt(k.pow(2).sum(-1, keepdim=True) + NORM_EPS)    # (B, H, T, D)
            s = scalars.float().transpose(1, 2)                                # (B, H|2H, T)
            if kind == "L":
                g = F.logsigmoid(s) / GLA_GATE_TEMPERATURE                     # (B, H, T)
                y = decayed_linear_attention_chunked(q, k, v, g, self.chunk)   # (B, H, T, D)
            else:
                beta = torch.sigmoid(s[:, :H])                                 # (B, H, T)
                dt = F.softplus(s[:, H:] + mixer.dt_bias.float().unsqueeze(-1))  # (B, H, T)
                g = -mixer.a_log.float().exp().unsqueeze(-1) * dt              # (B, H, T)
                y = gated_delta_net_chunked(q, k, v, g, beta, self.chunk)      # (B, H, T, D)
            y = F.rms_norm(y.transpose(1, 2), (D,), mixer.head_norm_weight.float(),
                           NORM_EPS)                                           # (B, T, H, D)
        y = y.reshape(B, T, C).to(x.dtype) * F.silu(gate)                      # (B, T, C)
        return F.linear(y, mixer.out.weight)                                   # (B, T, C)

    def _mlp(self, mlp, x):
        gate, up = F.linear(x, mlp.gate_up.weight).chunk(2, -1)               # 2 x (B, T, F)
        return F.linear(F.silu(gate) * up, mlp.down.weight)                    # (B, T, C)

    def forward(self, tokens):
        """tokens (B, T) int64 -> logits (B, T, V). Positions start at 0."""
        C = self.d_model
        x = F.embedding(tokens, self.wte.weight)                               # (B, T, C)
        for i, (kind, window, use_rope, use_logn, has_conv) in enumerate(self.layer_specs):
            block = getattr(self, f"h{i}")
            h = F.rms_norm(x, (C,), block.norm1.weight, NORM_EPS)              # (B, T, C)
            if kind in "FS":
                x = x + self._attention(block.mixer, h, window, use_rope, use_logn, has_conv)
            else:
                x = x + self._recurrent(block.mixer, h, kind, has_conv)       # (B, T, C)
            h = F.rms_norm(x, (C,), block.norm2.weight, NORM_EPS)              # (B, T, C)
            x = x + self._mlp(block.mlp, h)                                    # (B, T, C)
        x = F.rms_norm(x, (C,), self.norm_f.weight, NORM_EPS)                  # (B, T, C)
        head = self.wte.weight if self.tied else self.lm_head.weight           # (V, C)
        return F.linear(x, head)                                               # (B, T, V)
