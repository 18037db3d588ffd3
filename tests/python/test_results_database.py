"""onset.open on a data directory: cells() and metrics() hold what `onset export --format csv`
prints of the same study, leave trunks out, and never write to the database."""

import os
import shutil
import sqlite3

import pytest

import tiny_study
from results_helpers import as_printed, csv_values, export_csv

STUDY = tiny_study.NAME


@pytest.fixture(scope="module")
def results(pandas, study_data, onset_cli):
    import onset

    with onset.open(study_data, onset_bin=onset_cli) as results:
        yield results


def test_metrics_equal_export_csv(results, study_data, onset_cli, pandas):
    frame = results.metrics(STUDY)
    csv = export_csv(pandas, onset_cli, study_data)
    axes = [c for c in csv.columns if c.startswith("axis.")]
    assert list(frame.columns) == ["cell_id"] + axes + ["metric", "tokens", "value",
                                                        "at_unix_ms", "wall_time"]
    assert len(frame) == len(csv) > 0
    printed = as_printed(frame)
    for column in ["cell_id"] + axes + ["metric", "tokens"]:
        assert printed[column].tolist() == csv[column].tolist(), column
    pandas.testing.assert_series_equal(frame["value"], csv_values(pandas, csv["value"]),
                                       check_names=False, check_exact=True)
    assert printed["at_unix_ms"].tolist() == csv["at_unix_ms"].tolist()
    # A study run by this build: every point has the time it was measured at.
    assert (csv["at_unix_ms"] != "").all()


def test_types_and_wall_time(results, pandas):
    frame = results.metrics(STUDY)
    assert str(frame["tokens"].dtype) == "int64" and str(frame["value"].dtype) == "float64"
    assert str(frame["at_unix_ms"].dtype) == "Int64"
    assert str(frame["wall_time"].dtype).startswith("datetime64") and \
        str(frame["wall_time"].dt.tz) == "UTC"
    known = frame["at_unix_ms"].notna()
    assert (frame["wall_time"].isna() == ~known).all()
    if known.any():
        expected = pandas.to_datetime(frame.loc[known, "at_unix_ms"].astype("int64"), unit="ms",
                                      utc=True)
        assert (frame.loc[known, "wall_time"] == expected).all()


def test_cells_equal_export_csv(results, study_data, onset_cli, pandas):
    cells = results.cells(STUDY)
    csv = export_csv(pandas, onset_cli, study_data)
    axes = [c for c in csv.columns if c.startswith("axis.")]
    assert list(cells.columns[:len(axes) + 4]) == ["cell_id"] + axes + \
        ["state", "tokens_budget", "tokens_done"]
    assert cells["cell_id"].tolist() == list(dict.fromkeys(csv["cell_id"]))
    assert (cells["state"] == "succeeded").all()
    csv["value"] = csv_values(pandas, csv["value"])
    csv["tokens"] = csv["tokens"].astype("int64")
    # The final value: the point with the most tokens, per cell and metric.
    finals = csv.sort_values("tokens").groupby(["cell_id", "metric"]).tail(1)
    metrics = sorted(set(csv["metric"]))
    assert list(cells.columns[len(axes) + 4:]) == metrics
    by_cell = cells.set_index("cell_id")
    for row in finals.itertuples():
        got = by_cell.loc[row.cell_id, row.metric]
        assert got == row.value or (got != got and row.value != row.value), row
    first_rows = csv.drop_duplicates("cell_id").set_index("cell_id")
    for axis in axes:
        assert by_cell[axis].tolist() == first_rows.loc[by_cell.index, axis].tolist(), axis


def test_trunks_are_left_out(results, study_data):
    db = sqlite3.connect(f"file:{os.path.join(study_data, 'onset.db')}?mode=ro", uri=True)
    trunks = {h for (h,) in db.execute("SELECT hash FROM cells WHERE role = 'trunk'")}
    trunk_points = db.execute("SELECT COUNT(*) FROM metrics m JOIN cells c ON c.id = m.cell_id "
                              "WHERE c.role = 'trunk'").fetchone()[0]
    db.close()
    assert trunks and trunk_points > 0  # the study has trunks with points of their own
    assert not trunks & set(results.cells(STUDY)["cell_id"])
    assert not trunks & set(results.metrics(STUDY)["cell_id"])
    assert len(results.cells(STUDY)) == 4


def test_filters(results, pandas):
    everything = results.metrics(STUDY)
    cell = everything["cell_id"].iloc[-1]
    some = results.metrics(STUDY, names=["train/loss", "eval/heldout_loss"], cells=[cell[:8]])
    expected = everything[everything["metric"].isin(["train/loss", "eval/heldout_loss"]) &
                          (everything["cell_id"] == cell)].reset_index(drop=True)
    pandas.testing.assert_frame_equal(some, expected)
    one = results.metrics(STUDY, names="train/loss")
    assert set(one["metric"]) == {"train/loss"}
    assert results.metric_names(STUDY) == sorted(set(everything["metric"]))


def test_errors(results):
    with pytest.raises(LookupError, match="no study named 'absent'"):
        results.cells("absent")
    with pytest.raises(ValueError, match="no cell"):
        results.metrics(STUDY, cells=["0000000000000000"])


def test_studies(results):
    studies = results.studies()
    assert studies["name"].tolist() == [STUDY]
    assert studies["description"].tolist() == ["two architectures, two budgets under WSD"]
    assert studies["tags"].tolist() == [["test", "tiny"]]
    assert studies["source_name"].str.endswith("tiny.yaml").all()
    assert str(studies["created"].dt.tz) == "UTC"


def test_never_writes(results, study_data):
    database = os.path.join(study_data, "onset.db")
    before = os.stat(database)
    results.cells(STUDY)
    results.metrics(STUDY)
    with pytest.raises(sqlite3.OperationalError):
        results.source._db.execute("CREATE TABLE written (x INTEGER)")
    after = os.stat(database)
    assert (before.st_size, before.st_mtime_ns) == (after.st_size, after.st_mtime_ns)


def test_database_without_point_times(pandas, study_data, tmp_path):
    """A database from before schema version 11 has no metrics.at_unix_ms: its points have no
    time, and everything else reads the same."""
    import onset

    copy = str(tmp_path / "onset.db")
    source = sqlite3.connect(f"file:{os.path.join(study_data, 'onset.db')}?mode=ro", uri=True)
    target = sqlite3.connect(copy)
    source.backup(target)
    source.close()
    columns = {row[1] for row in target.execute("PRAGMA table_info(metrics)")}
    if "at_unix_ms" in columns:
        target.execute("ALTER TABLE metrics DROP COLUMN at_unix_ms")
        target.commit()
    target.close()
    with onset.open(study_data) as new, onset.open(copy) as old:
        assert not old.source.has_point_times
        before = new.metrics(STUDY)
        after = old.metrics(STUDY)
        assert after["at_unix_ms"].isna().all() and after["wall_time"].isna().all()
        columns = ["cell_id", "metric", "tokens", "value"]
        pandas.testing.assert_frame_equal(after[columns], before[columns])
        pandas.testing.assert_frame_equal(old.cells(STUDY), new.cells(STUDY))
    shutil.rmtree(tmp_path, ignore_errors=True)
