"""What observing and bounding a fit costs: SVC fit time with and without a progress callback
(scikit-learn's callback protocol, fed by the engine's throttled reports), and the wall time of a
fit given time_limit=1 s, on real data (a9a, w8a, magic from ../shared/data; missing sets are
skipped). Fits with and without the callback alternate; median of --repeats.

    python benchmarks/bench_progress.py [--repeats 5]

Writes benchmarks/results/progress.md and progress.json (``--render-only``: the markdown from the
JSON, nothing run).
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
import _harness  # noqa: E402
import bench_svc  # noqa: E402  (scale_gamma)
from _harness import fmt, md_table  # noqa: E402

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


class Store(_harness.Store):
    prefix = "progress"


def timed_fit(model, X, y):
    t0 = time.perf_counter()
    model.fit(X, y)
    return time.perf_counter() - t0


def render(store: Store) -> None:
    """progress.md from the stored entries."""
    rows, limit_rows, repeats = [], [], None
    for key, e in store.entries.items():
        r, repeats = e["result"], e["config"]["repeats"]
        if key.startswith("time_limit/"):
            _, name, C = key.split("/")
            limit_rows.append([f"{name}, C = {C[2:]}", f"{e['config']['limit']:g}", fmt(statistics.median(r["walls"])),
                               fmt(max(r["walls"])), f"{statistics.median(r['iters'])} / {r['full_iter']}",
                               f"{statistics.median(r['acc']):.2f} / {r['full_acc']:.2f}", fmt(r["full_s"])])
            continue
        med = r["median"]
        bar = fmt(med["progressbar"] / med["none"], ".3f") if med["progressbar"] else "-"
        rows.append([key, r["n"], fmt(med["none"]), fmt(med["counting"]), fmt(med["counting"] / med["none"], ".3f"),
                     fmt(med["progressbar"]), bar, r["hook_calls"], f"{100 * r['noise']:.0f} %"])
    body = [f"SVC (rbf, gamma = the value of 'scale', C = 1, tol 1e-3, all threads) with no callback, with a "
            f"callback that counts its calls, and with scikit-learn's ProgressBar, fits interleaved, median of "
            f"{repeats}. 'noise' is the spread (max / min - 1) of the plain fits.", "",
            *md_table(["data", "n", "plain s", "counting s", "counting / plain", "ProgressBar s",
                       "ProgressBar / plain", "hook calls", "noise"], rows), "",
            "A fit given time_limit = 1 s on a9a (wall time of fit, the iterate's test accuracy against the "
            "converged model's):", "",
            *md_table(["data", "time_limit s", "wall s (median)", "wall s (max)", "iterations / converged fit",
                       "test acc % / converged fit", "converged fit s"], limit_rows)]
    store.write_md("Progress callbacks and time limits: what they cost", body)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    _harness.add_render_option(parser)
    args = parser.parse_args(argv)
    if args.render_only:
        render(Store(register_run=False))
        return 0
    store = Store(force=True)
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
        result = {"n": X.shape[0], "times": times, "median": med, "hook_calls": calls, "noise": spread}
        store.put(name, {"repeats": args.repeats}, result)
        print(name, {k: v for k, v in result.items() if k != "times"}, flush=True)
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
            r = {"walls": walls, "acc": accs, "iters": iters, "full_s": t_full,
                 "full_acc": 100.0 * float((full.predict(Xte) == yte).mean()), "full_iter": int(full.n_iter_[0])}
            store.put(f"time_limit/a9a/C={C:g}", {"repeats": args.repeats, "limit": limit}, r)
            print(f"a9a C={C:g} time_limit={limit:g}: median wall {statistics.median(walls):.3f} s", flush=True)
    render(store)
    print(store.md_path.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
