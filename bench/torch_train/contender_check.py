"""Checks that bench/torch_train/contender.py computes onset's model: the same logits and the same
parameter gradients as the readable reference (python/onset/reference.py), for several configs
that cover every layer kind (F, S, L, D), every positional scheme, log-n scaling, GQA, the short
convolution, untied embeddings, and sequence lengths that are and are not multiples of the chunk.

    ~/.cache/onset/venv/bin/python bench/torch_train/contender_check.py [--compile]

Exit status 0 when every config agrees (max |logit diff| < 1e-4, fp32; every parameter's
gradient within 1e-3 of the reference's, relative to the largest reference gradient entry of
that parameter), 1 with the failures listed otherwise. --compile also runs torch.compile(model)
forward and backward on the FF and DF configs and compares those with eager.
One thread throughout.
"""

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from contender import ContenderModel  # noqa: E402
from onset.network import init_module, parameter_shapes  # noqa: E402
from onset.reference import forward as reference_forward  # noqa: E402

LOGIT_TOL = 1e-4
GRAD_REL_TOL = 1e-3


def make_config(pattern, d_model=64, heads=2, seq_len=128, **model):
    """A canonical cell config dict with every key reference.py and network.py read."""
    m = {
        "layers": len(pattern), "d_model": d_model, "heads": heads, "kv_heads": heads,
        "seq_len": seq_len, "arch": pattern, "pattern": pattern, "full_position": "last",
        "pos": "rope", "window": 0, "rope_base": 10000.0, "qk_norm": True,
        "tie_embeddings": True, "mlp_hidden": 0, "logn_scaling": "off", "chunk_size": 64,
        "short_conv": "", "short_conv_kernel": 4, "init_std": 0.02,
    }
    m.update(model)
    return {"model": m, "data": {"background": "markov"}}


# (name, config, B, T, weight std, stress, swa): stress also randomises the norm gains, a_log and
# dt_bias (a fresh model has them 1, 0, 0) so that every parameter shapes the output.
CASES = [
    ("FF rope", make_config("FF"), 2, 128, 0.02, False, "auto"),
    ("DF conv", make_config("DF", short_conv="LD"), 2, 128, 0.02, False, "auto"),
    ("LF conv", make_config("LF", short_conv="LD"), 2, 128, 0.02, False, "auto"),
    ("FFFF d256", make_config("FFFF", d_model=256, heads=4, seq_len=512), 1, 512, 0.02, False,
     "auto"),
    ("SF w16 blocked", make_config("SF", window=16), 2, 128, 0.02, False, "auto"),
    ("SF w16 band", make_config("SF", window=16), 2, 128, 0.02, False, "band"),
    ("SF w16 T100 pad", make_config("SF", window=16), 2, 100, 0.1, True, "auto"),
    ("SF w48 auto=band", make_config("SF", window=48), 2, 80, 0.1, True, "auto"),
    ("FF nope", make_config("FF", pos="nope"), 2, 128, 0.02, False, "auto"),
    ("FS nope-full logn all", make_config("FS", pos="nope-full", window=16, seq_len=32,
                                          logn_scaling="all"), 2, 96, 0.1, True, "auto"),
    ("SF nope logn full", make_config("SF", pos="nope", window=8, seq_len=32,
                                      logn_scaling="full"), 2, 80, 0.1, True, "auto"),
    ("FSLD per-type GQA conv", make_config("FSLD", heads=4, kv_heads=2, window=16,
                                           pos="F:nope,S:rope", short_conv="FSLD",
                                           tie_embeddings=False, qk_norm=False, mlp_hidden=96),
     2, 150, 0.1, True, "auto"),
    ("DL stress T200", make_config("DL", heads=4, short_conv="LD"), 2, 200, 0.1, True, "auto"),
    ("LD chunk16 T40", make_config("LD", short_conv="LD", chunk_size=16), 2, 40, 0.1, True,
     "auto"),
    ("DL T40 < chunk", make_config("DL", short_conv="LD"), 2, 40, 0.1, True, "auto"),
]


def random_params(model, std, stress, seed):
    """Fills model's parameters as network.init_module does with `std` (plus stress noise)."""
    torch.manual_seed(seed)
    for module in model.modules():
        init_module(module, std)
    if stress:
        with torch.no_grad():
            for name, p in model.named_parameters():
                if name.endswith(("a_log", "dt_bias")):
                    p.copy_(torch.randn_like(p) * 0.7)
                elif "norm" in name:
                    p.add_(torch.randn_like(p) * 0.2)


def loss_of(logits, tokens):
    V = logits.shape[-1]
    return F.cross_entropy(logits[:, :-1].reshape(-1, V), tokens[:, 1:].reshape(-1))


def run_contender(model, tokens):
    model.zero_grad(set_to_none=True)
    logits = model(tokens)
    loss_of(logits, tokens).backward()
    # A torch.compile'd module names its parameters "_orig_mod.<name>".
    return logits.detach(), {n.removeprefix("_orig_mod."): p.grad.clone()
                             for n, p in model.named_parameters()}


def run_reference(params, config, tokens):
    leaves = {n: p.detach().clone().requires_grad_() for n, p in params.items()}
    logits = reference_forward(leaves, config, tokens)
    loss_of(logits, tokens).backward()
    return logits.detach(), {n: p.grad for n, p in leaves.items()}


