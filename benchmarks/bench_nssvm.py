"""NSSVM benchmark: the NSSVM paper's Tables VI-VIII, and rbf NSSVC against SVC.

Zhou, "Sparse SVM for sufficient data reduction" (IEEE TPAMI 2021), section 4.4 (published
numbers in ``_nssvm_paper_numbers``).  ``sparsekernel.NSSVC`` against scikit-learn's linear models
(and, for the rbf kernel, against ``sparsekernel.SVC``), fitted side by side in one process.

Parts (``--part``), each writing ``benchmarks/results/nssvm_<part>.{json,md}``:

``table7``  (paper Table VII, Example 4.1)
    Train and test sets of m points each (``make_nssvm_gaussians(2m, random_state=trial)``, split
    in halves, float64) at m = 1e5, 1e6, 1e7, 1e8 (``--sizes``) with 5, 5, 3, 1 trials
    (``--trials``).  Per trial, one after the other on the same data: NSSVC(), NSSVC(refit_intercept=
    True) and the peers LinearSVC() (its default: squared hinge, dual='auto'), LinearSVC(loss='hinge',
    dual=True) (LIBLINEAR -s 3, the paper's LSVM), SGDClassifier(loss='hinge') and
    LogisticRegression() (lbfgs), all at sklearn's defaults (max_iter included).  The peers run in
    the first ``--peer-trials`` trials only (default: all at 1e5 and 1e6, one at 1e7) and at
    m >= 1e8 only those named by ``--big-peers`` (default none: LinearSVC needs minutes and ~6 GB
    there).  Bars (on NSSVC()): m = 1e7 fit <= 0.6 s, ACC within 0.05 points of 96.93, NSV within
    10% of 1090 (the paper's 1.09e-4 m), >= 10x faster than every peer; m = 1e8 fit <= 8 s.
``real``  (paper Tables VI and VIII)
    a9a (official a9a / a9a.t; paper Table VI), skin (skin_nonskin, the paper's 90% / 10% split of
    all 245,057 rows, seeded; paper Table VIII), and w8a and magic (no paper numbers).  Methods:
    NSSVC with beta = 1 (the default) and with Table IV's beta (0.2 for a9a, 0.05 otherwise), each
    with refit_intercept False and True, and the table7 peers.  ``--repeats`` (default 3) fits per
    method, interleaved.
``kernel``  (an extension of the paper)
    NSSVC(kernel='rbf') (gamma='scale', C = 0.25: its defaults) at s = 'auto' (ceil(0.1 m)) and at
    s = 0.02, 0.05, 0.1, 0.2 m (``--s-grid``), refit_intercept False and True, against
    sparsekernel.SVC(kernel='rbf', gamma='scale', C=1) on magic, ringnorm (all 7400 rows, 70/30
    stratified, random_state=0), banana (5300 rows, 70/30 stratified, random_state=0, standardised)
    and usps (digit 0 vs rest).  ``--repeats`` (default 3).  Bar, per set: NSSVC(kernel='rbf') at
    its defaults within 1 point of SVC's test accuracy with at most 20% of SVC's support vectors.
``assemble``
    ``benchmarks/results/nssvm.md``: the bars, then the three sections.

Measurements (every part): fit time = ``time.perf_counter`` around ``fit`` only (data generation,
loading and scoring excluded); peak memory = the largest RSS above the RSS just before the fit
(``_harness.PeakRSS``: a thread samples VmRSS every 5 ms, and the kernel's high-water mark is reset
before and read after the fit, so peaks inside native code are caught too); ACC / TACC = training /
test accuracy in % (predictions in row chunks); NSV = ``len(support_)`` for NSSVC and SVC; for
LinearSVC (both losses) the number of training points with y f(x) <= 1 + 1e-9 (the margin support
vectors of a hinge-type model; sklearn does not expose the dual coefficients); '-' for SGD and
logistic regression; iter = ``n_iter_`` (LinearSVC: LIBLINEAR's iterations; SGD: epochs; LR: lbfgs
iterations).  Warnings raised in ``fit`` are recorded (the ``conv`` column counts fits with a
ConvergenceWarning).  Summaries: mean ACC / TACC / NSV over the trials (the paper averages), median
fit time and iterations, largest peak memory.  sparsekernel's estimators use every core
(n_jobs=None); LIBLINEAR and SGD are single-threaded; lbfgs uses whatever BLAS threads numpy has.
NSSVC and the peers with a ``random_state`` get ``random_state = trial`` (reproducible T0 draws).

Restartable: every (group, trial, method) measurement is saved to the JSON as soon as it is made,
and a rerun skips those already stored with the same settings (``--force`` recomputes), so a part
can be run in pieces (e.g. ``--sizes 1e8`` alone, or ``--big-peers logreg,sgd`` later).

BLAS threads (``--blas-threads N``): NSSVC's small dense algebra (scipy Cholesky of the s x s or n x n
system, numpy products) runs on OpenBLAS's thread pools - numpy and scipy each load their own - next
to sparsekernel's OpenMP threads; on 2 cores their busy-waiting makes those calls erratic (the same
fit took 0.13 s to 9 s in the smoke runs).  The default measures the library as shipped;
``--blas-threads 1`` limits every BLAS pool with threadpoolctl for the whole run (peers included) and
writes ``nssvm_<part>_blas1.*`` (assemble with the same flag), so both can be kept side by side.

Full run (2 cores, nothing else running; times estimated from the smoke runs and single fits)::

    python benchmarks/bench_nssvm.py --part table7    # ~5 min (+~5 min with --big-peers logreg,sgd)
    python benchmarks/bench_nssvm.py --part real      # ~6 min (w8a's NSSVC(beta=1) dominates)
    python benchmarks/bench_nssvm.py --part kernel    # ~10-20 min (BLAS contention; ~3 min with --blas-threads 1)
    python benchmarks/bench_nssvm.py --part assemble

Smoke test (seconds; writes ``nssvm*_quick.*``)::

    python benchmarks/bench_nssvm.py --part table7 --quick
    python benchmarks/bench_nssvm.py --part real --quick
    python benchmarks/bench_nssvm.py --part kernel --quick
    python benchmarks/bench_nssvm.py --part assemble --quick
"""

from __future__ import annotations

