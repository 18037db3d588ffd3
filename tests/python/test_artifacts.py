"""`onset artifacts STUDY [CELL]`: each cell's checkpoints from the coordinator's records, with the
size the trainer reported (equal to the file's), its path, and whether the file is still there;
a deleted checkpoint shows as recorded but not present."""

import json
import os
import shutil
import subprocess

import tiny_study

STUDY = tiny_study.NAME


def artifacts(onset, data_dir, *extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("ONSET_COORDINATOR", "ONSET_TOKEN", "ONSET_TOKEN_FILE", "ONSET_DATA_DIR")}
    return subprocess.run([onset, "artifacts", STUDY, *extra, "--data-dir", data_dir],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def test_every_cells_checkpoints_with_their_sizes_and_configs(study_data, onset_cli):
    result = artifacts(onset_cli, study_data, "--json")
    assert result.returncode == 0, result.stderr
    listed = json.loads(result.stdout)
    assert listed["study"] == STUDY
    cells = listed["cells"]
    # Two architectures x two budgets, and the WSD trunk each pair of budgets shares.
    assert sorted(c["role"] for c in cells) == ["branch"] * 4 + ["trunk"] * 2
    for cell in cells:
        # A branch's config is what onset-train runs; a trunk's is its spec (the cell it trains).
        config = cell["config"]["cell"] if cell["role"] == "trunk" else cell["config"]
        assert config["study"] == STUDY
        assert cell["checkpoint_dir"].endswith(os.path.join("checkpoints", STUDY, cell["id"]))
        assert cell["checkpoints"], cell["id"]
        tokens = [c["tokens"] for c in cell["checkpoints"]]
        assert tokens == sorted(tokens, reverse=True)  # the newest first
        for c in cell["checkpoints"]:
            assert c["path"].startswith(cell["checkpoint_dir"] + os.sep)
            assert c["present"] == os.path.isfile(c["path"])
            if c["present"]:
                assert c["bytes"] == os.path.getsize(c["path"])


def test_a_deleted_checkpoint_is_recorded_but_not_present(study_data, onset_cli, tmp_path):
    copy = str(tmp_path / "data")
    shutil.copytree(study_data, copy)
    cell = json.loads(artifacts(onset_cli, copy, "--json").stdout)["cells"][0]
    gone = cell["checkpoints"][0]["path"].replace(study_data, copy, 1)
    os.remove(gone)
    result = artifacts(onset_cli, copy, cell["id"][:8])
    assert result.returncode == 0, result.stderr
    assert f"cell {cell['id']} " in result.stdout and "config: {" in result.stdout
    row = next(line for line in result.stdout.splitlines() if line.endswith(gone))
    assert " no " in row
    assert "no longer there" in result.stdout
    described = json.loads(artifacts(onset_cli, copy, cell["id"], "--json").stdout)["cells"]
    assert [c["present"] for c in described[0]["checkpoints"]][0] is False


def test_an_unknown_cell_is_named(study_data, onset_cli):
    result = artifacts(onset_cli, study_data, "ffffffffffffffff")
    assert result.returncode != 0 and "ffffffffffffffff" in result.stderr


def test_an_export_is_recorded_by_the_coordinator_and_listed(study_data, onset_cli, tmp_path):
    """`onset export-model` tells the coordinator where it wrote the export; `onset artifacts`
    lists it (format, host, path, size). Without a coordinator to record it (the read-only view
    of a data directory) the export is still written, with a note."""
    import socket

    import servers
    from conftest import binary

    branch = next(c for c in json.loads(artifacts(onset_cli, study_data, "--json").stdout)["cells"]
                  if c["role"] == "branch")
    listed_checkpoint = next(c for c in branch["checkpoints"] if c["present"])
    checkpoint = listed_checkpoint["path"]
    env = {k: v for k, v in os.environ.items()
           if k not in ("ONSET_COORDINATOR", "ONSET_TOKEN", "ONSET_TOKEN_FILE", "ONSET_DATA_DIR")}

    # No coordinator serves the data directory: written, not recorded, said so.
    plain = str(tmp_path / "unrecorded")
    result = subprocess.run([onset_cli, "export-model", STUDY, branch["id"], "--out", plain,
                             "--checkpoint", checkpoint, "--data-dir", study_data],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert result.returncode == 0, result.stderr
    assert "not recorded" in result.stderr
    assert os.path.isfile(os.path.join(plain, "model.safetensors"))

    database = servers.copy_database(study_data, str(tmp_path / "db"))
    with servers.coordinator(binary("onsetd"), database) as (grpc, _, token_file):
        remote = ["--coordinator", grpc, "--token-file", token_file]
        out = str(tmp_path / "exported")
        result = subprocess.run([onset_cli, "export-model", STUDY, branch["id"][:8], "--out", out,
                                 "--checkpoint", checkpoint, *remote],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        assert result.returncode == 0, result.stderr
        assert "not recorded" not in result.stderr
        listed = subprocess.run([onset_cli, "artifacts", STUDY, branch["id"], "--json", *remote],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env)
        assert listed.returncode == 0, listed.stderr
        exports = json.loads(listed.stdout)["cells"][0]["exports"]
        size = sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out))
        assert len(exports) == 1
        assert exports[0]["format"] == "safetensors"
        assert exports[0]["path"] == out
        assert exports[0]["host"] == socket.gethostname()
        assert exports[0]["bytes"] == size
        assert exports[0]["tokens"] == listed_checkpoint["tokens"]
        # A checkpoint the coordinator does not list (copied elsewhere, in a directory of its
        # own, which onset-train reads for its newest): its tokens come from its name, never "?".
        copied = tmp_path / "copied"
        copied.mkdir()
        shutil.copy(checkpoint, copied)
        newest = listed_checkpoint["tokens"]
        result = subprocess.run([onset_cli, "export-model", STUDY, branch["id"], "--out",
                                 str(tmp_path / "newest"), "--checkpoint", str(copied), *remote],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env)
        assert result.returncode == 0, result.stderr
        listed = subprocess.run([onset_cli, "artifacts", STUDY, branch["id"], "--json", *remote],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env)
        exports = json.loads(listed.stdout)["cells"][0]["exports"]
        assert [e["tokens"] for e in exports] == [newest, listed_checkpoint["tokens"]]
        text = subprocess.run([onset_cli, "artifacts", STUDY, *remote], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env)
        assert "exports (onset export-model):" in text.stdout
        assert " ? " not in text.stdout.split("exports (onset export-model):")[1]
        assert f"{socket.gethostname()}:{out}" in text.stdout
