"""Small and medium data at the defaults: sparsekernel's estimators with n_jobs=None against
n_jobs=1, and against scikit-learn's same estimator, on an idle and on a busy machine.

What a user meets first: ``make_pipeline(StandardScaler(), Estimator())`` with every parameter at its
default, on sets from iris (150 rows) up to 50,000 rows.  Two bars (DESIGN.md: "a fit starts a team
only when a step's work pays for it, and idle helpers give their core back -- small data and busy
machines must not pay for threads"):

- the default threads cost nothing: fit time with ``n_jobs=None`` / with ``n_jobs=1`` <= 1.1;
- sparsekernel is no slower than scikit-learn: SVC, NuSVC, SVR, OneClassSVM / scikit-learn's
  (LIBSVM) <= 1.2 (ours at its defaults, n_jobs=None).  KernelLogisticRegression has no scikit-learn
  counterpart and is only timed against itself.

Method: the process pins itself to ``--cores`` (``os.sched_setaffinity`` before numpy and the
libraries are imported, so OpenMP sizes its pool from it).  Per (set, estimator) the variants (ours
n_jobs=None, ours n_jobs=1, scikit-learn) are fitted in interleaved rounds (the order rotated each
round), after one untimed round on sets of up to 5,000 rows.  A time budget per cell: each variant is
refitted until its fits have used ``--max-seconds`` (ours' two variants share twice that, so they
stay paired), ours at least ``--min-repeats`` times and scikit-learn at least once, none more than
``--max-repeats`` times -- many fits on the small sets, few on the large; times are medians.  Every
fit inside ``warnings.catch_warnings()`` with the warnings ignored.

``--busy``: ``no`` (idle), ``yes`` (busy: a child ``python -c "while True: pass"`` pinned to one of
the cores in use, ``--busy-core``, default the last of ``--cores``, spinning for the whole pass and
stopped at its end), ``both`` (the default: the idle pass, then the busy pass).

Sets (``--sets``): iris, wine, diabetes (regression), breast_cancer, digits (scikit-learn's loaders,
raw features), classification5000 / 20000 / 50000 (sparsekernel.datasets' make_classification: 20
features, 10 informative, 5 % flipped labels), and from ../shared/data (skipped when missing):
cpusmall (regression, 8,192 rows, ``_csmo_data``: features in [-1, 1], standardised target), magic
(13,314 training rows, ``_datasets``); a9a (32,561 rows, dense) is available but not a default (its
smaller class is under 25 %, so NuSVC's default nu = 0.5 is infeasible for both libraries).
Estimators (``--estimators``): SVC, NuSVC, KernelLogisticRegression on the classification sets, SVR
on the regression sets, OneClassSVM on all (fitted on X alone).

Writes benchmarks/results/small.md / .json (``--quick``: small_quick.*, git-ignored).  Restartable:
every (mode, set, estimator) cell is stored as soon as it is measured; a rerun skips the stored ones
with the same settings (``--force`` redoes them).

Full run (the machine otherwise quiet; roughly an hour on 2 cores, the two passes about half each;
classification50000 takes about two thirds of a pass: scikit-learn's NuSVC and OneClassSVM need minutes
per fit there)::

    python benchmarks/bench_small.py                       # cores 0,1; idle then busy
    python benchmarks/bench_small.py --busy no             # the idle pass alone (the busy one later:
    python benchmarks/bench_small.py --busy yes            #  the stored cells are kept)
Smoke test (about a minute)::

    python benchmarks/bench_small.py --quick
"""

from __future__ import annotations

# Only the standard library at module level: main() pins the process before numpy and the
# libraries are imported.
import argparse
import gc
import os
import statistics
import subprocess
import sys
import time
import warnings
from contextlib import contextmanager, nullcontext
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
import _harness  # noqa: E402  (standard library only)
from bench_large_c import barred, tally  # noqa: E402  (standard library only)