import argparse
import gc
import math
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _datasets  # noqa: E402
import _harness  # noqa: E402  (the results store, tables, PeakRSS)
import _nssvm_paper_numbers as pn  # noqa: E402
import bench_csmo  # noqa: E402  (total_iter)
import bench_svc  # noqa: E402  (subsample_rows)
from _harness import RESULTS, csv_list, fmt, md_table  # noqa: E402

total_iter = bench_csmo.total_iter

# ---------------------------------------------------------------------------------------- settings
TABLE7_SIZES = (10**5, 10**6, 10**7, 10**8)
TABLE7_TRIALS = {10**5: 5, 10**6: 5, 10**7: 3, 10**8: 1}
TABLE7_PEER_TRIALS = {10**7: 1, 10**8: 1}      # peers run in the first k trials (others: all trials)
BIG_M = 10**8                                   # from here on, only --big-peers run
QUICK_SIZES, QUICK_TRIALS = (10**4,), 1

REAL_SETS = ("a9a", "skin", "w8a", "magic")
KERNEL_SETS = ("magic", "ringnorm", "banana", "usps")
S_GRID = (0.02, 0.05, 0.1, 0.2)
REPEATS = {"real": 3, "kernel": 3}
QUICK_ROWS = 2000                               # --quick: train and test subsampled to this many rows
SKIN_TRAIN_FRACTION = 0.9
SPLIT_SEED = 0
MARGIN_TOL = 1e-9                               # margin SV: y f(x) <= 1 + MARGIN_TOL
PREDICT_CHUNK = 1 << 21                         # rows per predict call (memory at m = 1e8)

# bars
BAR_M = 10**7
BAR_TIME_1E7 = 0.6
BAR_ACC = 96.93
BAR_ACC_POINTS = 0.05
BAR_NSV = 1090                                  # paper: NSV/m = 1.09e-4 at m = 1e7
BAR_NSV_FRACTION = 0.10
BAR_SPEEDUP = 10.0
BAR_TIME_1E8 = 8.0
BAR_KERNEL_ACC_POINTS = 1.0
BAR_KERNEL_NSV_FRACTION = 0.20


# ======================================================================================== store
#: file-name tag of a non-default setting (``--blas-threads N``: "_blasN"), so runs under it get their
#: own JSON / markdown instead of replacing the default ones
TAG = ""


class Store(_harness.Store):
    """``nssvm_<part>[<TAG>][_quick].{json,md}``."""

    prefix = "nssvm"

    @classmethod
    def stem(cls, part: str, quick: bool) -> str:
        return super().stem(part + TAG, quick)


# ======================================================================================== methods
@dataclass(frozen=True)
class Method:
    key: str
    label: str
    make: Callable[[int], object]       # seed -> unfitted estimator
    ours: bool = False                  # sparsekernel: CSR as loaded (int64 indices); peers: int32 copies
    nsv: str | None = None              # 'support': len(support_); 'margin': #{y f <= 1}; None: '-'


def nssvc(key: str, label: str, **params) -> Method:
    from sparsekernel import NSSVC

    # the paper's method unless a variant asks for the refit (refit_intercept is on by default since
    # issue 50; these tables replicate the paper's Newton b) and its Algorithm 2 (adaptive='accuracy',
    # the default since issue 50, doubles the level further while the training accuracy gains)
    params = {"refit_intercept": False, "adaptive": True, **params}
    return Method(key, label, lambda seed: NSSVC(random_state=seed, **params), ours=True, nsv="support")


def peer_methods() -> list[Method]:
    from sklearn.linear_model import LogisticRegression, SGDClassifier
    from sklearn.svm import LinearSVC

    return [
        Method("linearsvc", "LinearSVC()", lambda seed: LinearSVC(random_state=seed), nsv="margin"),
        Method("linearsvc-hinge", "LinearSVC(loss='hinge', dual=True) [LSVM]",
               lambda seed: LinearSVC(loss="hinge", dual=True, random_state=seed), nsv="margin"),
        Method("sgd", "SGDClassifier(loss='hinge')", lambda seed: SGDClassifier(loss="hinge", random_state=seed)),
        Method("logreg", "LogisticRegression()", lambda seed: LogisticRegression()),
    ]


PEER_KEYS = ("linearsvc", "linearsvc-hinge", "sgd", "logreg")


def linear_methods(paper_beta: float | None = None) -> list[Method]:
    """NSSVC (default, refit) [+ the paper's beta, default and refit] and the peers."""
    ours = [nssvc("nssvc", "NSSVC()"), nssvc("nssvc-refit", "NSSVC(refit_intercept=True)", refit_intercept=True)]
    if paper_beta is not None:
        ours += [nssvc("nssvc-beta", f"NSSVC(beta={paper_beta:g})", beta=paper_beta),
                 nssvc("nssvc-beta-refit", f"NSSVC(beta={paper_beta:g}, refit_intercept=True)", beta=paper_beta,
                       refit_intercept=True),
                 nssvc("nssvc-strat", "NSSVC(t0='stratified')", t0="stratified"),
                 nssvc("nssvc-strat-refit", "NSSVC(t0='stratified', refit_intercept=True)", t0="stratified",
                       refit_intercept=True)]
    return ours + peer_methods()


def kernel_methods(s_grid) -> list[Method]:
    from sparsekernel import SVC

    out = [Method("svc", "SVC(rbf, C=1)", lambda seed: SVC(kernel="rbf", gamma="scale", C=1.0), ours=True,
                  nsv="support")]
    for s in ("auto", *s_grid):
        for refit in (False, True):
            out.append(nssvc(kernel_key(s, refit), f"NSSVC(rbf, s={s}" + (", refit)" if refit else ")"),
                             kernel="rbf", s=s, refit_intercept=refit))
    return out


BUDGET_CS = (0.25, 1.0, 4.0, 16.0, 64.0)  # the C grid of the budget variant's 3-fold CV


