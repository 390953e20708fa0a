"""sparsekernel.SVC as a drop-in for sklearn.svm.SVC: fit time against an earlier revision of the
library (nothing may get slower), and agreement of the predictions with LIBSVM's on the holdout
sets, ties included.

Two revisions of sparsekernel cannot share one process, so each runs in a worker subprocess that
keeps its data loaded; the fits alternate between the workers (A, B, A, B, ...) so that both see
the same machine load, and a worker rests 0.5 s after its predict so that its spinning BLAS / OpenMP
threads do not slow the other worker's fit (measured: without the rest, the revision that ran after
an OpenBLAS predict looked 20-60 % slower on usps). The baseline is an installed copy of the earlier revision:

    git worktree add /tmp/sk-base <rev> && pip install --target /tmp/sk-base-site /tmp/sk-base
    python benchmarks/bench_dropin.py --baseline /tmp/sk-base-site --baseline-rev <rev>

Writes benchmarks/results/dropin.md and dropin.json (``--render-only``: the markdown from the
JSON, nothing run). Sets missing from ../shared/data are skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _datasets  # noqa: E402
import _harness  # noqa: E402
import bench_svc  # noqa: E402  (scale_gamma)
from _harness import fmt, md_table  # noqa: E402
from _worker import LineWorker  # noqa: E402

HERE = Path(__file__).resolve().parent
DATASETS = ("a9a", "w8a", "magic", "usps", "skin", "ringnorm")
CS = (1.0, 10.0)
SMALL_FITS = 200  # tiny fits per measurement of the per-fit overhead

# The worker: reads one JSON command per line, answers one JSON line.
WORKER = r"""
import json, sys, time, warnings
import numpy as np
sys.path.insert(0, sys.argv[1])
import _datasets, bench_svc
import sparsekernel
from sparsekernel import SVC
cache = {}
print(json.dumps({"ready": sparsekernel.__file__}), flush=True)
for line in sys.stdin:
    cmd = json.loads(line)
    if cmd["op"] == "fit":
        if cmd["data"] not in cache:
            Xtr, ytr, Xte, yte = _datasets.load(cmd["data"])
            cache[cmd["data"]] = (Xtr, ytr, Xte, yte, bench_svc.scale_gamma(Xtr))
        Xtr, ytr, Xte, yte, gamma = cache[cmd["data"]]
        model = SVC(C=cmd["C"], gamma=gamma, tol=1e-3, cache_size=200)
        t0 = time.perf_counter()
        model.fit(Xtr, ytr)
        t = time.perf_counter() - t0
        pred = model.predict(Xte)
        # the BLAS and OpenMP threads of a process spin for a while after a parallel call (OpenBLAS
        # about 0.1 s): let them go idle before the other revision's process times its fit
        time.sleep(0.5)
        out = {"t": t, "n_iter": int(np.sum(model.n_iter_)), "n_sv": int(len(model.support_)),
               "pred": "".join("1" if p > 0 else "0" for p in pred)}
    else:  # the per-fit overhead of small problems
        rng = np.random.RandomState(0)
        X = rng.standard_normal((200, 5))
        y = (X[:, 0] + 0.3 * rng.standard_normal(200) > 0).astype(int)
        ts = []
        for _ in range(cmd["n"]):
            t0 = time.perf_counter()
            SVC(n_jobs=1).fit(X, y)
            ts.append(time.perf_counter() - t0)
        out = {"t": float(np.median(ts))}
    print(json.dumps(out), flush=True)
"""


class Worker(LineWorker):
    """A subprocess running WORKER with one revision of sparsekernel first on sys.path."""

    def __init__(self, site: str | None, python: str | None = None):
        env = dict(os.environ)
        if site:
            env["PYTHONPATH"] = site + os.pathsep + env.get("PYTHONPATH", "")
        super().__init__(WORKER, str(HERE), env=env, python=python)


def libsvm_predictions(name: str, C: float) -> tuple[str, float]:
    """scikit-learn's SVC (LIBSVM) on the same split and settings: holdout predictions, fit seconds."""
    from sklearn.svm import SVC as SkSVC

    Xtr, ytr, Xte, _ = _datasets.load(name)
    model = SkSVC(C=C, gamma=bench_svc.scale_gamma(Xtr), tol=1e-3, cache_size=200)
    t0 = time.perf_counter()
    model.fit(_datasets.as_int32_indices(Xtr), ytr)
    t = time.perf_counter() - t0
    pred = model.predict(_datasets.as_int32_indices(Xte))
    return "".join("1" if p > 0 else "0" for p in pred), t


class Store(_harness.Store):
    prefix = "dropin"