#: name -> (task, rows); rows for the table's order (the loaders give the real count)
SETS = {
    "iris": ("classification", 150),
    "wine": ("classification", 178),
    "diabetes": ("regression", 442),
    "breast_cancer": ("classification", 569),
    "digits": ("classification", 1797),
    "classification5000": ("classification", 5000),
    "cpusmall": ("regression", 8192),
    "magic": ("classification", 13314),
    "classification20000": ("classification", 20000),
    "a9a": ("classification", 32561),
    "classification50000": ("classification", 50000),
}
DEFAULT_SETS = [s for s in SETS if s != "a9a"]
ESTIMATORS = ("SVC", "NuSVC", "SVR", "OneClassSVM", "KernelLogisticRegression")
TASK_ESTIMATORS = {"classification": ("SVC", "NuSVC", "OneClassSVM", "KernelLogisticRegression"),
                   "regression": ("SVR", "OneClassSVM")}
PEERS = ("SVC", "NuSVC", "SVR", "OneClassSVM")   # scikit-learn has these
VARIANTS = ("default", "n_jobs=1", "sklearn")
MODES = {"no": ("idle",), "yes": ("busy",), "both": ("idle", "busy")}

BAR_THREADS = 1.1     # n_jobs=None / n_jobs=1
BAR_SKLEARN = 1.2     # ours (n_jobs=None) / scikit-learn

DEFAULT_MAX_SECONDS = 10.0
DEFAULT_MIN_REPEATS = 2
DEFAULT_MAX_REPEATS = 41
WARMUP_MAX_ROWS = 5000
QUICK = dict(sets=["iris", "diabetes", "digits"], max_seconds=1.0, min_repeats=2, max_repeats=7)

# set after pinning
np = None


class Store(_harness.Store):
    prefix = "small"


# ======================================================================================== data
def load_set(name: str):
    """(X, y, note) of set ``name`` (y None for none); None when its files are missing."""
    task = SETS[name][0]
    if name in ("iris", "wine", "diabetes", "breast_cancer", "digits"):
        import sklearn.datasets

        X, y = getattr(sklearn.datasets, f"load_{name}")(return_X_y=True)
        return np.asarray(X, dtype=np.float64), y, "scikit-learn, raw features"
    if name.startswith("classification"):
        from sparsekernel.datasets import load_data

        n = int(name[len("classification"):])
        X, y, _ = load_data(f"classification:{n}")
        return np.asarray(X, dtype=np.float64), y, "make_classification(20 features, 10 informative, 5 % flipped)"
    if name == "cpusmall":
        import _csmo_data

        try:
            s = _csmo_data.load("cpusmall")
        except Exception as exc:   # files missing
            print(f"cpusmall: {exc!r}", file=sys.stderr)
            return None
        return s.X, s.y, "../shared/data (libsvm cpusmall_scale), features in [-1, 1], target standardised"
    import _datasets

    split = _datasets.load(name)
    if split is None:
        return None
    X, y = split[0], split[1]
    X = X.toarray() if hasattr(X, "toarray") else X   # StandardScaler cannot center CSR
    assert task == "classification"
    return np.ascontiguousarray(X, dtype=np.float64), y, "../shared/data, training split" + (
        ", as a dense array" if name == "a9a" else "")


# ======================================================================================== fits
def make_pipeline_for(estimator: str, variant: str):
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if variant == "sklearn":
        import sklearn.svm

        return make_pipeline(StandardScaler(), getattr(sklearn.svm, estimator)())
    import sparsekernel

    cls = getattr(sparsekernel, estimator)
    return make_pipeline(StandardScaler(), cls() if variant == "default" else cls(n_jobs=1))


def timed_fit(pipe, X, y) -> float:
    gc.collect()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        pipe.fit(X, y)
        return time.perf_counter() - t0


