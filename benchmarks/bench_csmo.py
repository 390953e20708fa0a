"""Conjugate SMO benchmark: the CSMO paper's Tables 2-4, and grid searches against peers.

Torres-Barrán, Alaíz & Dorronsoro, "Faster SVM Training via Conjugate SMO", section 4 (published
numbers in ``_csmo_paper_numbers``, data sets in ``_csmo_data``).  Features are scaled to [-1, 1]
(see ``_csmo_data``), RBF kernel, tol = 1e-3 everywhere.

Parts (``--part``), each writing ``benchmarks/results/csmo_<part>.{json,md}``:

``table2``  (cache effect, paper Table 2)
    Fit time and iterations of sparsekernel's ``solver='smo2'`` and ``solver='csmo'`` on adult8,
    web8 and cpusmall (SVR, epsilon = 0.1, LIBSVM's default) at C in {1, 100, 10000} (the table's
    header; the text says 10 instead of 1: ``--t2-C``), gamma = 1/d, and the paper's caches
    1, 50, 100, 500, 1000 MB scaled to the subsample (below), next to the paper's times.
    ``--shrinking`` (default 1 = the library default; the paper's CSMO does not shrink).
``grid``  (paper Tables 3-4, plus peers)
    5-fold CV grid searches over the paper's grids on adult8, web8, skin, mnist1 (classification,
    110 points) and abalone, cpusmall (regression, 448 points), with the methods

    ``sk-smo2`` / ``sk-csmo``  GridSearchCV(n_jobs=--our-jobs) over sparsekernel SVC/SVR(solver=
                               'smo2'/'csmo', n_jobs=--our-threads), at both paper caches (100 MB,
                               1 GB, scaled): their accumulated fit times give RTD, next to the
                               paper's Tables 3-4;
    ``sk-best``                sparsekernel.PathSearchCV(n_jobs=--best-jobs) over SVC/SVR(solver=
                               'csmo', warm_start=True, n_jobs=--best-threads): warm-started C
                               paths per (fold, kernel parameters), at the 100 MB cache;
                               default: the fits one after the other (so every fold's C walk stays
                               in order), each with 2 threads - PathSearchCV's documented fastest
                               setting for a threaded estimator (its n_jobs > 1 uses threads);
    ``sklearn``                GridSearchCV(n_jobs=--peer-jobs) over sklearn.svm.SVC/SVR (LIBSVM,
                               single-threaded) at the 100 MB cache;
    ``sklearnex``              the same with sklearnex.svm.SVC/SVR (oneDAL; skipped if missing).

    Every search uses the same splitter object (StratifiedKFold / KFold, 5 folds, shuffled,
    random_state=0), refit=False, scoring accuracy (classification) or neg MSE (regression).
    Recorded per search: wall time, accumulated fit and score time, number of fits, total solver
    iterations (a scorer reading ``n_iter_``), best parameters and best CV score, and per grid
    point the mean score, fit time and iterations.  "Identical solutions": at 6 grid points per set
    (first fold) the dual objectives of smo2, csmo and sklearn (recomputed from its dual_coef_) are
    compared, and the best points of all methods are compared.
``assemble``
    ``benchmarks/results/csmo.md``: summary of the bars, then the two sections.

Subsampling and caches.  Full-size runs of the paper's experiments take days (its Tables 3-4 report
hours per search), so every set is subsampled (seeded, stratified for classification; sizes in
``T2_SIZES`` / ``GRID_SIZES``, scaled by ``--budget`` as sqrt(budget / default budget) since fit time
grows about quadratically with n; ``--sizes name=n,...`` overrides).  The paper's cache sizes are
scaled to the subsample with ``--cache-scaling``:

``quadratic`` (default)  cache x (n_sub / n_paper)^2: the cache holds the same *fraction* of the
                         kernel matrix (the same fraction of its columns) as the paper's cache did on
                         the full set.  The matrix has n^2 entries, and the support vectors (whose
                         columns the solver keeps asking for) grow like n, so this keeps the paper's
                         regime: 100 MB holds ~5% of adult8's columns, 1 GB ~50%.
``linear``               cache x n_sub / n_paper (at least 1 MB): the cache holds the same *number*
                         of columns; on a subsample it then holds almost every column at 1 GB, where
                         the paper shows CSMO's advantage shrinks.

Either way the cache is at least two columns of the (training-fold) matrix.

Parallel settings (all configurable): the peers are single-threaded estimators run by
GridSearchCV(n_jobs=2) (one process per core); sparsekernel's estimators are multithreaded
(n_jobs=2 inside each fit, GridSearchCV n_jobs=1); PathSearchCV likewise runs its fits in order
(n_jobs=1) with n_jobs=2 inside each fit (``--best-jobs 2 --best-threads 1`` runs 2 fits at a time
in threads instead).  sklearnex is run like sklearn (its oneDAL threads are not limited
inside the worker processes).

Restartable: results are saved to the JSON after every unit (a Table 2 cell, a search) and a rerun
skips units already done with the same settings, unless ``--force``.

Full run (about an hour on 2 cores)::

    python benchmarks/bench_csmo.py --part table2
    python benchmarks/bench_csmo.py --part grid
    python benchmarks/bench_csmo.py --part assemble

Smoke test (seconds; writes ``*_quick.*``)::

    python benchmarks/bench_csmo.py --part table2 --quick
    python benchmarks/bench_csmo.py --part grid --quick
    python benchmarks/bench_csmo.py --part assemble --quick
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _csmo_data as cd  # noqa: E402
import _csmo_paper_numbers as pn  # noqa: E402
import _datasets  # noqa: E402
import _harness  # noqa: E402  (the results store, tables, environment)
import bench_svc  # noqa: E402  (sklearnex routes)
from _harness import RESULTS, canonical, csv_list, fmt, md_table  # noqa: E402
TOL = 1e-3
SEED = 0
N_FOLDS = 5

# ---------------------------------------------------------------------------------------- Table 2
T2_DATASETS = ("adult8", "web8", "cpusmall")
T2_CACHES = (1, 50, 100, 500, 1000)             # the paper's, up to 1 GB (5 and 10 GB add nothing)
T2_EPSILON = 0.1                                # LIBSVM's default (the paper does not say)
T2_BUDGET = 600.0                               # seconds the default sizes are planned for
#: Default Table 2 sizes (rows): adult8 ~26% of the paper's set, web8 ~50%, cpusmall ~33%.
#: Planned from fits on this machine (shrinking on): adult8 n=5000, C=1e4: smo2 2-11 s depending on
#: the cache (n=8000: 32 s at the smallest cache); web8 n=20000, C=1e4: 1.4 s; cpusmall (SVR) n=2000,
#: C=1e4: smo2 8.7 s (4e6 iterations; about 3x that with shrinking off).  Whole part: ~5 min.
T2_SIZES = {"adult8": 6000, "web8": 25_000, "cpusmall": 2000}
QUICK_T2_SIZES = {"adult8": 600, "web8": 1000, "cpusmall": 300}
QUICK_T2_C = (1.0, 100.0)
QUICK_T2_CACHES = (1, 100, 1000)

# ---------------------------------------------------------------------------------------- grid
GRID_DATASETS = cd.ALL
GRID_BUDGET = 3000.0                            # seconds the default sizes are planned for
#: Default grid-search sizes (rows of the set the 5-fold CV runs on).  Chosen so that sklearn's
#: 5-fold search takes ~200 CPU seconds per set (~100 s wall with 2 processes); see COST_MODEL.
GRID_SIZES = {"adult8": 3000, "web8": 3600, "skin": 11_500, "mnist1": 3800,
              "abalone": 1000, "cpusmall": 700}
QUICK_GRID_SIZES = {"adult8": 300, "web8": 400, "skin": 400, "mnist1": 300,
                    "abalone": 150, "cpusmall": 150}
#: sklearn's 5-fold search cost measured on this machine (1 fold timed, x5, +10% for scoring):
#: name -> (n, CPU seconds, exponent of n).  Used only to print the plan.
COST_MODEL = {"adult8": (3000, 213.0, 2.0), "web8": (3000, 145.0, 2.0), "skin": (10_000, 157.0, 1.8),
              "mnist1": (3000, 127.0, 2.0), "abalone": (1000, 217.0, 2.0), "cpusmall": (1000, 460.0, 2.2)}
#: wall seconds of all 7 searches of a set / sklearn's CPU seconds (sklearn ~0.5, sklearnex ~0.5,
#: sk-smo2 + sk-csmo at 2 caches ~1.0, sk-best ~0.1, the dual check ~0.2); a planning number.
PLAN_FACTOR = 2.3

METHODS = ("sk-smo2", "sk-csmo", "sk-best", "sklearn", "sklearnex")
OURS = ("sk-smo2", "sk-csmo", "sk-best")
METHOD_LABELS = {
    "sk-smo2": "sparsekernel SVC/SVR(solver='smo2') in GridSearchCV",
    "sk-csmo": "sparsekernel SVC/SVR(solver='csmo') in GridSearchCV",
    "sk-best": "sparsekernel PathSearchCV, solver='csmo', warm starts",
    "sklearn": "sklearn.svm.SVC/SVR (LIBSVM) in GridSearchCV",
    "sklearnex": "sklearnex.svm.SVC/SVR (oneDAL) in GridSearchCV",
}
RTD_CACHES = (100, 1000)        # paper caches at which smo2 and csmo run (RTD)
PEER_CACHE = 100                # paper cache at which sk-best and the peers run

QUICK_LOG2 = {"C_cls": (-5, 5, 15), "gamma_cls": (-15, -5, 3),
              "C_reg": (-1, 5, 11), "gamma_reg": (-11, -3, 3), "epsilon": (-8, -1)}
#: grid points of the "identical solutions" check (first fold): log2 C x log2 gamma (x log2 eps)
CHECK_LOG2 = {"C_cls": (-5, 5, 15), "gamma_cls": (-7, -1),
              "C_reg": (-1, 5, 11), "gamma_reg": (-7, -1), "epsilon": (-4,)}

# ---------------------------------------------------------------------------------------- bars
BAR_SPEED_VS_SKLEARN = 0.3      # sk-best wall time <= 0.3 x sklearn's, and < every other peer's
BAR_DUAL_RTOL = 1e-3            # smo2 vs csmo relative dual-objective difference
BAR_MSE_RTOL = 1e-3             # regression: best-score tie tolerance (relative)

#: Cap on our solvers' pair steps per problem: LIBSVM (sklearn's SVC/SVR) stops at
#: max(10^7, 100 n) iterations with a warning; ours get the same kind of cap so that a solver that
#: does not converge cannot stall the run (every fit's ``converged_`` is recorded).  --quick: 10^6.
MAX_ITER = 10_000_000


# ======================================================================================== utilities
def log2i(value: float) -> int:
    return int(round(math.log2(value)))


def rel_diff(a, b) -> float | None:
    if a is None or b is None:
        return None
    return abs(a - b) / max(abs(a), abs(b), 1e-12)


def scaled_cache_mb(paper_mb: float, n_used: int, n_paper: int, mode: str, n_rows: int) -> float:
    """The paper's cache ``paper_mb`` scaled to a subsample (module doc); at least 2 float32 columns
    of an ``n_rows`` x ``n_rows`` matrix (and 1 MB in 'linear' mode, as first specified)."""
    f = n_used / n_paper
    mb = paper_mb * (f * f if mode == "quadratic" else f)
    floor = 2 * 4 * n_rows / 2 ** 20
    if mode == "linear":
        floor = max(floor, 1.0)
    return float(max(mb, floor))


def columns_held(cache_mb: float, n_rows: int) -> float:
    """Fraction of the columns of an n_rows x n_rows float32 matrix a cache of cache_mb holds."""
    return min(1.0, cache_mb * 2 ** 20 / (4.0 * n_rows) / n_rows)


def parse_sizes(text: str) -> dict[str, int]:
    out = {}
    for item in filter(None, (t.strip() for t in text.split(","))):
        name, _, n = item.partition("=")
        if name not in cd.ALL or not n.isdigit():
            raise argparse.ArgumentTypeError(f"bad size {item!r}: use name=n with name in {cd.ALL}")
        out[name] = int(n)
    return out


def planned_sizes(defaults: dict[str, int], default_budget: float, args) -> dict[str, int]:
    """Default sizes scaled by sqrt(--budget / default budget), then --sizes overrides."""
    factor = math.sqrt(args.budget / default_budget) if args.budget else 1.0
    sizes = {k: int(round(v * factor / 100.0)) * 100 or 100 for k, v in defaults.items()}
    sizes.update(args.sizes or {})
    return sizes


def api_notes() -> dict[str, str | None]:
    """Which parts of the new sparsekernel API work (None = fine, else why not); tiny fits, no timing."""
    out: dict[str, str | None] = {}
    try:
        import sparsekernel
    except Exception as exc:
        return {k: f"sparsekernel not importable: {exc!r}" for k in ("SVC", "SVR", "PathSearchCV", "csmo")}
    for name in ("SVC", "SVR", "PathSearchCV"):
        out[name] = None if hasattr(sparsekernel, name) else f"sparsekernel.{name} does not exist (yet)"
    out["csmo"] = None
    if out["SVC"] is None:
        rng = np.random.RandomState(0)
        X = rng.rand(30, 2)
        y = np.where(X[:, 0] > 0.5, 1.0, -1.0)
        try:
            sparsekernel.SVC(solver="csmo", n_jobs=1).fit(X, y)
        except Exception as exc:
            out["csmo"] = f"SVC(solver='csmo') does not fit: {exc!r}"
    return out


# ======================================================================================== store
class Store(_harness.Store):
    """``csmo_<part>.{json,md}``."""

    prefix = "csmo"


# ======================================================================================== estimators
def our_estimator(task: str, **params):
    import sparsekernel

    cls = sparsekernel.SVC if task == "classification" else sparsekernel.SVR
    params.setdefault("max_iter", MAX_ITER)
    return cls(kernel="rbf", tol=TOL, **params)


def peer_estimator(method: str, task: str, **params):
    if method == "sklearn":
        from sklearn.svm import SVC, SVR
    else:
        from sklearnex.svm import SVC, SVR
    cls = SVC if task == "classification" else SVR
    return cls(kernel="rbf", tol=TOL, **params)


def total_iter(model) -> int | None:
    """Sum of ``n_iter_`` (an int or one entry per binary problem); None if absent."""
    value = getattr(model, "n_iter_", None)
    if value is None:
        return None
    try:
        return int(np.sum(value))
    except Exception:
        return None


def n_iter_scorer(estimator, X, y) -> float:
    """A 'scorer' that reports the fitted estimator's iterations (NaN if it has none)."""
    it = total_iter(estimator)
    return float("nan") if it is None else float(it)


