"""Kernel blocks: the C++ core's K(A, B) (``_core.kernel_matrix``, the block path that sparse
prediction, the compact KLR start-up, NSSVC's kernel columns and SLMC/SparseKFD use) against
scikit-learn's ``rbf_kernel`` (BLAS), and optionally against the core of an earlier revision.

A = 256 rows of a data set's test split, B = up to 20,000 rows of its training split, rbf with
gamma = 'scale'. Each implementation runs in a worker subprocess that keeps the data loaded (two
builds of the core cannot share a process); the measurements alternate between the workers
(A, B, C, A, B, C, ...) so that all see the same machine load. Per measurement the median of
``--reps`` calls; the table gives the median over ``--runs`` measurements.

    python benchmarks/bench_kernels.py [--baseline DIR --baseline-rev REV] [--threads 1,2]

DIR holds the ``_core*.so`` of the earlier revision (for example an installed copy's
``site-packages/sparsekernel``). Writes benchmarks/results/kernels_blocks.md and .json. Data sets
missing from ../shared/data are skipped.
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _datasets  # noqa: E402
import _harness  # noqa: E402  (the results store, tables)

HERE = Path(__file__).resolve().parent
DATASETS = ("skin", "magic", "ringnorm", "a9a", "usps", "w8a")
N_ROWS, N_COLS = 256, 20_000


class Store(_harness.Store):
    prefix = "kernels"


def blocks(name: str):
    """(A, B, gamma) of a data set, or None when it is missing."""
    split = _datasets.load(name)
    if split is None:
        return None
    X_train, _, X_test, _ = split
    A, B = X_test[:N_ROWS], X_train[:N_COLS]
    if sp.issparse(B):
        A, B = _datasets.as_int32_indices(A.tocsr()), _datasets.as_int32_indices(B.tocsr())
        # (not sparsekernel._base.resolve_gamma: a worker must not import sparsekernel, whose _core
        # would take the type names of the earlier core it loads)
        var = B.multiply(B).mean() - B.mean() ** 2
    else:
        A, B = np.ascontiguousarray(A, dtype=np.float64), np.ascontiguousarray(B, dtype=np.float64)
        var = B.var()
    return A, B, 1.0 / (B.shape[1] * var)


# ------------------------------------------------------------------------------------------ worker
def load_core(so_dir: str):
    so = glob.glob(str(Path(so_dir) / "_core*.so"))
    if not so:
        raise SystemExit(f"no _core*.so in {so_dir}")
    spec = importlib.util.spec_from_file_location("_core", so[0])
    core = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(core)
    return core


def worker(impl: str) -> None:
    """Serve 'name threads reps' lines on stdin with one JSON line each on stdout."""
    from threadpoolctl import threadpool_limits

    core = None if impl == "sklearn" else load_core(impl)
    cache = {}
    for line in sys.stdin:
        name, threads, reps = line.split()
        threads, reps = int(threads), int(reps)
        if name not in cache:
            cache[name] = blocks(name)
        if cache[name] is None:
            print(json.dumps(None), flush=True)
            continue
        A, B, gamma = cache[name]
        if core is None:
            from sklearn.metrics.pairwise import rbf_kernel

            def call():
                with threadpool_limits(threads):
                    return rbf_kernel(A, B, gamma=gamma)
        else:
            def matrix(X):
                if sp.issparse(X):
                    return core.Matrix.csr(X.indptr, X.indices, np.asarray(X.data, np.float64), X.shape[1])
                return core.Matrix.dense(X)
            mA, mB = matrix(A), matrix(B)

            def call():
                return core.kernel_matrix(mA, mB, 2, gamma, 0.0, 3, threads)  # 2 = rbf
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            K = call()
            times.append(time.perf_counter() - t0)
        # rest before answering: this worker's spinning BLAS / OpenMP threads must not slow the next
        # worker's measurement (answering first cost some 2-thread calls of the next worker ~8 ms)
        time.sleep(0.3)
        print(json.dumps(dict(seconds=statistics.median(times), checksum=float(np.sum(K)),
                              K00=float(K[0, 0]), shape=list(K.shape), d=int(A.shape[1]),
                              sparse=bool(sp.issparse(A)))), flush=True)


# ------------------------------------------------------------------------------------------ driver
def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--baseline", help="directory holding an earlier revision's _core*.so")
    ap.add_argument("--baseline-rev", default="earlier", help="its name in the table")
    ap.add_argument("--datasets", type=_harness.csv_list(str, DATASETS), default=list(DATASETS))
    ap.add_argument("--threads", type=_harness.csv_list(int), default=[1, 2])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--data-dir")
    args = ap.parse_args()
    if args.data_dir:
        _datasets.set_data_dir(args.data_dir)
    if args.worker:
        worker(args.worker)
        return 0

    import sparsekernel._core as current

    impls = {"ours": str(Path(current.__file__).parent), "scikit-learn": "sklearn"}
    if args.baseline:
        impls[f"ours@{args.baseline_rev}"] = args.baseline
    extra = ["--data-dir", args.data_dir] if args.data_dir else []
    procs = {label: subprocess.Popen([sys.executable, __file__, "--worker", impl, *extra], text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
             for label, impl in impls.items()}
    store = Store("blocks", quick=False)
    store.summary["command"] = " ".join(sys.argv)
    results = {}
    try:
        for name in args.datasets:
            for threads in args.threads:
                for _ in range(args.runs):
                    for label, p in procs.items():  # interleaved
                        p.stdin.write(f"{name} {threads} {args.reps}\n")
                        p.stdin.flush()
                        r = json.loads(p.stdout.readline())
                        if r is None:
                            break
                        results.setdefault((name, threads), {}).setdefault(label, []).append(r)
                    else:
                        continue
                    break
                cell = results.get((name, threads))
                if cell:
                    store.put(f"{name}/{threads}", dict(rows=N_ROWS, cols=N_COLS, reps=args.reps),
                              {label: dict(seconds=[r["seconds"] for r in rs], checksum=rs[0]["checksum"],
                                           K00=rs[0]["K00"], d=rs[0]["d"], sparse=rs[0]["sparse"],
                                           shape=rs[0]["shape"]) for label, rs in cell.items()})
                    print(name, threads, {k: round(statistics.median(x["seconds"] for x in v) * 1e3, 1)
                                          for k, v in cell.items()}, flush=True)
    finally:
        for p in procs.values():
            p.stdin.close()
            p.wait()
    render(store, list(impls), args)
    return 0


def render(store: Store, labels: list[str], args) -> None:
    base = next((label for label in labels if label.startswith("ours@")), None)
    headers = ["data set", "d", "storage", "threads"] + [f"{label} (ms)" for label in labels]
    headers += ["sklearn / ours"] + ([f"{base} / ours"] if base else []) + ["max rel. diff vs sklearn"]
    rows = []
    for key, entry in store.entries.items():
        res = entry["result"]
        if not all(label in res for label in labels):
            continue
        name, threads = key.split("/")
        med = {label: statistics.median(res[label]["seconds"]) * 1e3 for label in labels}
        ours = res["ours"]
        rel = abs(ours["checksum"] - res["scikit-learn"]["checksum"]) / abs(res["scikit-learn"]["checksum"])
        rows.append([name, ours["d"], "CSR" if ours["sparse"] else "dense", threads]
                    + [_harness.fmt(med[label], ".1f") for label in labels]
                    + [_harness.fmt(med["scikit-learn"] / med["ours"], ".2f")]
                    + ([_harness.fmt(med[base] / med["ours"], ".2f")] if base else [])
                    + [f"{rel:.1e} (sums)"])
    body = [f"K(A, B), rbf, gamma = 'scale', A = {N_ROWS} test rows, B = the first {N_COLS:,} training "
            f"rows; median over {args.runs} interleaved measurements of the median of {args.reps} calls. "
            "Ratios above 1: ours is faster.", ""]
    body += _harness.md_table(headers, rows)
    store.write_md("Kernel blocks K(A, B)", body, complete=True)


if __name__ == "__main__":
    sys.exit(main())
