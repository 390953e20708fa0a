"""Large C: sparsekernel.SVC against scikit-learn (LIBSVM) and scikit-learn-intelex (oneDAL) at
C = 1e1 ... 1e5 -- SMO steps, fit time, and the quality of the solutions in float64.

At large C most multipliers sit strictly inside [0, C], the dual is badly conditioned and SMO needs
many more steps; this benchmark checks that sparsekernel stays as frugal as LIBSVM in steps, faster
than both peers in time, and as accurate (dual objective and KKT gap recomputed here in float64,
independently of what each library reports).

Setup, per set and C (kernel rbf, gamma = the value of 'scale' computed once per set on the rows
used -- ``smooth8``: gamma = 1/8 --, tol 1e-3, cache 200 MB):

- the benchmark process pins itself to ``--cores`` (``os.sched_setaffinity``, before numpy or any
  library is imported); every fit runs in one worker process it starts (``multiprocessing`` spawn,
  so the worker inherits the pinning and imports the libraries after it): sparsekernel.SVC
  (n_jobs = the number of cores), sklearn.svm.SVC and sklearnex.svm.SVC side by side in that one
  process, interleaved (ours, LIBSVM, oneDAL, ours, ...).  The worker is there for the time cap:
  a fit still running after ``--cap`` seconds is ended by killing the worker (a fresh one is started
  for the next fit) and reported as "> cap".  sparsekernel also gets ``time_limit=cap`` (it then
  stops by itself with ``converged_ = False``, its solution is still evaluated; reported as capped).
  A system that ran past the cap at one C of a set is not fitted at the larger C of that set (reported
  as capped there; ``--retry-capped`` fits it anyway): this bounds the run's time.
- Steps: ours ``n_iter_`` (pair steps; the batched route counts its inner pair steps), LIBSVM's
  ``n_iter_``; oneDAL's ``n_iter_`` counts its own (outer) iterations and is listed apart, not
  compared.
- Time: median of the interleaved fits; a system is refitted (up to ``--repeats`` times for ours,
  ``--peer-repeats`` for the peers) only while its fits take under ``--repeat-seconds`` (long fits
  vary little; this keeps the run inside its budget).
- Dual objective, maximisation form D(a) = e'a - 1/2 a'Qa (larger is better; = minus the
  minimisation form f(a) = 1/2 a'Qa - e'a the libraries minimise), from each fit's ``dual_coef_``
  (= y_i a_i) and ``support_`` with a float64 rbf kernel evaluated here block-wise (``--block`` rows
  of K(X, X_SV) at a time, never n x n).  Relative difference (D_ours - D_LIBSVM) / |D_LIBSVM|;
  bar: >= -1e-6 (ours as good as LIBSVM's or better).
- KKT gap in float64: grad = Q a - e over all training rows (from the same kernel blocks),
  I_up = {y=+1, a<C} u {y=-1, a>0}, I_low = {y=+1, a>0} u {y=-1, a<C} (a counts as at C when
  a >= C (1 - 1e-9)), gap = max_{I_up} -y grad - min_{I_low} -y grad (LIBSVM's stopping quantity);
  bar: ours <= max(10 tol, 2 x LIBSVM's).
- Steps bar: ours / LIBSVM <= 1.2; time bar: ours / the faster peer <= 0.5; ``converged_`` of ours.

Sets: a9a, w8a, magic, usps (digit 0 vs the rest) from ../shared/data via ``_datasets`` (missing ones
are skipped; ijcnn1 is not in the data directory), each a seeded random subset of ``--max-train``
training rows; and two generated sets: ``smooth8`` (8 features uniform in [-1, 1], a smooth
nonlinear boundary, 5 % of the labels flipped, gamma = 1/8) and ``classification``
(sparsekernel.datasets' make_classification: 20 features, 10 informative, 5 % flipped), both of
``--n-generated`` rows before the same ``--max-train`` cap.

Writes benchmarks/results/large_c.md / .json (``--quick``: large_c_quick.*, git-ignored).
Restartable: every (set, C, system) result is stored as soon as its cell is done and a rerun skips
the ones stored with the same settings (``--force`` redoes them).

Full run (the machine quiet; about 25-40 minutes on 2 cores with the defaults: 8,000 rows, cap 120 s)::

    python benchmarks/bench_large_c.py                    # cores 0,1
Smoke test (about a minute)::

    python benchmarks/bench_large_c.py --quick
"""

from __future__ import annotations

# Only the standard library at module level: main() pins the process before numpy and the
# libraries are imported, and the spawned worker re-imports this module.
import argparse
import gc
import math
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
import _harness  # noqa: E402  (standard library only)

REAL_SETS = ("a9a", "w8a", "magic", "usps")
GENERATED_SETS = ("smooth8", "classification")
SETS = REAL_SETS + GENERATED_SETS
FIXED_GAMMA = {"smooth8": 1.0 / 8.0}
C_VALUES = (1e1, 1e2, 1e3, 1e4, 1e5)
SYSTEMS = ("sparsekernel", "sklearn", "intelex")
LABELS = {"sparsekernel": "ours", "sklearn": "LIBSVM", "intelex": "oneDAL"}
SEED = 0

