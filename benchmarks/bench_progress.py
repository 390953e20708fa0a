"""What observing and bounding a fit costs: SVC fit time with and without a progress callback
(scikit-learn's callback protocol, fed by the engine's throttled reports), and the wall time of a
fit given time_limit=1 s, on real data (a9a, w8a, magic from ../shared/data; missing sets are
skipped). Fits with and without the callback alternate; median of --repeats.

    python benchmarks/bench_progress.py [--repeats 5]

Writes benchmarks/results/progress.md (and progress_fit.json).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _datasets  # noqa: E402
import bench_csmo  # noqa: E402  (the JSON store, fmt, md_table)
import bench_svc  # noqa: E402  (scale_gamma)

from sklearn.exceptions import ConvergenceWarning  # noqa: E402

from sparsekernel import SVC  # noqa: E402

DATASETS = ("a9a", "w8a", "magic")


class Counting:
    """A FitCallback that counts its calls (the cheapest listener: what the hook itself costs)."""

    def __init__(self):
        self.calls = 0

    def setup(self, estimator, context):
        pass

    def teardown(self, estimator, context):
        pass

    def on_fit_task_begin(self, estimator, context):
        self.calls += 1

    def on_fit_task_end(self, estimator, context):
        self.calls += 1


def progress_bar():
    try:
        from sklearn.callback import ProgressBar

        return ProgressBar()
    except ImportError:  # scikit-learn < 1.9 or rich missing
        return None


class Store(bench_csmo.Store):
    prefix = "progress"


def timed_fit(model, X, y):
    t0 = time.perf_counter()
    model.fit(X, y)
    return time.perf_counter() - t0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    store = Store("fit", quick=False, force=True)
    rows = []
    for name in DATASETS:
        split = _datasets.load(name)
        if split is None:
            print(f"{name}: missing, skipped")
            continue
        X, y = split[0], split[1]
        gamma = bench_svc.scale_gamma(X)
        times = {"none": [], "counting": [], "progressbar": []}
        calls = 0
        for _ in range(args.repeats):  # interleaved
            times["none"].append(timed_fit(SVC(gamma=gamma), X, y))
            cb = Counting()
            times["counting"].append(timed_fit(SVC(gamma=gamma).set_callbacks(cb), X, y))
            calls = cb.calls
            bar = progress_bar()
            if bar is not None:
                times["progressbar"].append(timed_fit(SVC(gamma=gamma).set_callbacks(bar), X, y))
        med = {k: statistics.median(v) if v else None for k, v in times.items()}
        spread = max(times["none"]) / min(times["none"]) - 1
        result = {"times": times, "median": med, "hook_calls": calls, "noise": spread}
        store.put(name, {"repeats": args.repeats}, result)
        rows.append([name, X.shape[0], bench_csmo.fmt(med["none"]), bench_csmo.fmt(med["counting"]),
                     bench_csmo.fmt(med["counting"] / med["none"], ".3f"), bench_csmo.fmt(med["progressbar"]),
                     bench_csmo.fmt(med["progressbar"] / med["none"], ".3f") if med["progressbar"] else "-",
                     calls, f"{100 * spread:.0f} %"])
        print(rows[-1], flush=True)
    limit_rows = []
    split = _datasets.load("a9a")
    if split is not None:
        X, y, Xte, yte = split
        gamma = bench_svc.scale_gamma(X)
        for C, limit in ((1.0, 1.0), (10.0, 1.0)):
            walls, accs, iters = [], [], []
            for _ in range(args.repeats):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    model = SVC(C=C, gamma=gamma, time_limit=limit)
                    walls.append(timed_fit(model, X, y))
                accs.append(100.0 * float((model.predict(Xte) == yte).mean()))
                iters.append(int(model.n_iter_[0]))
            full = SVC(C=C, gamma=gamma)
            t_full = timed_fit(full, X, y)
            acc_full = 100.0 * float((full.predict(Xte) == yte).mean())
            r = {"walls": walls, "acc": accs, "iters": iters, "full_s": t_full, "full_acc": acc_full,
                 "full_iter": int(full.n_iter_[0])}
            store.put(f"time_limit/a9a/C={C:g}", {"repeats": args.repeats, "limit": limit}, r)
            limit_rows.append([f"a9a, C = {C:g}", f"{limit:g}", bench_csmo.fmt(statistics.median(walls)),
                               bench_csmo.fmt(max(walls)), f"{statistics.median(iters)} / {r['full_iter']}",
                               f"{statistics.median(accs):.2f} / {acc_full:.2f}", bench_csmo.fmt(t_full)])
            print(limit_rows[-1], flush=True)
    lines = ["# Progress callbacks and time limits: what they cost", "",
             "Generated by `benchmarks/bench_progress.py`.", "", *store.header(), "",
             f"SVC (rbf, gamma = the value of 'scale', C = 1, tol 1e-3, all threads) with no callback, with a "
             f"callback that counts its calls, and with scikit-learn's ProgressBar, fits interleaved, median of "
             f"{args.repeats}. 'noise' is the spread (max / min - 1) of the plain fits.", "",
             *bench_csmo.md_table(["data", "n", "plain s", "counting s", "counting / plain", "ProgressBar s",
                                   "ProgressBar / plain", "hook calls", "noise"], rows), "",
             "A fit given time_limit = 1 s on a9a (wall time of fit, the iterate's test accuracy against the "
             "converged model's):", "",
             *bench_csmo.md_table(["data", "time_limit s", "wall s (median)", "wall s (max)",
                                   "iterations / converged fit", "test acc % / converged fit", "converged fit s"],
                                  limit_rows), ""]
    (bench_csmo.RESULTS / "progress.md").write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
