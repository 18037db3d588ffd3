"""The tiny trained models of every kind the export test covers, made once per test session.

The kinds, the sequence and the cell configs are tests/model/export_test.py's (KINDS, TOKENS,
cell()): the same models that prove the reference prove the package. Each is trained, exported
and converted when a test first asks for it.
"""

import os
import re
import subprocess
from dataclasses import dataclass

import export_test

KINDS = export_test.KINDS
TOKENS = export_test.TOKENS
TOLERANCE = export_test.TOLERANCE


@dataclass
class TrainedModel:
    """One kind's files: cell config, checkpoint directory, export, and the Hugging Face
    directory (None until converted)."""

    name: str
    config: str
    checkpoint: str
    export: str
    hf: str | None = None


class TrainedModels:
    """Trains, exports and converts on demand, each kind once."""

    def __init__(self, trainer, work):
        self.trainer = trainer
        self.work = work
        self._models = {}
        self._logits = {}

    def get(self, name, overrides=None):
        """The trained and exported model of a kind of KINDS (or of `overrides`, named `name`)."""
        if name not in self._models:
            config, checkpoint, export = export_test.train_and_export(
                name, KINDS[name] if overrides is None else overrides, self.trainer, self.work)
            self._models[name] = TrainedModel(name, config, checkpoint, export)
        return self._models[name]

    def hf(self, name):
        """The kind's model, converted to a Hugging Face directory (onset.hf.convert)."""
        from onset.hf import convert

        model = self.get(name)
        if model.hf is None:
            # The directory's name becomes a Python module name in transformers' cache.
            model.hf = convert(model.export, os.path.join(self.work, "hf_" + re.sub(
                r"\W", "_", name)))
        return model

    def dump_logits(self, name, tokens=TOKENS):
        """onset-train's own logits (T x V, a list of lists) of `tokens` for a kind."""
        key = (name, tuple(tokens))
        if key not in self._logits:
            model = self.get(name)
            self._logits[key] = export_test.dump_logits(
                self.trainer, model.config, model.checkpoint, tokens)["logits"]
        return self._logits[key]

    def generate(self, name, prompt, steps):
        """`onset-train generate`: {"tokens": prompt, "generated": new ids}."""
        import json

        model = self.get(name)
        result = subprocess.run(
            [self.trainer, "generate", "--config", model.config, "--checkpoint",
             model.checkpoint, "--tokens", ",".join(map(str, prompt)), "--steps", str(steps)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"onset-train generate exited {result.returncode}:\n"
                               f"{result.stderr}")
        return json.loads(result.stdout.strip().splitlines()[-1])
