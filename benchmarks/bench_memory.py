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

Writes benchmarks/results/memory.json (merged across runs) and the memory table of
benchmarks/results/robustness.md (``python benchmarks/bench_robustness.py`` writes the report).
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
RESULTS = HERE / "results"
sys.path.insert(0, str(HERE))

SETS = ("a9a", "w8a", "skin")
ESTIMATORS = ("svc", "svr", "klr", "sklr", "nssvc", "nssvc-linear", "slmc", "skfd", "path")


def _status(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(field)


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
    with open("/proc/self/clear_refs", "w") as f:  # resets VmHWM to the current RSS
        f.write("5")
    before = _status("VmRSS")
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y)
    seconds = time.perf_counter() - t0
    peak = _status("VmHWM") - before
    if name == "path":
        budget = fit_budget(model.estimator, X, n_splits=2)
    else:
        budget = fit_budget(model, X)
    print(json.dumps({"estimator": name, "set": set_name, "n": n, "x_mb": _x_bytes(X) / 2**20,
                      "cache_mb": cache, "peak_mb": peak / 2**20, "budget_mb": budget.total / 2**20,
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

    store = RESULTS / "memory.json"
    rows = json.loads(store.read_text()) if store.exists() else {}
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
            rows[f"{name}/{set_name}"] = row
            ok = "within" if row["peak_mb"] <= row["budget_mb"] else "OVER"
            print(f"{name:13s} {set_name:5s} n={row['n']:7d} X={row['x_mb']:7.1f} MB peak={row['peak_mb']:8.1f} MB "
                  f"budget={row['budget_mb']:8.1f} MB {ok}  ({row['seconds']:.1f} s)  {row['budget_terms']}",
                  flush=True)
            RESULTS.mkdir(exist_ok=True)
            store.write_text(json.dumps(rows, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
