"""What the results tests compare against: `onset export --format csv` of the same study."""

import io
import subprocess

import tiny_study


def export_csv(pandas, onset, data_dir, metrics=None):
    """`onset export tiny --format csv` as a DataFrame of strings, as printed ("" for a value
    that is not finite and for an unknown time)."""
    argv = [onset, "export", tiny_study.NAME, "--format", "csv", "--data-dir", data_dir]
    if metrics:
        argv += ["--metrics", ",".join(metrics)]
    out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         check=True).stdout
    return pandas.read_csv(io.StringIO(out), dtype=str, keep_default_na=False)


def as_printed(frame):
    """A Results.metrics() frame's columns as the CSV prints them (numbers as text)."""
    printed = frame.copy()
    printed["tokens"] = frame["tokens"].map(str)
    printed["at_unix_ms"] = frame["at_unix_ms"].map(lambda v: "" if v is None or v != v
                                                    else str(int(v)))
    return printed


def csv_values(pandas, column):
    """The CSV's value column as floats: "" (not finite) -> NaN."""
    return pandas.to_numeric(column.replace("", "nan"))