DEFAULT_MAX_TRAIN = 8000
DEFAULT_N_GENERATED = 8000
DEFAULT_CAP = 120.0             # seconds per fit
DEFAULT_REPEATS = 3
DEFAULT_PEER_REPEATS = 3
DEFAULT_REPEAT_SECONDS = 5.0    # refit a system only while its fits take under this
BLOCK = 1024                    # rows of K(X, X_SV) per block in the float64 evaluation
AT_BOUND_RTOL = 1e-9            # a >= C (1 - AT_BOUND_RTOL) counts as at the upper bound

BAR_STEPS = 1.2                 # ours / LIBSVM steps
BAR_TIME = 0.5                  # ours / faster peer time
BAR_DUAL = -1e-6                # (D_ours - D_LIBSVM) / |D_LIBSVM|
BAR_KKT_TOLS = 10.0             # ours <= max(BAR_KKT_TOLS tol, BAR_KKT_FACTOR x LIBSVM's)
BAR_KKT_FACTOR = 2.0

QUICK = dict(sets=["a9a", "smooth8"], C=[1e1, 1e3], max_train=1000, n_generated=1500, cap=10.0,
             repeats=2, peer_repeats=1)

# set after pinning (_import_after_pinning)
np = sp = _datasets = bench_csmo = bench_svc = bench_scaling = None


class Store(_harness.Store):
    prefix = "large_c"


# ======================================================================================== bars
def verdict(ok: bool | None) -> str:
    """The table's mark of one bar: pass, **FAIL**, or n/a."""
    return "n/a" if ok is None else ("pass" if ok else "**FAIL**")


def barred(text: str, ok: bool | None) -> str:
    return f"{text} {verdict(ok)}" if ok is not None else text


def tally(rows_ok: list[bool | None]) -> str:
    known = [x for x in rows_ok if x is not None]
    na = len(rows_ok) - len(known)
    return f"{sum(known)} of {len(known)} pass" + (f" ({na} n/a)" if na else "")


# ======================================================================================== imports
def _import_after_pinning() -> None:
    global np, sp, _datasets, bench_csmo, bench_svc, bench_scaling
    import numpy
    import scipy.sparse

    import _datasets as datasets_module
    import bench_csmo as csmo_module      # total_iter
    import bench_scaling as scaling_module  # make_svc, timed_fit, warm_up
    import bench_svc as svc_module        # scale_gamma, subsample_rows

    scaling_module._import_after_pinning()
    np, sp, _datasets, bench_csmo, bench_svc, bench_scaling = (numpy, scipy.sparse, datasets_module, csmo_module,
                                                               svc_module, scaling_module)


# ======================================================================================== worker
def _worker_main(conn, systems: list[str], threads: int) -> None:
    """The fitting process: receives data and fit requests, answers with the fitted arrays."""
    _import_after_pinning()
    bench_scaling.warm_up(systems, (threads,))
    data = {}
    conn.send(("ready", os.getpid()))
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg[0] == "stop":
            return
        if msg[0] == "data":
            _, X, y = msg
            data = {"sparsekernel": X, "peer": _datasets.as_int32_indices(X), "y": y}
            conn.send(("ok",))
            continue
        _, system, C, gamma, time_limit = msg
        model = bench_scaling.make_svc(system, C, gamma, n_jobs=threads)
        if system == "sparsekernel" and time_limit:
            model.set_params(time_limit=time_limit)
        X = data["sparsekernel" if system == "sparsekernel" else "peer"]
        try:
            seconds, route = bench_scaling.timed_fit(system, model, X, data["y"])
        except Exception as exc:
            conn.send({"error": f"fit failed: {exc!r}"})
            continue
        try:
            c = model.dual_coef_
            out = dict(seconds=seconds, route=route,
                       dual_coef=np.asarray(c.toarray() if sp.issparse(c) else c, dtype=np.float64).ravel(),
                       support=np.asarray(model.support_, dtype=np.int64),
                       n_iter_attr=bench_csmo.total_iter(model),
                       fit_status=getattr(model, "fit_status_", None))
            if system == "sparsekernel":
                st = model.solver_stats_[0]
                out.update(converged=bool(model.converged_), solver=getattr(model, "solver_", None),
                           reported_kkt=float(np.max(model.kkt_gap_)), reported_dual=float(model.dual_objective_[0]),
                           kernel_evals=st.get("kernel_evals"), n_threads=st.get("n_threads"))
        except Exception as exc:
            out = {"seconds": seconds, "error": f"reading the fitted model failed: {exc!r}"}
        del model
        gc.collect()
        conn.send(out)


