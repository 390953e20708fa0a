"""Per-fit overhead at small N: sparsekernel's SVM estimators and KernelLogisticRegression against
scikit-learn's on the small sets scikit-learn ships (iris 150 rows, wine 178, breast_cancer 569,
diabetes 442), raw and StandardScaler'd, at the estimators' defaults.

Every fit is timed alone (perf_counter around ``fit``) and split into the C++ solve (the time spent
in ``sparsekernel._core.solve``, wrapped here) and everything around it. The three systems of a
configuration -- sparsekernel with n_jobs=1, scikit-learn, sparsekernel with n_jobs=None (its
default: every thread the process may use) -- are interleaved fit by fit, in a rotating order, and
the table shows medians over all repeats.

``--baseline DIR`` times an earlier revision too (DIR holds a ``sparsekernel`` package: its Python
files and the built ``_core``), in a second worker process; the configurations alternate between
the two processes so that both see the same machine load:

    mkdir -p /tmp/sk-base && cp -r src/sparsekernel /tmp/sk-base/ && \
        cp "$(python -c 'import sparsekernel._core as c; print(c.__file__)')" /tmp/sk-base/sparsekernel/
    python benchmarks/bench_overhead.py --baseline /tmp/sk-base --baseline-rev <rev>

``--breakdown`` instead prints where a fit's microseconds go (inclusive time of the fit's stages,
median per fit) for every configuration, of this revision (and of the baseline with --baseline).

Writes benchmarks/results/overhead.{md,json} (``--breakdown``: overhead_breakdown.{md,json});
``--no-write`` only prints, ``--render-only`` rewrites the markdown from the JSON.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import _harness  # noqa: E402  (the results store, tables, environment)
from _harness import md_table  # noqa: E402
from _worker import LineWorker  # noqa: E402

SETS = ("iris", "wine", "breast_cancer", "diabetes")
CLASSIFIERS = ("SVC", "NuSVC", "OneClassSVM", "KernelLogisticRegression")
REGRESSORS = ("SVR", "NuSVR", "OneClassSVM")
SKLEARN = {"SVC": "SVC", "NuSVC": "NuSVC", "OneClassSVM": "OneClassSVM", "SVR": "SVR", "NuSVR": "NuSVR",
           "KernelLogisticRegression": None}  # scikit-learn has no kernel logistic regression
SYSTEMS = ("ours1", "sklearn", "ours")  # n_jobs=1, scikit-learn, n_jobs=None

# The worker: one process per revision of sparsekernel; reads one JSON command per line, answers one.
WORKER = r"""
import json, sys, time, warnings
import numpy as np
if sys.argv[1]:  # an earlier revision: its package first, whatever an editable install of this one says
    sys.meta_path[:] = [f for f in sys.meta_path if not type(f).__module__.startswith("_editable")]
    sys.path.insert(0, sys.argv[1])
import sparsekernel
from sparsekernel import _core
from sklearn import datasets, svm as sk_svm
from sklearn.preprocessing import StandardScaler
warnings.simplefilter("ignore")

# wall-clock and CPU seconds (of this thread: the whole work of a one-thread fit, whatever else the
# machine runs) inside the C++ solve
solve_time = [0.0, 0.0]
_solve = _core.solve
def timed_solve(**kw):
    t0, c0 = time.perf_counter(), time.thread_time()
    try:
        return _solve(**kw)
    finally:
        solve_time[0] += time.perf_counter() - t0
        solve_time[1] += time.thread_time() - c0
_core.solve = timed_solve

data = {}
def load(name, scaled):
    if (name, scaled) not in data:
        X, y = getattr(datasets, "load_" + name)(return_X_y=True)
        data[name, scaled] = (StandardScaler().fit_transform(X) if scaled else X, y)
    return data[name, scaled]

def make(system, est):
    if system == "sklearn":
        return getattr(sk_svm, est)()
    return getattr(sparsekernel, est)(n_jobs=1 if system == "ours1" else None)

def fit_once(system, est, X, y):  # (wall s, CPU s of this thread, solve wall s, solve CPU s, the model)
    model = make(system, est)
    solve_time[:] = [0.0, 0.0]
    t0, c0 = time.perf_counter(), time.thread_time()
    model.fit(X, None if est == "OneClassSVM" else y)
    c1, t1 = time.thread_time(), time.perf_counter()
    return t1 - t0, c1 - c0, solve_time[0], solve_time[1], model