def converged_scorer(estimator, X, y) -> float:
    """A 'scorer' that reports ``converged_`` as 1.0 / 0.0 (NaN if the estimator has none)."""
    value = getattr(estimator, "converged_", None)
    return float("nan") if value is None else float(bool(value))


def solver_time_scorer(estimator, X, y) -> float:
    """A 'scorer' that reports the estimator's own ``fit_time_`` (NaN if it has none)."""
    return float(getattr(estimator, "fit_time_", float("nan")))


def dual_objective_sklearn(model, task: str, X, y, gamma: float, epsilon: float | None) -> float:
    """Dual objective 1/2 a'Qa - s'a of a fitted sklearn/sklearnex SVC or SVR, from dual_coef_.

    SVC: dual_coef_ = y_i a_i, so 1/2 a'Qa - sum a = 1/2 c'K c - sum |c|.  SVR (Lin's 2N-variable
    form used by the paper and by sparsekernel): beta = a - a*, 1/2 beta'K beta - t'beta + eps sum|beta|.
    """
    from sklearn.metrics.pairwise import rbf_kernel

    import scipy.sparse as sp

    c = model.dual_coef_
    c = (c.toarray() if sp.issparse(c) else np.asarray(c)).ravel()   # sklearn keeps it CSR on CSR input
    sv = model.support_
    Xs = X[sv]
    K = np.asarray(rbf_kernel(Xs, Xs, gamma=gamma))
    quad = 0.5 * float(c @ K @ c)
    if task == "classification":
        return quad - float(np.sum(np.abs(c)))
    return quad - float(np.dot(y[sv], c)) + float(epsilon) * float(np.sum(np.abs(c)))


# ======================================================================================== Table 2
def t2_config(args, name: str, n: int) -> dict:
    return dict(n=n, tol=TOL, gamma="1/d (x gamma_factor)", epsilon=T2_EPSILON, shrinking=bool(args.shrinking),
                cache_scaling=args.cache_scaling, repeats=args.repeats, threads=args.our_threads,
                seed=SEED, quick=args.quick)


def t2_fit(task, solver, C, gamma, cache_mb, shrinking, threads, X, y):
    params = dict(C=C, gamma=gamma, cache_size=cache_mb, shrinking=shrinking, solver=solver, n_jobs=threads)
    if task == "regression":
        params["epsilon"] = T2_EPSILON
    model = our_estimator(task, **params)
    gc.collect()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        model.fit(X, y)
        seconds = time.perf_counter() - t0
    return model, seconds