def threads_used(pipe) -> int | None:
    """The most threads any of the fit's solves used (``solver_stats_``' n_threads), if reported."""
    stats = getattr(pipe[-1], "solver_stats_", None) or []
    counts = [st.get("n_threads") for st in stats if isinstance(st, dict) and st.get("n_threads") is not None]
    return int(max(counts)) if counts else None


def run_cell(estimator: str, X, y, args) -> dict:
    """Interleaved rounds of the variants of one (set, estimator); times, rounds, threads used."""
    variants = [v for v in VARIANTS if v != "sklearn" or (estimator in PEERS and "sklearn" not in args.skip)]
    fit_y = None if estimator == "OneClassSVM" else y
    times = {v: [] for v in variants}
    threads = {v: set() for v in variants}
    errors = {}
    if X.shape[0] <= WARMUP_MAX_ROWS:       # untimed round: first-touch allocations, lazy imports
        for v in variants:
            try:
                timed_fit(make_pipeline_for(estimator, v), X, fit_y)
            except Exception as exc:
                errors[v] = f"fit failed: {exc!r}"
    # each variant has its own budget: ours (cheap) gets many rounds, scikit-learn (slow on the larger
    # sets) stops after one fit once its fits alone have used the budget
    # (ours' two variants share theirs, so that they stay paired round by round)
    group = {v: "sklearn" if v == "sklearn" else "ours" for v in variants}
    spent = {g: 0.0 for g in group.values()}
    budget = {g: args.max_seconds * sum(1 for v in variants if group[v] == g) for g in spent}
    least = {"sklearn": 1, "ours": args.min_repeats}
    rounds = 0
    while rounds < args.max_repeats:
        live = [v for v in variants if v not in errors
                and (rounds < least[group[v]] or spent[group[v]] < budget[group[v]])]
        if not live:
            break
        order = live[rounds % len(live):] + live[:rounds % len(live)]   # rotated each round
        for v in order:
            pipe = make_pipeline_for(estimator, v)
            try:
                t = timed_fit(pipe, X, fit_y)
            except Exception as exc:
                errors[v] = f"fit failed: {exc!r}"
                continue
            spent[group[v]] += t
            times[v].append(t)
            if v != "sklearn":
                n = threads_used(pipe)
                if n is not None:
                    threads[v].add(n)
            del pipe
        rounds += 1
    return dict(times=times, rounds=rounds, threads={v: sorted(t) for v, t in threads.items()}, errors=errors,
                seconds_spent=sum(spent.values()))


@contextmanager
def busy_core(core: int):
    """A child process spinning on ``core`` for the duration (pinned right after it starts)."""
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        os.sched_setaffinity(proc.pid, {core})
        time.sleep(0.5)                       # let it reach its core
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def warm_up(estimators) -> None:
    """Untimed tiny fits of every variant: imports, OpenMP's pool."""
    rng = np.random.RandomState(0)
    X = rng.standard_normal((200, 4))
    y = np.where(X[:, 0] * X[:, 1] > 0, 1, 0)
    for e in estimators:
        for v in VARIANTS:
            if v == "sklearn" and e not in PEERS:
                continue
            try:
                timed_fit(make_pipeline_for(e, v), X, None if e == "OneClassSVM" else (X[:, 0] if e == "SVR" else y))
            except Exception:
                pass


# ======================================================================================== main
def cell_config(args, mode: str, n: int, d: int) -> dict:
    return dict(mode=mode, n=n, d=d, cores=sorted(args.cores), busy_core=args.busy_core if mode == "busy" else None,
                max_seconds=args.max_seconds, min_repeats=args.min_repeats, max_repeats=args.max_repeats,
                skip=sorted(args.skip), quick=args.quick)


def key_of(mode: str, name: str, estimator: str) -> str:
    return f"{mode}|{name}|{estimator}"