class Worker:
    """One spawned fitting process; ``fit`` kills and replaces it when a fit outlasts its cap."""

    def __init__(self, systems, threads: int):
        import multiprocessing

        self.ctx = multiprocessing.get_context("spawn")
        self.systems, self.threads = list(systems), threads
        self.proc = self.conn = None
        self.data_key = self.data = None
        self.restarts = 0

    def _start(self) -> None:
        parent, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=_worker_main, args=(child, self.systems, self.threads), daemon=True)
        self.proc.start()
        child.close()
        self.conn = parent
        if not self.conn.poll(300) or self.conn.recv()[0] != "ready":
            raise RuntimeError("the fitting worker did not start")
        if self.data is not None:
            self.conn.send(("data", *self.data))
            self.conn.recv()

    def set_data(self, key: str, X, y) -> None:
        self.data_key, self.data = key, (X, y)
        if self.proc is None or not self.proc.is_alive():
            self._start()   # sends the data
            return
        self.conn.send(("data", X, y))
        self.conn.recv()

    def fit(self, system: str, C: float, gamma: float, cap: float | None) -> dict:
        if self.proc is None or not self.proc.is_alive():
            self._start()
        self.conn.send(("fit", system, C, gamma, cap if system == "sparsekernel" else None))
        # ours stops itself at time_limit = cap: give it a margin before the kill
        wait = None if not cap else (cap if system != "sparsekernel" else 1.2 * cap + 10.0)
        if wait is None or self.conn.poll(wait):
            try:
                return self.conn.recv()
            except EOFError:
                self.close()
                return {"error": "the fitting worker died (out of memory?)"}
        self.close()   # over the cap: end the fit with its process
        self.restarts += 1
        return {"capped": True}

    def close(self) -> None:
        if self.proc is not None:
            if self.proc.is_alive():
                try:
                    self.conn.send(("stop",))
                except (BrokenPipeError, OSError):
                    pass
                self.proc.join(0.1)
            if self.proc.is_alive():
                self.proc.kill()
            self.proc.join()
            self.conn.close()
        self.proc = self.conn = None


# ======================================================================================== data
def make_smooth8(n: int, seed: int = SEED, flip: float = 0.05):
    """8 features uniform in [-1, 1]; y = sign(f - median f) for a smooth nonlinear f of all eight
    (products, sines, a quadratic), then ``flip`` of the labels flipped (seeded)."""
    rng = np.random.RandomState(seed)
    X = rng.uniform(-1.0, 1.0, size=(n, 8))
    f = (np.sin(2.5 * X[:, 0]) + 1.5 * X[:, 1] * X[:, 2] + np.cos(2.0 * X[:, 3]) * X[:, 4]
         + X[:, 5] ** 2 - 0.8 * X[:, 6] * X[:, 7])
    y = np.where(f > np.median(f), 1.0, -1.0)
    flipped = rng.choice(n, int(round(flip * n)), replace=False)
    y[flipped] = -y[flipped]
    return X, y


def load_set(name: str, max_train: int, n_generated: int):
    """(X, y, n_full, note) of set ``name``, ``max_train`` seeded random rows; None if missing."""
    if name == "smooth8":
        X, y = make_smooth8(n_generated)
        note = f"generated: {n_generated} rows, 8 features uniform in [-1, 1], smooth boundary, 5 % flipped"
    elif name == "classification":
        from sparsekernel.datasets import load_data

        X, y, _ = load_data(f"classification:{n_generated}")
        X = np.ascontiguousarray(X, dtype=np.float64)
        note = f"generated: make_classification({n_generated}, 20 features, 10 informative, 5 % flipped)"
    else:
        split = _datasets.load(name)
        if split is None:
            return None
        X, y = split[0], split[1]
        note = "../shared/data" + (" (digit 0 vs the rest)" if name == "usps" else "")
    n_full = X.shape[0]
    X, y = bench_svc.subsample_rows(X, np.asarray(y, dtype=np.float64), max_train, seed=SEED)
    y = np.where(y > 0, 1.0, -1.0)
    return X, y, n_full, note