def budget_method(svc_nsv: int) -> Method:
    """NSSVC(rbf) held to the bar's budget, s = 20% of SVC's support vectors with Algorithm 1 (fixed s:
    NSV <= s), its C chosen by 3-fold CV on the training set from BUDGET_CS (the CV is in the fit time).
    The squared-type loss (5) on a subset wants a larger C than the paper's 0.25 (C = 0.25 suits the
    linear model at scale)."""
    from sklearn.model_selection import GridSearchCV, StratifiedKFold

    from sparsekernel import NSSVC

    budget = max(2, int(BAR_KERNEL_NSV_FRACTION * svc_nsv))

    def make(seed):
        return GridSearchCV(NSSVC(kernel="rbf", s=budget, adaptive=False, random_state=seed), {"C": list(BUDGET_CS)},
                            cv=StratifiedKFold(3, shuffle=True, random_state=seed))

    return Method(BUDGET_KEY, f"NSSVC(rbf, s={budget} = 20% of SVC's, Alg. 1, C by 3-fold CV)", make, ours=True,
                  nsv="support")


BUDGET_KEY = "nssvc-budget-cv"


def svc_support_count(split: Split) -> int:
    """SVC's number of support vectors on a split (an untimed fit, to size the budget variant)."""
    from sparsekernel import SVC

    X, y, _, _ = split
    return len(SVC(kernel="rbf", gamma="scale", C=1.0).fit(X, y).support_)


def kernel_key(s, refit: bool) -> str:
    return f"nssvc-s={s}" + ("-refit" if refit else "")


# ======================================================================================== measuring
Split = tuple  # (X_train, y_train, X_test, y_test)


def accuracy(model, X, y) -> float:
    """Accuracy in %, predicting PREDICT_CHUNK rows at a time."""
    correct = sum(int(np.count_nonzero(model.predict(X[i:i + PREDICT_CHUNK]) == y[i:i + PREDICT_CHUNK]))
                  for i in range(0, X.shape[0], PREDICT_CHUNK))
    return 100.0 * correct / X.shape[0]


def margin_count(model, X, y) -> int:
    """#{i: y_i f(x_i) <= 1}: the support vectors of a hinge-type linear model."""
    return sum(int(np.count_nonzero(y[i:i + PREDICT_CHUNK] * model.decision_function(X[i:i + PREDICT_CHUNK])
                                    <= 1.0 + MARGIN_TOL))
               for i in range(0, X.shape[0], PREDICT_CHUNK))


def n_support(method: Method, model, X, y) -> int | None:
    model = getattr(model, "best_estimator_", model)  # a search: its refitted model
    if method.nsv == "support":
        return len(model.support_)
    if method.nsv == "margin":
        return margin_count(model, X, y)
    return None


def timed_fit(model, X, y) -> tuple[float, float, list]:
    """(fit seconds, peak RSS growth MB, warnings raised in fit)."""
    gc.collect()
    with warnings.catch_warnings(record=True) as caught, _harness.PeakRSS() as rss:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        model.fit(X, y)
        seconds = time.perf_counter() - t0
    return seconds, rss.growth_mb, caught


def measure(method: Method, seed: int, split: Split, peer_split: Split) -> dict:
    """Fit one method on one split; everything the tables need (or the error)."""
    X, y, Xt, yt = split if method.ours else peer_split
    model = method.make(seed)
    try:
        seconds, peak, caught = timed_fit(model, X, y)
    except Exception as exc:  # a failing method must not stop the run
        return dict(error=repr(exc))
    t0 = time.perf_counter()
    tacc = accuracy(model, Xt, yt)
    predict_s = time.perf_counter() - t0
    res = dict(time=seconds, peak_mb=peak, acc=accuracy(model, X, y), tacc=tacc, predict_time=predict_s,
               nsv=n_support(method, model, X, y), n_iter=total_iter(model), m=X.shape[0], n=X.shape[1],
               convergence_warning=any(w.category.__name__ == "ConvergenceWarning" for w in caught),
               warnings=sorted({f"{w.category.__name__}: {str(w.message)[:120]}" for w in caught}))
    for attr in ("converged_", "fit_time_"):
        if hasattr(model, attr):
            res[attr.rstrip("_")] = getattr(model, attr)
    if hasattr(model, "s_"):
        res["s_final"] = int(np.max(model.s_))
    del model
    return res