def main(argv=None) -> int:
    global np
    args = parse_args(argv)
    try:
        _harness.pin(args.cores)    # before numpy and the libraries start their thread pools
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    import numpy

    np = numpy
    if args.data_dir is not None:
        import _datasets

        _datasets.set_data_dir(args.data_dir)
        os.environ["SPARSEKERNEL_DATA"] = str(args.data_dir)

    store = Store(None, args.quick, args.force)
    from sparsekernel._base import available_threads

    store.summary["settings"] = dict(cores=sorted(args.cores), busy_core=args.busy_core, modes=list(MODES[args.busy]),
                                     sparsekernel_default_threads=int(available_threads()))
    set_info = store.summary.setdefault("sets", {})
    notes: list[str] = []
    print(f"small: CPUs {sorted(os.sched_getaffinity(0))}; sets {args.sets}; estimators {args.estimators}; "
          f"modes {MODES[args.busy]}; n_jobs=None uses {available_threads()} threads", flush=True)
    warm_up(args.estimators)
    data = {}
    for name in args.sets:
        loaded = load_set(name)
        if loaded is None:
            notes.append(f"{name}: data files missing, skipped.")
            print(notes[-1], flush=True)
            continue
        X, y, note = loaded
        data[name] = (X, y)
        set_info[name] = dict(task=SETS[name][0], n=int(X.shape[0]), d=int(X.shape[1]), note=note,
                              classes=None if SETS[name][0] == "regression" else int(len(np.unique(y))))
    t_start = time.perf_counter()
    for mode in MODES[args.busy]:
        with busy_core(args.busy_core) if mode == "busy" else nullcontext():
            for name, (X, y) in data.items():
                for est in (e for e in args.estimators if e in TASK_ESTIMATORS[SETS[name][0]]):
                    key, cfg = key_of(mode, name, est), cell_config(args, mode, *X.shape)
                    if store.done(key, cfg):
                        continue
                    res = run_cell(est, X, y, args)
                    store.put(key, cfg, dict(mode=mode, set=name, estimator=est, **res))
                    print(f"[{time.perf_counter() - t_start:7.1f} s] {mode} "
                          + _harness.md_table(HEADERS, [row(store, mode, name, est)])[-1], flush=True)
                    render(store, args, notes, complete=False)
    render(store, args, notes, complete=True)
    print("\n".join(SUMMARY_LINES), flush=True)
    print(f"wrote {store.md_path} in {time.perf_counter() - t_start:.0f} s", flush=True)
    return 0


# ======================================================================================== tables
HEADERS = ["set", "n", "d", "estimator", "fits (None / 1 / sklearn)", "n_jobs=None", "n_jobs=1",
           f"None / 1 (<= {BAR_THREADS:g})", "threads used (None / 1)", "sklearn",
           f"ours / sklearn (<= {BAR_SKLEARN:g})"]
SUMMARY_LINES: list[str] = []


def seconds_text(t: float | None) -> str:
    if t is None:
        return "-"
    return f"{1e3 * t:.3g} ms" if t < 1.0 else f"{t:.3g} s"


def medians(r: dict) -> dict[str, float | None]:
    return {v: (statistics.median(r["times"][v]) if r.get("times", {}).get(v) else None) for v in VARIANTS}


def ratios(r: dict) -> tuple[float | None, float | None]:
    m = medians(r)
    t_ours, t_one, t_skl = m["default"], m["n_jobs=1"], m["sklearn"]
    return (None if t_ours is None or not t_one else t_ours / t_one,
            None if t_ours is None or not t_skl else t_ours / t_skl)