def timed(fn, reps):
    fn()  # warm-up
    start = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - start) / reps


def grad_rel_diff(got, want):
    """max over parameters of max|got - want| / max|want|."""
    worst, worst_name = 0.0, ""
    for name, w in want.items():
        d = (got[name] - w).abs().max().item() / max(w.abs().max().item(), 1e-12)
        if d > worst:
            worst, worst_name = d, name
    return worst, worst_name


def check_case(name, config, B, T, std, stress, swa, seed, reps):
    failures = []
    model = ContenderModel(config, swa=swa)
    shapes = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    want_shapes = {k: tuple(v) for k, v in parameter_shapes(config).items()}
    if shapes != want_shapes:
        failures.append(f"{name}: state_dict layout differs from parameter_shapes: "
                        f"{sorted(set(shapes.items()) ^ set(want_shapes.items()))}")
        return failures
    random_params(model, std, stress, seed)
    params = {k: v.detach().clone() for k, v in model.state_dict().items()}
    # The contender loads the same weights as the reference gets, through load_state_dict.
    fresh = ContenderModel(config, swa=swa)
    fresh.load_state_dict(params, strict=True)
    vocab = params["wte.weight"].shape[0]
    torch.manual_seed(seed + 1)
    tokens = torch.randint(0, vocab, (B, T))

    got_logits, got_grads = run_contender(fresh, tokens)
    want_logits, want_grads = run_reference(params, config, tokens)
    logit_diff = (got_logits - want_logits).abs().max().item()
    grad_diff, grad_name = grad_rel_diff(got_grads, want_grads)
    t_contender = timed(lambda: run_contender(fresh, tokens), reps)
    t_reference = timed(lambda: run_reference(params, config, tokens), max(1, reps // 2))
    print(f"{name:24s} pattern {config['model']['pattern']:5s} B={B} T={T:<4d} "
          f"max|logit diff| {logit_diff:.2e}  max grad rel diff {grad_diff:.2e} ({grad_name})  "
          f"fwd+bwd contender {t_contender * 1e3:8.1f} ms  reference {t_reference * 1e3:8.1f} ms",
          flush=True)
    if not logit_diff < LOGIT_TOL:
        failures.append(f"{name}: max |logit diff| {logit_diff:.3e} >= {LOGIT_TOL}")
    if not grad_diff < GRAD_REL_TOL:
        failures.append(f"{name}: gradient of {grad_name} differs by {grad_diff:.3e} "
                        f"(relative) >= {GRAD_REL_TOL}")
    return failures


def check_compile(name, config, B, T, seed):
    """torch.compile(model) forward + backward runs and agrees with eager."""
    failures = []
    model = ContenderModel(config)
    random_params(model, 0.1, True, seed)
    torch.manual_seed(seed + 1)
    tokens = torch.randint(0, model.wte.weight.shape[0], (B, T))
    eager_logits, eager_grads = run_contender(model, tokens)
    compiled = torch.compile(model)
    start = time.perf_counter()
    try:
        got_logits, got_grads = run_contender(compiled, tokens)
    except Exception as e:  # noqa: BLE001 - report any compile failure
        return [f"{name}: torch.compile forward+backward failed: {type(e).__name__}: {e}"]
    first = time.perf_counter() - start
    t_eager = timed(lambda: run_contender(model, tokens), 3)
    t_compiled = timed(lambda: run_contender(compiled, tokens), 3)
    logit_diff = (got_logits - eager_logits).abs().max().item()
    grad_diff, grad_name = grad_rel_diff(got_grads, eager_grads)
    print(f"compile {name:16s} first call {first:6.1f} s  max|logit diff| vs eager "
          f"{logit_diff:.2e}  max grad rel diff {grad_diff:.2e}  fwd+bwd eager "
          f"{t_eager * 1e3:.1f} ms  compiled {t_compiled * 1e3:.1f} ms", flush=True)
    if not logit_diff < LOGIT_TOL:
        failures.append(f"compile {name}: max |logit diff| vs eager {logit_diff:.3e}")
    if not grad_diff < GRAD_REL_TOL:
        failures.append(f"compile {name}: gradient of {grad_name} differs by {grad_diff:.3e}")
    return failures


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--compile", action="store_true",
                        help="also torch.compile the FF and DF configs (a minute or two each)")
    parser.add_argument("--reps", type=int, default=2, help="timed repetitions (information only)")
    parser.add_argument("--only", default="", help="run only the cases whose name contains this")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    failures = []
    for seed, (name, config, B, T, std, stress, swa) in enumerate(CASES):
        if args.only and args.only not in name:
            continue
        failures += check_case(name, config, B, T, std, stress, swa, 1000 + seed, args.reps)
    if args.compile:
        failures += check_compile("FF", make_config("FF"), 2, 128, 7)
        failures += check_compile("DF conv", make_config("DF", short_conv="LD"), 2, 128, 8)
    if failures:
        print("contender_check: FAILED", file=sys.stderr)
        for f in failures:
            print("  " + f, file=sys.stderr)
        return 1
    print("contender_check: all configs agree with onset.reference")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
