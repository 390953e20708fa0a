"""Grid searches that reuse their work: PathSearchCV against GridSearchCV and the peers' searches.

Parts, side by side in one process on real data (``benchmarks/_datasets.py``; sets whose files are
missing are skipped):

``search``
    5-fold CV over a 6 x 3 grid, C in 2^{-2, 0, 2, 4, 6, 8} x gamma in {g/4, g, 4g} with g the value
    of gamma='scale' on the data the SVC sees, accuracy scoring, refit=False, every setting at its
    default (``--cache`` sets cache_size). Variants: the bare SVC and
    make_pipeline(StandardScaler(), SVC()) (X as a dense array). Methods, each timed once per set:

    ``path``  PathSearchCV(est) with sparsekernel.SVC();
    ``grid``  GridSearchCV(est) with sparsekernel.SVC();
    ``skl``   GridSearchCV(est, n_jobs=-1) with sklearn.svm.SVC();
    ``ilx``   GridSearchCV(est, n_jobs=-1) with sklearnex.svm.SVC();
    ``path-csmo``  PathSearchCV(est) with sparsekernel.SVC(solver='csmo') (a design for fewer SMO
              steps at large C: Conjugate SMO on the walked fits).

    Reported: wall time, ratios, kernel values computed and SMO steps (ours), the largest difference
    of mean CV accuracy between path and grid.

``warm``
    Single warm starts on the first CV fold at gamma = g: SVC(C) then SVC(2C) or SVC(10C) with
    ``warm_start=True`` against a cold SVC(2C) / SVC(10C), C in 2^{-2, 0, 2, 4, 6}.

Bars (issue 34): path <= 0.5 x GridSearchCV(sparsekernel.SVC()) on every set and variant, and
<= 0.2 x the faster of the peers' searches.

Usage::

    python benchmarks/bench_path.py [--sets a9a,w8a,magic,usps] [--parts search,warm]
        [--variants bare,pipeline] [--methods path,grid,skl,ilx] [--cache MB] [--n 10000]
        [--skip w8a:pipeline:ilx] [--merge] [--quick]

Writes benchmarks/results/path_defaults.md and .json (``--out``: another ``path_*`` stem). A rerun
replaces the entries of the sets it runs (``--merge``: only the methods it runs) and keeps the
others; ``--render-only`` rewrites the markdown from the JSON.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _datasets  # noqa: E402
import _harness  # noqa: E402  (the results store, tables)
import bench_svc  # noqa: E402  (scale_gamma(), subsample_rows())
from _harness import md_table  # noqa: E402

from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.model_selection import GridSearchCV, ParameterGrid, StratifiedKFold  # noqa: E402

from sparsekernel import SVC  # noqa: E402
from sparsekernel.model_selection import PathSearchCV  # noqa: E402

LOG2_C = (-2, 0, 2, 4, 6, 8)
GAMMA_FACTORS = (0.25, 1.0, 4.0)
WARM_LOG2_C = (-2, 0, 2, 4, 6)
WARM_FACTORS = (2, 10)


def _kernel_evals(estimator, X, y):
    """A scorer that reads the fit's kernel evaluations (sparsekernel SVC)."""
    return float(np.sum(estimator.n_kernel_evals_))


def load(name, n):
    data = _datasets.load(name)
    if data is None:
        return None
    X, y = data[0], data[1]
    X, y = bench_svc.subsample_rows(X, y, n)
    return X, y


def _smo_steps(estimator, X, y):
    """A scorer that reads the fit's SMO steps (a sparsekernel SVC, bare or a Pipeline's last step)."""
    return float(np.sum(getattr(estimator, "steps", [[None, estimator]])[-1][1].n_iter_))


def _kernel_evals_any(estimator, X, y):
    return _kernel_evals(getattr(estimator, "steps", [[None, estimator]])[-1][1], X, y)


def _make(svc, variant):
    """The searched estimator and its grid prefix: the SVC itself, or make_pipeline(StandardScaler(), SVC)."""
    if variant == "bare":
        return svc, ""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), svc), "svc__"


