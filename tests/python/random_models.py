"""Small onset models with random weights, to hold fast.py and the cache to the reference
(reference.py, the spec) without training anything.

KINDS cover what tests/model/export_test.py's trained kinds cover (every mixer, RoPE and NoPE
layers, window masks, GQA, QK-norm on and off, tied and separate output matrices, log-n
scaling, the short convolution on the recurrent layers and on every kind) and the edges of the
fast form: a window of one position, and the default chunk length of a config that names none.
The models read a token file's 32 ids (40 embedding rows), and their chunks are 4 positions
long, so that short sequences cross several chunk boundaries.
"""

BASE_MODEL = {"layers": 2, "d_model": 16, "heads": 4, "kv_heads": 4, "seq_len": 16,
              "chunk_size": 4, "window": 5, "pos": "rope", "rope_base": 10000.0,
              "qk_norm": True, "mlp_hidden": 32, "tie_embeddings": True, "short_conv": "",
              "short_conv_kernel": 4, "init_std": 0.02}

KINDS = {
    "F": {"pattern": "FF"},
    "S": {"pattern": "SF"},
    "L": {"pattern": "LF", "qk_norm": False},
    "D": {"pattern": "DF"},
    "LD-conv": {"pattern": "LDF", "short_conv": "LD"},
    "SLDF-conv-everywhere": {"pattern": "SLDF", "short_conv": "FSLD", "short_conv_kernel": 3},
    "GQA-kv2-untied": {"pattern": "SF", "kv_heads": 2, "tie_embeddings": False},
    "GQA-kv1": {"pattern": "SF", "kv_heads": 1},
    "nope-full": {"pattern": "SF", "pos": "nope-full"},
    "F-rope-S-nope-logn": {"pattern": "SF", "pos": "F:rope,S:nope", "logn_scaling": "all",
                           "seq_len": 8},
    "nope-logn-full": {"pattern": "SF", "pos": "nope", "logn_scaling": True, "seq_len": 8},
    "S-window-1": {"pattern": "SD", "window": 1},
    "D-default-chunk": {"pattern": "DF", "chunk_size": None},  # None: left out
}

VOCAB_TEXT = 32  # data.vocab_size of the token file: ids 0-31, the specials 32-37


def config(kind):
    """The canonical cell config of a kind of KINDS."""
    model = {k: v for k, v in {**BASE_MODEL, **KINDS[kind]}.items() if v is not None}
    model["layers"] = len(model["pattern"])
    return {"model": model, "data": {"background": "file", "vocab_size": VOCAB_TEXT}}


def params(torch, cfg, seed, dtype):
    """{name: tensor} of random weights for `cfg`, of the scale a trained model has: norm gains
    near 1, matrices of unit fan-in variance, D decays from weak to strong."""
    from onset.network import initial_value, parameter_shapes

    g = torch.Generator().manual_seed(seed)
    out = {}
    for name, shape in parameter_shapes(cfg).items():
        noise = torch.randn(shape, generator=g, dtype=torch.float64)
        kind = initial_value(name)
        if kind == "ones":
            value = 1 + 0.2 * noise
        elif kind == "zeros":  # a_log, dt_bias
            value = noise
        elif name == "wte.weight":
            value = noise
        else:
            value = noise / shape[-1] ** 0.5
        out[name] = value.to(dtype)
    return out


def tokens(torch, batch, length, seed):
    """Random ids of the text vocabulary and the specials, (batch, length) int64."""
    g = torch.Generator().manual_seed(1000 + seed)
    return torch.randint(0, VOCAB_TEXT + 6, (batch, length), generator=g)