def render(store: Store) -> None:
    """dropin.md from the stored entries."""
    rows = []
    for key, e in store.entries.items():
        if key == "small":
            continue
        name, C = key.split("/C=")
        r = e["result"]
        rows.append([name, C, fmt(r["t_base"]), fmt(r["t_new"]), fmt(r["t_new"] / r["t_base"], ".2f"),
                     f"{r['n_iter_base']} / {r['n_iter']}", f"{r['n_sv_base']} / {r['n_sv']}",
                     f"{100 * r['agree_base']:.2f} / {100 * r['agree']:.2f}", fmt(r["t_sklearn"])])
    small = store.entries["small"]
    repeats, sb, sn = small["config"]["repeats"], small["result"]["t_base"], small["result"]["t_new"]
    what = store.summary.get("baseline_note", "before the drop-in work: probability, callable kernels, sparse "
                             "attributes, masked weights, and the dense rbf rows from norms and dot products")
    body = [f"Baseline: revision {store.summary.get('baseline_rev', '?')} ({what}). "
            f"Fits alternate between the two revisions, median of {repeats}; rbf, gamma = the value of "
            "'scale', tol 1e-3, cache 200 MB, all threads. Agreement: holdout predictions equal to "
            "scikit-learn's SVC (LIBSVM) fitted with the same settings, ties included.", "",
            *md_table(["data", "C", "fit s (base)", "fit s (this)", "this / base", "iterations base / this",
                       "nSV base / this", "% = LIBSVM base / this", "LIBSVM fit s"], rows), "",
            f"Per-fit overhead on 200 x 5 problems (median over {small['config']['n']} fits, median of {repeats}): "
            f"{1e3 * sb:.3f} ms (base) / {1e3 * sn:.3f} ms (this) = {sn / sb:.2f}."]
    store.write_md("sparsekernel.SVC as a drop-in: fit time against the earlier revision, agreement with LIBSVM",
                   body)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="site directory holding the earlier revision (this or --baseline-python "
                                           "to run)")
    parser.add_argument("--baseline-python", default=None,
                        help="an interpreter whose environment has the earlier revision installed (an editable "
                             "install of this checkout wins over PYTHONPATH: then use this)")
    parser.add_argument("--baseline-rev", default="?", help="its git revision (for the table)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sets", default=",".join(DATASETS))
    parser.add_argument("--part", default=None, help="results file dropin_PART (default: dropin)")
    parser.add_argument("--baseline-note", default=None, help="what the baseline lacks (for the table)")
    _harness.add_render_option(parser)
    args = parser.parse_args(argv)
    if args.render_only:
        render(Store(args.part, register_run=False))
        return 0
    if not args.baseline and not args.baseline_python:
        parser.error("--baseline or --baseline-python is required")
    store = Store(args.part, force=True)
    store.summary["baseline_rev"] = args.baseline_rev
    if args.baseline_note:
        store.summary["baseline_note"] = args.baseline_note
    base, new = Worker(args.baseline, args.baseline_python), Worker(None)
    print("baseline:", base.module, "\nthis revision:", new.module, flush=True)
    for name in args.sets.split(","):
        if _datasets.load(name) is None:
            print(f"{name}: missing, skipped")
            continue
        for C in CS:
            runs = {"base": [], "new": []}
            for _ in range(args.repeats):  # interleaved
                runs["base"].append(base.ask(op="fit", data=name, C=C))
                runs["new"].append(new.ask(op="fit", data=name, C=C))
            ref, t_skl = libsvm_predictions(name, C)
            pred_new, pred_base = runs["new"][0]["pred"], runs["base"][0]["pred"]
            agree = float(np.mean(np.frombuffer(pred_new.encode(), np.uint8) == np.frombuffer(ref.encode(), np.uint8)))
            agree_base = float(np.mean(np.frombuffer(pred_base.encode(), np.uint8)
                                       == np.frombuffer(ref.encode(), np.uint8)))
            result = {"t_base": statistics.median(r["t"] for r in runs["base"]),
                      "t_new": statistics.median(r["t"] for r in runs["new"]), "t_sklearn": t_skl,
                      "agree": agree, "agree_base": agree_base,
                      "n_iter": runs["new"][0]["n_iter"], "n_iter_base": runs["base"][0]["n_iter"],
                      "n_sv": runs["new"][0]["n_sv"], "n_sv_base": runs["base"][0]["n_sv"],
                      "all_base": [r["t"] for r in runs["base"]], "all_new": [r["t"] for r in runs["new"]]}
            store.put(f"{name}/C={C:g}", {"repeats": args.repeats}, result)
            print(name, C, json.dumps({k: v for k, v in result.items() if not k.startswith("all")}), flush=True)
    small = {"base": [], "new": []}
    for _ in range(args.repeats):
        small["base"].append(base.ask(op="small", n=SMALL_FITS)["t"])
        small["new"].append(new.ask(op="small", n=SMALL_FITS)["t"])
    store.put("small", {"repeats": args.repeats, "n": SMALL_FITS},
              {"t_base": statistics.median(small["base"]), "t_new": statistics.median(small["new"])})
    base.close()
    new.close()
    render(store)
    print(store.md_path.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