def warm_up(methods: list[Method]) -> None:
    """One untimed fit of every method on a tiny Example 4.1 set (imports, thread pools)."""
    from sparsekernel.datasets import make_nssvm_gaussians

    X, y = make_nssvm_gaussians(400, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for method in methods:
            try:
                method.make(0).fit(X, y)
            except Exception:
                pass


# ======================================================================================== running
@dataclass
class Job:
    """One data draw (``group``, ``trial``) and the methods to fit on it, one after the other."""
    group: str
    trial: int
    methods: list[Method]
    load: Callable[[], tuple[Split, Split] | None]   # -> (split for ours, split for peers)
    config: dict


def entry_key(group: str, trial: int, method_key: str) -> str:
    return f"{group}/trial={trial}/{method_key}"


def run_jobs(store: Store, jobs: list[Job], render: Callable[[bool], None]) -> None:
    """Fit every stored-missing (job, method), saving each measurement as it is made; the data of a
    job are loaded only when one of its methods is missing, and freed after it."""
    warmed = False
    for job in jobs:
        pending = [m for m in job.methods
                   if not store.done(entry_key(job.group, job.trial, m.key), dict(job.config, method=m.label))]
        if not pending:
            print(f"{job.group} trial {job.trial}: done", flush=True)
            continue
        if not warmed:
            warm_up(jobs[0].methods)
            warmed = True
        t0 = time.perf_counter()
        splits = job.load()
        if splits is None:
            print(f"{job.group}: data missing, skipped", flush=True)
            continue
        print(f"{job.group} trial {job.trial}: data ready in {time.perf_counter() - t0:.1f} s", flush=True)
        for method in pending:
            res = measure(method, job.trial, *splits)
            store.put(entry_key(job.group, job.trial, method.key), dict(job.config, method=method.label),
                      dict(res, group=job.group, trial=job.trial, method=method.key, label=method.label))
            print(f"  {method.label:48s} " + ("ERROR " + res["error"] if res.get("error") else
                  f"fit {res['time']:.3f} s  ACC {res['acc']:.2f}  TACC {res['tacc']:.2f}  NSV {fmt(res['nsv'], 'd')}"
                  f"  iter {fmt(res['n_iter'], 'd')}  peak {res['peak_mb']:.0f} MB"), flush=True)
        del splits
        gc.collect()
        render(False)
    render(True)


def collect(store: Store) -> dict[str, dict[str, list[dict]]]:
    """group -> method key -> the stored results of its trials."""
    out: dict[str, dict[str, list[dict]]] = {}
    for e in store.entries.values():
        r = e["result"]
        out.setdefault(r["group"], {}).setdefault(r["method"], []).append(r)
    return out


def summarise(results: list[dict]) -> dict:
    """Means of ACC, TACC and NSV, medians of the times and iterations, the largest peak memory."""
    ok = [r for r in results if not r.get("error")]
    s = dict(label=results[0]["label"], trials=len(ok), errors=[r["error"] for r in results if r.get("error")])
    if not ok:
        return s

    def values(k):
        return [r[k] for r in ok if r.get(k) is not None]

    for k in ("acc", "tacc", "nsv"):
        s[k] = statistics.fmean(values(k)) if values(k) else None
    for k in ("time", "predict_time", "n_iter"):
        s[k] = statistics.median(values(k)) if values(k) else None
    s["peak_mb"] = max(values("peak_mb"))
    s["m"], s["n"] = ok[0]["m"], ok[0]["n"]
    s["conv"] = sum(bool(r.get("convergence_warning")) for r in ok)
    s["warnings"] = sorted({w for r in ok for w in r.get("warnings", [])})
    return s


def best_peer_time(summ: dict[str, dict]) -> float | None:
    times = [s["time"] for k, s in summ.items() if k in PEER_KEYS and s.get("time")]
    return min(times) if times else None


# ======================================================================================== rows
LINEAR_HEADERS = ["method", "trials", "ACC %", "TACC %", "fit s", "t / best peer", "NSV", "NSV/m", "iter",
                  "peak MB", "conv"]


def method_row(s: dict, best: float | None) -> list[str]:
    if s.get("time") is None:
        return [s["label"], "0", "err", *["-"] * (len(LINEAR_HEADERS) - 3)]
    nsv = s.get("nsv")
    return [s["label"], str(s["trials"]), fmt(s["acc"], ".2f"), fmt(s["tacc"], ".2f"), fmt(s["time"], ".3f"),
            fmt(s["time"] / best if best else None, ".3f"), fmt(nsv, ".0f"),
            fmt(nsv / s["m"] if nsv is not None else None, ".2e"), fmt(s["n_iter"], ".0f"),
            fmt(s["peak_mb"], ".0f"), f"{s['conv']}/{s['trials']}" if s["conv"] else "-"]


def paper_row(label: str, acc, tacc, seconds, nsv_per_m, m: int) -> list[str]:
    """A paper row; NSV = NSV/m times the paper's m."""
    nsv = nsv_per_m * m if nsv_per_m is not None else None
    return [f"*paper {label}*", "-", fmt(acc, ".2f"), fmt(tacc, ".2f"), fmt(seconds, ".3g"), "-", fmt(nsv, ".0f"),
            fmt(nsv_per_m, ".2e"), "-", "-", "-"]


def linear_block(summ: dict[str, dict], order: list[str], paper: list[list[str]]) -> list[list[str]]:
    best = best_peer_time(summ)
    return [method_row(summ[k], best) for k in order if k in summ] + paper


def notes_of(groups: dict[str, dict[str, dict]]) -> list[str]:
    out = []
    for g, summ in groups.items():
        for s in summ.values():
            out += [f"{g} {s['label']}: error {e}" for e in sorted(set(s["errors"]))]
            out += [f"{g} {s['label']}: {w}" for w in s.get("warnings", [])]
    return out


def write_section(store: Store, title: str, body: list[str], groups: dict, complete: bool) -> None:
    """The section's markdown: its body, then the warnings the fits raised."""
    notes = notes_of(groups)
    if notes:
        body = [*body, "", "Notes:", "", *[f"- {n}" for n in notes]]
    store.write_md(title, body, complete)


def verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("PASS" if ok else "FAIL")


# ======================================================================================== table7
def m_text(m: int) -> str:
    """1e5 for powers of ten, else 12,345."""
    k = round(math.log10(m))
    return f"1e{k}" if 10**k == m else f"{m:,}"


def parse_m(text: str) -> int:
    return int(float(text))


def parse_m_map(text: str) -> dict[int, int]:
    out = {}
    for item in filter(None, (t.strip() for t in text.split(","))):
        m, _, k = item.partition("=")
        out[parse_m(m)] = int(k)
    return out


def example41_split(m: int, trial: int) -> tuple[Split, Split]:
    from sparsekernel.datasets import make_nssvm_gaussians

    X, y = make_nssvm_gaussians(2 * m, random_state=trial)
    split = (X[:m], y[:m], X[m:], y[m:])
    return split, split


def table7_jobs(args) -> list[Job]:
    sizes = QUICK_SIZES if args.quick and not args.sizes else (args.sizes or TABLE7_SIZES)
    trials = {**TABLE7_TRIALS, **(args.trials or {})}
    peer_trials = {**TABLE7_PEER_TRIALS, **(args.peer_trials or {})}
    methods = linear_methods()
    jobs = []
    for m in sizes:
        n_trials = QUICK_TRIALS if args.quick else trials.get(m, 1)
        for t in range(n_trials):
            run_peers = t < peer_trials.get(m, n_trials)
            chosen = [x for x in methods if x.ours or (run_peers and (m < BIG_M or x.key in args.big_peers))]
            jobs.append(Job(f"m={m}", t, chosen, lambda m=m, t=t: example41_split(m, t),
                            dict(m=m, trial=t, dtype="float64", quick=args.quick)))
    return jobs


def cmd_table7(args) -> int:
    store = Store("table7", args.quick, args.force)
    run_jobs(store, table7_jobs(args), lambda complete: render_table7(store, complete))
    print(f"wrote {store.md_path}", flush=True)
    return 0


def bar(name: str, value, test: Callable[[float], bool], text: str) -> tuple[str, str, str]:
    """(bar, PASS / FAIL / n/a, what was measured); n/a when ``value`` is None (not run)."""
    return (name, "n/a", "not run") if value is None else (name, verdict(test(value)), text.format(value))


def table7_bars(groups: dict[str, dict[str, dict]], key: str = "nssvc") -> list[tuple[str, str, str]]:
    """The Table VII bars for the NSSVC variant ``key``."""
    ours7, ours8 = groups.get(f"m={BAR_M}", {}).get(key, {}), groups.get(f"m={BIG_M}", {}).get(key, {})
    t7 = ours7.get("time")
    peers = {k: s["time"] for k, s in groups.get(f"m={BAR_M}", {}).items() if k in PEER_KEYS and s.get("time")}
    speedup = min(peers.values()) / t7 if peers and t7 else None
    return [
        bar(f"m = 1e7: fit <= {BAR_TIME_1E7} s", t7, lambda v: v <= BAR_TIME_1E7, "{:.3f} s"),
        bar(f"m = 1e7: ACC within {BAR_ACC_POINTS} of {BAR_ACC}", ours7.get("acc"),
            lambda v: abs(v - BAR_ACC) <= BAR_ACC_POINTS + 1e-9, "{:.3f} %"),
        bar(f"m = 1e7: NSV within {BAR_NSV_FRACTION:.0%} of {BAR_NSV}", ours7.get("nsv"),
            lambda v: abs(v - BAR_NSV) <= BAR_NSV_FRACTION * BAR_NSV, "{:.0f}"),
        bar(f"m = 1e7: >= {BAR_SPEEDUP:g}x faster than every peer", speedup, lambda v: v >= BAR_SPEEDUP,
            "fastest peer / NSSVC = {:.1f}x, " + f"{len(peers)} peers"),
        bar(f"m = 1e8: fit <= {BAR_TIME_1E8} s", ours8.get("time"), lambda v: v <= BAR_TIME_1E8, "{:.3f} s"),
    ]


def bar_lines(bars: list[tuple[str, str, str]]) -> list[str]:
    return [f"- {name}: **{v}** ({measured})" for name, v, measured in bars]


def render_table7(store: Store, complete: bool) -> None:
    groups = {g: {k: summarise(rs) for k, rs in by.items()} for g, by in collect(store).items()}
    order = ["nssvc", "nssvc-refit", *PEER_KEYS]
    rows = []
    for g in sorted(groups, key=lambda g: int(g[2:])):
        m = int(g[2:])
        paper = [paper_row(k, *pn.TABLE7[m][k], m) for k in pn.TABLE7_METHODS] if m in pn.TABLE7 else []
        rows += [[f"**m = {m_text(m)}**", *[""] * (len(LINEAR_HEADERS) - 1)], *linear_block(groups[g], order, paper)]
    bars = table7_bars(groups)
    store.summary = dict(bars=bars, bars_refit=table7_bars(groups, "nssvc-refit"))
    body = [
        "Paper Table VII: Example 4.1 (`make_nssvm_gaussians(2m, random_state=trial)`, float64, first half",
        "train, second half test).  Ours: every method fitted on the same data one after the other, per trial;",
        "means of ACC / TACC / NSV over the trials, median fit time (`time.perf_counter` around `fit`), largest",
        "peak RSS growth during `fit`; t / best peer = fit time / the fastest peer's.  NSV: NSSVC `len(support_)`;",
        f"LinearSVC (both losses): training points with y f(x) <= 1 (+{MARGIN_TOL:g}), its margin support vectors",
        "(sklearn exposes no dual coefficients); SGD / LR: '-'.  iter: NSSVC Newton iterations, LIBLINEAR",
        "iterations, SGD epochs, lbfgs iterations.  conv: fits with a ConvergenceWarning (sklearn's default",
        "max_iter everywhere).  Paper rows (italic): averages of 20 trials, MATLAB on an i9-9880H laptop;",
        "LSVM = LIBLINEAR -s 3 = our LinearSVC(loss='hinge', dual=True), FSVM = MATLAB fitclinear, SNSVM =",
        "semismooth Newton (dense, NSV = m).  NSSVC's defaults are the paper's (C = 0.25, c = 0.01 C, s0 = s(1),",
        "eta = 1/m).",
        "",
        *md_table(LINEAR_HEADERS, rows),
        "",
        "Bars (NSSVC() default):",
        "",
        *bar_lines(bars),
        "",
        "The same bars for NSSVC(refit_intercept=True), for information:",
        "",
        *bar_lines(store.summary["bars_refit"]),
    ]
    write_section(store, "Table VII: Example 4.1, m = 1e5 ... 1e8", body, groups, complete)


# ======================================================================================== real
def scale_to_unit_box(X_train, X_test):
    """Features scaled to [-1, 1] by the training part's min / max (the paper scales every set)."""
    from sklearn.preprocessing import MinMaxScaler

    scaler = MinMaxScaler(feature_range=(-1, 1)).fit(X_train)
    return scaler.transform(X_train), np.clip(scaler.transform(X_test), -1.0, 1.0)


def load_skin_paper(ordered: bool) -> Split | None:
    """skin_nonskin, all 245,057 rows (B, G, R scaled to [-1, 1]; class 1 = skin = +1): the first 90% of
    a seeded permutation for training, the rest for testing (``ordered``: the first 90% in file order)."""
    path = Path(_datasets._data_dir) / "uci/skin/Skin_NonSkin.txt.gz"
    if not path.is_file():
        return None
    data = np.loadtxt(path, delimiter="\t")
    X, y = data[:, :3], np.where(data[:, 3] == 1, 1.0, -1.0)
    order = np.arange(len(y)) if ordered else np.random.RandomState(SPLIT_SEED).permutation(len(y))
    k = int(round(SKIN_TRAIN_FRACTION * len(y)))
    tr, te = order[:k], order[k:]
    X_train, X_test = scale_to_unit_box(X[tr], X[te])
    return np.ascontiguousarray(X_train), y[tr], np.ascontiguousarray(X_test), y[te]


def load_real(name: str, args) -> Split | None:
    if name == "skin":
        return load_skin_paper(args.skin_split == "ordered")
    split = _datasets.load(name)
    if split is None or name != "magic":
        return split                        # a9a, w8a: binary {0, 1} CSR as distributed
    X_train, y_train, X_test, y_test = split
    X_train, X_test = scale_to_unit_box(X_train, X_test)
    return X_train, y_train, X_test, y_test


def quick_subsample(split: Split) -> Split:
    X, y, Xt, yt = split
    return (*bench_svc.subsample_rows(X, y, QUICK_ROWS), *bench_svc.subsample_rows(Xt, yt, QUICK_ROWS, seed=1))


def peer_copy(split: Split) -> Split:
    X, y, Xt, yt = split
    return _datasets.as_int32_indices(X), y, _datasets.as_int32_indices(Xt), yt


def cached_loader(load: Callable[[], Split | None], quick: bool) -> Callable[[], tuple[Split, Split] | None]:
    """Load a set once (for all its repeats) and hand out (ours, peers) splits."""
    cache: dict = {}

    def get():
        if "v" not in cache:
            split = load()
            split = quick_subsample(split) if split is not None and quick else split
            cache["v"] = None if split is None else (split, peer_copy(split))
        return cache["v"]

    return get


def repeated_jobs(names, methods_of, load_of, args, part: str) -> list[Job]:
    """Jobs for fixed data sets: ``--repeats`` rounds, every method once per round (interleaved)."""
    repeats = 1 if args.quick else (args.repeats or REPEATS[part])
    jobs = []
    for name in names:
        load = cached_loader(lambda name=name: load_of(name), args.quick)
        for r in range(repeats):
            config = dict(dataset=name, repeat=r, quick=args.quick)
            if name == "skin":
                config["skin_split"] = args.skin_split
            jobs.append(Job(name, r, methods_of(name), load, config))
    return jobs


def cmd_real(args) -> int:
    store = Store("real", args.quick, args.force)
    jobs = repeated_jobs(args.datasets or REAL_SETS, lambda name: linear_methods(pn.paper_beta(name)),
                         lambda name: load_real(name, args), args, "real")
    run_jobs(store, jobs, lambda complete: render_real(store, complete, args.skin_split))
    print(f"wrote {store.md_path}", flush=True)
    return 0


def real_paper_rows(name: str) -> list[list[str]]:
    """Table VI / VIII rows of ``name``, NSV and NSV/m on the paper's training size (Table III; a set
    without a test file: 90% of it)."""
    rows, per_m = pn.paper_rows(name)
    if not rows:
        return []
    n, m_paper, m_test = pn.TABLE3[name]
    m_train = m_paper if m_test else int(round(SKIN_TRAIN_FRACTION * m_paper))
    return [paper_row(k, acc, tacc, t, nsv if per_m else nsv / m_train, m_train)
            for k, (acc, tacc, t, nsv) in rows.items() if acc is not None]


BAR_A9A = (84.04, 84.47, 0.5)  # the paper's NSSVM ACC / TACC on a9a, and the allowed distance (points)


def a9a_bars(summ: dict[str, dict], order: list[str]) -> list[tuple[str, str, str]]:
    """The a9a bar (ACC and TACC within 0.5 points of the paper's) for every NSSVC variant."""
    acc0, tacc0, tol = BAR_A9A
    out = []
    for key in order:
        x = summ.get(key, {})
        if not key.startswith("nssvc") or x.get("acc") is None:
            continue
        ok = abs(x["acc"] - acc0) <= tol and abs(x["tacc"] - tacc0) <= tol
        out.append((x["label"], verdict(ok), f"ACC {x['acc']:.2f}, TACC {x['tacc']:.2f}"))
    return out


def render_real(store: Store, complete: bool, skin_split: str) -> None:
    from sparsekernel.nssvm import default_level, sparsity_level

    groups = {g: {k: summarise(rs) for k, rs in by.items()} for g, by in collect(store).items()}
    order = ["nssvc", "nssvc-refit", "nssvc-beta", "nssvc-beta-refit", "nssvc-strat", "nssvc-strat-refit", *PEER_KEYS]
    rows, sizes = [], []
    for name in [n for n in REAL_SETS if n in groups] + sorted(set(groups) - set(REAL_SETS)):
        m, n = next(((s["m"], s["n"]) for s in groups[name].values() if s.get("m")), (0, 1))
        rows += [[f"**{name}** (m = {m}, n = {n})", *[""] * (len(LINEAR_HEADERS) - 1)],
                 *linear_block(groups[name], order, real_paper_rows(name))]
        if m:
            sizes.append(f"{name}: s(1) = {sparsity_level(1.0, m, n)}, s({pn.paper_beta(name):g}) = "
                         f"{sparsity_level(pn.paper_beta(name), m, n)}, default s0 = {default_level(1.0, m, n)}")
    store.summary = dict(rows=len(rows), bars=a9a_bars(groups.get("a9a", {}), order))
    body = [
        "Paper Tables VI (a9a) and VIII (skin); w8a and magic are extra rows without paper numbers.  Data:",
        "a9a and w8a as distributed (official train / test files, binary {0, 1} features, CSR; the paper's",
        "scaling to [-1, 1] would change a linear model only by a factor 2 on w and a shift of b, so they are",
        "kept as they are - NSSVC gets the CSR with int64 indices, the peers int32-index copies); skin: all",
        f"245,057 rows, features scaled to [-1, 1], {SKIN_TRAIN_FRACTION:.0%} / {1 - SKIN_TRAIN_FRACTION:.0%} split "
        f"({'file order' if skin_split == 'ordered' else f'seeded permutation, RandomState({SPLIT_SEED})'};",
        "the paper does not say how it split); magic: `_datasets.load('magic')` (stratified 70/30), scaled to",
        "[-1, 1] by the training part's min / max.",
        "",
        "NSSVC() uses s='auto' = min(s(1), ceil(m/20)); NSSVC(beta=...) min(s(beta), ceil(m/20)) with the",
        "paper's Table IV beta (0.2 for a5a-a9a, 0.05 for the other sets).  Sparsity levels s(beta) =",
        "ceil(beta n log2(m/n)^2) and the default s0: " + "; ".join(sizes) + ".",
        "Columns as in Table VII (means over the repeats, median fit time; NSV of LinearSVC = margin points).",
        "Paper rows (italic): Table VI / VIII (its NSSVM: beta from Table IV; HSVM = LIBSVM); NSV and NSV/m on",
        "the paper's training size (a9a 32,561; skin 90% of 245,056 = 220,550, from NSV/m).",
        "",
        *md_table(LINEAR_HEADERS, rows),
    ]
    write_section(store, "Tables VI and VIII: real data sets", body, groups, complete)


# ======================================================================================== kernel
def load_raetsch_70_30(name: str, standardise: bool) -> Split | None:
    """All rows of raetsch/<name>.csv[.gz], stratified 70/30 split (random_state=0)."""
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    base = Path(_datasets._data_dir) / "raetsch"
    path = next((p for p in (base / f"{name}.csv", base / f"{name}.csv.gz") if p.is_file()), None)
    if path is None:
        return None
    data = np.loadtxt(path, delimiter=",", skiprows=1)
    X, y = np.ascontiguousarray(data[:, :-1]), data[:, -1]
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, stratify=y, random_state=SPLIT_SEED)
    if standardise:
        scaler = StandardScaler().fit(X_train)
        X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
    return X_train, y_train, X_test, y_test