# --breakdown: the inclusive time of a fit's stages (functions wrapped where this revision has them)
STAGES = [
    ("parameter checks", [("_base", "ConstrainedParamsMixin._check_params")]),
    ("n_jobs -> threads", [("svm", "n_threads"), ("klr", "n_threads")]),
    ("validate X, y (validate_data)", [("svm", "validate_data"), ("klr", "validate_data")]),
    ("class labels (check targets, unique)", [("svm", "check_classification_targets"),
                                             ("klr", "check_classification_targets"),
                                             ("svm", "class_labels"), ("klr", "class_labels")]),
    ("gamma='scale'", [("svm", "resolve_gamma"), ("klr", "resolve_gamma")]),
    ("C_i bounds", [("svm", "per_sample_bounds"), ("klr", "per_sample_bounds")]),
    ("warm-start lookup", [("_engine", "fit_warmth")]),
    ("progress hook (FitMonitor)", [("svm", "FitMonitor"), ("klr", "FitMonitor")]),
    ("engine storage (engine_storage)", [("_engine", "fit_storage")]),
    ("options and route", [("svm", "_BaseSMO._solver_options")]),
    ("KLR: box, start", [("klr", "_BaseKLR._box_bounds"), ("klr", "klr_problem")]),
    ("solve_problems (driver, all solves)", [("_engine", "solve_problems")]),
    ("  seam: _engine.solve", [("_engine", "solve")]),
    ("    C++ _core.solve", [("_core", "solve")]),
    ("  core_matrix", [("_engine", "core_matrix")]),
    ("store model", [("svm", "_BaseSVC._store_model"), ("svm", "_BaseSMO._store_expansion"),
                     ("klr", "_BaseKLR._store_model")]),
]
acc = {}
def wrap_stages():
    import importlib
    for label, targets in STAGES:
        for mod_name, qual in targets:
            mod = _core if mod_name == "_core" else importlib.import_module("sparsekernel." + mod_name)
            owner, _, attr = qual.rpartition(".")
            holder = getattr(mod, owner) if owner else mod
            fn = holder.__dict__.get(attr) if owner else getattr(mod, attr, None)
            if fn is None:
                continue
            def wrapper(*a, _fn=fn, _label=label, **kw):
                t0 = time.thread_time()
                try:
                    return _fn(*a, **kw)
                finally:
                    acc[_label] = acc.get(_label, 0.0) + time.thread_time() - t0
            setattr(holder, attr, wrapper)

print(json.dumps({"ready": sparsekernel.__file__}), flush=True)
for line in sys.stdin:
    cmd = json.loads(line)
    X, y = load(cmd["set"], cmd["scaled"])
    if cmd["op"] == "warm":
        for system in cmd["systems"]:
            for _ in range(3):
                fit_once(system, cmd["est"], X, y)
        print(json.dumps({}), flush=True)
    elif cmd["op"] == "fit":
        out = {}
        for system in cmd["systems"]:
            *t, model = fit_once(system, cmd["est"], X, y)
            out[system] = t + ([int(np.sum(model.n_iter_))] if system != "sklearn" else [])
        print(json.dumps(out), flush=True)
    else:  # breakdown
        if not acc:
            wrap_stages()
        per_fit = {}
        for _ in range(cmd["n"]):
            acc.clear()
            _, t, *_ = fit_once("ours1", cmd["est"], X, y)
            acc["fit"] = t
            for k, v in acc.items():
                per_fit.setdefault(k, []).append(v)
        print(json.dumps({k: float(np.median(v)) for k, v in per_fit.items()}), flush=True)
"""


class Worker(LineWorker):
    """A subprocess running WORKER on one revision of sparsekernel (site: its directory; None: this one)."""

    def __init__(self, site: str | None):
        super().__init__(WORKER, site or "")


def configurations(sets):
    for name in sets:
        for scaled in (False, True):
            for est in (REGRESSORS if name == "diabetes" else CLASSIFIERS):
                yield name, scaled, est


def ms(seconds) -> str:
    return "-" if seconds is None else f"{1e3 * seconds:.2f}"


def ratio(a, b) -> str:
    return "-" if a is None or b is None or b <= 0 else f"{a / b:.2f}"


def measure(workers: dict, sets, rounds: int, per_round: int) -> dict:
    """Interleaved fits: for every round and configuration, each worker (revision) in turn runs
    ``per_round`` fits of each system, the systems' order rotating from fit to fit."""
    configs = list(configurations(sets))
    times = {(w, c, s): [] for w in workers for c in configs for s in SYSTEMS}
    iters = {}
    for c in configs:
        name, scaled, est = c
        for w in workers.values():
            systems = [s for s in SYSTEMS if s != "sklearn" or SKLEARN[est]]
            w.ask(op="warm", set=name, scaled=scaled, est=est, systems=systems)
    for r in range(rounds):
        order = list(workers.items()) if r % 2 == 0 else list(workers.items())[::-1]
        for c in configs:
            name, scaled, est = c
            systems = [s for s in SYSTEMS if s != "sklearn" or SKLEARN[est]]
            for label, w in order:
                for k in range(per_round):
                    rot = systems[k % len(systems):] + systems[:k % len(systems)]
                    out = w.ask(op="fit", set=name, scaled=scaled, est=est, systems=rot)
                    for s, v in out.items():
                        times[label, c, s].append(v[:4])
                        if len(v) > 4:
                            iters[label, c, s] = v[4]
        print(f"round {r + 1}/{rounds} done", flush=True)
    result = {}
    for (label, c, s), vals in times.items():
        if vals:
            # wall and CPU (of the fitting thread) medians, total, solve and the rest
            result[label, c, s] = {"wall": statistics.median(v[0] for v in vals),
                                   "cpu": statistics.median(v[1] for v in vals),
                                   "solve_wall": statistics.median(v[2] for v in vals),
                                   "solve_cpu": statistics.median(v[3] for v in vals),
                                   "rest_cpu": statistics.median(v[1] - v[3] for v in vals),
                                   "n": len(vals), "n_iter": iters.get((label, c, s))}
    return result