def run_search(method, X, y, grid, cv, cache_mb, variant="bare"):
    """One search of ``method`` with every setting at its default unless --cache is given: ours with
    n_jobs=None (the search decides), the peers' GridSearchCV with n_jobs=-1 (their fastest)."""
    scoring = {"acc": "accuracy"}
    kw = {} if cache_mb is None else {"cache_size": cache_mb}
    if method in ("path", "grid", "path-csmo"):
        scoring["evals"] = _kernel_evals_any
        scoring["steps"] = _smo_steps
        est, prefix = _make(SVC(**kw, **({"solver": "csmo"} if method == "path-csmo" else {})), variant)
        search = (GridSearchCV if method == "grid" else PathSearchCV)(
            est, {prefix + k: v for k, v in grid.items()}, cv=cv, scoring=scoring, refit=False)
        Xm = X
    elif method == "skl":
        from sklearn.svm import SVC as SkSVC

        est, prefix = _make(SkSVC(**kw), variant)
        search = GridSearchCV(est, {prefix + k: v for k, v in grid.items()}, cv=cv, scoring=scoring, refit=False,
                              n_jobs=-1)
        Xm = _datasets.as_int32_indices(X)
    else:
        from sklearnex.svm import SVC as IlxSVC

        est, prefix = _make(IlxSVC(), variant)
        search = GridSearchCV(est, {prefix + k: v for k, v in grid.items()}, cv=cv, scoring=scoring, refit=False,
                              n_jobs=-1)
        Xm = _datasets.as_int32_indices(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        t0 = time.perf_counter()
        search.fit(Xm, y)
        seconds = time.perf_counter() - t0
    res = search.cv_results_
    out = {"method": method, "seconds": seconds, "scores": res["mean_test_acc"].tolist()}
    if method in ("path", "grid", "path-csmo"):
        out["smo_steps"] = float(np.sum(res["mean_test_steps"]) * cv.get_n_splits())
    if method == "grid":
        out["kernel_evals"] = float(np.sum(res["mean_test_evals"]) * cv.get_n_splits())
    if method.startswith("path"):
        # the shared rows' values (bare SVC), else what the folds' own caches computed
        shared = float(search.shared_kernel_evals_)
        out["kernel_evals"] = shared if shared > 0 else float(np.sum(res["mean_test_evals"]) * cv.get_n_splits())
        out["shared_peak_mb"] = search.shared_cache_peak_bytes_ / 2**20
    return out


def search_part(name, X, y, args):
    from sklearn.preprocessing import StandardScaler

    cv = StratifiedKFold(5, shuffle=True, random_state=0)
    out = {}
    for variant in args.variants:
        Xv = X
        if variant == "pipeline" and hasattr(X, "toarray"):
            Xv = X.toarray()  # StandardScaler centres: a dense array, as a user's would be
        g = bench_svc.scale_gamma(Xv if variant == "bare" else StandardScaler().fit_transform(Xv))
        grid = {"C": [2.0 ** k for k in LOG2_C], "gamma": [f * g for f in GAMMA_FACTORS]}
        rows = {}
        for method in args.methods:
            if f"{name}:{method}" in args.skip or f"{name}:{variant}:{method}" in args.skip:
                print(f"  {name} {variant} {method}: skipped (--skip)", flush=True)
                continue
            try:
                rows[method] = run_search(method, Xv, y, grid, cv, args.cache, variant)
            except ImportError as exc:
                print(f"  {method}: skipped ({exc})", flush=True)
                continue
            print(f"  {name} {variant} {method}: {rows[method]['seconds']:.1f} s", flush=True)
        out[variant] = {"gamma": g, "grid": grid, "rows": rows}
    return out


def warm_part(name, X, y, args):
    g = bench_svc.scale_gamma(X)
    train, _ = next(StratifiedKFold(5, shuffle=True, random_state=0).split(X, y))
    Xf, yf = X[train], y[train]
    kw = {} if args.cache is None else {"cache_size": args.cache}
    cases = []

    def timed(make):
        times, model = [], None
        for _ in range(3):
            model = make()
            t0 = time.perf_counter()
            model.fit(Xf, yf)
            times.append(time.perf_counter() - t0)
        return statistics.median(times), model

    for k in WARM_LOG2_C:
        C = 2.0 ** k
        for f in WARM_FACTORS:
            t_cold, cold = timed(lambda: SVC(C=C * f, gamma=g, **kw))
            times, iters = [], None
            for _ in range(3):
                model = SVC(C=C, gamma=g, warm_start=True, **kw).fit(Xf, yf)
                model.set_params(C=C * f)
                t0 = time.perf_counter()
                model.fit(Xf, yf)
                times.append(time.perf_counter() - t0)
                iters = int(np.sum(model.n_iter_))
            case = {"C": C, "factor": f, "cold_iter": int(np.sum(cold.n_iter_)), "warm_iter": iters,
                    "cold_s": t_cold, "warm_s": statistics.median(times)}
            case["iter_ratio"] = case["warm_iter"] / case["cold_iter"]
            case["time_ratio"] = case["warm_s"] / case["cold_s"]
            cases.append(case)
            print(f"  {name} C {C:g} -> {C * f:g}: iters {case['iter_ratio']:.2f}x time {case['time_ratio']:.2f}x",
                  flush=True)
    return {"gamma": g, "n_train": len(train), "cases": cases}


class Store(_harness.Store):
    """``path[_<part>].{json,md}``: one entry per data set."""

    prefix = "path"


def render(store: Store) -> None:
    """The markdown of the stored sets."""
    results = {name: e["result"] for name, e in store.entries.items()}
    caches = {e["config"].get("cache") for e in store.entries.values()}
    cache = ("every estimator's default cache_size" if caches <= {None}
             else "cache_size=" + " / ".join(f"{c:g}" for c in sorted(c for c in caches if c is not None)) + " MB")
    lines = [f"Defaults: {cache}; `path` = PathSearchCV(est), `grid` = GridSearchCV(est) with sparsekernel.SVC() "
             "and n_jobs=None (PathSearchCV decides its threads, GridSearchCV fits one at a time with the "
             "estimator's threads); `skl` / `ilx` = GridSearchCV(est, n_jobs=-1) with scikit-learn's / "
             "scikit-learn-intelex's SVC() (their fastest setting here). est is the SVC (`bare`) or "
             "make_pipeline(StandardScaler(), SVC()) (`pipeline`, on X as a dense array). 5-fold stratified CV "
             "(shuffled, seed 0), C in 2^{-2,0,2,4,6,8} x gamma in {g/4, g, 4g}, g = gamma='scale' of the data the "
             "SVC sees; accuracy; refit=False. Kernel values: computed by the shared rows (path, bare), by the "
             "fits (otherwise); SMO steps summed over the 90 fits.", ""]
    verdicts = []
    for name, res in results.items():
        lines += [f"## {name} (n = {res['n']}, {res['n_features']} features)", ""]
        for variant, sr in (res.get("search") or {}).items():
            rows = sr["rows"]
            peers = [rows[m]["seconds"] for m in ("skl", "ilx") if m in rows]
            t_path = rows["path"]["seconds"] if "path" in rows else float("nan")
            table = []
            for m, r in rows.items():
                ev = f"{r['kernel_evals']:.3g}" if "kernel_evals" in r else ""
                st = f"{r['smo_steps']:.3g}" if "smo_steps" in r else ""
                best = list(ParameterGrid(sr["grid"]))[int(np.argmax(r["scores"]))]  # ParameterGrid order
                bp = f"({best['C']:g}, {best['gamma']:.4g}), {max(r['scores']):.4f}"
                table.append([m, f"{r['seconds']:.1f}", f"{t_path / r['seconds']:.2f}", ev, st, bp])
            lines += [f"### {variant}", "", *md_table(["method", "time (s)", "path / method", "kernel values",
                                                       "SMO steps", "best (C, gamma), CV accuracy"], table)]
            if "path" in rows and "grid" in rows:
                diff = float(np.max(np.abs(np.array(rows["path"]["scores"]) - np.array(rows["grid"]["scores"]))))
                lines += ["", f"Largest |mean CV accuracy(path) - (grid)| over the 18 candidates: {diff:.2g}. "
                          f"Shared rows' peak: {rows['path'].get('shared_peak_mb', 0):.0f} MB."]
                r_grid = t_path / rows["grid"]["seconds"]
                verdicts.append((f"{name} {variant}", "path <= 0.5 x GridSearchCV(sparsekernel.SVC())", r_grid,
                                 r_grid <= 0.5))
            if "path" in rows and peers:
                r_peer = t_path / min(peers)
                verdicts.append((f"{name} {variant}", "path <= 0.2 x the faster peer's GridSearchCV", r_peer,
                                 r_peer <= 0.2))
            lines.append("")
        wr = res.get("warm")
        if wr:
            lines += [f"Single warm starts, fold 0 ({wr['n_train']} points), gamma = {wr['gamma']:.4g}:", "",
                      *md_table(["C ->", "cold iter", "warm iter", "iter ratio", "cold (s)", "warm (s)", "time ratio"],
                                [[f"{c['C']:g} -> {c['C'] * c['factor']:g}", c["cold_iter"], c["warm_iter"],
                                  f"{c['iter_ratio']:.2f}", f"{c['cold_s']:.3f}", f"{c['warm_s']:.3f}",
                                  f"{c['time_ratio']:.2f}"] for c in wr["cases"]]), ""]
    lines += ["## Bars", "", *md_table(["set", "bar", "measured", "verdict"],
                                       [[name, bar, f"{value:.2f}", "PASS" if ok else "FAIL"]
                                        for name, bar, value, ok in verdicts])]
    store.write_md("Grid searches at their defaults: PathSearchCV against GridSearchCV (issue 34)", lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", default="a9a,w8a,magic,usps")
    parser.add_argument("--parts", default="search")
    parser.add_argument("--methods", default="path,grid,skl,ilx")
    parser.add_argument("--variants", default="bare,pipeline")
    parser.add_argument("--cache", type=float, default=None, help="cache_size (MB) of every SVC; default: theirs")
    parser.add_argument("--n", type=int, default=10000, help="rows sampled from each training set")
    parser.add_argument("--quick", action="store_true", help="1,000 rows: a smoke test, not a measurement")
    parser.add_argument("--out", default="path_defaults", help="results file stem: path or path_<name>")
    parser.add_argument("--merge", action="store_true",
                        help="keep the other methods' rows of the sets run (default: their entries are replaced)")
    _harness.add_render_option(parser)
    parser.add_argument("--note", default="", help="with --render-only: a remark on how the runs were made")
    parser.add_argument("--skip", default="", help="set:method pairs not run, e.g. w8a:ilx (reported as such)")
    args = parser.parse_args(argv)
    if args.out != "path" and not args.out.startswith("path_"):
        parser.error("--out must be path or path_<name>")
    part = args.out[len("path_"):] or None
    args.methods = args.methods.split(",")
    args.variants = args.variants.split(",")
    args.skip = [x for x in args.skip.split(",") if x]
    if args.quick:
        args.n = 1000
    if args.render_only:
        store = Store(part, register_run=False)
        if args.note and store.runs:
            store.runs[-1]["note"] = args.note
        render(store)
        return 0
    store = Store(part, force=True)
    for name in args.sets.split(","):
        data = load(name, args.n)
        if data is None:
            print(f"{name}: data missing, skipped", flush=True)
            continue
        X, y = data
        old = store.entries.get(name)
        res = dict(old["result"]) if args.merge and old else {}  # --merge: other methods' rows are kept
        res.update(n=X.shape[0], n_features=X.shape[1])
        if "search" in args.parts:
            new = search_part(name, X, y, args)
            for variant, part_result in new.items():
                if variant in res.setdefault("search", {}):
                    res["search"][variant]["rows"].update(part_result["rows"])
                else:
                    res["search"][variant] = part_result
        if "warm" in args.parts:
            res["warm"] = warm_part(name, X, y, args)
        store.put(name, {"n": args.n, "cache": args.cache}, res)
        render(store)
    print(store.md_path.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