def cmd_table2(args) -> int:
    datasets = args.datasets or list(T2_DATASETS)
    bad = [d for d in datasets if d not in T2_DATASETS]
    if bad:
        print(f"error: Table 2 data sets are {T2_DATASETS}, not {bad}", file=sys.stderr)
        return 2
    sizes = planned_sizes(QUICK_T2_SIZES if args.quick else T2_SIZES, T2_BUDGET, args)
    Cs = tuple(args.t2_C) if args.t2_C else (QUICK_T2_C if args.quick else pn.TABLE2_C)
    caches = tuple(args.caches) if args.caches else (QUICK_T2_CACHES if args.quick else T2_CACHES)
    store = Store("table2", args.quick, args.force)
    notes = [f"{k}: {v}" for k, v in api_notes().items() if v]
    print("Table 2 plan: " + ", ".join(f"{d} n={sizes[d]}" for d in datasets)
          + f"; C = {Cs}; caches (paper MB) = {caches}; shrinking = {bool(args.shrinking)}", flush=True)
    render_table2(store, notes, complete=False)
    for name in datasets:
        data = None
        for C in Cs:
            for cache in caches:
                key = f"{name}/C={C:g}/cache={cache}/shrinking={int(bool(args.shrinking))}"
                n = sizes[name]
                cfg = t2_config(args, name, n)
                if store.done(key, cfg):
                    print(f"{key}: done", flush=True)
                    continue
                if data is None:
                    data = cd.load(name, n=n, seed=SEED)
                    gamma = data.gamma(1.0 / data.d)
                    # warm-up (thread pool, first-touch allocations); not timed
                    try:
                        t2_fit(data.task, "smo2", 1.0, gamma, 1.0, bool(args.shrinking), args.our_threads,
                               data.X[:200], data.y[:200])
                    except Exception:
                        pass
                cache_mb = scaled_cache_mb(cache, data.n, data.paper_n, args.cache_scaling, data.n)
                res = dict(dataset=name, n=data.n, paper_n=data.paper_n, d=data.d, task=data.task,
                           shrinking=bool(args.shrinking), C=C, gamma=gamma, gamma_paper=1.0 / data.d, paper_cache_mb=cache,
                           cache_mb=cache_mb, columns_held=columns_held(cache_mb, data.n),
                           summary=data.summary(), stats={})
                times = {"smo2": [], "csmo": []}
                models = {}
                for _ in range(args.repeats):           # interleaved: smo2, csmo, smo2, ...
                    for solver in ("smo2", "csmo"):
                        if res["stats"].get(solver, {}).get("error"):
                            continue
                        try:
                            model, seconds = t2_fit(data.task, solver, C, gamma, cache_mb, bool(args.shrinking),
                                                    args.our_threads, data.X, data.y)
                        except Exception as exc:
                            res["stats"][solver] = dict(error=repr(exc))
                            continue
                        times[solver].append(seconds)
                        models[solver] = model
                for solver, model in models.items():
                    res["stats"][solver] = dict(
                        times=times[solver], time=statistics.median(times[solver]),
                        n_iter=total_iter(model), fit_time_attr=getattr(model, "fit_time_", None),
                        converged=getattr(model, "converged_", None),
                        dual=float(np.sum(model.dual_objective_)) if hasattr(model, "dual_objective_") else None,
                        n_sv=len(model.support_),
                        n_kernel_evals=(int(np.sum(model.n_kernel_evals_)) if hasattr(model, "n_kernel_evals_")
                                        else None))
                if any(s.get("error") for s in res["stats"].values()):
                    res["error"] = "; ".join(f"{k}: {s['error']}" for k, s in res["stats"].items() if s.get("error"))
                store.put(key, cfg, res)
                print(_harness.md_row(t2_row(res)), flush=True)
                render_table2(store, notes, complete=False)
        del data
        gc.collect()
    render_table2(store, notes, complete=True)
    print(f"wrote {store.md_path}", flush=True)
    return 0


T2_HEADERS = ["data", "n", "shrink", "C", "cache paper MB", "cache ours MB", "cols held", "t smo2 s", "t csmo s",
              "csmo/smo2", "paper SMO s", "paper CSMO s", "paper CSMO/SMO", "iter smo2", "iter csmo",
              "iter csmo/smo2", "kev csmo/smo2", "dual rel diff", "conv smo2/csmo", "nSV smo2/csmo"]


def t2_row(res) -> list[str]:
    s2, sc = res["stats"].get("smo2", {}), res["stats"].get("csmo", {})

    def t(s):
        return "err" if s.get("error") else fmt(s.get("time"), ".3f")

    ratio = (sc["time"] / s2["time"]) if s2.get("time") and sc.get("time") else None
    paper = pn.TABLE2.get(res["dataset"], {}).get(res["paper_cache_mb"], {}).get(float(res["C"]))
    it_ratio = (sc["n_iter"] / s2["n_iter"]) if s2.get("n_iter") and sc.get("n_iter") else None
    kev = (sc["n_kernel_evals"] / s2["n_kernel_evals"]) if s2.get("n_kernel_evals") and sc.get("n_kernel_evals") else None
    def conv(st):
        c = st.get("converged")
        return "-" if c is None else ("y" if c else "**n**")

    return [res["dataset"], str(res["n"]), "on" if res.get("shrinking", True) else "off", f"{res['C']:g}",
            str(res["paper_cache_mb"]), fmt(res["cache_mb"], ".3g"),
            f"{100 * res['columns_held']:.1f}%", t(s2), t(sc), fmt(ratio, ".2f"),
            fmt(paper[0] if paper else None, ".2f"), fmt(paper[1] if paper else None, ".2f"),
            fmt(paper[1] / paper[0] if paper else None, ".2f"),
            fmt(s2.get("n_iter"), "d"), fmt(sc.get("n_iter"), "d"), fmt(it_ratio, ".2f"), fmt(kev, ".2f"),
            fmt(rel_diff(s2.get("dual"), sc.get("dual")), ".1e"), f"{conv(s2)}/{conv(sc)}",
            f"{s2.get('n_sv', '-')}/{sc.get('n_sv', '-')}"]


def render_table2(store: Store, notes: list[str], complete: bool) -> None:
    results = [e["result"] for e in store.entries.values()]
    order = {n: i for i, n in enumerate(T2_DATASETS)}
    results.sort(key=lambda r: (order.get(r["dataset"], 9), not r.get("shrinking", True), r["C"], r["paper_cache_mb"]))
    body = [
        "Paper Table 2 (section 4.2): fit time of second-order SMO and of conjugate SMO at gamma = 1/d,",
        f"tol = {TOL:g}, features in [-1, 1] (sparse binary sets: CSR with gamma x4, see `_csmo_data`),",
        f"C from the table's header (its text says 10 instead of 1); cpusmall is SVR with epsilon = {T2_EPSILON:g}",
        "(LIBSVM's default; the paper does not say) on the standardised target.  Ours: sparsekernel",
        "`solver='smo2'` vs `solver='csmo'`, same data, same cache, fits interleaved, median of the repeats,",
        "wall-clock time around `fit` (`time.perf_counter`).  Paper: LIBSVM SMO vs the authors' CSMO fork on",
        "the full sets (adult8 22,696 rows, web8 49,749, cpusmall 6,143) on a 2.6 GHz Xeon.",
        "",
        "Sizes and caches: every set is subsampled (seeded; `n` column) and the paper's cache is scaled to",
        "the subsample (`cache ours MB`; module doc of `bench_csmo.py`); `cols held` = the fraction of the",
        "n x n float32 matrix's columns the cache can hold (the paper's fraction on the full set is the same",
        "under quadratic scaling, e.g. adult8 100 MB = 5.1%, 1 GB = 51%; web8 100 MB = 1.1%, 1 GB = 10.6%;",
        "cpusmall 100 MB = 69%).",
        "",
        "Columns: t = fit seconds; csmo/smo2 = time ratio (paper: CSMO/SMO); iter = `n_iter_`; kev = kernel",
        "evaluations (`n_kernel_evals_`); dual rel diff = |f_smo2 - f_csmo| / max |f| of the final dual",
        "objectives (`dual_objective_`); nSV = support vectors.",
        "",
    ]
    body += ["Shrinking (`shrink` column, `--shrinking`): the same setting for both solvers; the library default is",
             "on.  The paper's CSMO does not shrink; its LIBSVM SMO shrinks by default.", ""]
    if results:
        body += md_table(T2_HEADERS, [t2_row(r) for r in results])
        # summary: mean csmo/smo2 per C (ours) vs paper, over the caches run
        rows = []
        for name, shrink, C in sorted({(r["dataset"], r.get("shrinking", True), r["C"]) for r in results},
                                      key=lambda t: (order.get(t[0], 9), not t[1], t[2])):
            rs = [r for r in results if r["dataset"] == name and r["C"] == C and r.get("shrinking", True) == shrink
                  and r["stats"].get("smo2", {}).get("time") and r["stats"].get("csmo", {}).get("time")]
            if not rs:
                continue
            ours = [r["stats"]["csmo"]["time"] / r["stats"]["smo2"]["time"] for r in rs]
            paper = [pn.TABLE2[name][r["paper_cache_mb"]][float(C)] for r in rs
                     if r["paper_cache_mb"] in pn.TABLE2.get(name, {}) and float(C) in pn.TABLE2[name][r["paper_cache_mb"]]]
            its = [r["stats"]["csmo"]["n_iter"] / r["stats"]["smo2"]["n_iter"] for r in rs
                   if r["stats"]["smo2"].get("n_iter")]
            duals = [rel_diff(r["stats"]["smo2"].get("dual"), r["stats"]["csmo"].get("dual")) for r in rs]
            duals = [d for d in duals if d is not None]
            rows.append([name, "on" if shrink else "off", f"{C:g}", len(rs), fmt(float(np.mean(ours)), ".2f"),
                         fmt(min(ours), ".2f") + " / " + fmt(max(ours), ".2f"),
                         fmt(float(np.mean([c / s for s, c in paper])), ".2f") if paper else "-",
                         fmt(float(np.mean(its)), ".2f") if its else "-",
                         fmt(max(duals), ".1e") if duals else "-"])
        body += ["", "Per data set, shrinking and C, over the caches run: mean csmo/smo2 time ratio (ours, min / max)",
                 "against the paper's mean CSMO/SMO ratio over the same caches, the mean iteration ratio and the largest",
                 "relative dual-objective difference (the same problem is solved: it should be ~tol-small).", ""]
        body += md_table(["data", "shrink", "C", "caches", "ours csmo/smo2", "min / max", "paper CSMO/SMO",
                          "iter csmo/smo2", "max dual rel diff"], rows)
        store.summary = dict(rows=rows)
        errors = [f"{r['dataset']} C={r['C']:g} cache={r['paper_cache_mb']}: {r['error']}" for r in results if r.get("error")]
        if errors or notes:
            body += ["", "Notes:", "", *[f"- {n}" for n in notes + errors]]
    else:
        body.append("(no results yet)")
        if notes:
            body += ["", "Notes:", "", *[f"- {n}" for n in notes]]
    store.write_md("Table 2: cache effect, smo2 vs csmo", body, complete)


