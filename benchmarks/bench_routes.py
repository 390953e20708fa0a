"""Which solver route should SVC(solver='auto') take? The pair routes ('smo2', 'smo1') against the
batched two-level route ('batched', several working-set sizes q), on the real data sets of
bench_svc.py, with identical C, gamma='scale' (numeric), tol=1e-3 and cache_size=200.

Writes benchmarks/results/svc_routes.{md,json}: median fit time, pair steps, blocks, kernel entries
computed, final dual objective and test accuracy per route (``--render-only``: the markdown from
the JSON).

    python benchmarks/bench_routes.py [--datasets a9a,magic] [--threads 1] [--repeats 1]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _datasets  # noqa: E402
import _harness  # noqa: E402  (the results store, tables)

ROUTES = [("smo2", {}), ("smo1", {}), ("batched", {"working_set_size": 64}),
          ("batched", {"working_set_size": 256}), ("batched", {"working_set_size": 1024})]


class Store(_harness.Store):
    """``svc_routes.*``: one entry per data set and route."""

    prefix = "svc"


def route_name(solver, extra):
    return solver + (f" q={extra['working_set_size']}" if extra else "")


def render(store: Store) -> None:
    rows, base, config = [], {}, {}
    for key, e in store.entries.items():
        name, route = key.split("/")
        r, config = e["result"], e["config"]
        base.setdefault(name, r["seconds"])  # the first route of a set: smo2
        rows.append([name, route, f"{r['seconds']:.3f}", f"{r['seconds'] / base[name]:.2f}", r["n_iter"],
                     r["n_outer_iter"], f"{r['kernel_evals'] / 1e6:.0f}", f"{r['dual']:.4f}", f"{r['acc']:.2f}"])
    missing = store.summary.get("missing", [])
    body = [f"C={config.get('C')}, gamma='scale' (numeric), tol=1e-3, cache_size=200 MB, "
            f"n_jobs={config.get('threads')}, median of {config.get('repeats')} fit(s).", "",
            *_harness.md_table(["data", "route", "fit s", "vs smo2", "pair steps", "blocks", "kernel entries (M)",
                                "dual objective", "acc %"], rows)]
    if missing:
        body += ["", f"Data missing, skipped: {', '.join(missing)}."]
    store.write_md("SVC solver routes", body)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", default="a9a,w8a,magic,usps,skin,ringnorm")
    parser.add_argument("--C", type=float, default=1.0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=1)
    _harness.add_render_option(parser)
    args = parser.parse_args(argv)
    if args.render_only:
        render(Store("routes", register_run=False))
        return
    from sparsekernel import SVC
    from sparsekernel._base import resolve_gamma

    store = Store("routes", force=True)
    store.summary["missing"] = []
    config = {"C": args.C, "threads": args.threads, "repeats": args.repeats}
    for name in args.datasets.split(","):
        split = _datasets.load(name)
        if split is None:
            store.summary["missing"].append(name)
            continue
        X, y, Xt, yt = split[0], split[1], split[2], split[3]
        gamma = resolve_gamma("scale", X)
        for solver, extra in ROUTES:
            times = []
            for _ in range(args.repeats):
                model = SVC(C=args.C, gamma=gamma, solver=solver, n_jobs=args.threads, **extra)
                t0 = time.perf_counter()
                model.fit(X, y)
                times.append(time.perf_counter() - t0)
            result = {"seconds": statistics.median(times), "times": times, "n_iter": int(model.n_iter_.sum()),
                      "n_outer_iter": int(model.solver_stats_[0]["n_outer_iter"]),
                      "kernel_evals": float(model.n_kernel_evals_.sum()), "dual": float(model.dual_objective_[0]),
                      "acc": 100 * float(np.mean(model.predict(Xt) == yt))}
            store.put(f"{name}/{route_name(solver, extra)}", config, result)
            print(name, route_name(solver, extra), result, flush=True)
    render(store)
    print(f"wrote {store.md_path}")


if __name__ == "__main__":
    main()