def load_kernel_set(name: str) -> Split | None:
    if name == "banana":
        return load_raetsch_70_30("banana", standardise=True)
    if name == "ringnorm":
        return load_raetsch_70_30("ringnorm", standardise=False)
    return _datasets.load(name)


def cmd_kernel(args) -> int:
    store = Store("kernel", args.quick, args.force)
    methods = kernel_methods(args.s_grid)

    def methods_of(name):
        split = load_kernel_set(name)
        if split is not None and args.quick:
            split = quick_subsample(split)
        budget = [budget_method(svc_support_count(split))] if split is not None else []
        return methods + budget

    jobs = repeated_jobs(args.datasets or KERNEL_SETS, methods_of, load_kernel_set, args, "kernel")
    run_jobs(store, jobs, lambda complete: render_kernel(store, complete, args.s_grid))
    print(f"wrote {store.md_path}", flush=True)
    return 0


KERNEL_HEADERS = ["method", "reps", "TACC %", "ACC %", "NSV", "NSV / SVC", "TACC - SVC", "fit s", "fit / SVC",
                  "predict s", "iter", "peak MB", "bar"]


def kernel_bar(s: dict, svc: dict) -> bool | None:
    if s.get("tacc") is None or svc.get("tacc") is None:
        return None
    return (s["tacc"] >= svc["tacc"] - BAR_KERNEL_ACC_POINTS) and (s["nsv"] <= BAR_KERNEL_NSV_FRACTION * svc["nsv"])