def row(store, mode: str, name: str, est: str) -> list[str]:
    fmt = _harness.fmt
    r = (store.entries.get(key_of(mode, name, est)) or {}).get("result") or {}
    info = store.summary.get("sets", {}).get(name, {})
    m = medians(r)
    th, sk = ratios(r)
    used = r.get("threads", {})
    skl = seconds_text(m["sklearn"]) if est in PEERS else "(none)"
    if r.get("errors", {}).get("sklearn"):
        skl = "err"
    counts = " / ".join(str(len(r.get("times", {}).get(v, []))) if v != "sklearn" or est in PEERS else "-"
                        for v in VARIANTS)
    return [name, fmt(info.get("n"), ",d"), fmt(info.get("d"), "d"), est, counts,
            "err" if r.get("errors", {}).get("default") else seconds_text(m["default"]),
            "err" if r.get("errors", {}).get("n_jobs=1") else seconds_text(m["n_jobs=1"]),
            barred(fmt(th, ".3f"), None if th is None else th <= BAR_THREADS),
            " / ".join(",".join(map(str, used.get(v, []))) or "-" for v in ("default", "n_jobs=1")),
            skl, barred(fmt(sk, ".3f"), None if sk is None else sk <= BAR_SKLEARN)]


def render(store, args, notes, complete: bool) -> None:
    settings = store.summary.get("settings", {})
    body = [
        f"Every estimator at its defaults inside `make_pipeline(StandardScaler(), ...)`; the process pinned to CPUs "
        f"{sorted(args.cores)} (sparsekernel's n_jobs=None resolves to "
        f"{settings.get('sparsekernel_default_threads', '-')} threads there; scikit-learn's LIBSVM is "
        f"single-threaded).  Per (set, estimator): ours with n_jobs=None, ours with n_jobs=1 and scikit-learn's "
        f"same estimator, fitted in interleaved rounds (order rotated each round; one untimed round first on "
        f"sets of up to {WARMUP_MAX_ROWS:,} rows); each variant is refitted until its fits have used "
        f"{args.max_seconds:g} s (ours' two variants share twice that, paired round by round), ours at least "
        f"{args.min_repeats} times, scikit-learn at least once, each at most "
        f"{args.max_repeats} times (column fits); times = median wall-clock "
        f"`Pipeline.fit` time (scaler included).  threads used = `solver_stats_`' n_threads (the largest of a "
        f"fit's solves; '-' when not reported).",
        "",
        f"- None / 1 = ours n_jobs=None / ours n_jobs=1; bar <= {BAR_THREADS:g} (the default threads cost "
        f"nothing).",
        f"- ours / sklearn = ours n_jobs=None / scikit-learn's; bar <= {BAR_SKLEARN:g} (SVC, NuSVC, SVR, "
        "OneClassSVM; KernelLogisticRegression has no scikit-learn counterpart).",
        "- OneClassSVM is fitted on X alone; NuSVC, SVR, OneClassSVM at their default nu / epsilon.",
        "",
        "## Sets", "",
        *_harness.md_table(["set", "task", "n", "d", "classes", "source"],
                           [[n, i.get("task"), _harness.fmt(i.get("n"), ",d"), i.get("d"),
                             i.get("classes") or "-", i.get("note")]
                            for n, i in sorted(store.summary.get("sets", {}).items(),
                                               key=lambda item: list(SETS).index(item[0]))]),
    ]
    SUMMARY_LINES.clear()
    SUMMARY_LINES.extend(["## Summary", ""])
    for mode in MODES["both"]:              # every stored cell (an earlier run may have measured the other mode)
        cells = [(n, e) for n in SETS for e in ESTIMATORS if key_of(mode, n, e) in store.entries]
        if not cells:
            continue
        busy_cores = sorted({store.entries[key_of(mode, n, e)]["config"].get("busy_core") for n, e in cells} - {None})
        title = ("Idle machine" if mode == "idle" else
                 f"Busy machine: a child `python -c \"while True: pass\"` pinned to CPU "
                 f"{', '.join(map(str, busy_cores))} (one of the cores in use) spun for the whole pass")
        body += ["", f"## {title}", "", *_harness.md_table(HEADERS, [row(store, mode, n, e) for n, e in cells])]
        th_ok, sk_ok, th_fail, sk_fail = [], [], [], []
        for n, e in cells:
            th, sk = ratios(store.entries[key_of(mode, n, e)]["result"])
            th_ok.append(None if th is None else th <= BAR_THREADS)
            sk_ok.append(None if sk is None else sk <= BAR_SKLEARN)
            if th_ok[-1] is False:
                th_fail.append(f"{n} {e} ({th:.2f})")
            if sk_ok[-1] is False:
                sk_fail.append(f"{n} {e} ({sk:.2f})")
        SUMMARY_LINES.append(f"- {mode}: None / 1 <= {BAR_THREADS:g}: {tally(th_ok)}"
                             + (f"; fails: {', '.join(th_fail)}" if th_fail else ""))
        SUMMARY_LINES.append(f"- {mode}: ours / sklearn <= {BAR_SKLEARN:g}: "
                             f"{tally([x for x in sk_ok if x is not None])}"
                             + (f"; fails: {', '.join(sk_fail)}" if sk_fail else ""))
    errors = [f"{e['result']['mode']} {e['result']['set']} {e['result']['estimator']} {v}: {msg}"
              for e in store.entries.values() for v, msg in e["result"].get("errors", {}).items()]
    body += ["", *SUMMARY_LINES]
    if notes or errors:
        body += ["", "Notes:", "", *[f"- {x}" for x in notes + errors]]
    store.write_md("Small and medium data at the defaults: n_jobs=None vs n_jobs=1, and vs scikit-learn",
                   body, complete)


