"""An `onset-train export` directory as a Hugging Face transformers model directory.

    python -m onset.hf EXPORT_DIR OUT_DIR

    from onset.hf import convert
    convert("export", "hf")
    model = transformers.AutoModelForCausalLM.from_pretrained("hf", trust_remote_code=True)

OUT_DIR gets config.json (model_type "onset", the transformers fields, and the canonical cell
config under "onset"), generation_config.json, model.safetensors (the export's file as it is: the
parameter names are onset's own, and so are the module's), the model's code (modeling_onset.py,
configuration_onset.py, and the files they take the math, the cache and the vocabulary from:
network.py, fast.py, chunked.py, reference.py, cache.py, vocabulary.py) and, for a model of the
byte vocabulary, its tokenizer (tokenization_onset.py, tokenizer_config.json,
special_tokens_map.json). A model trained on a token file (data.background: file) reads that file's
ids, which only its own tokenizer knows: it gets no tokenizer, and config.json says
"onset_vocabulary": "ids". Needs nothing but the standard library and safetensors; loading the
result needs torch and transformers.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile

from . import vocabulary

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))

# The files the model's code is made of, copied as they are: modeling_onset.py imports the rest
# by relative imports, which transformers resolves in the model's directory.
MODEL_CODE = ("cache.py", "chunked.py", "configuration_onset.py", "fast.py", "modeling_onset.py",
              "network.py", "reference.py", "vocabulary.py")
TOKENIZER_CODE = ("tokenization_onset.py", "vocabulary.py")

_DTYPE_NAMES = {"F32": "float32", "BF16": "bfloat16", "F16": "float16", "F64": "float64"}


def _publish(tmp, path):
    """Gives the temporary file the mode a new file gets (0666 less the umask: mkstemp makes it
    0600) and renames it to path."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    os.replace(tmp, path)


def _write_json(path, value):
    """Writes JSON atomically: a temporary file beside it, then a rename."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
    with os.fdopen(fd, "w") as f:
        json.dump(value, f, indent=2, sort_keys=False)
        f.write("\n")
    _publish(tmp, path)


def _copy(src, dst):
    """Copies a file atomically: a temporary file beside dst, then a rename."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(dst), prefix=".tmp-")
    os.close(fd)
    shutil.copyfile(src, tmp)
    _publish(tmp, dst)


def _export_metadata(weights):
    """The `__metadata__` strings of the export's safetensors file (docs/export.md)."""
    from safetensors import safe_open

    with safe_open(weights, framework="pt") as f:
        return f.metadata() or {}


def model_config(onset, metadata):
    """config.json: the transformers fields, derived from the canonical cell config `onset`."""
    model = onset["model"]
    text = vocabulary.text_tokens(onset)
    byte_vocabulary = vocabulary.is_bytes(onset)
    dtype = _DTYPE_NAMES.get(metadata.get("dtype", "F32"), "float32")
    auto_map = {"AutoConfig": "configuration_onset.OnsetConfig",
                "AutoModelForCausalLM": "modeling_onset.OnsetForCausalLM"}
    if byte_vocabulary:
        auto_map["AutoTokenizer"] = ["tokenization_onset.OnsetTokenizer", None]
    return {
        "model_type": "onset",
        "architectures": ["OnsetForCausalLM"],
        "auto_map": auto_map,
        "vocab_size": vocabulary.padded_size(text),
        "hidden_size": model["d_model"],
        "num_hidden_layers": model["layers"],
        "num_attention_heads": model["heads"],
        "initializer_range": model.get("init_std", 0.02),
        "tie_word_embeddings": bool(model.get("tie_embeddings", True)),
        # onset's data has a sequence start and no end or padding token: generate() decodes
        # every step asked (the tokenizer names a padding row for tools that need one).
        "bos_token_id": vocabulary.special_ids(text)[vocabulary.BOS],
        "eos_token_id": None,
        "pad_token_id": None,
        "use_cache": True,
        "torch_dtype": dtype,
        "dtype": dtype,
        # "bytes": ids 0-255 are bytes and the tokenizer comes along; "ids": a token file's ids.
        "onset_vocabulary": "bytes" if byte_vocabulary else "ids",
        "onset_cell_id": metadata.get("cell_id", ""),
        "onset_checkpoint": metadata.get("checkpoint", ""),
        "onset": onset,
    }