def kernel_row(key: str, s: dict, svc: dict) -> list[str]:
    if s.get("time") is None:
        return [s["label"], "0", "err", *["-"] * (len(KERNEL_HEADERS) - 3)]
    ok = kernel_bar(s, svc) if key != "svc" else None
    bar = "-" if key == "svc" else (verdict(ok) if key == kernel_key("auto", False) else
                                    ("(would pass)" if ok else "(would fail)") if ok is not None else "-")
    ratio = (lambda a, b: a / b if a is not None and b else None)
    return [s["label"], str(s["trials"]), fmt(s["tacc"], ".2f"), fmt(s["acc"], ".2f"), fmt(s["nsv"], ".0f"),
            fmt(ratio(s["nsv"], svc.get("nsv")), ".3f"),
            fmt(s["tacc"] - svc["tacc"] if svc.get("tacc") is not None else None, "+.2f"), fmt(s["time"], ".3f"),
            fmt(ratio(s["time"], svc.get("time")), ".2f"), fmt(s["predict_time"], ".4f"), fmt(s["n_iter"], ".0f"),
            fmt(s["peak_mb"], ".0f"), bar]


def grid_cell(x: dict, svc: dict) -> str:
    """TACC - SVC's / NSV / SVC's / fit time / SVC's."""
    if x.get("tacc") is None or svc.get("tacc") is None:
        return "-"
    return f"{x['tacc'] - svc['tacc']:+.2f} / {x['nsv'] / svc['nsv']:.2f} / {x['time'] / svc['time']:.1f}x"