# ======================================================================================== grid
def grid_axes(task: str, quick: bool) -> dict[str, tuple[int, ...]]:
    """log2 values of the grid axes (paper units: gamma for [-1, 1]-scaled features)."""
    if task == "classification":
        if quick:
            return {"C": QUICK_LOG2["C_cls"], "gamma": QUICK_LOG2["gamma_cls"]}
        return {"C": pn.CLASSIFICATION_LOG2_C, "gamma": pn.CLASSIFICATION_LOG2_GAMMA}
    if quick:
        return {"C": QUICK_LOG2["C_reg"], "gamma": QUICK_LOG2["gamma_reg"], "epsilon": QUICK_LOG2["epsilon"]}
    return {"C": pn.REGRESSION_LOG2_C, "gamma": pn.REGRESSION_LOG2_GAMMA, "epsilon": pn.REGRESSION_LOG2_EPSILON}


def param_grid(axes: dict, data: cd.CsmoSet) -> dict[str, list[float]]:
    grid = {"C": [2.0 ** k for k in axes["C"]], "gamma": [data.gamma(2.0 ** k) for k in axes["gamma"]]}
    if "epsilon" in axes:
        grid["epsilon"] = [2.0 ** k for k in axes["epsilon"]]
    return grid


def point_key(params: dict, gamma_factor: float) -> tuple[int, ...]:
    """(log2 C, log2 gamma_paper[, log2 epsilon]) of a candidate's parameters."""
    key = [log2i(params["C"]), log2i(params["gamma"] / gamma_factor)]
    if "epsilon" in params:
        key.append(log2i(params["epsilon"]))
    return tuple(key)


def grid_config(args, name: str, n: int, method: str, paper_cache: int) -> dict:
    cfg = dict(n=n, seed=SEED, tol=TOL, folds=N_FOLDS, shrinking=bool(args.shrinking),
               cache_scaling=args.cache_scaling, paper_cache_mb=paper_cache, quick=args.quick,
               method=method)
    if method in ("sk-smo2", "sk-csmo"):
        cfg.update(search_jobs=args.our_jobs, estimator_threads=args.our_threads)
    elif method == "sk-best":
        cfg.update(search_jobs=args.best_jobs, estimator_threads=args.best_threads)
    else:
        cfg.update(search_jobs=args.peer_jobs)
    return cfg


def make_search(method: str, data: cd.CsmoSet, grid: dict, cv, cache_mb: float, args, scoring):
    from sklearn.model_selection import GridSearchCV

    common = dict(cache_size=cache_mb, shrinking=bool(args.shrinking))
    if method in ("sk-smo2", "sk-csmo"):
        est = our_estimator(data.task, solver=method[3:], n_jobs=args.our_threads, **common)
        return GridSearchCV(est, grid, scoring=scoring, cv=cv, refit=False, n_jobs=args.our_jobs,
                            error_score="raise")
    if method == "sk-best":
        from sparsekernel import PathSearchCV

        est = our_estimator(data.task, solver="csmo", warm_start=True, n_jobs=args.best_threads, **common)
        return PathSearchCV(est, grid, scoring=scoring, cv=cv, refit=False, n_jobs=args.best_jobs)
    est = peer_estimator(method, data.task, **common)
    return GridSearchCV(est, grid, scoring=scoring, cv=cv, refit=False, n_jobs=args.peer_jobs,
                        error_score="raise")


def scorings(task: str) -> tuple[dict, str]:
    main = "accuracy" if task == "classification" else "neg_mean_squared_error"
    return {"score": main, "n_iter": n_iter_scorer, "solver_time": solver_time_scorer,
            "converged": converged_scorer}, main


def warm_up_workers(n_jobs) -> None:
    """Start joblib's (reusable) worker processes before a timed search, so no search pays for it."""
    if n_jobs is None or n_jobs == 1:
        return
    from joblib import Parallel, delayed

    Parallel(n_jobs=n_jobs)(delayed(_warm_task)(i) for i in range(4 * max(int(n_jobs), 1)))


def _warm_task(i: int) -> int:
    """Runs in a worker: the imports a search's first task would otherwise pay for."""
    import sklearn.model_selection  # noqa: F401
    import sklearn.svm  # noqa: F401
    try:
        import sklearnex.svm  # noqa: F401
    except Exception:
        pass
    try:
        import sparsekernel  # noqa: F401
    except Exception:
        pass
    return i


def run_search(method: str, data: cd.CsmoSet, grid: dict, cv, cache_mb: float, args) -> dict:
    """Fit one grid search; everything recorded from its cv_results_."""
    X = data.X if method in OURS else data.X_peer
    scoring, main = scorings(data.task)
    res: dict = dict(method=method, cache_mb=cache_mb)
    search = make_search(method, data, grid, cv, cache_mb, args, scoring)
    multimetric = True
    if method != "sk-best":                      # PathSearchCV uses threads, not worker processes
        warm_up_workers(getattr(search, "n_jobs", None))
    gc.collect()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            t0 = time.perf_counter()
            search.fit(X, data.y)
            wall = time.perf_counter() - t0
        except (TypeError, ValueError) as exc:
            if method != "sk-best":
                raise
            # PathSearchCV without multi-metric scoring: time it with the plain score only
            res["note"] = f"PathSearchCV with a scorer dict failed ({exc!r}); plain scoring, no iterations"
            multimetric = False
            search = make_search(method, data, grid, cv, cache_mb, args, main)
            gc.collect()
            t0 = time.perf_counter()
            search.fit(X, data.y)
            wall = time.perf_counter() - t0
    cvr = search.cv_results_
    n_splits = cv.get_n_splits()
    score_key = "mean_test_score"
    keys = [point_key(p, data.gamma_factor) for p in cvr["params"]]
    score = np.asarray(cvr[score_key], dtype=float)
    n_iter = (np.asarray(cvr["mean_test_n_iter"], dtype=float) * n_splits if multimetric
              else np.full(len(keys), np.nan))
    solver_time = (np.asarray(cvr["mean_test_solver_time"], dtype=float) * n_splits if multimetric
                   else np.full(len(keys), np.nan))
    converged = (np.asarray(cvr["mean_test_converged"], dtype=float) * n_splits if multimetric
                 else np.full(len(keys), np.nan))
    fit_time = np.asarray(cvr["mean_fit_time"], dtype=float) * n_splits
    score_time = np.asarray(cvr["mean_score_time"], dtype=float) * n_splits
    order = sorted(range(len(keys)), key=lambda i: keys[i])
    best_i = max(order, key=lambda i: (score[i], [-k for k in keys[i]]))  # ties: smallest C, gamma, eps
    res.update(
        wall=wall, fit_sum=float(np.sum(fit_time)), score_sum=float(np.sum(score_time)),
        n_candidates=len(keys), n_splits=n_splits, n_fits=len(keys) * n_splits,
        total_iter=(None if np.all(np.isnan(n_iter)) else float(np.nansum(n_iter))),
        solver_time_sum=(None if np.all(np.isnan(solver_time)) else float(np.nansum(solver_time))),
        n_not_converged=(None if np.all(np.isnan(converged)) else int(round(len(keys) * n_splits
                                                                           - np.nansum(converged)))),
        best=dict(key=list(keys[best_i]), score=float(score[best_i])),
        points=dict(keys=[list(keys[i]) for i in order], score=[float(score[i]) for i in order],
                    fit_time=[float(fit_time[i]) for i in order],
                    n_iter=[None if np.isnan(n_iter[i]) else float(n_iter[i]) for i in order]),
    )
    return res


def check_points(task: str, quick: bool) -> list[tuple[int, ...]]:
    if quick:
        axes = grid_axes(task, True)
        Cs, gs = (axes["C"][0], axes["C"][-1]), (axes["gamma"][1],)
        eps = (axes["epsilon"][0],) if task == "regression" else (None,)
    elif task == "classification":
        Cs, gs, eps = CHECK_LOG2["C_cls"], CHECK_LOG2["gamma_cls"], (None,)
    else:
        Cs, gs, eps = CHECK_LOG2["C_reg"], CHECK_LOG2["gamma_reg"], CHECK_LOG2["epsilon"]
    return [(c, g) if e is None else (c, g, e) for c in Cs for g in gs for e in eps]


