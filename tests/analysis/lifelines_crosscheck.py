"""onset's Kaplan-Meier curve, median, the median's confidence interval and the log-rank test,
checked against lifelines (a library nobody here wrote) on hand-made and random censored
crossing sets: ties, both sides censored, every cell censored, one cell.

Usage: lifelines_crosscheck.py CROSSCHECK_BINARY (run by ctest with a Python that has lifelines:
scripts/setup makes ~/.cache/onset/lifelines-venv for the tests). Exit 0 when every case agrees,
1 with the cases that do not, 77 (skip) without lifelines.

How the methods line up:
- a left-censored crossing ("crossed at or before B") is an event at B in onset's Kaplan-Meier
  (analysis/survival.h); lifelines' KaplanMeierFitter has no left-censoring in the same fit, so
  it is given as an event at B too, and the two must then agree exactly. onset's own handling of
  left-censoring is tested against hand-computed cases in C++ (median_interval_test.cc,
  survival_test.cc);
- the median: lifelines takes the first time S <= 1/2; onset the same, except where S sits at
  exactly 1/2 up to a later event, where it takes the geometric mean of the two times (tokens
  compare on a log scale); those cases are checked against that rule;
- the interval: lifelines' median_survival_times over its confidence_interval_ (Greenwood's
  variance on the log(-log) scale) is the Brookmeyer-Crowley inversion onset computes; an end
  lifelines reports as infinite is one onset reports as "> X".
"""

import json
import math
import random
import subprocess
import sys

try:
    import numpy as np
    from lifelines import KaplanMeierFitter
    from lifelines.statistics import logrank_test
    from lifelines.utils import median_survival_times
except ImportError as e:  # pragma: no cover
    print(f"SKIP: lifelines is not installed ({e})")
    sys.exit(77)

TOL = 1e-9


def hand_made():
    e, l, r = "exact", "left", "right"
    return [
        {"group": [[e, t] for t in range(1, 11)], "baseline": [[e, 3], [e, 5]]},
        {"group": [[e, 300], [e, 500], [e, 900]], "baseline": [[e, 600], [r, 1000]]},
        {"group": [[e, 500], [r, 1000], [r, 1000]], "baseline": [[e, 100], [e, 200]]},
        {"group": [[l, 100], [e, 500], [e, 900]], "baseline": [[l, 100], [r, 900]]},
        {"group": [[e, 2], [e, 2], [e, 2], [r, 2], [e, 4]], "baseline": [[e, 2], [r, 3]]},
        {"group": [[r, 10], [r, 20]], "baseline": [[e, 5]]},         # every cell censored
        {"group": [[e, 7]], "baseline": [[e, 9]]},                     # one cell each
        {"group": [[e, 1], [e, 2], [r, 3], [e, 4]], "baseline": [[e, 1], [e, 2], [e, 3]]},
    ]


def random_cases(rng, count):
    cases = []
    for _ in range(count):
        def cells():
            n = rng.randint(1, 12)
            out = []
            for _ in range(n):
                at = rng.choice([1, 2, 3, 5, 8, 13, 21, 34]) * 1000  # ties on purpose
                kind = rng.choices(["exact", "right", "left"], [0.6, 0.3, 0.1])[0]
                out.append([kind, at])
            return out
        cases.append({"group": cells(), "baseline": cells(),
                      "level": rng.choice([0.8, 0.9, 0.95, 0.99])})
    return cases


def lifelines_view(cells):
    durations = [at for _, at in cells]
    observed = [0 if kind == "right" else 1 for kind, _ in cells]
    return durations, observed


def check(case, onset):
    problems = []
    level = case.get("level", 0.95)
    durations, observed = lifelines_view(case["group"])
    kmf = KaplanMeierFitter(alpha=1 - level).fit(durations, observed)
    sf = kmf.survival_function_["KM_estimate"]

    # The curve at every event time.
    for at, survival in onset["steps"]:
        if abs(sf.loc[at] - survival) > TOL:
            problems.append(f"S({at}) lifelines {sf.loc[at]} onset {survival}")
    events = sorted({at for kind, at in case["group"] if kind != "right"})
    if [s[0] for s in onset["steps"]] != events:
        problems.append(f"event times lifelines {events} onset {[s[0] for s in onset['steps']]}")

    # The median.
    kind, at = onset["median"]
    theirs = kmf.median_survival_time_
    half = [t for t in events if abs(sf.loc[t] - 0.5) <= 1e-12]
    if half:
        later = [t for t in events if t > half[0]]
        if later:
            want = ("exact or left", math.sqrt(half[0] * later[0]))
            if kind not in ("exact", "left") or abs(at - want[1]) > TOL * want[1]:
                problems.append(f"median at S = 1/2: onset {onset['median']}, rule {want}")
    elif math.isinf(theirs):
        if kind != "right":
            problems.append(f"median lifelines inf onset {onset['median']}")
    elif kind not in ("exact", "left") or abs(at - theirs) > TOL * max(1, theirs):
        problems.append(f"median lifelines {theirs} onset {onset['median']}")

    # The median's interval.
    ci = median_survival_times(kmf.confidence_interval_)
    lower, upper = float(ci.iloc[0, 0]), float(ci.iloc[0, 1])
    for name, theirs, (okind, oat) in (("lower", lower, onset["lower"]),
                                        ("upper", upper, onset["upper"])):
        if math.isinf(theirs):
            if okind != "right":
                problems.append(f"{name} end lifelines inf onset {[okind, oat]}")
        elif okind not in ("exact", "left") or abs(oat - theirs) > TOL * max(1, theirs):
            problems.append(f"{name} end lifelines {theirs} onset {[okind, oat]}")

    # The log-rank test.
    bd, bo = lifelines_view(case["baseline"])
    if sum(observed) + sum(bo) > 0:
        test = logrank_test(durations, bd, event_observed_A=observed, event_observed_B=bo)
        stat, p = float(test.test_statistic), float(test.p_value)
        if not onset["logrank_defined"]:
            if not (np.isnan(stat) or stat == 0):
                problems.append(f"log-rank lifelines {stat} onset undefined")
        else:
            if abs(stat - onset["statistic"]) > TOL * max(1, stat):
                problems.append(f"log-rank statistic lifelines {stat} onset {onset['statistic']}")
            if abs(p - onset["p_value"]) > TOL:
                problems.append(f"log-rank p lifelines {p} onset {onset['p_value']}")
    return problems


def main():
    binary = sys.argv[1]
    rng = random.Random(20261206)
    cases = hand_made() + random_cases(rng, 300)
    for case in cases:
        case.setdefault("level", 0.95)
    out = subprocess.run([binary], input="".join(json.dumps(c) + "\n" for c in cases),
                         capture_output=True, text=True, check=True).stdout.splitlines()
    failed = 0
    for case, line in zip(cases, out):
        problems = check(case, json.loads(line))
        if problems:
            failed += 1
            print(json.dumps(case))
            for p in problems:
                print("   ", p)
    print(f"{len(cases) - failed} of {len(cases)} cases agree with lifelines")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