def render_kernel(store: Store, complete: bool, s_grid) -> None:
    groups = {g: {k: summarise(rs) for k, rs in by.items()} for g, by in collect(store).items()}
    names = [n for n in KERNEL_SETS if n in groups] + sorted(set(groups) - set(KERNEL_SETS))
    variants = [(s, r) for s in ("auto", *s_grid) for r in (False, True)]
    order = ["svc", *[kernel_key(s, r) for s, r in variants], BUDGET_KEY]
    rows, bars, grid_rows = [], {}, []
    for name in names:
        summ = groups[name]
        svc = summ.get("svc", {})
        m = next((s["m"] for s in summ.values() if s.get("m")), 0)
        rows += [[f"**{name}** (m = {m})", *[""] * (len(KERNEL_HEADERS) - 1)],
                 *[kernel_row(k, summ[k], svc) for k in order if k in summ]]
        bars[name] = verdict(kernel_bar(summ.get(kernel_key("auto", False), {}), svc))
    for label, key in [*[(f"s={s}" + (", refit" if r else ""), kernel_key(s, r)) for s, r in variants],
                       ("20% budget, C by CV", BUDGET_KEY)]:
        pairs = [(groups[n].get(key, {}), groups[n].get("svc", {})) for n in names]
        passes = sum(kernel_bar(x, svc) is True for x, svc in pairs)
        grid_rows.append([label, *[grid_cell(x, svc) for x, svc in pairs], f"{passes}/{len(names)}"])
    store.summary = dict(bars=bars)
    body = [
        "NSSVC(kernel='rbf') (gamma='scale', C = 0.25, c = 0.01 C, eta = 1/m: its defaults) against",
        "sparsekernel.SVC(kernel='rbf', gamma='scale', C=1) on the same split, fitted one after the other per",
        "repeat.  Data: magic (`_datasets.load`: stratified 70/30, standardised), ringnorm (all 7400 rows of",
        "raetsch/ringnorm.csv.gz, stratified 70/30, random_state=0, as given), banana (raetsch/banana.csv, 5300",
        "rows, stratified 70/30, random_state=0, standardised), usps (digit 0 vs rest, official train / test).",
        "TACC / ACC = test / training accuracy %, NSV = `len(support_)`, predict s = `predict` on the test set,",
        "iter = `n_iter_` (SVC: SMO steps); means of accuracies and NSV, medians of times over the repeats.",
        f"Bar (NSSVC(kernel='rbf') defaults, s='auto' = ceil(0.1 m)): TACC >= SVC's - {BAR_KERNEL_ACC_POINTS:g} point",
        f"and NSV <= {BAR_KERNEL_NSV_FRACTION:.0%} of SVC's; the other variants show whether they would pass.",
        "The last variant holds NSSVC to the bar's budget (s = 20% of SVC's NSV, Algorithm 1) and picks C from",
        f"{list(BUDGET_CS)} by 3-fold CV on the training set (fit time includes the CV; SVC keeps C = 1).",
        "",
        *md_table(KERNEL_HEADERS, rows),
        "",
        "Choosing s: per variant and set, TACC - SVC's (points) / NSV as a fraction of SVC's / fit time as a",
        "multiple of SVC's; last column: sets on which the bar would pass.",
        "",
        *md_table(["variant", *names, "bar passes"], grid_rows),
        "",
        "Bar per set: " + ", ".join(f"{n} **{v}**" for n, v in bars.items()),
    ]
    write_section(store, "rbf kernel: NSSVC vs SVC", body, groups, complete)