# ======================================================================================== float64 checks
def float64_checks(X, y, gamma: float, C: float, dual_coef, support) -> dict:
    """Dual objective (maximisation form) and KKT gap of a fit, from dual_coef_ = y_i a_i and
    support_, with a float64 rbf kernel evaluated block-wise over K(X, X_SV)."""
    from sklearn.metrics.pairwise import rbf_kernel

    n = X.shape[0]
    c = np.asarray(dual_coef, dtype=np.float64)
    sv = np.asarray(support, dtype=np.int64)
    # the sign convention: c = s y a with s = +1 for every library here (checked, not assumed)
    agree = np.sign(c) * y[sv]
    s = 1.0 if np.sum(agree > 0) >= np.sum(agree < 0) else -1.0
    sign_violations = int(np.sum(agree * s < 0))
    alpha = np.zeros(n)
    alpha[sv] = np.abs(c)
    Xs = X[sv]
    Kc = np.empty(n)                     # (K(X, X_SV) c)_i
    for i in range(0, n, BLOCK):
        Kc[i:i + BLOCK] = rbf_kernel(X[i:i + BLOCK], Xs, gamma=gamma) @ c
    quad = float(c @ Kc[sv])             # c'Kc = a'Qa
    dual_max = float(np.sum(alpha)) - 0.5 * quad
    grad = s * y * Kc - 1.0              # (Q a)_i - 1 = y_i s (K c)_i - 1
    minus_yg = -y * grad
    at_upper = alpha >= C * (1.0 - AT_BOUND_RTOL)
    at_lower = alpha <= 0.0
    up = ((y > 0) & ~at_upper) | ((y < 0) & ~at_lower)
    low = ((y > 0) & ~at_lower) | ((y < 0) & ~at_upper)
    gap = float(np.max(minus_yg[up]) - np.min(minus_yg[low])) if up.any() and low.any() else 0.0
    return dict(dual=dual_max, kkt=gap, n_sv=int(len(sv)), n_bound=int(np.sum(at_upper)),
                max_alpha_over_C=float(np.max(alpha) / C) if len(sv) else 0.0,
                equality=float(abs(np.sum(c)) / max(np.sum(np.abs(c)), 1e-300)), sign_violations=sign_violations)


# ======================================================================================== run
def cell_config(args, name: str, n: int, gamma: float, C: float) -> dict:
    return dict(n_train=n, max_train=args.max_train, n_generated=args.n_generated, gamma=gamma, C=C,
                tol=bench_scaling.TOL, cache_size=bench_scaling.CACHE_SIZE, cap=args.cap, repeats=args.repeats,
                peer_repeats=args.peer_repeats, repeat_seconds=args.repeat_seconds, retry_capped=args.retry_capped,
                cores=sorted(args.cores), quick=args.quick)


def key_of(name: str, C: float, system: str) -> str:
    return f"{name}|C={C:g}|{system}"


def run_cell(worker: Worker, systems, args, X, y, gamma: float, C: float,
             capped_before: dict[str, float]) -> dict[str, dict]:
    """Interleaved fits of every system at one (set, C); the float64 checks of each system's last fit.
    A system that ran past the cap at a smaller C of the set (``capped_before``) is not fitted again."""
    times = {s: [] for s in systems}
    last, state = {}, {s: None for s in systems}   # state: None (running), "capped", "error", "done"
    for s in systems:
        if s in capped_before and not args.retry_capped:
            state[s] = "capped"
    limit = {s: args.repeats if s == "sparsekernel" else args.peer_repeats for s in systems}
    for rep in range(max(limit.values())):
        for s in systems:
            if rep >= limit[s] or state[s] is not None:
                continue
            res = worker.fit(s, C, gamma, args.cap)
            if res.get("capped"):
                state[s] = "capped"
            elif res.get("error"):
                state[s] = "error"
                last[s] = res
            else:
                times[s].append(res["seconds"])
                last[s] = res
                # ours stopped by its time_limit counts as capped
                if s == "sparsekernel" and not res.get("converged", True) and args.cap \
                        and res["seconds"] >= 0.95 * args.cap:
                    state[s] = "capped"
                elif res["seconds"] >= args.repeat_seconds:
                    state[s] = "done"
    out = {}
    for s in systems:
        r = dict(system=s, times=times[s], capped=state[s] == "capped")
        if s in capped_before and not args.retry_capped:
            r["skipped_after_cap_at"] = capped_before[s]
        fit = last.get(s)
        if fit is not None:
            if fit.get("error"):
                r["error"] = fit["error"]
            else:
                r.update({k: v for k, v in fit.items() if k not in ("dual_coef", "support", "seconds")})
                try:
                    r.update(float64_checks(X, y, gamma, C, fit["dual_coef"], fit["support"]))
                except Exception as exc:
                    r["error"] = f"float64 evaluation failed: {exc!r}"
        out[s] = r
    return out


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        _harness.pin(args.cores)    # before numpy and the libraries start their thread pools
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    _import_after_pinning()
    if args.data_dir is not None:
        _datasets.set_data_dir(args.data_dir)
        os.environ["SPARSEKERNEL_DATA"] = str(args.data_dir)

    store = Store(None, args.quick, args.force)
    threads = len(args.cores)
    wanted = [s for s in SYSTEMS if s not in args.skip_systems]
    systems, notes = bench_scaling.available_systems(wanted)
    systems = [s for s in SYSTEMS if s in systems]
    print(f"large C: CPUs {sorted(os.sched_getaffinity(0))}; sets {args.sets}; C {args.C}; systems {systems}; "
          f"max_train {args.max_train}; cap {args.cap} s", flush=True)
    store.summary["settings"] = dict(sets=args.sets, C=args.C, max_train=args.max_train, cap=args.cap,
                                     n_generated=args.n_generated, threads=threads)
    set_info = store.summary.setdefault("sets", {})
    worker = Worker(systems, threads)
    t_start = time.perf_counter()
    try:
        for name in args.sets:
            loaded = load_set(name, args.max_train, args.n_generated)
            if loaded is None:
                notes.append(f"{name}: data files missing, skipped.")
                print(notes[-1], flush=True)
                continue
            X, y, n_full, note = loaded
            gamma = FIXED_GAMMA.get(name) or bench_svc.scale_gamma(X)
            set_info[name] = dict(n_train=int(X.shape[0]), n_full=int(n_full), d=int(X.shape[1]), gamma=gamma,
                                  storage="CSR" if sp.issparse(X) else "dense", note=note,
                                  positive_fraction=float(np.mean(y > 0)))
            data_sent = False
            capped_before: dict[str, float] = {}   # system -> the smallest C of this set it ran past the cap at
            for C in args.C:
                cfg = cell_config(args, name, X.shape[0], gamma, C)
                if all(store.done(key_of(name, C, s), cfg) for s in systems):
                    print(f"{name} C={C:g}: done", flush=True)
                else:
                    if not data_sent:
                        worker.set_data(name, X, y)
                        data_sent = True
                    t0 = time.perf_counter()
                    results = run_cell(worker, systems, args, X, y, gamma, C, capped_before)
                    for s, r in results.items():
                        store.put(key_of(name, C, s), cfg, dict(set=name, C=C, **r))
                    print(f"[{time.perf_counter() - t_start:7.1f} s] " + _harness.md_table(
                        MAIN_HEADERS, [main_row(store, name, C, args.cap)])[-1]
                        + f"  ({time.perf_counter() - t0:.1f} s)", flush=True)
                    render(store, args, notes, complete=False)
                for s in systems:
                    if (store.get(key_of(name, C, s), cfg) or {}).get("capped"):
                        capped_before.setdefault(s, C)
            del X, y
            gc.collect()
    finally:
        worker.close()
    if worker.restarts:
        notes.append(f"the fitting worker was restarted {worker.restarts} time(s) after capped fits.")
    render(store, args, notes, complete=True)
    print("\n".join(SUMMARY_LINES), flush=True)
    print(f"wrote {store.md_path} in {time.perf_counter() - t_start:.0f} s", flush=True)
    return 0


