"""NSSVC on Dask (issue 23): NSSVM Example 4.1 generated chunk by chunk on the workers of a
LocalCluster (2 worker processes, 1 thread each, on this 2-core machine), fitted where it lives.

For each m (default 1e7, 1e8, 1e9; float32 X, int8 labels, 16 chunks):

- the distributed fit (``NSSVC().fit(dask_X, dask_y)``): wall time, Newton iterations, round trips,
  the time the client waited in them, and the client's peak RSS growth during the fit (VmHWM reset
  by /proc/self/clear_refs) against the data's bytes;
- where it fits in memory (m <= 1e8), the in-memory fit of the same rows in a subprocess
  (``make_nssvm_gaussians(m, seed, block_size=chunk)``, 2 threads): its time, and whether the two
  fits are identical (alpha on its support, b, the history) — by a digest of the fitted arrays;
- per-iteration overhead = (distributed - in-memory) / (iterations + 1), and the round trip of an
  empty task per block (the floor of that overhead).

Kernel scaling (``--part rbf``): NSSVC(kernel='rbf') on Example 4.1 at m = 1e6 (float64, 16
chunks) on a LocalCluster of 1 worker and of 2 workers (1 thread each), fits interleaved, medians
of 5 after a warm-up fit on each cluster; the in-memory fit (one thread) gives the digest the distributed fits must match. The compute
of a kernel fit is the blocks' kernel columns and margins, so it should scale with the workers.

A projection for m = 1e10 on 32 nodes (from the measured per-row cost of a pass and the round trip
at 16 blocks; stated assumptions) closes the report.

Usage::

    python benchmarks/bench_dask.py [--part linear|rbf|all] [--sizes 1e7,1e8,1e9] [--chunks 16]

Writes benchmarks/results/dask.md and dask.json (each part replaces its own entries: one per m of the
linear part, one for the rbf part; ``--render-only`` rewrites the markdown from the JSON).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

import _harness  # noqa: E402  (the results store, tables, peak RSS)
from _harness import md_table  # noqa: E402


def digest(model):
    parts = [model.dual_coef_, model.intercept_, np.asarray(model.support_, dtype=np.int64), model.n_iter_]
    parts += list(model.history_)
    return hashlib.sha1(b"".join(np.ascontiguousarray(p).tobytes() for p in parts)).hexdigest()[:16]


IN_MEMORY = """
import sys, time, json, numpy as np
sys.path.insert(0, {src!r})
from sparsekernel import NSSVC
from sparsekernel.datasets import make_nssvm_gaussians
sys.path.insert(0, {here!r})
from bench_dask import digest
X, y = make_nssvm_gaussians({m}, random_state=0, block_size={chunk}, dtype=np.float32)
y = y.astype(np.int8)
t0 = time.perf_counter()
model = NSSVC(random_state=0, n_jobs=2).fit(X, y)
print(json.dumps({{"seconds": time.perf_counter() - t0, "n_iter": int(model.n_iter_[0]), "digest": digest(model)}}))
"""


def in_memory(m, chunk):
    code = IN_MEMORY.format(src=str(HERE.parent / "src"), here=str(HERE), m=m, chunk=chunk)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if out.returncode:
        return {"error": out.stderr[-500:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def _noop(block):
    return 0


RBF = dict(kernel="rbf", gamma=1.0, s=400, random_state=0)


def _cluster(n_workers, memory_limit="11GB"):
    from distributed import Client, LocalCluster

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=None,
                               memory_limit=memory_limit)
        return cluster, Client(cluster)


def rbf_scaling(m, chunks, repeats):
    """Kernel NSSVC at m rows: 1 worker against 2 workers, interleaved, and the in-memory digest."""
    import dask.array as da

    from sparsekernel import NSSVC
    from sparsekernel.datasets import make_nssvm_gaussians

    chunk = -(-m // chunks)
    X, y = make_nssvm_gaussians(m, random_state=0, block_size=chunk)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        ref = NSSVC(n_jobs=1, **RBF).fit(X, y)
        memory_s = time.perf_counter() - t0
    out = {"m": m, "chunks": chunks, "params": {k: v for k, v in RBF.items()}, "in_memory_s": memory_s,
           "n_iter": int(ref.n_iter_[0]), "kernel_columns": int(ref.n_kernel_columns_), "seconds": {"1": [], "2": []},
           "identical": {"1": [], "2": []}}
    clusters = {n: _cluster(n) for n in (1, 2)}
    try:
        for n, (_, client) in clusters.items():  # warm-up: the workers import sparsekernel (not timed)
            Xw, yw = make_nssvm_gaussians(4_000, random_state=1)
            with warnings.catch_warnings(), client.as_current():
                warnings.simplefilter("ignore")
                NSSVC(**{**RBF, "s": 50}).fit(da.from_array(Xw, chunks=(1_000, 2)), da.from_array(yw, chunks=(1_000,)))
        for rep in range(repeats):
            for n in (1, 2) if rep % 2 == 0 else (2, 1):
                _, client = clusters[n]
                Xd = da.from_array(X, chunks=(chunk, 2))
                yd = da.from_array(y, chunks=(chunk,))
                with warnings.catch_warnings(), client.as_current():  # not the last Client made (the default)
                    warnings.simplefilter("ignore")
                    t0 = time.perf_counter()
                    model = NSSVC(**RBF).fit(Xd, yd)
                    out["seconds"][str(n)].append(time.perf_counter() - t0)
                out["identical"][str(n)].append(digest(model) == digest(ref))
                out["round_trips"] = int(model.round_trips_)
                print(n, "worker(s):", round(out["seconds"][str(n)][-1], 2), "s", out["identical"][str(n)][-1],
                      flush=True)
    finally:
        for cluster, client in clusters.values():
            client.close()
            cluster.close()
    out["median_s"] = {n: float(np.median(v)) for n, v in out["seconds"].items()}
    out["speedup"] = out["median_s"]["1"] / out["median_s"]["2"]
    return out


class Store(_harness.Store):
    """``dask.*``: entries ``linear/m=<m>`` (one per size) and ``rbf``."""

    prefix = "dask"


def render(store: Store) -> None:
    linear = sorted((e["result"] for k, e in store.entries.items() if k.startswith("linear/")), key=lambda r: r["m"])
    rbf = store.entries.get("rbf")
    store.write_md("NSSVC on Dask: NSSVM Example 4.1 generated on the workers",
                   report(linear, rbf["result"] if rbf else None))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", choices=["linear", "rbf", "all"], default="all")
    ap.add_argument("--sizes", default="1e7,1e8,1e9")
    ap.add_argument("--chunks", type=int, default=16)
    ap.add_argument("--memory-max", type=float, default=1e8, help="largest m also fitted in memory")
    ap.add_argument("--rbf-m", type=float, default=1e6)
    ap.add_argument("--repeats", type=int, default=5)
    _harness.add_render_option(ap)
    args = ap.parse_args()
    if args.render_only:
        render(Store(register_run=False))
        return
    store = Store(force=True)
    if args.part in ("rbf", "all"):
        store.put("rbf", {"m": int(args.rbf_m), "chunks": args.chunks, "repeats": args.repeats},
                  rbf_scaling(int(args.rbf_m), args.chunks, args.repeats))
        render(store)
    if args.part in ("linear", "all"):
        linear(args, store)


def linear(args, store: Store):
    """The linear fits at the given sizes (see the module docstring)."""
    from sparsekernel import NSSVC
    from sparsekernel.dask import nssvm_gaussians

    cluster, client = _cluster(2)
    for m in (int(float(v)) for v in args.sizes.split(",")):
        chunk = -(-m // args.chunks)
        X, y = nssvm_gaussians(m, random_state=0, chunk_rows=chunk)
        data_bytes = m * (2 * 4 + 1)
        # the floor of a round trip: one empty task per block of data already on the workers
        # generated on the workers and kept there (not timed: the in-memory fit does not count its
        # generation either)
        from distributed import wait

        t0 = time.perf_counter()
        Xp, yp = client.persist([X, y])
        wait([Xp, yp])
        generate_s = time.perf_counter() - t0
        blocks = client.compute(list(Xp.to_delayed().ravel()))
        wait(blocks)  # (not gathered: at 1e9 rows that would bring the 8 GB to the client)
        trips = []
        for _ in range(5):
            t0 = time.perf_counter()
            client.gather([client.submit(_noop, b, pure=False) for b in blocks])
            trips.append(time.perf_counter() - t0)
        del blocks
        gc.collect()
        with _harness.PeakRSS(sample_seconds=None) as rss:  # VmHWM - VmRSS before
            t0 = time.perf_counter()
            model = NSSVC(random_state=0).fit(Xp, yp)
            seconds = time.perf_counter() - t0
        del Xp, yp
        row = {"m": m, "chunks": args.chunks, "generate_s": generate_s, "seconds": seconds,
               "round_trip_s": float(model.round_trip_seconds_), "n_iter": int(model.n_iter_[0]),
               "round_trips": int(model.round_trips_), "client_rss_before_mb": rss.baseline_mb,
               "client_peak_growth_mb": rss.growth_mb, "data_mb": data_bytes / 2**20,
               "empty_round_trip_s": float(np.median(trips)), "digest": digest(model),
               "accuracy": float(model.training_accuracy_[0])}
        if m <= args.memory_max:
            ref = in_memory(m, chunk)
            row["in_memory"] = ref
            if "seconds" in ref:
                row["identical"] = ref["digest"] == row["digest"]
                # a round trip against an in-memory iteration (the in-memory fit's time spread over
                # its passes: an upper bound on its per-pass time); the setup is reported apart
                row["overhead_per_iter_s"] = (row["round_trip_s"] - ref["seconds"]) / row["round_trips"]
        store.put(f"linear/m={m}", {"chunks": args.chunks, "memory_max": args.memory_max}, row)
        print(json.dumps(row), flush=True)
        render(store)
    client.close()
    cluster.close()


NODES, CORES = 32, 16  # the projected cluster


def projection(r, rows, m=10**10):
    """m rows on NODES x CORES cores, from the measured run ``r`` (2 cores): every round trip is
    taken as a pass over all rows (an upper bound: the first is only the initial rows), a pass's
    per-row cost per core as measured, one block per core with the scheduler's cost per task as
    measured for the empty round trip, and the class codes (one byte per sample) gathered to the
    client at 1 GB/s."""
    cores = NODES * CORES
    waited = r.get("round_trip_s", r["seconds"])  # the passes (the one-time setup is projected apart)
    per_row_core = max(0.0, waited - r["round_trips"] * r["empty_round_trip_s"]) * 2 / (r["round_trips"] * r["m"])
    setup_per_row_core = max(0.0, r["seconds"] - waited) * 2 / r["m"]
    per_task = r["empty_round_trip_s"] / r["chunks"]
    pass_s = per_row_core * m / cores
    trip_s = per_task * cores
    codes_s = m / 1e9
    setup_s = setup_per_row_core * m / cores
    total = r["round_trips"] * (pass_s + trip_s) + codes_s + setup_s
    return ["", f"## Projection: m = {m:.0e} on {NODES} nodes x {CORES} cores", "",
            f"From the m = {r['m']:.0e} run: {per_row_core * 1e9:.2f} s per 10^9 rows per core for a pass (its "
            f"{r['round_trips']} round trips taken as full passes), {per_task * 1e3:.1f} ms of scheduling per task "
            f"(the empty round trip over {r['chunks']} blocks), one block per core ({cores} tasks per round trip), the "
            "same number of Newton iterations (it does not grow with m here: "
            + ", ".join(f"{x['n_iter']} at {x['m']:.0e}" for x in rows) + "), and "
            "the class codes (one byte per sample) gathered to the client at 1 GB/s.", "",
            *md_table(["part", "seconds"], [
                [f"a pass over {m:.0e} rows on {cores} cores", f"{pass_s:.2f}"],
                [f"scheduling of a round trip ({cores} tasks)", f"{trip_s:.2f}"],
                [f"{r['round_trips']} round trips", f"{r['round_trips'] * (pass_s + trip_s):.1f}"],
                ["setup on the workers (validation, codes, blocks; per row per core as measured)", f"{setup_s:.1f}"],
                [f"class codes to the client ({m / 1e9:.0f} GB)", f"{codes_s:.0f}"],
                ["**fit**", f"**{total:.0f}**"]]), "",
            f"The client then holds {m / 1e9:.0f} GB of codes: at 1e10 rows it needs a large-memory node "
            "(the codes could stay on the workers: the solver reads them only to draw the initial working set "
            "and on T)."]


def report(rows: list[dict], rbf: dict | None) -> list[str]:
    """The body of dask.md: the linear rows (by m), the projection, the rbf part."""
    nan = float("nan")
    table = []
    for r in rows:
        mem = r.get("in_memory", {})
        table.append([f"{r['m']:.0e}", r["chunks"], f"{r.get('generate_s', nan):.1f}", f"{r['seconds']:.2f}",
                      f"{mem.get('seconds', nan):.2f}", r.get("identical", "n/a"), r["n_iter"], r["round_trips"],
                      f"{r.get('round_trip_s', nan):.2f}", f"{r['seconds'] - r.get('round_trip_s', nan):.2f}",
                      f"{r.get('overhead_per_iter_s', nan):.3f}", f"{r['empty_round_trip_s']:.3f}",
                      f"{r['client_rss_before_mb']:.0f}", f"{r['client_peak_growth_mb']:.0f}",
                      f"{r['client_peak_growth_mb'] / r['data_mb']:.3f}", f"{100 * r['accuracy']:.2f} %"])
    lines = ["LocalCluster: 2 worker processes x 1 thread on this 2-core machine; X float32 (m x 2) and int8 "
             "labels generated chunk by chunk on the workers (`sparsekernel.dask.nssvm_gaussians`), resident there "
             "(never streamed: the largest set is 9 GB of the machine's 24 GB), generated and persisted before the "
             "fit is timed; `NSSVC(random_state=0)`. In memory: the "
             "same rows in one process (a subprocess, 2 threads). `identical`: the fitted arrays (alpha on its "
             "support, b, support, iterations, history) have the same digest.", "",
             *md_table(["m", "chunks", "generated on the workers (s)", "dask fit (s)", "in-memory fit (s)", "identical",
                        "iterations", "round trips", "waited in round trips (s)", "setup (s)",
                        "overhead / round trip (s)", "empty round trip (s)", "client RSS before (MB)",
                        "client peak growth (MB)", "growth / data bytes", "training acc"], table)]
    if rows:
        lines += projection(max(rows, key=lambda r: r["m"]), rows)
    if rbf:
        med, runs = rbf["median_s"], rbf["seconds"]
        lines += ["", f"## Kernel NSSVC: 1 worker against 2 (m = {rbf['m']:.0e}, {rbf['chunks']} chunks)", "",
                  f"`NSSVC({', '.join(f'{k}={v!r}' for k, v in rbf['params'].items())})` on Example 4.1 (float64); "
                  f"{rbf['n_iter']} Newton iterations, {rbf['kernel_columns']} kernel columns computed, "
                  f"{rbf.get('round_trips', 'n/a')} round trips. Fits interleaved, medians of {len(runs['1'])}, after "
                  "a small warm-up fit per cluster (its workers import sparsekernel once).", "",
                  *md_table(["fit", "median (s)", "all runs (s)", "identical to in-memory"],
                            [["in memory, 1 thread", f"{rbf['in_memory_s']:.2f}", "", "(reference)"]]
                            + [[f"Dask, {n} worker{'s' if n == '2' else ''} x 1 thread", f"{med[n]:.2f}",
                                ", ".join(f"{v:.2f}" for v in runs[n]), all(rbf["identical"][n])] for n in ("1", "2")]),
                  "", f"Speed-up of 2 workers over 1: **{rbf['speedup']:.2f}x** (bar: >= 1.7x)."]
    return lines


if __name__ == "__main__":
    main()