# ======================================================================================== assemble
ASSEMBLE_TITLE = "NSSVM benchmarks"
ASSEMBLE_INTRO = """\
sparsekernel's NSSVC (Newton method for the sparsity-constrained SVM) against the published numbers of
Zhou, "Sparse SVM for sufficient data reduction" (TPAMI 2021, section 4.4), against scikit-learn's
linear models (LinearSVC with both losses, SGDClassifier(hinge), LogisticRegression) and, for the rbf
kernel, against sparsekernel.SVC.  Produced by `benchmarks/bench_nssvm.py` (`--part table7`,
`--part real`, `--part kernel`, `--part assemble`); each section lists its date, command, machine and
repository revision.
"""


def cmd_assemble(args) -> int:
    lines = [ASSEMBLE_INTRO]
    summary, sections = [], []
    for part in ("table7", "real", "kernel"):
        st = Store.load(part, args.quick)
        if st is None or not st.md_path.exists():
            summary.append(f"- {part}: not run")
            continue
        text = st.md_path.read_text()
        partial = " (partial)" if "Partial results" in text else ""
        if part == "table7":
            summary += [f"- table7{partial}, NSSVC(): {name}: **{v}** ({measured})"
                        for name, v, measured in st.summary.get("bars", [])]
        elif part == "kernel":
            summary += [f"- kernel{partial}, rbf NSSVC within {BAR_KERNEL_ACC_POINTS:g} point of SVC with <= "
                        f"{BAR_KERNEL_NSV_FRACTION:.0%} of its SVs: "
                        + ", ".join(f"{n} **{v}**" for n, v in st.summary.get("bars", {}).items())]
        else:
            summary += [f"- real{partial}, a9a within {BAR_A9A[2]:g} points of the paper's ACC {BAR_A9A[0]:.2f} / "
                        f"TACC {BAR_A9A[1]:.2f}: {label}: **{v}** ({measured})"
                        for label, v, measured in st.summary.get("bars", [])]
        sections.append(text)
    lines += ["## Bars", "", *summary, ""]
    _harness.write_assembled(RESULTS / (f"nssvm{TAG}" + ("_quick" if args.quick else "") + ".md"), ASSEMBLE_TITLE,
                             lines, sections, args.quick)
    return 0


# ======================================================================================== command line
def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", required=True, choices=["table7", "real", "kernel", "assemble"])
    parser.add_argument("--quick", action="store_true",
                        help=f"smoke test: table7 at m = 1e4, one trial; real/kernel on {QUICK_ROWS} rows, one repeat")
    parser.add_argument("--force", action="store_true", help="recompute measurements already in the JSON")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="data directory (default: $SPARSEKERNEL_DATA or /work/shared/data)")
    parser.add_argument("--blas-threads", type=int, default=None,
                        help="limit every BLAS pool (threadpoolctl, user_api='blas') to N threads for the whole run; "
                             "results go to nssvm_<part>_blasN.* (default: no limit, the library as shipped)")
    g = parser.add_argument_group("table7")
    g.add_argument("--sizes", type=csv_list(parse_m), default=None,
                   help="values of m (default 1e5,1e6,1e7,1e8; --quick: 1e4)")
    g.add_argument("--trials", type=parse_m_map, default=None,
                   help="trials per m, e.g. 1e5=5,1e6=5,1e7=3,1e8=1 (the default; unlisted m: 1)")
    g.add_argument("--peer-trials", type=parse_m_map, default=None,
                   help="peers run in the first k trials of m (default 1e7=1,1e8=1; unlisted m: all trials)")
    g.add_argument("--big-peers", type=csv_list(str, PEER_KEYS), default=[],
                   help=f"peers to run at m >= 1e8 too (default none; choose from {','.join(PEER_KEYS)})")
    g = parser.add_argument_group("real and kernel")
    g.add_argument("--datasets", type=csv_list(str), default=None,
                   help=f"subset (real: {','.join(REAL_SETS)}; kernel: {','.join(KERNEL_SETS)})")
    g.add_argument("--repeats", type=int, default=None,
                   help=f"fits per method, interleaved (default real {REPEATS['real']}, kernel {REPEATS['kernel']})")
    g.add_argument("--skin-split", choices=["random", "ordered"], default="random",
                   help="skin 90/10 split: seeded permutation (default) or file order")
    g.add_argument("--s-grid", type=csv_list(float), default=list(S_GRID),
                   help="kernel part: s fractions besides 'auto' (default 0.02,0.05,0.1,0.2)")
    args = parser.parse_args(argv)
    if args.repeats is not None and args.repeats < 1:
        parser.error("--repeats must be at least 1")
    return args


COMMANDS = {"table7": cmd_table7, "real": cmd_real, "kernel": cmd_kernel, "assemble": cmd_assemble}


def main(argv=None) -> int:
    global TAG
    args = parse_args(argv)
    if args.data_dir is not None:
        _datasets.set_data_dir(args.data_dir)
    if args.blas_threads is None:
        return COMMANDS[args.part](args)
    import scipy.linalg  # noqa: F401  (threadpoolctl limits only the BLAS libraries already loaded:
    import sklearn.linear_model  # noqa: F401   numpy's and scipy's OpenBLAS are two libraries)
    import sparsekernel  # noqa: F401
    from threadpoolctl import threadpool_info, threadpool_limits

    TAG = f"_blas{args.blas_threads}"
    print("limiting BLAS pools: " + ", ".join(Path(i["filepath"]).name for i in threadpool_info()
                                              if i["user_api"] == "blas"), flush=True)
    with threadpool_limits(limits=args.blas_threads, user_api="blas"):
        return COMMANDS[args.part](args)


if __name__ == "__main__":
    sys.exit(main())