def dual_check(data: cd.CsmoSet, cv, cache_mb: float, args) -> dict:
    """Dual objectives of smo2, csmo and sklearn at a few grid points, on the first CV fold."""
    train, _ = next(iter(cv.split(np.zeros(data.n), data.y)))
    X, Xp, y = data.X[train], data.X_peer[train], data.y[train]
    X = _datasets.with_index_dtype(X, data.X.indices.dtype) if data.sparse else X
    rows = []
    for key in check_points(data.task, args.quick):
        C, gamma = 2.0 ** key[0], data.gamma(2.0 ** key[1])
        eps = 2.0 ** key[2] if len(key) > 2 else None
        extra = {} if eps is None else {"epsilon": eps}
        row = dict(key=list(key))
        for solver in ("smo2", "csmo"):
            try:
                model = our_estimator(data.task, C=C, gamma=gamma, cache_size=cache_mb,
                                      shrinking=bool(args.shrinking), solver=solver,
                                      n_jobs=args.our_threads, **extra)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    t0 = time.perf_counter()
                    model.fit(X, y)
                    row[f"{solver}_time"] = time.perf_counter() - t0
                row[solver] = float(np.sum(model.dual_objective_))
                row[f"{solver}_iter"] = total_iter(model)
            except Exception as exc:
                row[f"{solver}_error"] = repr(exc)
        try:
            model = peer_estimator("sklearn", data.task, C=C, gamma=gamma, cache_size=cache_mb,
                                   shrinking=bool(args.shrinking), **extra)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(Xp, y)
            row["sklearn"] = dual_objective_sklearn(model, data.task, Xp, y, gamma, eps)
            row["sklearn_iter"] = total_iter(model)
        except Exception as exc:
            row["sklearn_error"] = repr(exc)
        row["rel_smo2_csmo"] = rel_diff(row.get("smo2"), row.get("csmo"))
        row["rel_smo2_sklearn"] = rel_diff(row.get("smo2"), row.get("sklearn"))
        row["rel_csmo_sklearn"] = rel_diff(row.get("csmo"), row.get("sklearn"))
        rows.append(row)

    def mx(k):
        vals = [r[k] for r in rows if r.get(k) is not None]
        return max(vals) if vals else None

    return dict(rows=rows, n_train=len(train), max_smo2_csmo=mx("rel_smo2_csmo"),
                max_ours_sklearn=max(filter(None, [mx("rel_smo2_sklearn"), mx("rel_csmo_sklearn")]), default=None))


def sklearnex_route(task: str) -> str:
    """'oneDAL' if sklearnex fits a small problem of this task on its accelerated path."""
    try:
        from sklearnex.svm import SVC, SVR
    except Exception as exc:
        return f"not importable: {exc!r}"
    rng = np.random.RandomState(0)
    X = rng.rand(60, 3)
    y = np.where(X[:, 0] > 0.5, 1.0, -1.0) if task == "classification" else X[:, 0]
    model = SVC() if task == "classification" else SVR()
    with bench_svc.sklearnex_messages() as msgs:
        model.fit(X, y)
    return bench_svc._route(msgs)


def method_available(method: str, task: str, api: dict) -> str | None:
    """None if the method can run, else why not."""
    if method in OURS:
        need = "SVC" if task == "classification" else "SVR"
        if api.get(need):
            return api[need]
        if method in ("sk-csmo", "sk-best") and api.get("csmo"):
            return api["csmo"]
        if method == "sk-best" and api.get("PathSearchCV"):
            return api["PathSearchCV"]
        return None
    if method == "sklearnex":
        try:
            import sklearnex.svm  # noqa: F401
        except Exception as exc:
            return f"sklearnex not importable: {exc!r}"
    return None


def grid_units(methods: list[str], rtd_caches, peer_cache) -> list[tuple[str, int]]:
    """(method, paper cache) in run order: the RTD pairs first, then the best route, then the peers."""
    units = []
    for cache in rtd_caches:
        units += [(m, cache) for m in ("sk-smo2", "sk-csmo") if m in methods]
    units += [(m, peer_cache) for m in ("sk-best", "sklearn", "sklearnex") if m in methods]
    return units


def plan_grid(datasets, sizes) -> list[str]:
    lines = []
    total = 0.0
    for name in datasets:
        n_ref, secs, expo = COST_MODEL[name]
        s = secs * (sizes[name] / n_ref) ** expo
        total += PLAN_FACTOR * s
        lines.append(f"  {name}: n={sizes[name]} sklearn ~{s:.0f} CPU s -> all methods ~{PLAN_FACTOR * s / 60:.1f} min wall")
    lines.append(f"  total ~{total / 60:.0f} min wall (planning estimate)")
    return lines


def cmd_grid(args) -> int:
    datasets = args.datasets or list(GRID_DATASETS)
    sizes = planned_sizes(QUICK_GRID_SIZES if args.quick else GRID_SIZES, GRID_BUDGET, args)
    methods = args.methods or list(METHODS)
    store = Store("grid", args.quick, args.force)
    want = dict(shrinking=bool(args.shrinking), cache_scaling=args.cache_scaling)
    api = api_notes()
    notes: list[str] = []
    print("Grid plan:\n" + "\n".join(plan_grid(datasets, sizes)), flush=True)
    render_grid(store, notes, complete=False, want=want)
    for name in datasets:
        n = sizes[name]
        data = cd.load(name, n=n, seed=SEED)
        store.put(f"{name}/data", {"n": n, "quick": args.quick}, data.summary())
        cv = cd.cv_splitter(data.task, N_FOLDS, SEED)
        axes = grid_axes(data.task, args.quick)
        grid = param_grid(axes, data)
        n_fold_train = data.n - data.n // N_FOLDS
        print(f"{name}: n={data.n} d={data.d} grid {'x'.join(str(len(v)) for v in grid.values())} = "
              f"{int(np.prod([len(v) for v in grid.values()]))} points x {N_FOLDS} folds", flush=True)
        for method, paper_cache in grid_units(methods, RTD_CACHES, PEER_CACHE):
            key = f"{name}/{method}/cache={paper_cache}/shrinking={int(bool(args.shrinking))}"
            cfg = grid_config(args, name, n, method, paper_cache)
            if store.done(key, cfg):
                print(f"  {key}: done", flush=True)
                continue
            why = method_available(method, data.task, api)
            cache_mb = scaled_cache_mb(paper_cache, data.n, data.paper_n, args.cache_scaling, n_fold_train)
            if why:
                res = dict(method=method, cache_mb=cache_mb, skipped=why, error=None)
                store.put(key, cfg, res)
                print(f"  {key}: skipped ({why})", flush=True)
                continue
            try:
                res = run_search(method, data, grid, cv, cache_mb, args)
            except Exception as exc:
                res = dict(method=method, cache_mb=cache_mb, error=repr(exc))
            if method == "sklearnex":
                res["route"] = sklearnex_route(data.task)
            res.update(dataset=name, task=data.task, n=data.n, paper_cache_mb=paper_cache,
                       columns_held=columns_held(cache_mb, n_fold_train))
            store.put(key, cfg, res)
            print(f"  {key}: " + (f"error {res['error']}" if res.get("error") else
                                  f"wall {res['wall']:.1f} s, fits {res['n_fits']}, fit sum {res['fit_sum']:.1f} s, "
                                  f"iter {fmt(res['total_iter'], '.3g')}, best {res['best']}"), flush=True)
            render_grid(store, notes, complete=False, want=want)
        # identical solutions: dual objectives at a few points (first fold), at the 100 MB cache
        key = f"{name}/dualcheck/shrinking={int(bool(args.shrinking))}"
        cfg = grid_config(args, name, n, "dualcheck", PEER_CACHE)
        cfg.update(estimator_threads=args.our_threads, points=canonical(check_points(data.task, args.quick)))
        if not store.done(key, cfg):
            why = method_available("sk-csmo", data.task, api)
            cache_mb = scaled_cache_mb(PEER_CACHE, data.n, data.paper_n, args.cache_scaling, n_fold_train)
            res = dual_check(data, cv, cache_mb, args) if not why else dict(skipped=why, rows=[])
            res.update(dataset=name, cache_mb=cache_mb)
            store.put(key, cfg, res)
            print(f"  {key}: max rel diff smo2/csmo {fmt(res.get('max_smo2_csmo'), '.1e')}, "
                  f"ours/sklearn {fmt(res.get('max_ours_sklearn'), '.1e')}", flush=True)
        render_grid(store, notes, complete=False, want=want)
        del data
        gc.collect()
    render_grid(store, notes, complete=True, want=want)
    print(f"wrote {store.md_path}", flush=True)
    return 0


# ---------------------------------------------------------------------------------------- grid tables
def _ok(r) -> bool:
    return bool(r) and not r.get("error") and not r.get("skipped") and r.get("wall") is not None