def config_name(c) -> tuple[str, str, str]:
    name, scaled, est = c
    return name, "scaled" if scaled else "raw", est


def tables(result: dict, labels: list[str], sets) -> list[str]:
    lines = []
    configs = list(configurations(sets))
    get = lambda label, c, s, k: (result.get((label, c, s)) or {}).get(k)  # noqa: E731
    main = labels[-1]
    rows = []
    for c in configs:
        sk = get(main, c, "sklearn", "cpu")
        rows.append([*config_name(c), ms(get(main, c, "ours1", "cpu")), ms(get(main, c, "ours1", "solve_cpu")),
                     ms(get(main, c, "ours1", "rest_cpu")), ms(sk), ratio(get(main, c, "ours1", "cpu"), sk),
                     ms(get(main, c, "ours1", "wall")), ms(get(main, c, "sklearn", "wall")),
                     ms(get(main, c, "ours", "wall")), ms(get(main, c, "ours", "solve_wall")),
                     get(main, c, "ours1", "n_iter")])
    lines += [f"## {main}: sparsekernel at n_jobs=1 (CPU ms = C++ solve + the rest) against scikit-learn", "",
              *md_table(["set", "X", "estimator", "ours CPU", "solve CPU", "rest CPU", "sklearn CPU",
                         "ours / sklearn", "ours wall", "sklearn wall", "ours n_jobs=None wall", "its solve wall",
                         "SMO steps"], rows), ""]
    if len(labels) == 2:
        base = labels[0]
        rows = []
        for c in configs:
            sks = [v for v in (get(base, c, "sklearn", "cpu"), get(main, c, "sklearn", "cpu")) if v is not None]
            sk = statistics.median(sks) if sks else None
            b1, n1 = get(base, c, "ours1", "cpu"), get(main, c, "ours1", "cpu")
            rows.append([*config_name(c), ms(b1), ms(n1), ms(get(base, c, "ours1", "rest_cpu")),
                         ms(get(main, c, "ours1", "rest_cpu")), ms(sk), ratio(b1, sk), ratio(n1, sk),
                         ms(get(base, c, "ours", "wall")), ms(get(main, c, "ours", "wall"))])
        lines += [f"## Before ({base}) and after ({main})", "",
                  "CPU ms at n_jobs=1 (the fitting thread's CPU time: what a one-thread fit costs, however busy the "
                  "machine), scikit-learn's the median of its medians in the two processes; wall ms at "
                  "n_jobs=None (threads: waiting for them is part of the cost).", "",
                  *md_table(["set", "X", "estimator", "before CPU", "after CPU", "before rest", "after rest",
                             "sklearn CPU", "before / sklearn", "after / sklearn", "before n_jobs=None wall",
                             "after n_jobs=None wall"], rows), ""]
    return lines


def breakdown(workers: dict, sets, n: int) -> dict:
    """{(revision, configuration): the median seconds of each stage of a fit}."""
    return {(label, c): w.ask(op="breakdown", set=c[0], scaled=c[1], est=c[2], n=n)
            for label, w in workers.items() for c in configurations(sets)}


def breakdown_tables(data: dict, labels: list[str], sets, n: int) -> list[str]:
    lines = []
    for label in labels:
        cols = {f"{name[:4]} {'sc' if scaled else 'raw'} {est.replace('KernelLogisticRegression', 'KLR')}":
                data[label, (name, scaled, est)] for name, scaled, est in configurations(sets)}
        stages = ["fit"] + [s for s in dict.fromkeys(k for d in cols.values() for k in d) if s != "fit"]
        rows = [[s] + [f"{1e6 * d[s]:.0f}" if s in d else "" for d in cols.values()] for s in stages]
        lines += [f"## Where a fit's microseconds go ({label}; n_jobs=1, median over {n} fits, inclusive)", "",
                  *md_table(["stage (us)", *cols], rows), ""]
    return lines