# ======================================================================================== arguments
def parse_args(argv=None):
    csv_list = _harness.csv_list
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cores", type=_harness.parse_cores, default="0,1",
                   help="CPU ids the process is pinned to (default 0,1)")
    p.add_argument("--sets", type=csv_list(str, SETS), default=None, help=f"default: {','.join(DEFAULT_SETS)}")
    p.add_argument("--estimators", type=csv_list(str, ESTIMATORS), default=list(ESTIMATORS),
                   help=f"default: {','.join(ESTIMATORS)}")
    p.add_argument("--busy", choices=list(MODES), default="both",
                   help="idle (no), busy (yes: one core of --cores kept busy by a spinning child), or both "
                        "(default)")
    p.add_argument("--busy-core", type=int, default=None, help="the core the spinner is pinned to (default: the "
                                                                 "last of --cores)")
    p.add_argument("--max-seconds", type=float, default=None,
                   help=f"fitting seconds per variant and cell before its refits stop "
                        f"(default {DEFAULT_MAX_SECONDS:g})")
    p.add_argument("--min-repeats", type=int, default=None, help=f"fits of ours per variant and cell at least (default "
                                                                   f"{DEFAULT_MIN_REPEATS})")
    p.add_argument("--max-repeats", type=int, default=None, help=f"fits per variant and cell at most (default "
                                                                   f"{DEFAULT_MAX_REPEATS})")
    p.add_argument("--skip", type=csv_list(str, ("sklearn",)), default=[], help="sklearn: no scikit-learn fits")
    _harness.add_store_options(p, "smoke test (small_quick.*): iris, diabetes, digits; 1 s per variant and cell")
    args = p.parse_args(argv)
    if args.busy_core is None:
        args.busy_core = max(args.cores)
    elif args.busy_core not in args.cores:
        p.error("--busy-core must be one of --cores")
    defaults = dict(sets=DEFAULT_SETS, max_seconds=DEFAULT_MAX_SECONDS, min_repeats=DEFAULT_MIN_REPEATS,
                    max_repeats=DEFAULT_MAX_REPEATS)
    for k, v in defaults.items():
        if getattr(args, k) is None:
            setattr(args, k, QUICK.get(k, v) if args.quick else v)
    args.sets = sorted(args.sets, key=list(SETS).index)
    if args.min_repeats < 1 or args.max_repeats < args.min_repeats:
        p.error("need 1 <= --min-repeats <= --max-repeats")
    return args


if __name__ == "__main__":
    sys.exit(main())
