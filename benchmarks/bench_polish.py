"""Fewer SMO steps at large C (issue 34, item 5): a Newton polish on the free set, measured.

SMO's slow final phase at large C moves many free variables by small pair steps. A second-order
polish solves, once SMO is near the optimum, the equality-constrained problem on the free set F
(the bounded variables B held where they are):

    [Q_FF  y_F] [a_F]   [e_F - Q_FB a_B]
    [y_F'   0 ] [ b ] = [  - y_B' a_B  ]

and moves a_F toward that solution as far as the box allows (both points satisfy y'a = 0, so every
point of the segment does); the gradient follows from one kernel block K(X, X_F); SMO then finishes
from there to tol (a warm start with its gradient). Compared with one cold SMO solve to tol on the
same problem: SMO steps and wall time, the dual objective of both.

One training fold (80 %) of each set, 10,000 rows sampled, gamma = 'scale', C in {16, 64, 256};
the loose tolerance at which the polish runs: 100 tol. Each timing is the median of 3. This is a
prototype of the design in Python over the engine (``sparsekernel._engine``), not the library's
route: it tells whether the design is worth building into the engine.

Usage::

    python benchmarks/bench_polish.py [--sets a9a,magic,usps] [--Cs 16,64,256]

Writes benchmarks/results/polish.md and .json (one entry per set, kept between runs;
``--render-only`` rewrites the markdown from the JSON).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import scipy.linalg as la
from sklearn.model_selection import StratifiedKFold

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _datasets  # noqa: E402
import _harness  # noqa: E402  (the results store, tables)
import bench_svc  # noqa: E402  (scale_gamma, subsample_rows)

from sparsekernel._base import KernelEvaluator, core_matrix, engine_storage  # noqa: E402
from sparsekernel._engine import DualProblem, KernelSpec, SolverOptions, solve  # noqa: E402

MAX_FREE = 4000  # free variables beyond which the polish is not tried


def newton_polish(X, y, C, kernel, r):
    """The point on the segment from r.alpha toward the free-set Newton solution that the box
    allows, and its gradient. Returns (a, G, |F|, step)."""
    a, G = r.alpha.copy(), r.grad
    F = np.flatnonzero((a > 0) & (a < C))
    if len(F) > MAX_FREE:  # the dense solve would cost more than SMO's final phase
        return a, G, len(F), 0.0
    B = np.flatnonzero(~((a > 0) & (a < C)))
    ev = KernelEvaluator(kernel.name, kernel.gamma, kernel.coef0, kernel.degree, 1)
    XF = X[F]
    KF = ev(X, core_matrix(XF), XF)  # K(X, X_F): the block the gradient update needs as well
    QFF = (y[F, None] * y[None, F]) * KF[F]
    Qa_F = G[F] + 1.0  # G = Q a - e
    rhs_F = 1.0 - (Qa_F - QFF @ a[F])  # e_F - Q_FB a_B
    n = len(F)
    M = np.zeros((n + 1, n + 1))
    M[:n, :n] = QFF
    M[:n, n] = M[n, :n] = y[F]
    sol = la.solve(M, np.r_[rhs_F, -float(y[B] @ a[B])], assume_a="sym")
    target = sol[:n]
    d = target - a[F]
    # the largest t in [0, 1] keeping 0 <= a_F + t d <= C
    with np.errstate(divide="ignore", invalid="ignore"):
        t_hi = np.where(d > 0, (C - a[F]) / d, np.inf)
        t_lo = np.where(d < 0, -a[F] / d, np.inf)
    t = float(min(1.0, t_hi.min(initial=np.inf), t_lo.min(initial=np.inf)))
    step = t * d
    a[F] += step
    G_new = G + y * (KF @ (y[F] * step))
    return a, G_new, n, t


def run_case(X, y, C, gamma, tol=1e-3, loose=100.0):
    kernel = KernelSpec("rbf", gamma)
    Xe = engine_storage(X, "rbf")
    problem = DualProblem(y=y, p=np.full(len(y), -1.0), hi=np.full(len(y), float(C)))
    opts = SolverOptions(tol=tol, threads=1)

    def cold():
        return solve(Xe, kernel, problem, opts)

    def polished():
        r1 = solve(Xe, kernel, problem, SolverOptions(tol=loose * tol, threads=1))
        a, G, nF, t = newton_polish(X, y, C, kernel, r1)
        r2 = solve(Xe, kernel, problem, opts, a0=a, g0=G)
        return r1, r2, nF, t

    tc, tp = [], []
    for _ in range(3):  # interleaved
        t0 = time.perf_counter()
        rc = cold()
        tc.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        r1, r2, nF, t = polished()
        tp.append(time.perf_counter() - t0)
    return {"C": C, "cold_steps": int(rc.n_iter), "loose_steps": int(r1.n_iter), "final_steps": int(r2.n_iter),
            "free": nF, "step": t, "cold_s": statistics.median(tc), "polish_s": statistics.median(tp),
            "cold_obj": float(rc.obj), "polish_obj": float(r2.obj)}


class Store(_harness.Store):
    prefix = "polish"


def render(store: Store) -> None:
    rows = []
    for name, e in store.entries.items():
        for c in e["result"]["cases"]:
            total = c["loose_steps"] + c["final_steps"]
            rel = abs(c["polish_obj"] - c["cold_obj"]) / max(abs(c["cold_obj"]), 1e-300)
            rows.append([name, f"{c['C']:g}", c["cold_steps"], f"{c['loose_steps']} + {c['final_steps']}",
                         f"{total / c['cold_steps']:.2f}", c["free"], f"{c['step']:.2f}", f"{c['cold_s']:.2f}",
                         f"{c['polish_s']:.2f}", f"{c['polish_s'] / c['cold_s']:.2f}", f"{rel:.1e}"])
    body = ["One training fold (80 % of 10,000 sampled rows; a multiclass set: its first class against the "
            "rest), rbf, gamma = 'scale', tol = 1e-3, one thread. `cold`: SMO to tol. `polish`: SMO to 100 tol, the "
            "Newton step on the free set F (as far as the box allows: t), SMO to tol from there. Times: median "
            "of 3, interleaved.", "",
            *_harness.md_table(["set", "C", "cold steps", "polish: loose + final steps", "steps ratio", "F", "t",
                                "cold (s)", "polish (s)", "time ratio", "dual objective rel. diff"], rows)]
    store.write_md("A Newton polish on the free set against SMO's final phase (issue 34, item 5)", body)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", default="a9a,magic,usps")
    parser.add_argument("--Cs", default="16,64,256")
    _harness.add_render_option(parser)
    args = parser.parse_args(argv)
    if args.render_only:
        render(Store(register_run=False))
        return 0
    store = Store(force=True)
    for name in args.sets.split(","):
        data = _datasets.load(name)
        if data is None:
            print(f"{name}: data missing, skipped", flush=True)
            continue
        X, y = bench_svc.subsample_rows(data[0], data[1], 10000)
        X = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
        labels = np.unique(y)
        ypm = np.where(y == labels[0], 1.0, -1.0)  # a multiclass set: its first class against the rest
        train, _ = next(StratifiedKFold(5, shuffle=True, random_state=0).split(X, y))
        Xf, yf = np.ascontiguousarray(X[train]), ypm[train]
        gamma = bench_svc.scale_gamma(Xf)
        cases = []
        for C in (float(c) for c in args.Cs.split(",")):
            case = run_case(Xf, yf, C, gamma)
            cases.append(case)
            print(f"  {name} C={C:g}: steps {case['cold_steps']} -> {case['loose_steps']} + {case['final_steps']} "
                  f"(|F| {case['free']}, t {case['step']:.2f}); time {case['cold_s']:.2f} -> {case['polish_s']:.2f} s",
                  flush=True)
        store.put(name, {"Cs": args.Cs, "rows": 10000}, {"n_train": len(train), "gamma": gamma, "cases": cases})
    render(store)
    print(store.md_path.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
