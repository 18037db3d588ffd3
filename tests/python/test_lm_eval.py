"""lm-evaluation-harness on a cell that `onset run` trained until it retrieves.

`onset export-model --format hf --lm-eval` writes the model of a checkpoint and the onset_niah
tasks of the cell's own NIAH prompts; lm_eval (its Hugging Face backend, greedy, offline) must
score each prompt as onset did: its accuracies equal the niah/acc, niah/acc@<L> and
niah/extrapolation/acc the training run recorded at that checkpoint, and its answers equal
onset's answer by answer, right or wrong. The checkpoint is the one whose recorded accuracy is
nearest 0.5, so that both right and wrong answers are compared where training gives both.
"""

import glob
import json
import os
import re
import shlex
import subprocess
import sys

import pytest

lm_eval = pytest.importorskip("lm_eval")

STUDY_NAME = "retrieval"
# One Gated DeltaNet hybrid that learns multi-key retrieval within 1M tokens on two CPU cores
# (about 0.2 at 500K, 0.9 at 750K, 1.0 at 1M), a checkpoint kept at every eval point, and a
# prompt length past seq_len for the extrapolation task. About 45 s of training.
STUDY = """\
name: retrieval
model: {layers: 2, d_model: 64, heads: 2, seq_len: 128}
train: {lr: 3e-3, warmup_tokens: 500K, answer_loss_weight: 16, batch_tokens: 4096,
        micro_batch: 32, log_every_steps: 50, checkpoint_every_tokens: 250K,
        keep_checkpoints: 4}
data: {records_per_seq: 12, key_len: 1, value_len: 1, min_distance: 4}
eval: {every_tokens: 250K, heldout_seqs: 4, niah_lengths: [64, 128, 192],
       niah_depths: [0.1, 0.5, 0.9], niah_samples: 8}
grid:
  arch: ["gdn:1"]
  pos: [rope]
  tokens: [1M]
  seeds: 1
"""


def _env():
    return {k: v for k, v in os.environ.items()
            if k not in ("ONSET_COORDINATOR", "ONSET_TOKEN", "ONSET_TOKEN_FILE", "ONSET_DATA_DIR")}


