"""Model size as the user's budget: a number of expansion vectors, or a prediction latency per sample
on this machine, turned into the largest expansion the fit may build; and the fitted model's
measured prediction cost.

    budget=None      no cap (the estimator's own rule)
    budget=50        at most 50 expansion vectors (support vectors for NSSVC) per binary problem
    budget="20us"    predict must cost at most 20 microseconds per sample: the cap is the largest
                     number of expansion vectors whose measured cost fits (calibrate_expansion)

A latency budget is measured, not modelled: the fit times ``predict`` of stand-in models of
CALIBRATION_SIZES expansion vectors (training rows, the fitted kernel, the estimator's threads) on up
to CALIBRATION_ROWS training rows, takes the cost per sample as a + b N_z, and solves for N_z. The fitted model reports ``prediction_cost_``, seconds per sample of ``predict`` on
up to CALIBRATION_ROWS training rows (the median of PASSES passes: the best one promised a cost the
median predict then missed by 1.3-1.5x on a busy 2-core machine), whatever the budget.
"""

from __future__ import annotations

import math
import numbers
import re
import time

import numpy as np

CALIBRATION_ROWS = 2048
CALIBRATION_SIZES = (16, 256)
_LATENCY = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(us|µs|ms|s)\s*$")
_UNIT = {"us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0}


def parse_budget(budget):
    """('size', n) for an int, ('latency', seconds per sample) for a string like '20us', or None."""
    if budget is None:
        return None
    if isinstance(budget, (bool, np.bool_)):
        raise ValueError(f"budget must be None, a positive int (expansion vectors) or a latency such as '20us', "
                         f"got {budget!r}")
    if isinstance(budget, numbers.Integral):
        if budget < 1:
            raise ValueError(f"budget as a number of expansion vectors must be >= 1, got {budget!r}")
        return ("size", int(budget))
    if isinstance(budget, str):
        m = _LATENCY.match(budget)
        if m is None or float(m.group(1)) <= 0:
            raise ValueError(f"budget as a latency must be a positive number with a unit us, ms or s per sample "
                             f"(e.g. '20us'), got {budget!r}")
        return ("latency", float(m.group(1)) * _UNIT[m.group(2)])
    raise ValueError(f"budget must be None, a positive int (expansion vectors) or a latency such as '20us', "
                     f"got {budget!r}")


PASSES = 5


def _median_of(fn, repeats=PASSES):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def calibrate_expansion(probe, X, seconds):
    """The largest number of expansion vectors per problem whose model predicts in at most ``seconds``
    per sample: ``probe(n_z)`` returns a model of n_z vectors per problem (rows of X, the fitted
    kernel, every problem), whose ``predict`` is timed (prediction_cost) at CALIBRATION_SIZES on up
    to CALIBRATION_ROWS rows of X, the cost fitted as a + b n_z per sample. At least 1 (a budget
    below a one-vector model's cost cannot be met; the model's ``prediction_cost_`` then says so)."""
    n = min(X.shape[0], CALIBRATION_ROWS)
    sizes, costs = [], []
    for size in CALIBRATION_SIZES:
        size = min(size, n)
        if sizes and size == sizes[-1]:
            break
        sizes.append(size)
        costs.append(prediction_cost(probe(size), X))
    if len(sizes) == 1:
        per, fixed = costs[0] / sizes[0], 0.0
    else:
        per = max((costs[1] - costs[0]) / (sizes[1] - sizes[0]), 1e-15)
        fixed = max(0.0, costs[0] - per * sizes[0])
    fits = (seconds - fixed) / per if seconds > fixed else 0.0
    return max(1, math.floor(fits * (1.0 + 1e-12)))  # (a quotient of 24.9999999 is 25 vectors)


def prediction_cost(model, X):
    """Seconds per sample of model.predict on up to CALIBRATION_ROWS rows of X (median of PASSES)."""
    rows = X[:CALIBRATION_ROWS]
    return _median_of(lambda: model.predict(rows)) / rows.shape[0]
