"""A model trained on a token file (data.background: file) reads that file's ids: its converted
directory has no tokenizer and says so, and its vocabulary (text ids, then the specials) sets
the shapes."""

import json
import os
import struct

TEXT_TOKENS = 300  # data.vocab_size: the specials are 300..305, the embedding 312 rows


def train_on_token_file(models, work):
    """A tiny SSSF model trained on a uint16 file of ids below TEXT_TOKENS."""
    from export_test import cell, run

    ids = [i * 7919 % TEXT_TOKENS for i in range(20000)]
    path = os.path.join(work, "tokens.bin")
    with open(path, "wb") as f:
        f.write(struct.pack(f"<{len(ids)}H", *ids))  # the file format: little-endian uint16
    config = cell({"arch": "swa", "window": 8})
    config["data"] = {"background": "file", "path": path, "vocab_size": TEXT_TOKENS}
    config_path = os.path.join(work, "file.json")
    with open(config_path, "w") as f:
        json.dump(config, f)
    ckpt, export = os.path.join(work, "file-ckpt"), os.path.join(work, "file-export")
    run([models.trainer, "--config", config_path, "--checkpoint-dir", ckpt, "--threads", "1"])
    run([models.trainer, "export", "--config", config_path, "--checkpoint", ckpt, "--out", export])
    return config_path, ckpt, export


def test_token_file_model(tmp_path, torch, transformers, models):
    from export_test import dump_logits
    from onset.hf import convert
    from trained_models import TOLERANCE

    config_path, ckpt, export = train_on_token_file(models, str(tmp_path))
    directory = convert(export, str(tmp_path / "hf_file"))
    with open(os.path.join(directory, "config.json")) as f:
        config = json.load(f)
    assert config["onset_vocabulary"] == "ids"
    assert "AutoTokenizer" not in config["auto_map"]
    assert (config["vocab_size"], config["bos_token_id"]) == (312, TEXT_TOKENS)
    for name in ("tokenization_onset.py", "tokenizer_config.json", "special_tokens_map.json"):
        assert not os.path.exists(os.path.join(directory, name)), name

    model = transformers.AutoModelForCausalLM.from_pretrained(directory, trust_remote_code=True)
    assert model.config.onset_vocabulary == "ids" and model.config.bos_token_id == TEXT_TOKENS
    tokens = [TEXT_TOKENS, 299, 1, 2, TEXT_TOKENS + 1, 3, 4, TEXT_TOKENS + 2, 250, 251, 252]
    with torch.no_grad():
        got = model(input_ids=torch.tensor([tokens])).logits[0]
    want = torch.tensor(dump_logits(models.trainer, config_path, ckpt, tokens)["logits"])
    assert got.shape == (len(tokens), 312)
    assert (got - want).abs().max().item() <= TOLERANCE
