"""Peak memory of a fit against the budget each estimator states (issue 22).

Every (estimator, data set) fit runs in a fresh interpreter (``--child``), because tracemalloc
cannot see the C++ core's memory. The child loads the set as a user would (CSR with int64 indices
from the svmlight files, dense float64 for skin), collects garbage, resets the kernel's peak-RSS
counter (``/proc/self/clear_refs``), reads VmRSS, fits, and reads VmHWM: the fit's peak is
VmHWM - VmRSS before. The budget is the one the estimator's docstring states
(``sparsekernel._memory.fit_budget``), from the fit's own sizes (N, bytes of X, cache_size, s, N_z).

Fits have a time limit (``--time-limit``, default 30 s): the row caches are full within seconds on
these sets, so a fit stopped by its budget has already reached the memory it would reach.

Usage::

    python benchmarks/bench_memory.py [--sets a9a,w8a,skin] [--estimators svc,...] [--cache 100]

Writes benchmarks/results/memory.json (one entry per estimator and set, kept across runs), shown
in benchmarks/results/robustness.md (``python benchmarks/bench_robustness.py`` writes the report).
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import _harness  # noqa: E402  (the results store, peak RSS)

SETS = ("a9a", "w8a", "skin")
ESTIMATORS = ("svc", "svr", "klr", "sklr", "nssvc", "nssvc-linear", "slmc", "skfd", "path")


class Store(_harness.Store):
    """``memory.json``: one entry per ``<estimator>/<set>``."""

    prefix = "memory"


def _x_bytes(X):
    if hasattr(X, "indptr"):
        return int(X.data.nbytes + X.indices.nbytes + X.indptr.nbytes)
    return int(X.nbytes)


def make(name, n, cache, time_limit):
    """The estimator of a benchmark name, with the cache budget and the time limit."""
    from sklearn.model_selection import StratifiedKFold

    import sparsekernel as sk
    from sparsekernel.model_selection import PathSearchCV

    common = dict(cache_size=cache, time_limit=time_limit)
    if name == "svc":
        return sk.SVC(C=1.0, **common)
    if name == "svr":
        return sk.SVR(C=1.0, **common)
    if name == "klr":  # the exact SMO route (solver='smo'), the one that uses the row cache
        return sk.KernelLogisticRegression(C=1.0, solver="smo", **common)
    if name == "sklr":
        return sk.SparseKernelLogisticRegression(C=1.0, **common)
    if name == "nssvc":
        return sk.NSSVC(kernel="rbf", s=min(n, 2000), time_limit=time_limit, random_state=0)
    if name == "nssvc-linear":
        return sk.NSSVC(kernel="linear", time_limit=time_limit, random_state=0)
    if name == "slmc":
        return sk.SLMC(n_expansion=50, max_iter=10, random_state=0, **common)
    if name == "skfd":
        return sk.SparseKFD(n_expansion=50, max_iter=10, random_state=0, **common)
    if name == "path":
        return PathSearchCV(sk.SVC(cache_size=cache, time_limit=time_limit / 6), {"C": [0.5, 1.0, 2.0]},
                            cv=StratifiedKFold(2, shuffle=True, random_state=0), refit=False)
    raise ValueError(name)


def child(name, set_name, cache, time_limit):
    import _datasets

    from sparsekernel._memory import fit_budget

    X, y, _, _ = _datasets.load(set_name)
    n = X.shape[0]
    model = make(name, n, cache, time_limit)
    gc.collect()
    with _harness.PeakRSS(sample_seconds=None) as rss, warnings.catch_warnings():  # VmHWM - VmRSS before
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        model.fit(X, y)
        seconds = time.perf_counter() - t0
    if not rss.hwm_reset:
        raise RuntimeError("the kernel's peak-RSS counter cannot be reset (/proc/self/clear_refs)")
    if name == "path":
        budget = fit_budget(model.estimator, X, n_splits=2)
    else:
        budget = fit_budget(model, X)
    print(json.dumps({"estimator": name, "set": set_name, "n": n, "x_mb": _x_bytes(X) / 2**20,
                      "cache_mb": cache, "peak_mb": rss.growth_mb, "budget_mb": budget.total / 2**20,
                      "budget_terms": {k: v / 2**20 for k, v in budget.terms.items()}, "seconds": seconds}))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--estimators", default=",".join(ESTIMATORS))
    ap.add_argument("--cache", type=float, default=100.0)
    ap.add_argument("--time-limit", type=float, default=30.0)
    ap.add_argument("--child", nargs=2, metavar=("ESTIMATOR", "SET"))
    args = ap.parse_args()
    if args.child:
        child(args.child[0], args.child[1], args.cache, args.time_limit)
        return
    import _datasets

    store = Store(force=True)
    for set_name in args.sets.split(","):
        if _datasets.load(set_name) is None:
            print(f"{set_name}: data missing, skipped")
            continue
        for name in args.estimators.split(","):
            proc = subprocess.run([sys.executable, __file__, "--child", name, set_name, "--cache", str(args.cache),
                                   "--time-limit", str(args.time_limit)], capture_output=True, text=True)
            if proc.returncode:
                print(f"{name} {set_name}: failed\n{proc.stderr[-2000:]}")
                continue
            row = json.loads(proc.stdout.strip().splitlines()[-1])
            store.put(f"{name}/{set_name}", {"cache": args.cache, "time_limit": args.time_limit}, row)
            ok = "within" if row["peak_mb"] <= row["budget_mb"] else "OVER"
            print(f"{name:13s} {set_name:5s} n={row['n']:7d} X={row['x_mb']:7.1f} MB peak={row['peak_mb']:8.1f} MB "
                  f"budget={row['budget_mb']:8.1f} MB {ok}  ({row['seconds']:.1f} s)  {row['budget_terms']}",
                  flush=True)


if __name__ == "__main__":
    main()
