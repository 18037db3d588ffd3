"""The L and D mixers' recurrences in their chunked parallel form, continuing from a state.

reference.py runs them token by token, the spec:

    L:  S_t = a_t S_{t-1} + k_t^T v_t
    D:  S_t = a_t S_{t-1} + k_t^T u_t,   u_t = beta_t (v_t - a_t k_t S_{t-1})   (delta rule)
    both: o_t = q_t S_t,  a_t = exp(g_t),  S a (D, D) matrix per head (zeros before position 0)

Here the positions are cut into chunks of M. With b_t the cumulative log-decay inside a chunk
and S_0 the state entering it, every position of the chunk at once:

    o_t = exp(b_t) q_t S_0 + sum_{s <= t} exp(b_t - b_s) (q_t . k_s) x_s,  x = v (L) or u (D)
    S_M = exp(b_M) S_0 + sum_s exp(b_M - b_s) k_s^T x_s                    (the next chunk's S_0)

and for D the u of the whole chunk solve one unit lower-triangular system (the UT/WY transform,
as flash-linear-attention's chunk_delta_rule and onset's trainer, model/nn/gated_delta_net.cc):

    (I + A) U = beta V - (beta exp(b) K) S_0,   A_ts = beta_t exp(b_t - b_s) (k_t . k_s), s < t

so that U = W_v - W_k S_0 with W_v, W_k computed for all chunks in one batched solve. Only the
(D, D) state passes from chunk to chunk: T / M steps of a few matrix products instead of T
steps. A single position (a decoding step) runs the recurrence itself. The sums run in float32
(float64 when the inputs are), as the trainer's L and D kernels.

Dimension letters: B batch, H heads, T positions, D head dim, N chunks, M chunk length.
"""

import torch
import torch.nn.functional as F


def _in_chunks(x, M):
    """(B, H, T, ...) -> (B, H, N, M, ...), zero-padded at the end. Padded positions have k, v
    and beta 0 and g 0 (no decay): they change neither the outputs nor the state."""
    T = x.shape[2]
    pad = (-T) % M
    if pad:
        widths = [0, 0] * (x.dim() - 3) + [0, pad]
        x = F.pad(x, widths)                                         # (B, H, N*M, ...)
    return x.reshape(x.shape[0], x.shape[1], -1, M, *x.shape[3:])    # (B, H, N, M, ...)


def _decay_matrix(b):
    """exp(b_t - b_s) for s <= t, 0 above the diagonal. b (..., M) -> (..., M, M)."""
    M = b.shape[-1]
    exponent = b.unsqueeze(-1) - b.unsqueeze(-2)                     # (..., M, M)
    above = torch.ones(M, M, dtype=torch.bool, device=b.device).triu(1)
    return exponent.masked_fill(above, float("-inf")).exp()          # (..., M, M)


def _prepare(q, k, v, g, chunk, state):
    """The chunked inputs in the working dtype, the decays and the entering state."""
    dtype = torch.promote_types(q.dtype, torch.float32)
    B, H, T, D = q.shape
    M = min(chunk, T)
    qc, kc, vc = (_in_chunks(t.to(dtype), M) for t in (q, k, v))    # (B, H, N, M, D)
    b = _in_chunks(g.to(dtype), M).cumsum(-1)                        # (B, H, N, M)
    if state is None:
        state = q.new_zeros(B, H, D, D, dtype=dtype)                 # (B, H, D, D)
    return qc, kc, vc, b, state.to(dtype)


def _one_position(q, k, v, g, beta, state):
    """T = 1, a decoding step: the recurrence itself, which costs less than a chunk of one.
    beta None for L. q, k, v (B, H, 1, D), g (B, H, 1) -> (B, H, 1, D), (B, H, D, D)."""
    dtype = torch.promote_types(q.dtype, torch.float32)
    B, H, _, D = q.shape
    q, k, v, g = (t.to(dtype) for t in (q, k, v, g))
    S = q.new_zeros(B, H, D, D) if state is None else state.to(dtype)  # (B, H, D, D)
    S = g.exp().unsqueeze(-1) * S                                    # (B, H, D, D)
    if beta is not None:
        v = beta.to(dtype).unsqueeze(-1) * (v - k @ S)               # (B, H, 1, D): u
    S = S + k.transpose(-1, -2) @ v                                  # (B, H, D, D)
    return q @ S, S                                                  # (B, H, 1, D), (B, H, D, D)