def grid_results(store: Store, want: dict) -> dict[str, dict]:
    """dataset -> {'data': summary, 'dual': ..., (method, cache): result} for the stored entries whose
    config agrees with ``want`` (shrinking, cache scaling: other runs' entries stay in the JSON)."""
    out: dict[str, dict] = {}
    for key, e in store.entries.items():
        if any(k in e["config"] and e["config"][k] != v for k, v in want.items()):
            continue
        parts = key.split("/")
        name = parts[0]
        d = out.setdefault(name, {})
        if parts[1] == "data":
            d["data"] = e["result"]
        elif parts[1] == "dualcheck":
            d["dual"] = e["result"]
        else:
            d[(parts[1], int(parts[2].split("=")[1]))] = e["result"]
    return out


def score_text(task: str, score: float | None) -> str:
    if score is None:
        return "-"
    return f"{100 * score:.3f}%" if task == "classification" else f"MSE {-score:.4g}"


def key_text(key) -> str:
    return "(" + ", ".join(str(k) for k in key) + ")" if key else "-"


def rtd(a: float | None, b: float | None) -> float | None:
    return None if not a or b is None else 100.0 * (a - b) / a


def best_agreement(task: str, n: int, results: dict) -> tuple[str, list[str]]:
    """Compare every method's best grid point with the reference's (sklearn, else the first).

    'same': all picked the same point; 'tie': some differ, but in each method's own CV scores and in
    the reference's the two points are within one sample of accuracy (1/n) or BAR_MSE_RTOL relative
    MSE; 'differs' otherwise.
    """
    ref_name = "sklearn" if "sklearn" in results else next(iter(results))
    ref = results[ref_name]
    ref_key = tuple(ref["best"]["key"])

    def score_at(r, key):
        return dict(zip(map(tuple, r["points"]["keys"]), r["points"]["score"])).get(key)

    def tol(score):
        return 1.0 / n if task == "classification" else BAR_MSE_RTOL * abs(score)

    verdict, details = "same", []
    for m, r in results.items():
        key = tuple(r["best"]["key"])
        if m == ref_name or key == ref_key:
            continue
        own_gap = r["best"]["score"] - (score_at(r, ref_key) if score_at(r, ref_key) is not None else -np.inf)
        ref_gap = ref["best"]["score"] - (score_at(ref, key) if score_at(ref, key) is not None else -np.inf)
        near = own_gap <= tol(r["best"]["score"]) + 1e-12 and ref_gap <= tol(ref["best"]["score"]) + 1e-12
        verdict = "differs" if not near else ("tie" if verdict == "same" else verdict)
        details.append(f"{m} picked {key_text(key)}, {ref_name} {key_text(ref_key)}: score gap {own_gap:.3g} in "
                       f"{m}'s CV, {ref_gap:.3g} in {ref_name}'s ({'near-tie' if near else 'not a tie'})")
    return verdict, details