# ======================================================================================== tables
MAIN_HEADERS = ["set", "n", "C", "steps ours", "steps LIBSVM", f"ours / LIBSVM (<= {BAR_STEPS:g})", "s ours",
                "s LIBSVM", "s oneDAL", f"ours / faster peer (<= {BAR_TIME:g})", "D ours", "D LIBSVM",
                f"(D ours - D LIBSVM) / abs(D LIBSVM) (>= {BAR_DUAL:g})", "KKT gap ours", "KKT gap LIBSVM",
                f"KKT bar (<= max({BAR_KKT_TOLS:g} tol, {BAR_KKT_FACTOR:g} x LIBSVM))", "converged_"]
DETAIL_HEADERS = ["set", "C", "ours solver_", "nSV ours / LIBSVM / oneDAL", "at C ours / LIBSVM / oneDAL",
                  "oneDAL n_iter_", "D oneDAL rel. to LIBSVM", "KKT gap oneDAL", "ours reported kkt_gap_",
                  "ours kernel evals (M)", "abs(y'a) / sum a ours / LIBSVM", "max a / C ours"]
SUMMARY_LINES: list[str] = []


def _entries(store, name: str, C: float) -> dict[str, dict]:
    return {s: (store.entries.get(key_of(name, C, s)) or {}).get("result") or {} for s in SYSTEMS}


def _seconds(r: dict, cap) -> tuple[float | None, str]:
    """Median seconds (None when capped or failed) and the cell's text."""
    fmt = _harness.fmt
    if r.get("capped"):
        if r.get("skipped_after_cap_at") is not None:
            return None, f"> {cap:g} (capped at C={r['skipped_after_cap_at']:g})"
        return None, f"> {cap:g} (cap)" if cap else "capped"
    if r.get("error") or not r.get("times"):
        return None, "err" if r.get("error") else "-"
    t = statistics.median(r["times"])
    return t, fmt(t, ".3f") + (f" ({len(r['times'])})" if len(r["times"]) > 1 else "")