class Store(_harness.Store):
    """``overhead.*`` (one entry per revision, configuration and system) and ``overhead_breakdown.*``
    (one entry per revision and configuration); the summary holds the run's revisions and settings."""

    prefix = "overhead"


def entry_key(label: str, c) -> str:
    name, scaled, est = c
    return "|".join((label, name, "scaled" if scaled else "raw", est))


def stored(store: Store) -> dict:
    """The entries keyed as ``measure`` / ``breakdown`` return them."""
    out = {}
    for key, e in store.entries.items():
        label, name, scaled, est, *system = key.split("|")
        out[(label, (name, scaled == "scaled", est), *system)] = e["result"]
    return out


def report(summary: dict, data: dict) -> tuple[str, list[str]]:
    """The title and body of overhead.md (overhead_breakdown.md with ``summary["breakdown"]``)."""
    labels, sets, rounds, per_round = summary["labels"], summary["sets"], summary["rounds"], summary["per_round"]
    brk = summary["breakdown"]
    tables_ = breakdown_tables(data, labels, sets, summary["fits"]) if brk else tables(data, labels, sets)
    body = [
        "Defaults of every estimator (rbf, gamma='scale', C=1 / nu=0.5, tol=1e-3); sparsekernel at n_jobs=1 "
        "unless the column says n_jobs=None (its default). Times in ms. CPU = the fitting thread's CPU time "
        "(time.thread_time: the whole work of a one-thread fit, unaffected by other processes on a busy "
        "machine); wall = perf_counter. 'solve' is the time inside the C++ `_core.solve`; 'rest' the fit's "
        "time outside it (validation, storage, the engine seam, result packing), the median of the per-fit "
        f"differences. Medians over {rounds} x {per_round} interleaved fits"
        + ("" if brk else f" ({rounds * per_round} per cell)") + ". scikit-learn has no "
        "kernel logistic regression ('-'). OneClassSVM is fitted without labels."
        + ("" if brk else " Where 'ours n_jobs=None wall' is far above 'ours wall', see 'its solve wall': "
           "the difference is the C++ solve run on all the process's threads (its thread team on a problem of a "
           "few hundred rows), not the Python around it."), "",
        *tables_]
    return "Per-fit overhead at small N" + (": the stages of a fit" if brk else ""), body


def render(store: Store) -> None:
    store.write_md(*report(store.summary, stored(store)))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="directory holding an earlier revision's sparsekernel package")
    parser.add_argument("--baseline-rev", default="baseline", help="its name in the tables")
    parser.add_argument("--rev", default="this revision", help="this revision's name in the tables")
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--per-round", type=int, default=5, help="fits of each system per round")
    parser.add_argument("--breakdown", action="store_true", help="print the stages of a fit instead")
    parser.add_argument("--breakdown-fits", type=int, default=200)
    parser.add_argument("--no-write", action="store_true")
    _harness.add_render_option(parser)
    args = parser.parse_args(argv)
    part = "breakdown" if args.breakdown else None
    if args.render_only:
        render(Store(part, register_run=False))
        return 0
    sets = [s for s in args.sets.split(",") if s]
    load_start = os.getloadavg()[0]
    workers = {}
    if args.baseline:
        workers[args.baseline_rev] = Worker(args.baseline)
    workers[args.rev] = Worker(None)
    for label, w in workers.items():
        print(f"{label}: {w.module}", flush=True)
    if args.breakdown:
        data = breakdown(workers, sets, args.breakdown_fits)
    else:
        data = measure(workers, sets, args.rounds, args.per_round)
    for w in workers.values():
        w.close()
    summary = dict(labels=list(workers), sets=sets, rounds=args.rounds, per_round=args.per_round,
                   breakdown=args.breakdown, fits=args.breakdown_fits)
    if args.no_write:
        title, body = report(summary, data)
        print("\n".join([f"# {title}", "", *body]))
        return 0
    store = Store(part, force=True)
    store.runs[store.run_index]["load average (1 min) at start / end"] = f"{load_start:.2f} / {os.getloadavg()[0]:.2f}"
    store.summary = summary
    config = {k: summary[k] for k in (("fits",) if args.breakdown else ("rounds", "per_round"))}
    for (label, c, *system), value in data.items():
        store.put("|".join([entry_key(label, c), *system]), config, value)
    render(store)
    print(store.md_path.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