def render_grid(store: Store, notes: list[str], complete: bool, want: dict) -> None:
    res = grid_results(store, want)
    order = [n for n in GRID_DATASETS if n in res]
    body = [
        "Paper Tables 3-4 (section 4.3): 5-fold CV grid searches over the paper's grids (classification:",
        "C = 2^-5, 2^-3, ..., 2^15 x gamma = 2^-15, 2^-13, ..., 2^3 = 110 points; regression: C = 2^-1, ..., 2^11",
        "x gamma = 2^-11, ..., 2^3 (step 2 in log2) x epsilon = 2^-8, 2^-7, ..., 2^-1 = 448 points, the paper's",
        "reduced grid), tol = 1e-3, refit=False, the same StratifiedKFold / KFold(5, shuffle=True, random_state=0)",
        "object for every method; scoring accuracy / neg MSE.  gamma is in units of [-1, 1]-scaled features",
        "(the sparse binary sets get gamma x4, which is exactly the same kernel; `_csmo_data`).",
        "",
        "Subsampling: every set is a seeded (stratified) subsample of the paper's set or of our stand-in",
        "(table below), so the whole benchmark runs in about an hour on 2 cores; the full 110 / 448-point",
        "grids are kept (the paper's RTD is an aggregate over the grid, dominated by the large-C fits).",
        "The paper's caches (100 MB, 1 GB) are scaled to the subsample (see 'cache' columns and the module",
        "doc of `bench_csmo.py`): 'cols held' is the fraction of the training fold's n x n float32 kernel",
        "matrix columns the cache holds.",
        "",
        f"Shown: shrinking {'on' if want.get('shrinking') else 'off'} for every solver (`--shrinking`; the paper's CSMO does",
        f"not shrink, LIBSVM shrinks by default), cache scaling '{want.get('cache_scaling')}'; entries of runs with other",
        "settings stay in the JSON.",
        "",
        "Parallelism: " + ("peers GridSearchCV(n_jobs=peer_jobs) with single-threaded estimators; "
                           "sk-smo2/sk-csmo GridSearchCV(n_jobs=our_jobs), estimator n_jobs=our_threads; "
                           "sk-best PathSearchCV(n_jobs=best_jobs, threads), estimator n_jobs=best_threads "
                           "(values per search in the JSON config; defaults peer_jobs 2, our_jobs 1 / our_threads 2, "
                           "best_jobs 1 / best_threads 2)."),
        "",
    ]
    body += ["Methods: " + "; ".join(f"`{m}` = {METHOD_LABELS[m]}" for m in METHODS) + ".", ""]
    if not order:
        body.append("(no results yet)")
        store.write_md("Tables 3-4: grid searches, smo2 vs csmo, and peers", body, complete)
        return

    # ---- data sets
    rows = []
    for name in order:
        d = res[name].get("data", {})
        rows.append([name, d.get("task", "-"), d.get("n", "-"), d.get("paper_n", "-"),
                     f"{d.get('d', '-')}", d.get("storage", "-"), d.get("labels", "-"),
                     d.get("preprocessing", "-")])
    body += ["## Data sets", ""]
    body += md_table(["data", "task", "n used", "paper n", "d", "storage", "labels / target", "preprocessing"], rows)

    # ---- times and ratios
    body += ["", "## Grid-search wall time (seconds) and ratios", "",
             "Wall-clock time of `search.fit` (all 5 x grid fits and their scoring) at the paper's 100 MB cache",
             "scaled; sk-smo2 / sk-csmo also at 1 GB scaled.  best/skl = sk-best / sklearn, best/ilx = sk-best /",
             f"sklearnex.  Bar (per set): sk-best <= {BAR_SPEED_VS_SKLEARN} x sklearn and faster than every peer "
             "measured (sklearn, sklearnex).", ""]
    rows, totals, bar_rows = [], {}, []
    key_numbers: dict[str, dict] = {n: {} for n in order}
    for name in order:
        r = res[name]

        def wall(m, c=PEER_CACHE):
            x = r.get((m, c))
            return x["wall"] if _ok(x) else None

        def cell(m, c=PEER_CACHE):
            x = r.get((m, c))
            if x is None:
                return "-"
            if x.get("skipped"):
                return "skipped"
            if x.get("error"):
                return "err"
            return fmt(x["wall"], ".1f")

        best, skl, ilx = wall("sk-best"), wall("sklearn"), wall("sklearnex")
        peers = [v for v in (skl, ilx) if v is not None]
        if best is None or skl is None:
            verdict = "n/a"
        else:
            verdict = "PASS" if best <= BAR_SPEED_VS_SKLEARN * skl and all(best < p for p in peers) else "FAIL"
        bar_rows.append(verdict)
        key_numbers[name].update(best_skl=best / skl if best and skl else None,
                                 best_ilx=best / ilx if best and ilx else None, speed_bar=verdict)
        for m, c in (("sk-best", PEER_CACHE), ("sklearn", PEER_CACHE), ("sklearnex", PEER_CACHE),
                     ("sk-smo2", PEER_CACHE), ("sk-csmo", PEER_CACHE)):
            v = wall(m, c)
            if v is not None:
                totals.setdefault(m, {})[name] = v
        rows.append([name, cell("sklearn"), cell("sklearnex"), cell("sk-smo2"), cell("sk-csmo"),
                     cell("sk-smo2", 1000), cell("sk-csmo", 1000), cell("sk-best"),
                     fmt(best / skl if best and skl else None, ".3f"), fmt(best / ilx if best and ilx else None, ".3f"),
                     fmt(wall("sk-csmo") / skl if wall("sk-csmo") and skl else None, ".3f"), verdict])
    # totals over the sets where every compared method ran
    common = [n for n in order if all(n in totals.get(m, {}) for m in ("sk-best", "sklearn"))]
    tot = {m: sum(totals[m][n] for n in common) for m in totals if all(n in totals[m] for n in common)}
    if common:
        b, s = tot.get("sk-best"), tot.get("sklearn")
        i = tot.get("sklearnex")
        peers = [v for v in (s, i) if v is not None]
        tv = "PASS" if b is not None and s and b <= BAR_SPEED_VS_SKLEARN * s and all(b < p for p in peers) else "FAIL"
        rows.append([f"**total** ({len(common)} sets)", fmt(s, ".1f"), fmt(i, ".1f"), fmt(tot.get("sk-smo2"), ".1f"),
                     fmt(tot.get("sk-csmo"), ".1f"), "", "", fmt(b, ".1f"), fmt(b / s if b and s else None, ".3f"),
                     fmt(b / i if b and i else None, ".3f"),
                     fmt(tot.get("sk-csmo") / s if tot.get("sk-csmo") and s else None, ".3f"), tv])
    else:
        tv = "n/a"
    body += md_table(["data", "sklearn", "sklearnex", "sk-smo2", "sk-csmo", "sk-smo2 1GB", "sk-csmo 1GB", "sk-best",
                      "best/skl", "best/ilx", "csmo/skl", "bar"], rows)

    # ---- RTD
    body += ["", "## RTD: smo2 vs csmo (paper Tables 3-4)", "",
             "RTD = 100 (t_smo2 - t_csmo) / t_smo2 from the accumulated fit time of the 5 x grid fits (the sum",
             "of GridSearchCV's fit times, the paper's 'accumulated time'); 'RTD wall' uses the searches' wall",
             "times; iter = total solver iterations over the grid; 'pts csmo faster' = share of grid points whose",
             "(5-fold) fit time is lower with csmo.  Paper times are hours for the full sets (5-fold averages of",
             "the accumulated per-fold times); ours seconds for the subsample.  Bar (adult8, mnist1, abalone,",
             f"cpusmall): RTD > 0 and |RTD - paper| <= {pn.RTD_BAR_POINTS:g} points.", ""]
    rows, rtd_verdicts = [], []
    for name in order:
        r = res[name]
        for cache in RTD_CACHES:
            a, b = r.get(("sk-smo2", cache)), r.get(("sk-csmo", cache))
            if not (_ok(a) and _ok(b)):
                continue
            ours = rtd(a["fit_sum"], b["fit_sum"])
            ours_wall = rtd(a["wall"], b["wall"])
            paper = pn.paper_rtd(name, cache)
            ptable = pn.TABLE3.get(name) or pn.TABLE4.get(name) or {}
            ptimes = ptable.get("times", {}).get(cache)
            it = rtd(a.get("total_iter"), b.get("total_iter"))
            ft_a = dict(zip(map(tuple, a["points"]["keys"]), a["points"]["fit_time"]))
            ft_b = dict(zip(map(tuple, b["points"]["keys"]), b["points"]["fit_time"]))
            shared = [k for k in ft_a if k in ft_b]
            faster = 100.0 * np.mean([ft_b[k] < ft_a[k] for k in shared]) if shared else None
            if name in pn.RTD_BAR_SETS and ours is not None and paper is not None:
                v = "PASS" if ours > 0 and abs(ours - paper) <= pn.RTD_BAR_POINTS else "FAIL"
                rtd_verdicts.append(v)
            else:
                v = "-"
            key_numbers[name][f"rtd_{cache}"] = (ours, paper, v)
            rows.append([name, f"{cache} -> {a['cache_mb']:.3g}", f"{100 * a.get('columns_held', float('nan')):.1f}%",
                         fmt(a["fit_sum"], ".1f"), fmt(b["fit_sum"], ".1f"), fmt(ours, ".1f"), fmt(ours_wall, ".1f"),
                         fmt(paper, ".1f"), fmt(ptimes[0] if ptimes else None, ".3f"),
                         fmt(ptimes[1] if ptimes else None, ".3f"),
                         fmt(a.get("total_iter"), ".3g"), fmt(b.get("total_iter"), ".3g"), fmt(it, ".1f"),
                         fmt(faster, ".0f"), v])
    body += md_table(["data", "cache MB paper -> ours", "cols held", "smo2 fit s", "csmo fit s", "RTD ours",
                      "RTD wall", "RTD paper", "paper SMO h", "paper CSMO h", "iter smo2", "iter csmo",
                      "iter cut %", "pts csmo faster %", "bar"], rows)

    # ---- best points and scores
    body += ["", "## Best hyper-parameters and CV scores", "",
             "log2 (C, gamma[, epsilon]) of the best grid point (ties: the smaller C, gamma, epsilon) and its mean",
             "5-fold CV accuracy / MSE; fits = grid points x folds; iter = total solver iterations (a scorer reading",
             "`n_iter_`; sklearnex's count is oneDAL's and not comparable); not conv. = fits that stopped on",
             f"max_iter (ours: `converged_`; cap {MAX_ITER:,} pair steps like LIBSVM's).  Paper: its best point and test",
             "accuracy / MSE on the full set (not comparable with a CV score on a subsample).", ""]
    rows, agree = [], {}
    for name in order:
        r = res[name]
        task = r.get("data", {}).get("task", "classification")
        ptable = pn.TABLE3.get(name) or pn.TABLE4.get(name)
        if ptable:
            pkey = [ptable["log2_C"], ptable["log2_gamma"]] + ([ptable["log2_epsilon"]] if "log2_epsilon" in ptable else [])
            pscore = (f"{ptable['acc'][0]:.3f}% / {ptable['acc'][1]:.3f}%" if "acc" in ptable
                      else f"MSE {ptable['mse'][0]:g} / {ptable['mse'][1]:g}")
            rows.append([name, "paper (SMO / CSMO)", key_text(pkey), pscore, "-", "-", "-", "-"])
        okres = {}
        for m in METHODS:
            for cache in ((PEER_CACHE, 1000) if m in ("sk-smo2", "sk-csmo") else (PEER_CACHE,)):
                x = r.get((m, cache))
                if x is None:
                    continue
                label = m + (" 1GB" if cache == 1000 else "")
                if not _ok(x):
                    rows.append([name, label, "skipped" if x.get("skipped") else "err", "-", "-", "-", "-",
                                 x.get("skipped") or x.get("error") or "-"])
                    continue
                okres[label] = x
                rows.append([name, label, key_text(x["best"]["key"]), score_text(task, x["best"]["score"]),
                             x["n_fits"], fmt(x.get("total_iter"), ".4g"), fmt(x.get("n_not_converged"), "d"),
                             x.get("note") or x.get("route") or ""])
        if okres:
            agree[name] = best_agreement(task, r.get("data", {}).get("n", 1), okres)
    body += md_table(["data", "method", "best log2 point", "best CV score", "fits", "iter", "not conv.",
                      "note / sklearnex route"], rows)

    # ---- identical solutions
    body += ["", "## Identical solutions", "",
             "Dual objective 1/2 a'Qa - s'a at a few grid points on the first CV fold's training part, 100 MB",
             "(scaled) cache: sparsekernel smo2 and csmo (`dual_objective_`) and sklearn (recomputed from",
             "`dual_coef_`).  rel = |f1 - f2| / max |f|.  'best points' = whether every method's search picked the",
             "same grid point as sklearn's ('tie': a method differs, but in its own CV scores and in sklearn's the",
             f"two points are within one sample of CV accuracy, or {BAR_MSE_RTOL:g} relative MSE).  Bar: max rel smo2/csmo",
             f"<= {BAR_DUAL_RTOL:g} and best points same or tie.", ""]
    rows, ident_verdicts, detail_lines = [], [], []
    for name in order:
        dchk = res[name].get("dual")
        a = agree.get(name, ("-", []))
        if dchk is None:
            continue
        if dchk.get("skipped"):
            rows.append([name, "-", "-", "-", "-", a[0], "skipped: " + dchk["skipped"]])
            continue
        mx = dchk.get("max_smo2_csmo")
        its = [(row.get("smo2_iter"), row.get("csmo_iter")) for row in dchk["rows"]]
        its_txt = ", ".join(f"{key_text(row['key'])}: {fmt(row.get('smo2_iter'), 'd')}/{fmt(row.get('csmo_iter'), 'd')}"
                            for row in dchk["rows"])
        errs = [f"{key_text(row['key'])} {k}: {row[k]}" for row in dchk["rows"] for k in row if k.endswith("_error")]
        v = "PASS" if mx is not None and mx <= BAR_DUAL_RTOL and a[0] in ("same", "tie") else "FAIL"
        ident_verdicts.append(v)
        rows.append([name, len(dchk["rows"]), fmt(mx, ".1e"), fmt(dchk.get("max_ours_sklearn"), ".1e"), its_txt,
                     a[0], v])
        detail_lines += [f"{name}: {t}" for t in a[1] + errs]
    body += md_table(["data", "points", "max rel smo2/csmo", "max rel ours/sklearn",
                      "iterations smo2/csmo per point", "best points", "bar"], rows)
    if detail_lines:
        body += ["", *[f"- {t}" for t in detail_lines]]

    # ---- bars
    def overall(vs):
        vs = [v for v in vs if v in ("PASS", "FAIL")]
        return ("PASS" if all(v == "PASS" for v in vs) else "FAIL") if vs else "n/a"

    summary = dict(bar_identical=overall(ident_verdicts), bar_rtd=overall(rtd_verdicts),
                   bar_speed_per_set=overall(bar_rows), bar_speed_total=tv, key_numbers=key_numbers)
    store.summary = summary
    body += ["", "## Bars", "",
             f"- Identical solutions across solvers: **{summary['bar_identical']}** "
             f"({ident_verdicts.count('PASS')}/{len(ident_verdicts)} sets).",
             f"- RTD > 0 and within {pn.RTD_BAR_POINTS:g} points of the paper on {', '.join(pn.RTD_BAR_SETS)}: "
             f"**{summary['bar_rtd']}** ({rtd_verdicts.count('PASS')}/{len(rtd_verdicts)} set x cache rows).",
             f"- sparsekernel's grid search (sk-best) <= {BAR_SPEED_VS_SKLEARN} x sklearn and faster than every peer: "
             f"per set **{summary['bar_speed_per_set']}** "
             f"({bar_rows.count('PASS')}/{sum(v in ('PASS', 'FAIL') for v in bar_rows)} sets), "
             f"total **{summary['bar_speed_total']}**.", ""]
    extra = []
    for name in order:
        for k, x in res[name].items():
            if isinstance(k, tuple) and x.get("error"):
                extra.append(f"{name} {k[0]} cache {k[1]}: {x['error']}")
            if isinstance(k, tuple) and x.get("skipped"):
                extra.append(f"{name} {k[0]} cache {k[1]} skipped: {x['skipped']}")
            if isinstance(k, tuple) and x.get("route") not in (None, "oneDAL"):
                extra.append(f"{name} sklearnex did not run on oneDAL: {x['route']}")
    if extra or notes:
        body += ["Notes:", "", *[f"- {n}" for n in notes + extra], ""]
    store.write_md("Tables 3-4: grid searches, smo2 vs csmo, and peers", body, complete)