def linear_attention(q, k, v, g, chunk, state=None):
    """The L mixer. q, k, v (B, H, T, D), g (B, H, T) log-decays, state (B, H, D, D) entering
    position 0 (None: zeros) -> (outputs (B, H, T, D), the state after position T - 1), in the
    working dtype (float32 or float64)."""
    T = q.shape[2]
    if T == 1:
        return _one_position(q, k, v, g, None, state)
    qc, kc, vc, b, S = _prepare(q, k, v, g, chunk, state)
    b_last = b[..., -1:]                                             # (B, H, N, 1)
    intra = ((qc @ kc.transpose(-1, -2)) * _decay_matrix(b)) @ vc    # (B, H, N, M, D)
    q_decayed = qc * b.exp().unsqueeze(-1)                           # (B, H, N, M, D)
    k_to_end = (kc * (b_last - b).exp().unsqueeze(-1)).transpose(-1, -2)  # (B, H, N, D, M)
    chunk_decay = b_last.exp().unsqueeze(-1)                         # (B, H, N, 1, 1)
    out = []
    for n in range(qc.shape[2]):
        out.append(q_decayed[:, :, n] @ S + intra[:, :, n])          # (B, H, M, D)
        S = S * chunk_decay[:, :, n] + k_to_end[:, :, n] @ vc[:, :, n]  # (B, H, D, D)
    return torch.cat(out, 2)[:, :, :T], S                            # (B, H, T, D), (B, H, D, D)


def delta_rule(q, k, v, g, beta, chunk, state=None):
    """The D mixer (gated delta rule). q, k, v (B, H, T, D), g, beta (B, H, T), state
    (B, H, D, D) entering position 0 (None: zeros) -> (outputs (B, H, T, D), the state after
    position T - 1), in the working dtype (float32 or float64)."""
    T, D = q.shape[2], q.shape[3]
    if T == 1:
        return _one_position(q, k, v, g, beta, state)
    qc, kc, vc, b, S = _prepare(q, k, v, g, chunk, state)
    bc = _in_chunks(beta.to(b.dtype), qc.shape[3]).unsqueeze(-1)    # (B, H, N, M, 1)
    b_last = b[..., -1:]                                             # (B, H, N, 1)
    decay = _decay_matrix(b)                                         # (B, H, N, M, M)
    M = qc.shape[3]

    # The UT transform: (I + A) [W_v | W_k] = [beta V | beta exp(b) K] in every chunk.
    A = ((kc @ kc.transpose(-1, -2)) * decay * bc).tril(-1)          # (B, H, N, M, M)
    eye = torch.eye(M, dtype=A.dtype, device=A.device)               # (M, M)
    rhs = torch.cat([vc * bc, kc * bc * b.exp().unsqueeze(-1)], -1)  # (B, H, N, M, 2D)
    W = torch.linalg.solve_triangular(A + eye, rhs, upper=False,
                                      unitriangular=True)            # (B, H, N, M, 2D)
    w_v, w_k = W[..., :D], W[..., D:]                                # (B, H, N, M, D)

    qk = (qc @ kc.transpose(-1, -2)) * decay                         # (B, H, N, M, M)
    q_decayed = qc * b.exp().unsqueeze(-1)                           # (B, H, N, M, D)
    k_to_end = (kc * (b_last - b).exp().unsqueeze(-1)).transpose(-1, -2)  # (B, H, N, D, M)
    chunk_decay = b_last.exp().unsqueeze(-1)                         # (B, H, N, 1, 1)
    out = []
    for n in range(qc.shape[2]):
        u = w_v[:, :, n] - w_k[:, :, n] @ S                          # (B, H, M, D)
        out.append(q_decayed[:, :, n] @ S + qk[:, :, n] @ u)         # (B, H, M, D)
        S = S * chunk_decay[:, :, n] + k_to_end[:, :, n] @ u         # (B, H, D, D)
    return torch.cat(out, 2)[:, :, :T], S                            # (B, H, T, D), (B, H, D, D)
