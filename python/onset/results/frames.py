"""The DataFrames of onset.Results, built from a source's cells and points.

Axis columns are named `axis.NAME`, as `onset export --format csv` names them, so that no axis
(`tokens` is the budget) collides with a column of the points (`tokens` is when one was
measured). Axis values are the strings the coordinator stores: `pd.to_numeric(df["axis.tokens"])`
makes numbers of them, and "-" marks an axis that does not apply (the window of full attention).
"""

import pandas as pd

AXIS_PREFIX = "axis."


def axis_columns(cells):
    """The sorted union of the cells' axes, as `axis.NAME` columns (the export's order)."""
    return [AXIS_PREFIX + name for name in sorted({a for c in cells for a in c.axes})]


def _axes_frame(cells):
    """cell_id, axis.* (None where a cell lacks an axis), in queue order."""
    columns = axis_columns(cells)
    rows = [[c.cell_id] + [c.axes.get(col[len(AXIS_PREFIX):]) for col in columns] for c in cells]
    return pd.DataFrame(rows, columns=["cell_id"] + columns)


def _points_frame(points):
    """cell_id, metric, tokens (int64), value (float64, NaN where not finite), at_unix_ms
    (nullable Int64) and wall_time (UTC datetimes, NaT where unknown)."""
    frame = pd.DataFrame({
        "cell_id": pd.Series([p.cell_id for p in points], dtype="str"),
        "metric": pd.Series([p.metric for p in points], dtype="str"),
        "tokens": pd.Series([p.tokens for p in points], dtype="int64"),
        "value": pd.Series([float("nan") if p.value is None else p.value for p in points],
                           dtype="float64"),
        "at_unix_ms": pd.array([p.at_unix_ms for p in points], dtype="Int64"),
    })
    frame["wall_time"] = pd.to_datetime(frame["at_unix_ms"], unit="ms", utc=True)
    return frame


def metrics_frame(cells, points):
    """A row per metric point: cell_id, axis.*, metric, tokens, value, at_unix_ms, wall_time; in
    queue order of the cells, then by metric and tokens. Points of cells not in `cells` are left
    out."""
    axes = _axes_frame(cells)
    order = {c.cell_id: i for i, c in enumerate(cells)}
    frame = _points_frame([p for p in points if p.cell_id in order])
    frame["_order"] = frame["cell_id"].map(order).astype("int64")
    frame = frame.sort_values(["_order", "metric", "tokens"], kind="stable")
    frame = frame.drop(columns="_order").merge(axes, on="cell_id", how="left", sort=False)
    columns = ["cell_id"] + list(axes.columns[1:]) + ["metric", "tokens", "value", "at_unix_ms",
                                                      "wall_time"]
    return frame[columns].reset_index(drop=True)


def final_values(points):
    """{(cell_id, metric): value at the largest tokens}: NaN when that point's value was not
    finite (an earlier finite value does not stand in for it)."""
    finals = {}
    for p in points:
        key = (p.cell_id, p.metric)
        if key not in finals or p.tokens >= finals[key][0]:
            finals[key] = (p.tokens, float("nan") if p.value is None else p.value)
    return {key: value for key, (_, value) in finals.items()}


def cells_frame(cells, points):
    """A row per cell, in queue order: cell_id, axis.*, state, tokens_budget, tokens_done, then a
    column per metric (sorted by name) holding its final value, NaN where the cell has none."""
    frame = _axes_frame(cells)
    frame["state"] = [c.state for c in cells]
    frame["tokens_budget"] = pd.Series([c.tokens_budget for c in cells], dtype="int64")
    frame["tokens_done"] = pd.Series([c.tokens_done for c in cells], dtype="int64")
    finals = final_values(points)
    metrics = sorted({metric for _, metric in finals})
    values = {m: [finals.get((c.cell_id, m), float("nan")) for c in cells] for m in metrics}
    metric_frame = pd.DataFrame(values, columns=metrics, dtype="float64", index=frame.index)
    return pd.concat([frame, metric_frame], axis=1)