# ======================================================================================== assemble
ASSEMBLE_TITLE = "Conjugate SMO benchmarks"
ASSEMBLE_INTRO = """\
sparsekernel's conjugate SMO (`solver='csmo'`), warm-started C paths (`PathSearchCV`) and second-order
SMO (`solver='smo2'`) against the published numbers of Torres-Barrán, Alaíz & Dorronsoro, "Faster SVM
Training via Conjugate SMO" (section 4), and against scikit-learn (LIBSVM) and scikit-learn-intelex
(oneDAL) grid searches.  Produced by `benchmarks/bench_csmo.py` (`--part table2`, `--part grid`,
`--part assemble`); each section lists its own date, command, machine and repository revision.

- **Table 2** (`table2`): cache effect - fit time of smo2 and csmo at C = 1, 100, 10000 and the paper's
  caches (scaled to the subsample), next to the paper's SMO / CSMO times.  No bar.
- **Tables 3-4** (`grid`): 5-fold CV grid searches (110 points classification, 448 regression).
  Bars: identical solutions across solvers (dual objectives at sample points within 1e-3 relative,
  same best grid point or a near-tie); RTD = 100 (t_smo2 - t_csmo) / t_smo2 > 0 and within 10 points
  of the paper's on adult8, mnist1, abalone and cpusmall (paper: 33.5/26.2, 10.1/16.6, 35.1/35.0,
  27.5/25.5 at 100 MB / 1 GB); sparsekernel's whole grid search (PathSearchCV, csmo, warm starts)
  at most 0.3x sklearn's time and faster than the fastest other peer.

Every set is subsampled so that the whole benchmark runs in about an hour on 2 cores, and the
paper's cache sizes are scaled to the subsample; the sections say how.
"""


def cmd_assemble(args) -> int:
    lines = [ASSEMBLE_INTRO]
    rows, sections, grid_summary = [], [], None
    for part in ("table2", "grid"):
        st = Store.load(part, args.quick)
        if st is None or not st.md_path.exists():
            rows.append([part, "not run"])
            continue
        summary = st.summary
        if part == "table2":
            res = "; ".join(f"{r[0]} shrink {r[1]} C={r[2]}: csmo/smo2 {r[4]} (paper {r[6]}), iter {r[7]}, "
                            f"dual diff {r[8]}" for r in summary.get("rows", [])) or "-"
        else:
            res = "; ".join(f"{k[4:]}: {v}" for k, v in summary.items() if k.startswith("bar")) or "-"
            grid_summary = summary
        text = st.md_path.read_text()
        if "Partial results" in text:
            res += " (partial)"
        rows.append([part, res])
        sections.append(text)
    lines += ["## Summary", "", *md_table(["part", "result"], rows), ""]
    if grid_summary:
        g = grid_summary
        lines += ["Bars (grid part):", "",
                  f"- identical solutions across solvers: **{g.get('bar_identical')}**",
                  f"- RTD > 0 and within {pn.RTD_BAR_POINTS:g} points of the paper ({', '.join(pn.RTD_BAR_SETS)}): "
                  f"**{g.get('bar_rtd')}**",
                  f"- sparsekernel grid search <= {BAR_SPEED_VS_SKLEARN} x sklearn and faster than every peer: per set "
                  f"**{g.get('bar_speed_per_set')}**, total **{g.get('bar_speed_total')}**", ""]
        krows = []
        for name, k in (g.get("key_numbers") or {}).items():
            def r(c):
                t = k.get(f"rtd_{c}")
                return "-" if not t else f"{fmt(t[0], '.1f')} / {fmt(t[1], '.1f')}"
            krows.append([name, fmt(k.get("best_skl"), ".3f"), fmt(k.get("best_ilx"), ".3f"), k.get("speed_bar", "-"),
                          r(100), r(1000),
                          "/".join(k.get(f"rtd_{c}", (None, None, "-"))[2] for c in (100, 1000))])
        if krows:
            lines += ["Side by side (details in the sections): sk-best wall time / sklearn's and / sklearnex's; RTD ours /",
                      "paper at the 100 MB and 1 GB caches (scaled).", ""]
            lines += md_table(["data", "best/sklearn", "best/sklearnex", "speed bar", "RTD 100 MB ours / paper",
                               "RTD 1 GB ours / paper", "RTD bar"], krows)
            lines.append("")
    _harness.write_assembled(RESULTS / ("csmo_quick.md" if args.quick else "csmo.md"), ASSEMBLE_TITLE, lines,
                             sections, args.quick)
    return 0


# ======================================================================================== command line
def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", required=True, choices=["table2", "grid", "assemble"])
    parser.add_argument("--datasets", type=csv_list(str, cd.ALL), default=None,
                        help=f"comma-separated subset (table2: {','.join(T2_DATASETS)}; grid: {','.join(GRID_DATASETS)})")
    parser.add_argument("--quick", action="store_true", help="tiny subsamples and grids (smoke test; *_quick files)")
    parser.add_argument("--budget", type=float, default=None,
                        help=f"seconds for the part: the default sizes (planned for table2 {T2_BUDGET:g} s, "
                             f"grid {GRID_BUDGET:g} s) are scaled by sqrt(budget / planned)")
    parser.add_argument("--sizes", type=parse_sizes, default=None, help="override sizes: name=n,name=n")
    parser.add_argument("--shrinking", type=int, choices=[0, 1], default=1,
                        help="shrinking for every solver (default 1, the library default; the paper's CSMO does not shrink)")
    parser.add_argument("--cache-scaling", choices=["quadratic", "linear"], default="quadratic",
                        help="how the paper's cache sizes are scaled to a subsample (default quadratic; see the doc)")
    parser.add_argument("--force", action="store_true", help="recompute units already in the JSON")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="data directory (default: $SPARSEKERNEL_DATA or /work/shared/data)")
    g = parser.add_argument_group("table2")
    g.add_argument("--t2-C", type=csv_list(float), default=None, help="C values (default 1,100,10000; the text: 10,100,10000)")
    g.add_argument("--caches", type=csv_list(int), default=None,
                   help="paper cache sizes in MB to run (default 1,50,100,500,1000)")
    g.add_argument("--repeats", type=int, default=1, help="interleaved fits per solver and cell, median (default 1)")
    g = parser.add_argument_group("grid")
    g.add_argument("--methods", type=csv_list(str, METHODS), default=None,
                   help=f"subset of {','.join(METHODS)} (default: all)")
    g.add_argument("--peer-jobs", type=int, default=2, help="GridSearchCV n_jobs for sklearn / sklearnex (default 2)")
    g.add_argument("--our-jobs", type=int, default=1, help="GridSearchCV n_jobs for sk-smo2 / sk-csmo (default 1)")
    g.add_argument("--our-threads", type=int, default=2,
                   help="sparsekernel estimator n_jobs for sk-smo2 / sk-csmo, Table 2 and the dual check (default 2)")
    g.add_argument("--best-jobs", type=int, default=1,
                   help="PathSearchCV n_jobs (threads; default 1 = fits in order, warm starts along each fold's C walk)")
    g.add_argument("--best-threads", type=int, default=2, help="estimator n_jobs inside PathSearchCV (default 2)")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    if args.budget is not None and args.budget <= 0:
        parser.error("--budget must be positive")
    return args


COMMANDS = {"table2": cmd_table2, "grid": cmd_grid, "assemble": cmd_assemble}


def main(argv=None) -> int:
    global MAX_ITER
    args = parse_args(argv)
    if args.quick:
        MAX_ITER = 1_000_000
    if args.data_dir is not None:
        _datasets.set_data_dir(args.data_dir)
        os.environ["SPARSEKERNEL_DATA"] = str(args.data_dir)
    return COMMANDS[args.part](args)


if __name__ == "__main__":
    sys.exit(main())
