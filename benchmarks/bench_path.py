"""Grid searches that reuse their work: PathSearchCV against GridSearchCV and the peers' searches.

Two parts, side by side in one process on real data (``benchmarks/_datasets.py``; sets whose files
are missing are skipped):

``search``
    5-fold CV over a 6 x 3 grid, C in 2^{-2, 0, 2, 4, 6, 8} x gamma in {g/4, g, 4g} with g the value
    of gamma='scale', accuracy scoring, refit=False. Methods, each timed once per set in the order
    below (the machine has 2 cores; nothing else runs):

    ``path``     PathSearchCV(sparsekernel.SVC(cache_size=B)): one shared kernel row store per gamma
                 for all folds and C (B MB for the whole search), fits warm-started along C;
    ``grid``     GridSearchCV(sparsekernel.SVC(cache_size=B)): every fit cold, B MB each;
    ``path-par`` / ``grid-par``: the same with two fits at once (n_jobs=2; estimator n_jobs=1): threads
                 sharing the rows for PathSearchCV, processes (B MB each) for GridSearchCV;
    ``skl``      GridSearchCV(sklearn.svm.SVC(cache_size=B), n_jobs=-1);
    ``ilx``      GridSearchCV(sklearnex.svm.SVC(), n_jobs=-1).

    Reported: wall time, ratios path / grid and path / best peer, the kernel values computed
    (path: by its shared rows; grid: the sum of its fits' ``n_kernel_evals_``, read by a second
    scorer), and the largest difference of mean CV accuracy between path and grid (the fits reach
    the same optimum to tol, so it can differ by a test point at most).

``warm``
    Single warm starts on the first CV fold at gamma = g: SVC(C) then SVC(2C) or SVC(10C) with
    ``warm_start=True`` against a cold SVC(2C) / SVC(10C), C in 2^{-2, 0, 2, 4, 6}; iterations and
    time ratios (each fit timed as the median of 3).

Bars (issue 21): path <= 0.4 x grid on every set with n >= 5,000 and <= 0.15 x the faster peer's
search; warm starts <= 0.6 x the cold iterations and <= 0.7 x the cold time on 80 % of cases.

Usage::

    python benchmarks/bench_path.py [--sets a9a,w8a,magic,usps] [--parts search,warm] [--cache 1000]
        [--n 10000] [--skip w8a:ilx] [--merge] [--quick]

Writes benchmarks/results/path.md and path.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _datasets  # noqa: E402
import bench_svc  # noqa: E402  (environment(), scale_gamma(), subsample_rows())

from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.model_selection import GridSearchCV, ParameterGrid, StratifiedKFold  # noqa: E402

from sparsekernel import SVC  # noqa: E402
from sparsekernel.model_selection import PathSearchCV  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
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


def run_search(method, X, y, grid, cv, cache_mb):
    scoring = {"acc": "accuracy"}
    if method in ("path", "grid", "path-par", "grid-par"):
        scoring["evals"] = _kernel_evals
        par = method.endswith("-par")  # two fits at once, each on one thread
        est = SVC(cache_size=cache_mb, n_jobs=1 if par else None)
        search = (PathSearchCV if method.startswith("path") else GridSearchCV)(
            est, grid, cv=cv, scoring=scoring, refit=False, n_jobs=2 if par else None)
        Xm = X
    elif method == "skl":
        from sklearn.svm import SVC as SkSVC

        search = GridSearchCV(SkSVC(cache_size=cache_mb), grid, cv=cv, scoring=scoring, refit=False, n_jobs=-1)
        Xm = _datasets.as_int32_indices(X)
    else:
        from sklearnex.svm import SVC as IlxSVC

        search = GridSearchCV(IlxSVC(), grid, cv=cv, scoring=scoring, refit=False, n_jobs=-1)
        Xm = _datasets.as_int32_indices(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        t0 = time.perf_counter()
        search.fit(Xm, y)
        seconds = time.perf_counter() - t0
    res = search.cv_results_
    out = {"method": method, "seconds": seconds, "scores": res["mean_test_acc"].tolist(),
           "best_params": {k: float(v) for k, v in search.best_params_.items()} if hasattr(search, "best_params_")
           else None}
    if method.startswith("grid"):
        out["kernel_evals"] = float(np.sum(res["mean_test_evals"]) * cv.get_n_splits())
    if method.startswith("path"):
        out["kernel_evals"] = float(search.shared_kernel_evals_)
        out["shared_peak_mb"] = search.shared_cache_peak_bytes_ / 2**20
    return out


def search_part(name, X, y, args):
    g = bench_svc.scale_gamma(X)
    grid = {"C": [2.0 ** k for k in LOG2_C], "gamma": [f * g for f in GAMMA_FACTORS]}
    cv = StratifiedKFold(5, shuffle=True, random_state=0)
    rows = {}
    for method in args.methods:
        if f"{name}:{method}" in args.skip:
            print(f"  {name} {method}: skipped (--skip)", flush=True)
            continue
        try:
            rows[method] = run_search(method, X, y, grid, cv, args.cache)
        except ImportError as exc:
            print(f"  {method}: skipped ({exc})", flush=True)
            continue
        print(f"  {name} {method}: {rows[method]['seconds']:.1f} s", flush=True)
    return {"gamma": g, "grid": grid, "rows": rows}


def warm_part(name, X, y, args):
    g = bench_svc.scale_gamma(X)
    train, _ = next(StratifiedKFold(5, shuffle=True, random_state=0).split(X, y))
    Xf, yf = X[train], y[train]
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
            t_cold, cold = timed(lambda: SVC(C=C * f, gamma=g, cache_size=args.cache))
            times, iters = [], None
            for _ in range(3):
                model = SVC(C=C, gamma=g, cache_size=args.cache, warm_start=True).fit(Xf, yf)
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


def report(env, results, args):
    lines = ["# Grid searches that reuse their work (issue 21)", "",
             "Generated by `benchmarks/bench_path.py` (the command of the last run is listed below).", ""]
    lines += [f"- {k}: {v}" for k, v in env.items()]
    lines += ["", f"Cache budget B = {args.cache:g} MB: the whole search's for `path`, each fit's for `grid` and "
              "`skl`. 5-fold stratified CV (shuffled, seed 0), grid C in 2^{-2,0,2,4,6,8} x gamma in "
              "{g/4, g, 4g}, g = gamma='scale'; accuracy; refit=False. sklearn and sklearnex searches run with "
              "n_jobs=-1 (2 processes); `path` and `grid` with the estimator's default threads (2), the `-par` rows "
              "with two fits at once (threads sharing the rows for PathSearchCV, processes for GridSearchCV). "
              "Kernel values: computed by the shared rows (path), summed over the fits (grid).", ""]
    verdicts = []
    for name, res in results.items():
        n = res["n"]
        lines += [f"## {name} (n = {n}, {res['n_features']} features)", ""]
        sr = res.get("search")
        if sr:
            rows = sr["rows"]
            peers = [rows[m]["seconds"] for m in ("skl", "ilx") if m in rows]
            best_peer = min(peers) if peers else None
            paths = [rows[m]["seconds"] for m in ("path", "path-par") if m in rows]
            grids = [rows[m]["seconds"] for m in ("grid", "grid-par") if m in rows]
            best_path = min(paths) if paths else float("nan")
            lines += ["| method | time (s) | best path / method | kernel values | best (C, gamma), CV accuracy |",
                      "|---|---|---|---|---|"]
            for m, r in rows.items():
                ev = f"{r['kernel_evals']:.3g}" if "kernel_evals" in r else ""
                best = list(ParameterGrid(sr["grid"]))[int(np.argmax(r["scores"]))]  # ParameterGrid order
                bp = f"({best['C']:g}, {best['gamma']:.4g}), {max(r['scores']):.4f}"
                lines.append(f"| {m} | {r['seconds']:.1f} | {best_path / r['seconds']:.2f} | {ev} | {bp} |")
            skipped = [m for m in args.methods if f"{name}:{m}" in args.skip]
            if skipped:
                lines += ["", "Not run (--skip): " + ", ".join(skipped) + "."]
            if "path" in rows and "grid" in rows:
                diff = float(np.max(np.abs(np.array(rows["path"]["scores"]) - np.array(rows["grid"]["scores"]))))
                lines += ["", f"Largest |mean CV accuracy(path) - (grid)| over the 18 candidates: {diff:.2g}. "
                          f"Shared rows' peak: {rows['path'].get('shared_peak_mb', 0):.0f} MB."]
            if paths and grids and n >= 5000:
                r_grid = best_path / min(grids)
                verdicts.append((name, "best path <= 0.4 x best GridSearchCV(sparsekernel.SVC)", r_grid, r_grid <= 0.4))
            if paths and best_peer:
                r_peer = best_path / best_peer
                verdicts.append((name, "best path <= 0.15 x best peer", r_peer, r_peer <= 0.15))
            lines.append("")
        wr = res.get("warm")
        if wr:
            lines += [f"Single warm starts, fold 0 ({wr['n_train']} points), gamma = {wr['gamma']:.4g}:", "",
                      "| C -> | cold iter | warm iter | iter ratio | cold (s) | warm (s) | time ratio |",
                      "|---|---|---|---|---|---|---|"]
            for c in wr["cases"]:
                lines.append(f"| {c['C']:g} -> {c['C'] * c['factor']:g} | {c['cold_iter']} | {c['warm_iter']} | "
                             f"{c['iter_ratio']:.2f} | {c['cold_s']:.3f} | {c['warm_s']:.3f} | {c['time_ratio']:.2f} |")
            lines.append("")
    all_cases = [c for res in results.values() if res.get("warm") for c in res["warm"]["cases"]]
    lines += ["## Bars", "", "| set | bar | measured | verdict |", "|---|---|---|---|"]
    for name, bar, value, ok in verdicts:
        lines.append(f"| {name} | {bar} | {value:.2f} | {'PASS' if ok else 'FAIL'} |")
    for f in WARM_FACTORS:
        cs = [c for c in all_cases if c["factor"] == f]
        if cs:
            share = np.mean([c["iter_ratio"] <= 0.6 and c["time_ratio"] <= 0.7 for c in cs])
            lines.append(f"| all | warm C -> {f}C: <= 0.6 x iterations and <= 0.7 x time on 80 % of cases | "
                         f"{share:.0%} of {len(cs)} | {'PASS' if share >= 0.8 else 'FAIL'} |")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", default="a9a,w8a,magic,usps")
    parser.add_argument("--parts", default="search,warm")
    parser.add_argument("--methods", default="path,grid,skl,ilx")
    parser.add_argument("--cache", type=float, default=1000.0)
    parser.add_argument("--n", type=int, default=10000, help="rows sampled from each training set")
    parser.add_argument("--quick", action="store_true", help="1,000 rows: a smoke test, not a measurement")
    parser.add_argument("--out", default="path")
    parser.add_argument("--merge", action="store_true", help="keep the other sets of an earlier run's json")
    parser.add_argument("--report-only", action="store_true", help="rewrite the .md from the .json, run nothing")
    parser.add_argument("--note", default="", help="with --report-only: a remark on how the runs were made")
    parser.add_argument("--skip", default="", help="set:method pairs not run, e.g. w8a:ilx (reported as such)")
    args = parser.parse_args(argv)
    args.methods = args.methods.split(",")
    args.skip = [x for x in args.skip.split(",") if x]
    if args.quick:
        args.n = 1000
    env = bench_svc.environment()
    results = {}
    previous = RESULTS / f"{args.out}.json"
    if (args.merge or args.report_only) and previous.exists():  # earlier sets are kept unless re-run
        saved = json.loads(previous.read_text())
        results = saved["results"]
        if args.report_only:
            if args.note:
                saved["env"]["note"] = args.note
                previous.write_text(json.dumps(saved, indent=1))
            (RESULTS / f"{args.out}.md").write_text("\n".join(report(saved["env"], results, args)) + "\n")
            return 0
    for name in args.sets.split(","):
        data = load(name, args.n)
        if data is None:
            print(f"{name}: data missing, skipped", flush=True)
            continue
        X, y = data
        res = results.get(name, {}) if args.merge else {}  # --merge: other methods' rows are kept
        res.update(n=X.shape[0], n_features=X.shape[1])
        if "search" in args.parts:
            new = search_part(name, X, y, args)
            if "search" in res:
                res["search"]["rows"].update(new["rows"])
            else:
                res["search"] = new
        if "warm" in args.parts:
            res["warm"] = warm_part(name, X, y, args)
        results[name] = res
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / f"{args.out}.json").write_text(json.dumps({"env": env, "results": results}, indent=1))
        (RESULTS / f"{args.out}.md").write_text("\n".join(report(env, results, args)) + "\n")
    print("\n".join(report(env, results, args)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
