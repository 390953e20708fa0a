"""Which solver route should SVC(solver='auto') take? The pair routes ('smo2', 'smo1') against the
batched two-level route ('batched', several working-set sizes q), on the real data sets of
bench_svc.py, with identical C, gamma='scale' (numeric), tol=1e-3 and cache_size=200.

Writes benchmarks/results/svc_routes.md: median fit time, pair steps, blocks, kernel entries
computed, final dual objective and test accuracy per route.

    python benchmarks/bench_routes.py [--datasets a9a,magic] [--threads 1] [--repeats 1]
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _datasets  # noqa: E402

from sparsekernel import SVC  # noqa: E402
from sparsekernel._base import resolve_gamma  # noqa: E402

ROUTES = [("smo2", {}), ("smo1", {}), ("batched", {"working_set_size": 64}),
          ("batched", {"working_set_size": 256}), ("batched", {"working_set_size": 1024})]


def route_name(solver, extra):
    return solver + (f" q={extra['working_set_size']}" if extra else "")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", default="a9a,w8a,magic,usps,skin,ringnorm")
    parser.add_argument("--C", type=float, default=1.0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "svc_routes.md"))
    args = parser.parse_args(argv)

    lines = [f"# SVC solver routes ({datetime.date.today()})", "",
             f"C={args.C}, gamma='scale' (numeric), tol=1e-3, cache_size=200 MB, n_jobs={args.threads}, "
             f"median of {args.repeats} fit(s). Command: `python benchmarks/bench_routes.py "
             f"{' '.join(argv if argv is not None else sys.argv[1:])}`", "",
             "| data | route | fit s | vs smo2 | pair steps | blocks | kernel entries (M) | dual objective | acc % |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name in args.datasets.split(","):
        split = _datasets.load(name)
        if split is None:
            lines.append(f"| {name} | (data missing, skipped) | | | | | | | |")
            continue
        X, y, Xt, yt = split[0], split[1], split[2], split[3]
        gamma = resolve_gamma("scale", X)
        base = None
        for solver, extra in ROUTES:
            times = []
            for _ in range(args.repeats):
                model = SVC(C=args.C, gamma=gamma, solver=solver, n_jobs=args.threads, **extra)
                t0 = time.perf_counter()
                model.fit(X, y)
                times.append(time.perf_counter() - t0)
            t = statistics.median(times)
            base = t if base is None else base
            st = model.solver_stats_[0]
            row = (f"| {name} | {route_name(solver, extra)} | {t:.3f} | {t / base:.2f} | {int(model.n_iter_.sum())} | "
                   f"{st['n_outer_iter']} | {model.n_kernel_evals_.sum() / 1e6:.0f} | {model.dual_objective_[0]:.4f} | "
                   f"{100 * np.mean(model.predict(Xt) == yt):.2f} |")
            print(row, flush=True)
            lines.append(row)
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