def generation_config(config):
    """generation_config.json: decoding from the model's cache, no end token."""
    return {"bos_token_id": config["bos_token_id"], "eos_token_id": None, "pad_token_id": None,
            "use_cache": True}


def tokenizer_files():
    """tokenizer_config.json and special_tokens_map.json of the byte vocabulary."""
    specials = {**vocabulary.special_ids(vocabulary.BYTE_TOKENS),
                **vocabulary.padding_ids(vocabulary.BYTE_TOKENS)}
    added = {str(i): {"content": name, "lstrip": False, "normalized": False, "rstrip": False,
                      "single_word": False, "special": True} for name, i in specials.items()}
    bos, *markers = vocabulary.SPECIAL_TOKENS
    pad, *padding = vocabulary.padding_ids(vocabulary.BYTE_TOKENS)
    config = {
        "tokenizer_class": "OnsetTokenizer",
        "auto_map": {"AutoTokenizer": ["tokenization_onset.OnsetTokenizer", None]},
        "bos_token": bos,
        # No end or padding token in onset's data: the first padding row stands for both
        # (tokenization_onset.py says why).
        "eos_token": pad,
        "pad_token": pad,
        "extra_special_tokens": markers + padding,
        "added_tokens_decoder": added,
        "clean_up_tokenization_spaces": False,
    }
    special_map = {"bos_token": bos, "eos_token": pad, "pad_token": pad,
                   "additional_special_tokens": markers + padding}
    return {"tokenizer_config.json": config, "special_tokens_map.json": special_map}


def convert(export_dir, out_dir):
    """Writes the Hugging Face directory of the export in `export_dir` to `out_dir` (created if
    missing; the files named above are replaced, others left alone). Returns out_dir."""
    with open(os.path.join(export_dir, "config.json")) as f:
        onset = json.load(f)
    if "model" not in onset or "pattern" not in onset.get("model", {}):
        raise ValueError(f"{export_dir}/config.json: not the canonical cell config of an "
                         "`onset-train export` directory")
    weights = os.path.join(export_dir, "model.safetensors")
    metadata = _export_metadata(weights)
    os.makedirs(out_dir, exist_ok=True)
    if os.path.samefile(export_dir, out_dir):
        raise ValueError("the output directory must differ from the export directory")

    config = model_config(onset, metadata)
    _copy(weights, os.path.join(out_dir, "model.safetensors"))
    code = MODEL_CODE + (TOKENIZER_CODE if config["onset_vocabulary"] == "bytes" else ())
    for name in sorted(set(code)):
        _copy(os.path.join(PACKAGE_DIR, name), os.path.join(out_dir, name))
    if config["onset_vocabulary"] == "bytes":
        for name, value in tokenizer_files().items():
            _write_json(os.path.join(out_dir, name), value)
    _write_json(os.path.join(out_dir, "generation_config.json"), generation_config(config))
    _write_json(os.path.join(out_dir, "config.json"), config)
    return out_dir


def main(argv):
    parser = argparse.ArgumentParser(
        prog="python -m onset.hf",
        description="Turn an `onset-train export` directory into a Hugging Face transformers "
                    "model directory (AutoModelForCausalLM, trust_remote_code=True).")
    parser.add_argument("export_dir", help="what `onset-train export --out` wrote")
    parser.add_argument("out_dir", help="the directory to write")
    args = parser.parse_args(argv)
    try:
        convert(args.export_dir, args.out_dir)
    except (OSError, ValueError) as e:
        print(f"onset.hf: {e}", file=sys.stderr)
        return 1
    print(f"{args.export_dir} -> {args.out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