def bars(store, name: str, C: float, cap) -> dict:
    """The four bars of one (set, C): True / False / None (not decidable: a fit capped or missing)."""
    r = _entries(store, name, C)
    o, lib = r["sparsekernel"], r["sklearn"]
    out = {}
    if o.get("n_iter_attr") is None or not lib.get("n_iter_attr") or lib.get("capped"):
        out["steps"] = None                      # a fit missing, or LIBSVM ended at the cap
    elif o.get("capped"):                        # ours stopped at its time_limit: a lower bound on its steps
        out["steps"] = False if o["n_iter_attr"] / lib["n_iter_attr"] > BAR_STEPS else None
    else:
        out["steps"] = o["n_iter_attr"] / lib["n_iter_attr"] <= BAR_STEPS
    t_o, _ = _seconds(o, cap)
    peers = {s: _seconds(r[s], cap)[0] for s in ("sklearn", "intelex")}
    done = [t for t in peers.values() if t is not None]
    capped_peers = [s for s in ("sklearn", "intelex") if r[s].get("capped")]
    if t_o is None:
        out["time"] = False if o.get("capped") and done else None
    elif done:
        out["time"] = t_o / min(done) <= BAR_TIME
    elif capped_peers and cap:
        out["time"] = True if t_o / cap <= BAR_TIME else None   # both peers over the cap: a bound
    else:
        out["time"] = None
    out["dual"] = (None if "dual" not in o or "dual" not in lib or lib.get("capped")
                   else (o["dual"] - lib["dual"]) / max(abs(lib["dual"]), 1e-300) >= BAR_DUAL)
    tol = bench_scaling.TOL
    if "kkt" in o and not o.get("capped"):      # ours stopped at the cap: its gap is listed, not judged
        ref = lib.get("kkt") if "kkt" in lib and not lib.get("capped") else None
        out["kkt"] = o["kkt"] <= max(BAR_KKT_TOLS * tol, BAR_KKT_FACTOR * ref if ref is not None else 0.0)
    else:
        out["kkt"] = None
    return out


def main_row(store, name: str, C: float, cap) -> list[str]:
    fmt = _harness.fmt
    r = _entries(store, name, C)
    o, lib, ilx = r["sparsekernel"], r["sklearn"], r["intelex"]
    b = bars(store, name, C, cap)
    n = store.summary.get("sets", {}).get(name, {}).get("n_train")
    t_o, s_o = _seconds(o, cap)
    t_l, s_l = _seconds(lib, cap)
    t_i, s_i = _seconds(ilx, cap)
    done = [t for t in (t_l, t_i) if t is not None]
    if t_o is not None and done:
        time_text = fmt(t_o / min(done), ".2f")
    elif t_o is not None and cap and (lib.get("capped") or ilx.get("capped")):
        time_text = f"< {t_o / cap:.2f}"
    else:
        time_text = "-"

    def steps(x):
        if x.get("capped") and x.get("n_iter_attr") is None:
            return "capped"
        return fmt(x.get("n_iter_attr"), ",d") + (" (capped)" if x.get("capped") else "")

    step_ratio = (o["n_iter_attr"] / lib["n_iter_attr"] if o.get("n_iter_attr") and lib.get("n_iter_attr")
                  else None)
    dual_rel = (None if "dual" not in o or "dual" not in lib
                else (o["dual"] - lib["dual"]) / max(abs(lib["dual"]), 1e-300))
    conv = "-" if "converged" not in o else ("yes" if o["converged"] else "**no**")
    return [name, fmt(n, "d"), f"{C:g}", steps(o), steps(lib), barred(fmt(step_ratio, ".3f"), b["steps"]),
            s_o, s_l, s_i, barred(time_text, b["time"]), fmt(o.get("dual"), ".10g"), fmt(lib.get("dual"), ".10g"),
            barred(fmt(dual_rel, ".2e"), b["dual"]), fmt(o.get("kkt"), ".2e"), fmt(lib.get("kkt"), ".2e"),
            verdict(b["kkt"]), conv]


def detail_row(store, name: str, C: float) -> list[str]:
    fmt = _harness.fmt
    r = _entries(store, name, C)
    o, lib, ilx = r["sparsekernel"], r["sklearn"], r["intelex"]
    ilx_rel = (None if "dual" not in ilx or "dual" not in lib
               else (ilx["dual"] - lib["dual"]) / max(abs(lib["dual"]), 1e-300))
    kev = o.get("kernel_evals")
    return [name, f"{C:g}", str(o.get("solver") or "-"),
            " / ".join(fmt(x.get("n_sv"), "d") for x in (o, lib, ilx)),
            " / ".join(fmt(x.get("n_bound"), "d") for x in (o, lib, ilx)),
            fmt(ilx.get("n_iter_attr"), "d"), fmt(ilx_rel, ".2e"), fmt(ilx.get("kkt"), ".2e"),
            fmt(o.get("reported_kkt"), ".2e"), fmt(None if kev is None else kev / 1e6, ".1f"),
            f"{fmt(o.get('equality'), '.1e')} / {fmt(lib.get('equality'), '.1e')}",
            fmt(o.get("max_alpha_over_C"), ".6f")]


