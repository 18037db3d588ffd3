"""What a results source tells about a cell and a metric point: the shapes both sources return."""

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Cell:
    """A grid point of a study (trunks, the shared jobs of WSD branches, are never one).

    `axes` maps each axis (arch, window, pos, tokens, seed and every varied field) to its value
    as the coordinator stores it: a string, "-" where the axis does not apply."""

    cell_id: str
    axes: dict = field(default_factory=dict)
    state: str = "queued"
    role: str = "cell"
    tokens_done: int = 0
    tokens_budget: int = 0


@dataclass(frozen=True)
class Point:
    """A metric point: `value` None where it is not finite (NaN, infinities), `at_unix_ms` None
    where the wall-clock time of its measurement is not known."""

    cell_id: str
    metric: str
    tokens: int
    value: float | None
    at_unix_ms: int | None
