"""Shared set-up of the onset package's tests.

The binaries come from $ONSET_BIN_DIR (default: build/bin of this checkout); a test whose binary
is missing skips, saying which. Tests that need pandas, torch or transformers skip without them
(pytest.importorskip). Everything runs on one CPU thread, offline, and writes only under pytest's
temporary directories: transformers copies the models' code into a temporary HF_HOME.
"""

import os
import shutil
import sys
import tempfile

import pytest

sys.dont_write_bytecode = True  # keep the source tree clean when run by hand

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)  # the helpers beside this file
sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, os.path.join(REPO, "tests", "model"))  # export_test: the kinds of model

# Before transformers is first imported: no network, no progress bars, no files in ~/.cache.
_HF_HOME = tempfile.mkdtemp(prefix="onset-hf-home-")
os.environ["HF_HOME"] = _HF_HOME
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
os.environ["TRANSFORMERS_VERBOSITY"] = "error"
os.environ["TOKENIZERS_PARALLELISM"] = "false"


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(_HF_HOME, ignore_errors=True)


def bin_dir():
    """$ONSET_BIN_DIR, else build/bin of this checkout."""
    return os.environ.get("ONSET_BIN_DIR") or os.path.join(REPO, "build", "bin")


def binary(name):
    """The path of a built program; skips the test when it is missing."""
    path = os.path.join(bin_dir(), name)
    if not os.access(path, os.X_OK):
        pytest.skip(f"no {path} (build it, or set ONSET_BIN_DIR)")
    return path


@pytest.fixture(scope="session")
def torch():
    """torch, on one thread."""
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)
    return torch


@pytest.fixture(scope="session")
def onset_train():
    return binary("onset-train")


@pytest.fixture(scope="session")
def onset_cli():
    return binary("onset")


@pytest.fixture(scope="session")
def models(torch, onset_train, tmp_path_factory):
    """The tiny trained models of tests/model/export_test.py's KINDS, made on demand."""
    from trained_models import TrainedModels

    return TrainedModels(onset_train, str(tmp_path_factory.mktemp("models")))


@pytest.fixture(scope="session")
def study_data(onset_cli, tmp_path_factory):
    """The data directory of the tiny study (tiny_study.py), run once."""
    from tiny_study import run_study

    return run_study(onset_cli, str(tmp_path_factory.mktemp("study")))


@pytest.fixture(scope="session")
def pandas():
    return pytest.importorskip("pandas")


@pytest.fixture(scope="session")
def transformers(torch):
    return pytest.importorskip("transformers")


def kind_names():
    """The names of tests/model/export_test.py's KINDS, read from its source so that collecting
    the tests needs no torch (export_test imports it)."""
    import ast

    with open(os.path.join(REPO, "tests", "model", "export_test.py")) as f:
        tree = ast.parse(f.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "KINDS"
                                                for t in node.targets):
            return list(ast.literal_eval(node.value))
    raise LookupError("tests/model/export_test.py defines no KINDS")


KIND_NAMES = kind_names()

# Max |logit difference| per kind between the Hugging Face model and onset-train dump-logits,
# shown at the end of the run.
LOGIT_DIFFERENCES = {}


@pytest.fixture(scope="session")
def logit_differences():
    return LOGIT_DIFFERENCES


def pytest_terminal_summary(terminalreporter):
    if LOGIT_DIFFERENCES:
        terminalreporter.write_line("max |logit difference|, transformers model vs onset-train "
                                    "dump-logits:")
        for name, diff in LOGIT_DIFFERENCES.items():
            terminalreporter.write_line(f"  {name:22s} {diff:.3g}")