def render(store, args, notes, complete: bool) -> None:
    fmt = _harness.fmt
    sets = store.summary.get("sets", {})
    # every stored cell (a run with other --sets or --C keeps the earlier ones), in the order of SETS and C
    stored = {(e["result"].get("set"), float(e["result"].get("C"))) for e in store.entries.values()}
    pairs = sorted(stored, key=lambda p: (SETS.index(p[0]) if p[0] in SETS else len(SETS), p[1]))
    set_rows = [[n, fmt(i.get("n_train"), ",d"), fmt(i.get("n_full"), ",d"), i.get("d"), i.get("storage"),
                 fmt(i.get("gamma"), ".4g"), fmt(i.get("positive_fraction"), ".3f"), i.get("note")]
                for n, i in sorted(sets.items(), key=lambda item: SETS.index(item[0]))]
    cap = args.cap
    body = [
        f"sparsekernel.SVC (n_jobs={len(args.cores)}), sklearn.svm.SVC (LIBSVM, one thread) and sklearnex.svm.SVC "
        f"(oneDAL, its default threads), the process pinned to CPUs {sorted(args.cores)}; every fit in one spawned "
        f"worker process (interleaved: ours, LIBSVM, oneDAL, ours, ...), killed and restarted when a fit runs "
        f"past the cap of {fmt(cap, 'g') if cap else 'none'} s (ours gets time_limit = cap and stops by itself); "
        + ("a system past the cap at one C is fitted at the larger C of the set again.  " if args.retry_capped else
           "a system past the cap at one C is not fitted at the larger C of the set (\"capped at C=...\").  ")
        + f"Kernel rbf, gamma = the value of 'scale' computed once per set on the rows used (smooth8: 1/8), tol "
        f"{bench_scaling.TOL:g}, cache {bench_scaling.CACHE_SIZE} MB.  Training rows: a seeded random subset of at "
        f"most {args.max_train:,} rows per set (`--max-train`; column n), the generated sets from "
        f"{args.n_generated:,} rows.",
        "",
        "- steps: `n_iter_` (ours: pair steps; LIBSVM: its iterations = pair steps).  Bar: ours / LIBSVM <= "
        f"{BAR_STEPS:g}.",
        "- s: median wall-clock `fit` seconds over the interleaved fits (their number in parentheses when more "
        f"than one; a system is refitted, up to {args.repeats} times for ours and {args.peer_repeats} for each "
        f"peer, only while its fits take under {args.repeat_seconds:g} s).  Bar: ours / the faster peer <= "
        f"{BAR_TIME:g} (\"< x\" = an upper bound when a peer ran past the cap).",
        "- D = e'a - 1/2 a'Qa, the dual objective in its **maximisation form** (larger is better; the libraries "
        "minimise f = -D), recomputed in float64 from each fit's `dual_coef_` (= y_i a_i) and `support_` with "
        f"an rbf kernel evaluated here in float64 (K(X, X_SV) in blocks of {BLOCK} rows).  Bar: (D ours - "
        f"D LIBSVM) / abs(D LIBSVM) >= {BAR_DUAL:g}, i.e. ours as good or better.",
        "- KKT gap: max over I_up of -y grad minus min over I_low of -y grad, grad = Q a - e over all training "
        "rows in float64, I_up = {y=+1, a<C} u {y=-1, a>0}, I_low = {y=+1, a>0} u {y=-1, a<C} (a counts as "
        f"at C when a >= C (1 - {AT_BOUND_RTOL:g})).  Bar: ours <= max({BAR_KKT_TOLS:g} tol, "
        f"{BAR_KKT_FACTOR:g} x LIBSVM's) (10 tol alone when LIBSVM ran past the cap; n/a when ours stopped at "
        "the cap).  Each library stops on its own running gradient (LIBSVM's kernel cache holds float32 values), "
        "so its float64 gap can exceed tol; `kkt_gap_` in the details is ours as our solver reported it.",
        "- n/a: a bar that cannot be decided (a fit past the cap, or missing).",
        "",
        "## Sets", "",
        *_harness.md_table(["set", "n (rows used)", "rows available", "d", "storage", "gamma", "+1 fraction",
                            "source"], set_rows),
        "",
        "## Steps, time, dual objective and KKT gap", "",
        *_harness.md_table(MAIN_HEADERS, [main_row(store, n, C, cap) for n, C in pairs]),
        "",
        "## Details", "",
        "nSV and multipliers at C of each fit; oneDAL's own `n_iter_` (not pair steps), its dual and KKT gap "
        "evaluated as above; ours `kkt_gap_` as the solver reports it; abs(y'a) / sum a = the equality "
        "constraint's residual (relative).",
        "",
        *_harness.md_table(DETAIL_HEADERS, [detail_row(store, n, C) for n, C in pairs]),
    ]
    all_bars = {(n, C): bars(store, n, C, cap) for n, C in pairs}
    SUMMARY_LINES.clear()
    SUMMARY_LINES.extend(["## Summary", ""])
    for key, label in (("steps", f"steps ours / LIBSVM <= {BAR_STEPS:g}"),
                       ("time", f"time ours / faster peer <= {BAR_TIME:g}"),
                       ("dual", f"dual objective ours >= LIBSVM's {BAR_DUAL:+g} relative"),
                       ("kkt", f"KKT gap ours <= max({BAR_KKT_TOLS:g} tol, {BAR_KKT_FACTOR:g} x LIBSVM's)")):
        fails = [f"{n} C={C:g}" for (n, C), b in all_bars.items() if b[key] is False]
        SUMMARY_LINES.append(f"- {label}: {tally([b[key] for b in all_bars.values()])}"
                             + (f"; fails: {', '.join(fails)}" if fails else ""))
    conv = [_entries(store, n, C)["sparsekernel"].get("converged") for n, C in pairs]
    unconverged = [f"{n} C={C:g}" for (n, C), c in zip(pairs, conv, strict=True) if c is False]
    known = [c for c in conv if c is not None]
    SUMMARY_LINES.append(f"- converged_ of ours: True in {sum(known)} of {len(known)} fitted cells"
                         + (f"; False: {', '.join(unconverged)}" if unconverged else ""))
    capped = [f"{n} C={C:g} {LABELS[s]}" for n, C in pairs for s, r in _entries(store, n, C).items()
              if r.get("capped") and r.get("skipped_after_cap_at") is None]
    skipped = [f"{n} C={C:g} {LABELS[s]}" for n, C in pairs for s, r in _entries(store, n, C).items()
               if r.get("skipped_after_cap_at") is not None]
    SUMMARY_LINES.append(f"- fits past the cap: {', '.join(capped) if capped else 'none'}")
    if skipped:
        SUMMARY_LINES.append(f"- not fitted (past the cap at a smaller C of the set): {', '.join(skipped)}")
    errors = [f"{e['result'].get('set')} C={e['result'].get('C'):g} {e['result'].get('system')}: "
              f"{e['result']['error']}" for e in store.entries.values() if e["result"].get("error")]
    errors += [f"{e['result'].get('set')} C={e['result'].get('C'):g}: sklearnex route {e['result']['route']}"
               for e in store.entries.values() if e["result"].get("route") not in (None, "oneDAL")]
    errors += [f"{e['result'].get('set')} C={e['result'].get('C'):g} {e['result'].get('system')}: "
               f"{e['result']['sign_violations']} support vectors whose dual_coef_ sign disagrees with y (the "
               f"checks take a = abs(dual_coef_))"
               for e in store.entries.values() if e["result"].get("sign_violations")]
    body += ["", *SUMMARY_LINES]
    if notes or errors:
        body += ["", "Notes:", "", *[f"- {x}" for x in notes + errors]]
    store.write_md("Large C: sparsekernel.SVC vs LIBSVM vs oneDAL", body, complete)