@pytest.fixture(scope="module")
def trained(onset_cli, tmp_path_factory):
    """(data directory, cell id) of the study, trained once."""
    work = str(tmp_path_factory.mktemp("retrieval"))
    path = os.path.join(work, "retrieval.yaml")
    with open(path, "w") as f:
        f.write(STUDY)
    data_dir = os.path.join(work, "data")
    result = subprocess.run([onset_cli, "run", path, "--data-dir", data_dir, "--workers", "1",
                             "--no-results"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=_env(), stdin=subprocess.DEVNULL, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    import onset

    with onset.open(data_dir) as results:
        cells = results.cells(STUDY_NAME)
    assert len(cells) == 1
    return data_dir, cells["cell_id"][0]


def recorded(data_dir, cell):
    """{tokens: {metric: value}} of the NIAH accuracies the run recorded."""
    import onset

    with onset.open(data_dir) as results:
        points = results.metrics(STUDY_NAME, cells=[cell])
    out = {}
    for row in points.itertuples():
        if re.fullmatch(r"niah/(acc(@\d+)?|extrapolation/acc)", row.metric):
            out.setdefault(int(row.tokens), {})[row.metric] = row.value
    return out


def checkpoints(data_dir, cell):
    """{tokens: path} of the checkpoints the cell kept."""
    paths = glob.glob(os.path.join(data_dir, "checkpoints", STUDY_NAME, cell, "**",
                                   "ckpt-*.pt"), recursive=True)
    return {int(re.search(r"ckpt-(\d+)\.pt$", p).group(1)): p for p in paths}


@pytest.fixture(scope="module")
def exported(trained, onset_cli, tmp_path_factory):
    """The export of the checkpoint whose recorded niah/acc is nearest 0.5: (directory, what
    export-model printed, the metrics recorded at that checkpoint)."""
    data_dir, cell = trained
    points = recorded(data_dir, cell)
    kept = checkpoints(data_dir, cell)
    at_eval = sorted(t for t in kept if "niah/acc" in points.get(t, {}))
    assert at_eval, f"no checkpoint at an eval point: {sorted(kept)} vs {sorted(points)}"
    tokens = min(at_eval, key=lambda t: (abs(points[t]["niah/acc"] - 0.5), t))
    out = str(tmp_path_factory.mktemp("export") / "model")
    result = subprocess.run(
        [onset_cli, "export-model", STUDY_NAME, cell, "--data-dir", data_dir, "--out", out,
         "--format", "hf", "--lm-eval", "--checkpoint", kept[tokens], "--python",
         sys.executable], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    assert result.returncode == 0, result.stderr
    return out, result.stdout, points[tokens]


@pytest.fixture(scope="module")
def harness(exported, tmp_path_factory):
    """lm_eval run as export-model says, on every task, with the samples logged: (results
    JSON, {task: [samples]})."""
    model_dir, printed, _ = exported
    command = next(line.strip() for line in printed.splitlines() if " -m lm_eval " in line)
    argv = shlex.split(command)
    # The Python export-model was given, so that the line runs as printed (no lm_eval on PATH
    # needed), with absolute paths, from any directory.
    assert argv[:3] == [sys.executable, "-m", "lm_eval"], command
    assert f"pretrained={os.path.abspath(model_dir)}," in command
    assert argv[argv.index("--tasks") + 1] == "onset_niah"
    argv[argv.index("--tasks") + 1] = "onset_niah,onset_niah_extrapolation,onset_niah_lengths"
    results_dir = str(tmp_path_factory.mktemp("lm_eval"))
    argv += ["--device", "cpu", "--output_path", results_dir, "--log_samples"]
    env = {**_env(), "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, timeout=600, cwd=str(tmp_path_factory.mktemp("elsewhere")))
    assert result.returncode == 0, result.stdout + result.stderr
    (results_file,) = glob.glob(os.path.join(results_dir, "**", "results_*.json"), recursive=True)
    with open(results_file) as f:
        results = json.load(f)["results"]
    samples = {}
    for path in glob.glob(os.path.join(results_dir, "**", "samples_*.jsonl"), recursive=True):
        task = re.match(r"samples_(.+)_\d{4}-", os.path.basename(path)).group(1)
        with open(path, encoding="utf-8") as f:
            samples[task] = [json.loads(line) for line in f]
    return results, samples


def test_export_model_writes_the_tasks_and_says_how_to_run_them(exported):
    model_dir, printed, metrics = exported
    task_dir = os.path.join(model_dir, "lm_eval")
    names = sorted(os.listdir(task_dir))
    assert names == ["onset_niah.py", "onset_niah.yaml", "onset_niah_extrapolation.yaml",
                     "onset_niah_len128.yaml", "onset_niah_len192.yaml", "onset_niah_len64.yaml",
                     "prompts.jsonl"]
    # 3 lengths x 3 depths x 8 samples; max_length holds the longest prompt and its answer.
    assert "72 prompts" in printed
    assert "max_length=193" in printed and "--include_path " + task_dir in printed
    assert f"niah/acc at this checkpoint: {metrics['niah/acc']:.6g}" in printed


def test_the_prompts_read_back_through_the_tokenizer(exported, transformers):
    """Text and ids of every prompt are one and the same: what lm-eval encodes is what onset
    evaluated."""
    model_dir, _, _ = exported
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir, trust_remote_code=True)
    with open(os.path.join(model_dir, "lm_eval", "prompts.jsonl"), encoding="utf-8") as f:
        docs = [json.loads(line) for line in f]
    for doc in docs:
        assert tokenizer.encode(doc["prompt"], add_special_tokens=False) == doc["prompt_ids"]
        assert tokenizer.decode(doc["prompt_ids"]) == doc["prompt"]
        assert tokenizer.encode(doc["answer"], add_special_tokens=False) == doc["answer_ids"]
        assert doc["prompt_ids"][0] == tokenizer.bos_token_id and len(doc["answer_ids"]) == 1


def test_onsets_own_answers_score_what_the_run_recorded(exported):
    """The answers niah-prompts decoded at the checkpoint give the recorded accuracies: the
    prompts are the evaluator's, at every length."""
    model_dir, _, metrics = exported
    with open(os.path.join(model_dir, "lm_eval", "prompts.jsonl"), encoding="utf-8") as f:
        docs = [json.loads(line) for line in f]
    for length in (64, 128, 192):
        mine = [d["onset_correct"] for d in docs if d["length"] == length]
        assert len(mine) == 24
        assert sum(mine) / len(mine) == metrics[f"niah/acc@{length}"]


def test_lm_eval_accuracy_equals_the_cells_niah_acc(harness, exported):
    results, _ = harness
    _, _, metrics = exported
    assert results["onset_niah"]["exact_match,none"] == pytest.approx(metrics["niah/acc"],
                                                                       abs=1e-12)
    assert results["onset_niah_extrapolation"]["exact_match,none"] == pytest.approx(
        metrics["niah/extrapolation/acc"], abs=1e-12)
    for length in (64, 128, 192):
        assert results[f"onset_niah_len{length}"]["exact_match,none"] == pytest.approx(
            metrics[f"niah/acc@{length}"], abs=1e-12), length


def test_lm_eval_answers_as_onset_answers(harness):
    """Prompt by prompt, the harness decodes what onset decoded, and scores it the same."""
    _, samples = harness
    assert sorted(samples) == ["onset_niah", "onset_niah_extrapolation", "onset_niah_len128",
                               "onset_niah_len192", "onset_niah_len64"]
    for task, rows in samples.items():
        for row in rows:
            doc = row["doc"]
            assert row["filtered_resps"][0] == doc["onset_answer"], (task, doc["length"],
                                                                     doc["depth"], doc["sample"])
            assert row["exact_match"] == float(doc["onset_correct"])
    assert len(samples["onset_niah"]) == 48 and len(samples["onset_niah_extrapolation"]) == 24


def test_a_decoded_nul_is_not_a_missing_token():
    """The control on the score: NumPy's string arrays, which lm-eval's built-in exact_match
    compares, drop trailing NULs, so an answer ending in byte 0 would match a decoding one token
    short (a special decoded, then left out of the text). onset_niah compares Python strings."""
    from lm_eval.api.metrics import exact_match_hf_evaluate

    from onset import onset_niah

    assert exact_match_hf_evaluate(["ab"], ["ab\x00"])["exact_match"] == 1.0  # the shortcut
    assert onset_niah.process_results({"answer": "ab\x00"}, ["ab"]) == {"exact_match": 0.0}
    assert onset_niah.process_results({"answer": "ab\x00"}, ["ab\x00"]) == {"exact_match": 1.0}


def test_the_task_refuses_prompts_without_text(tmp_path):
    from onset.lm_eval_task import write_task

    path = tmp_path / "ids.jsonl"
    path.write_text(json.dumps({"length": 64, "depth": 0.5, "sample": 0, "in_length": True,
                                "distance": 9, "prompt_ids": [256, 1, 2],
                                "answer_ids": [3]}) + "\n")
    with pytest.raises(ValueError, match="token file"):
        write_task(str(path), str(tmp_path / "task"))
    assert not os.path.exists(tmp_path / "task")


def test_export_model_refuses_lm_eval_without_hf(trained, onset_cli, tmp_path):
    data_dir, cell = trained
    result = subprocess.run([onset_cli, "export-model", STUDY_NAME, cell, "--data-dir", data_dir,
                             "--out", str(tmp_path / "m"), "--lm-eval"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    assert result.returncode == 2 and "--format hf" in result.stderr
    assert not os.path.exists(tmp_path / "m")


def test_the_prompts_depend_on_the_config_alone(exported, onset_train, tmp_path):
    """niah-prompts without a model writes the same prompts as with one (they are the evaluator's,
    the same at every eval point), and a missing checkpoint is a usage error naming it."""
    model_dir, _, _ = exported
    with open(os.path.join(model_dir, "config.json")) as f:
        config = json.load(f)["onset"]
    config_path = str(tmp_path / "cell.json")
    with open(config_path, "w") as f:
        json.dump(config, f)
    out = str(tmp_path / "prompts.jsonl")
    result = subprocess.run([onset_train, "niah-prompts", "--config", config_path, "--out", out],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"out": out, "prompts": 72, "max_length": 193,
                                         "vocabulary": "bytes"}
    fields = ("length", "depth", "sample", "in_length", "distance", "prompt_ids", "answer_ids",
              "prompt", "answer")
    with open(out, encoding="utf-8") as f:
        bare = [json.loads(line) for line in f]
    with open(os.path.join(model_dir, "lm_eval", "prompts.jsonl"), encoding="utf-8") as f:
        decoded = [json.loads(line) for line in f]
    assert [{k: d[k] for k in fields} for d in decoded] == bare
    assert not any("onset_answer" in d for d in bare)

    missing = str(tmp_path / "no-such-checkpoint")
    result = subprocess.run([onset_train, "niah-prompts", "--config", config_path, "--out", out,
                             "--checkpoint", missing], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert result.returncode == 2 and missing in result.stderr