# ======================================================================================== arguments
def parse_args(argv=None):
    csv_list = _harness.csv_list
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cores", type=_harness.parse_cores, default="0,1",
                   help="CPU ids the process is pinned to (default 0,1)")
    p.add_argument("--sets", type=csv_list(str, SETS), default=None, help=f"default: {','.join(SETS)}")
    p.add_argument("--C", type=csv_list(float), default=None,
                   help=f"C values (default {','.join(f'{c:g}' for c in C_VALUES)})")
    p.add_argument("--max-train", type=int, default=None,
                   help=f"training rows per set, a seeded random subset (default {DEFAULT_MAX_TRAIN})")
    p.add_argument("--n-generated", type=int, default=None,
                   help=f"rows generated for smooth8 and classification (default {DEFAULT_N_GENERATED})")
    p.add_argument("--cap", type=float, default=None,
                   help=f"seconds per fit before it is ended and reported as capped (default {DEFAULT_CAP:g}; "
                        "0: no cap)")
    p.add_argument("--repeats", type=int, default=None, help=f"fits of ours per cell (default {DEFAULT_REPEATS})")
    p.add_argument("--peer-repeats", type=int, default=None,
                   help=f"fits of each peer per cell (default {DEFAULT_PEER_REPEATS})")
    p.add_argument("--repeat-seconds", type=float, default=DEFAULT_REPEAT_SECONDS,
                   help="refit a system only while its fits take under this (default %(default)g s)")
    p.add_argument("--retry-capped", action="store_true",
                   help="fit a system at every C even after it ran past the cap at a smaller C of the set "
                        "(default: not refitted, reported as capped)")
    p.add_argument("--skip-systems", type=csv_list(str, SYSTEMS), default=[], help="of sklearn,intelex")
    _harness.add_store_options(p, "smoke test (large_c_quick.*): a9a and smooth8, C 10 and 1000, 1000 rows, cap 10 s")
    args = p.parse_args(argv)
    defaults = dict(sets=list(SETS), C=list(C_VALUES), max_train=DEFAULT_MAX_TRAIN, n_generated=DEFAULT_N_GENERATED,
                    cap=DEFAULT_CAP, repeats=DEFAULT_REPEATS, peer_repeats=DEFAULT_PEER_REPEATS)
    for k, v in defaults.items():
        if getattr(args, k) is None:
            setattr(args, k, QUICK.get(k, v) if args.quick else v)
    args.C = sorted(args.C)
    if "sparsekernel" in args.skip_systems:
        p.error("sparsekernel cannot be skipped")
    if args.cap is not None and args.cap <= 0:
        args.cap = None
    if min(args.repeats, args.peer_repeats) < 1 or not math.isfinite(args.repeat_seconds):
        p.error("--repeats and --peer-repeats must be >= 1")
    return args


if __name__ == "__main__":
    sys.exit(main())
