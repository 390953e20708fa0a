"""Side-by-side RBF SVC fit benchmark: sparsekernel vs scikit-learn vs scikit-learn-intelex.

All three libraries are fitted in one process on the same data with the same
hyper-parameters: ``C`` from ``--C``, ``gamma`` = the numeric value of
scikit-learn's ``gamma='scale'`` (computed once per training set), ``tol=1e-3``
and ``cache_size=200``.  Each fit is repeated ``--repeats`` times, interleaving
the libraries (A, B, C, A, B, C, ...), and the median wall-clock fit time is
reported together with iterations, kernel evaluations, support vectors, test
accuracy and the peak RSS growth during the fit.

Thread settings (``--threads``):

``all``
    sparsekernel ``n_jobs=-1``, intelex with its default thread count,
    scikit-learn as is (libsvm is single-threaded).
``1``
    everybody single-threaded: sparsekernel ``n_jobs=1``,
    ``daal4py.daalinit(1)`` for intelex (the previous count is restored after),
    and ``threadpoolctl.threadpool_limits(1)`` around all fits.

The ``bar`` column is ``PASS`` when, on a data set with at least 10,000
training rows, sparsekernel's median fit time is at most 0.8x the faster
peer's, its test accuracy is within 0.1 percentage points of scikit-learn's
and its number of support vectors is within 2% of scikit-learn's.

Results are printed row by row and written to ``benchmarks/results/svc.{md,json}``
(``svc_quick.*`` with ``--quick``; rewritten after every data set, so a crash keeps
what was done; ``--render-only`` rewrites the markdown from the JSON).

Example (smoke test, under a minute)::

    python benchmarks/bench_svc.py --quick --datasets magic,ringnorm --repeats 1
"""

from __future__ import annotations

import argparse
import gc
import logging
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _datasets  # noqa: E402  (sibling module, importable once the path is set)
import _harness  # noqa: E402  (the results store, tables, environment, PeakRSS)
from _harness import csv_list, fmt, md_table  # noqa: E402

TOL = 1e-3
CACHE_SIZE = 200  # MB
QUICK_N_TRAIN = 3000
BAR_MIN_N_TRAIN = 10_000
BAR_SPEEDUP = 0.8  # sparsekernel time <= BAR_SPEEDUP x faster peer's time
BAR_ACC_POINTS = 0.1  # |accuracy difference| in percentage points
BAR_NSV_FRACTION = 0.02  # |nSV difference| relative to scikit-learn's nSV


# --------------------------------------------------------------------------
# Libraries under test
# --------------------------------------------------------------------------

@dataclass
class Library:
    """One column group of the table: how to build an estimator for a setting."""

    name: str  # full name, used in notes and JSON
    short: str  # column label
    make: Callable[[float, float, str], object]  # (C, gamma, threads) -> unfitted SVC
    peer: bool  # a reference implementation (gets the int32-index CSR copy)
    check_route: bool = False  # record whether sklearnex really ran oneDAL
    show_iterations: bool = True  # n_iter_ comparable with libsvm's SMO iterations
    single_threaded: bool = False  # no thread setting changes it: fitted once per (data, C)


# the sets of results/svc.md (the generated 'nonlinear' set is bench_scaling's)
_SVC_SETS = [name for name in _datasets.ALL if name != "nonlinear"]

def _common_params(C: float, gamma: float) -> dict:
    return dict(C=C, kernel="rbf", gamma=gamma, tol=TOL, cache_size=CACHE_SIZE)


def _make_sparsekernel(C: float, gamma: float, threads: str):
    from sparsekernel import SVC as SparseKernelSVC

    return SparseKernelSVC(**_common_params(C, gamma), n_jobs=-1 if threads == "all" else 1)


def _make_sklearn(C: float, gamma: float, threads: str):
    from sklearn.svm import SVC as SklearnSVC

    return SklearnSVC(**_common_params(C, gamma))


def _make_intelex(C: float, gamma: float, threads: str):
    from sklearnex.svm import SVC as IntelexSVC

    return IntelexSVC(**_common_params(C, gamma))


LIBRARIES = [
    Library("sparsekernel", "sk", _make_sparsekernel, peer=False),
    # LIBSVM runs on one thread whatever the setting
    Library("scikit-learn", "skl", _make_sklearn, peer=True, single_threaded=True),
    # oneDAL's n_iter_ counts a few outer iterations
    Library("scikit-learn-intelex", "ilx", _make_intelex, peer=True, check_route=True, show_iterations=False),
]
_MODULES = {"sparsekernel": "sparsekernel", "scikit-learn": "sklearn.svm", "scikit-learn-intelex": "sklearnex.svm"}


def discover_libraries() -> tuple[list[Library], list[str]]:
    """The SVC implementations that import; missing ones are skipped with a note."""
    import importlib

    libraries, notes = [], []
    for lib in LIBRARIES:
        try:
            importlib.import_module(_MODULES[lib.name])
        except Exception as exc:  # the package is being written: tolerate its absence
            if lib.name == "scikit-learn":
                raise
            notes.append(f"{lib.name} could not be imported ({exc!r}); its columns are skipped.")
        else:
            libraries.append(lib)
    return libraries, notes


# --------------------------------------------------------------------------
# Thread control
# --------------------------------------------------------------------------

@contextmanager
def thread_setting(threads: str) -> Iterator[None]:
    """Apply a ``--threads`` setting to BLAS/OpenMP pools and to oneDAL.

    ``daal4py.daalinit(n)`` ignores ``n <= 0``, so the previous thread count
    (``daal4py.num_threads()``) is restored explicitly afterwards.
    """
    if threads == "all":
        yield
        return
    daal4py = _harness.daal4py()
    previous = daal4py.num_threads() if daal4py else None
    with threadpool_limits(limits=1):
        if daal4py:
            daal4py.daalinit(1)
        try:
            yield
        finally:
            if daal4py:
                daal4py.daalinit(previous)


# --------------------------------------------------------------------------
# Measurement
# --------------------------------------------------------------------------

class _ListHandler(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextmanager
def sklearnex_messages() -> Iterator[list[str]]:
    """Collect (without printing) sklearnex's INFO messages emitted in the block."""
    logger = logging.getLogger("sklearnex")
    saved_level, saved_handlers = logger.level, logger.handlers[:]
    saved_propagate = logger.propagate
    handler = _ListHandler()
    logger.setLevel(logging.INFO)
    logger.handlers, logger.propagate = [handler], False
    try:
        yield handler.messages
    finally:
        logger.setLevel(saved_level)  # setLevel (not .level =) also clears the level cache
        logger.handlers, logger.propagate = saved_handlers, saved_propagate


@dataclass
class FitStats:
    """Everything measured for one library in one (data set, C, threads) case."""

    times: list[float] = field(default_factory=list)
    mem_mb: list[float] = field(default_factory=list)
    n_iter: int | None = None
    n_kernel_evals: int | None = None
    n_sv: int | None = None
    accuracy: float | None = None  # percent
    fit_time_attr: float | None = None  # the estimator's own fit_time_, if any
    route: str | None = None  # sklearnex: "oneDAL" or the fallback message
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.times)

    @property
    def time(self) -> float:
        return statistics.median(self.times)

    @property
    def memory(self) -> float:
        # the largest growth: the allocator keeps memory freed by an earlier fit of the same
        # process and hands it to the next, so later repeats show (almost) none
        return max(self.mem_mb)


def timed_fit(library: Library, model, X, y) -> tuple[float, float, str | None]:
    """Fit ``model``; return (wall seconds, peak RSS growth in MB, sklearnex route)."""
    gc.collect()
    log = sklearnex_messages() if library.check_route else nullcontext()
    with log as messages, _harness.PeakRSS() as rss:
        start = time.perf_counter()
        model.fit(X, y)
        seconds = time.perf_counter() - start
    return seconds, rss.growth_mb, None if messages is None else _route(messages)


def _route(messages: list[str]) -> str:
    """'oneDAL' if sklearnex ran its accelerated fit, else what it said instead."""
    fit_messages = [m for m in messages if ".fit:" in m] or messages
    if fit_messages and all("accelerated" in m for m in fit_messages):
        return "oneDAL"
    return "; ".join(fit_messages) or "unknown (no sklearnex message)"


def _total(value) -> int | None:
    """Sum of an int or array attribute (e.g. one ``n_iter_`` per class pair)."""
    return None if value is None else int(np.sum(value))


def describe_model(stats: FitStats, model, X_test, y_test) -> None:
    """Fill the model-dependent fields of ``stats`` from a fitted estimator."""
    stats.n_sv = len(model.support_)
    stats.n_iter = _total(getattr(model, "n_iter_", None))
    stats.n_kernel_evals = _total(getattr(model, "n_kernel_evals_", None))
    fit_time = getattr(model, "fit_time_", None)
    stats.fit_time_attr = None if fit_time is None else float(fit_time)
    stats.accuracy = 100.0 * float(np.mean(model.predict(X_test) == y_test))


# --------------------------------------------------------------------------
# Data preparation
# --------------------------------------------------------------------------

@dataclass
class Prepared:
    """A loaded data set with the per-library views of its matrices."""

    name: str
    n_full: int  # training rows before any --quick subsampling
    X_train: object
    y_train: np.ndarray
    X_test: object
    y_test: np.ndarray
    X_train_peer: object  # int32-index CSR copy (same object when dense)
    X_test_peer: object
    gamma: float

    def train(self, library: Library):
        return self.X_train_peer if library.peer else self.X_train

    def test(self, library: Library):
        return self.X_test_peer if library.peer else self.X_test

    @property
    def summary(self) -> dict:
        X = self.X_train
        storage = (f"CSR ({X.indices.dtype} indices; peers int32)" if sp.issparse(X)
                   else "dense float64")
        return dict(dataset=self.name, n_train=X.shape[0], n_full=self.n_full,
                    n_test=self.X_test.shape[0], n_features=X.shape[1],
                    storage=storage, gamma=self.gamma)


def scale_gamma(X) -> float:
    """Numeric value of scikit-learn's ``gamma='scale'``: 1 / (n_features * X.var())."""
    if sp.issparse(X):
        variance = X.multiply(X).mean() - X.mean() ** 2
    else:
        variance = X.var()
    return float(1.0 / (X.shape[1] * variance))


def subsample_rows(X, y, n: int, seed: int = 0):
    """Random ``n`` rows (``RandomState(seed)``), in their original order.

    A CSR matrix keeps its index dtype (scipy's row indexing would downcast it).
    """
    if X.shape[0] <= n:
        return X, y
    rows = np.sort(np.random.RandomState(seed).choice(X.shape[0], n, replace=False))
    subset = X[rows]
    if sp.issparse(X):
        subset = _datasets.with_index_dtype(subset, X.indices.dtype)
    return subset, y[rows]


def prepare(name: str, quick: bool) -> Prepared | None:
    """Load data set ``name`` and build the views every library needs."""
    split = _datasets.load(name)
    if split is None:
        return None
    X_train, y_train, X_test, y_test = split
    n_full = X_train.shape[0]
    if quick:
        X_train, y_train = subsample_rows(X_train, y_train, QUICK_N_TRAIN)
    return Prepared(
        name=name, n_full=n_full,
        X_train=X_train, y_train=y_train, X_test=X_test, y_test=y_test,
        X_train_peer=_datasets.as_int32_indices(X_train),
        X_test_peer=_datasets.as_int32_indices(X_test),
        gamma=scale_gamma(X_train))


# --------------------------------------------------------------------------
# One benchmark case
# --------------------------------------------------------------------------

@dataclass
class Case:
    dataset: str
    n_full: int
    C: float
    threads: str
    stats: dict[str, FitStats]  # keyed by Library.name


def run_case(libraries: list[Library], data: Prepared, C: float, threads: str,
             repeats: int, reuse: dict[str, FitStats]) -> Case:
    """Fit every library ``repeats`` times (interleaved) and evaluate the last fits.

    A single-threaded library already measured on this (data, C) under another thread setting
    is taken from ``reuse`` instead of being fitted again (its fits would be identical).
    """
    stats = {lib.name: reuse.get(lib.name, FitStats()) for lib in libraries}
    models: dict[str, object] = {}
    with thread_setting(threads):
        for _ in range(repeats):
            for lib in libraries:
                entry = stats[lib.name]
                if entry.error or lib.name in reuse:
                    continue
                models.pop(lib.name, None)  # free the previous fit first
                model = lib.make(C, data.gamma, threads)
                try:
                    seconds, mem_mb, route = timed_fit(lib, model, data.train(lib), data.y_train)
                except Exception as exc:
                    entry.error = f"fit failed: {exc!r}"
                    continue
                entry.times.append(seconds)
                entry.mem_mb.append(mem_mb)
                entry.route = route or entry.route
                models[lib.name] = model
    for lib in libraries:  # prediction is not timed: run it with all threads
        if lib.name in models and lib.name not in reuse:
            try:
                describe_model(stats[lib.name], models[lib.name], data.test(lib), data.y_test)
            except Exception as exc:
                stats[lib.name].error = f"evaluation failed: {exc!r}"
    for lib in libraries:
        if lib.single_threaded and not stats[lib.name].error:
            reuse[lib.name] = stats[lib.name]
    return Case(data.name, data.n_full, C, threads, stats)


def bar_verdict(case: Case) -> str:
    """PASS/FAIL against the performance bar, '-' for small sets, 'n/a' if not measurable."""
    if case.n_full < BAR_MIN_N_TRAIN:
        return "-"
    sk, skl = case.stats.get("sparsekernel"), case.stats.get("scikit-learn")
    peers = [s.time for name, s in case.stats.items() if name != "sparsekernel" and s.ok]
    if not (sk and sk.ok and skl and skl.ok and peers):
        return "n/a"
    failed = []
    if sk.time > BAR_SPEEDUP * min(peers):
        failed.append("time")
    if abs(sk.accuracy - skl.accuracy) > BAR_ACC_POINTS:
        failed.append("acc")
    if abs(sk.n_sv - skl.n_sv) > BAR_NSV_FRACTION * skl.n_sv:
        failed.append("nSV")
    return "PASS" if not failed else f"FAIL ({','.join(failed)})"


# --------------------------------------------------------------------------
# Table formatting
# --------------------------------------------------------------------------

def _ratio(case: Case, numerator: str, denominators: list[str]) -> str:
    """sparsekernel time / fastest of ``denominators`` (only successful fits count)."""
    num = case.stats.get(numerator)
    dens = [case.stats[d].time for d in denominators if d in case.stats and case.stats[d].ok]
    if not (num and num.ok and dens):
        return "-"
    return f"{num.time / min(dens):.2f}"


Column = tuple[str, Callable[[Case], str]]


def table_columns(libraries: list[Library]) -> list[Column]:
    """The result table's columns for the libraries that imported."""

    def per_library(header: str, getter: Callable[[FitStats], str],
                    only: Callable[[Library], bool] = lambda lib: True) -> list[Column]:
        def cell(name: str) -> Callable[[Case], str]:
            def value(case: Case) -> str:
                s = case.stats.get(name)
                if s is not None and s.error:
                    return "err"
                return getter(s) if s is not None and s.times else "-"
            return value
        return [(f"{header} {lib.short}", cell(lib.name)) for lib in libraries if only(lib)]

    names = {lib.name for lib in libraries}
    peer_names = [lib.name for lib in libraries if lib.peer]
    columns: list[Column] = [
        ("data", lambda c: c.dataset),
        ("C", lambda c: f"{c.C:g}"),
        ("thr", lambda c: c.threads),
    ]
    columns += per_library("t(s)", lambda s: f"{s.time:.3f}")
    if "sparsekernel" in names:
        for peer in libraries:
            if peer.peer:
                columns.append((f"sk/{peer.short}",
                                lambda c, p=peer.name: _ratio(c, "sparsekernel", [p])))
        columns.append(("sk/best", lambda c: _ratio(c, "sparsekernel", peer_names)))
    columns += per_library("iter", lambda s: fmt(s.n_iter, "d"),
                           only=lambda lib: lib.show_iterations)
    columns += per_library("kev(M)", lambda s: "-" if s.n_kernel_evals is None
                           else f"{s.n_kernel_evals / 1e6:.2f}",
                           only=lambda lib: lib.name == "sparsekernel")
    columns += per_library("nSV", lambda s: fmt(s.n_sv, "d"))
    columns += per_library("acc%", lambda s: fmt(s.accuracy, ".2f"))
    columns += per_library("mem(MB)", lambda s: f"{s.memory:.1f}")
    columns.append(("bar", bar_verdict))
    return columns


def table_lines(columns: list[Column], cases: list[Case]) -> list[str]:
    return md_table([h for h, _ in columns], [[value(case) for _, value in columns] for case in cases])


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------

LEGEND = f"""\
Columns: sk = sparsekernel.SVC, skl = sklearn.svm.SVC, ilx = sklearnex.svm.SVC.
t(s) = median wall-clock fit time; sk/skl, sk/ilx, sk/best = ratio of median fit times
(best = faster peer); iter = sum of n_iter_ (not shown for ilx, whose oneDAL count is not
comparable); kev(M) = n_kernel_evals_ in millions;
nSV = len(support_); acc% = test accuracy; mem(MB) = peak RSS growth above the pre-fit RSS,
the largest over the repeats (memory freed by one fit is kept by the allocator and reused by the
next fit of the process, so the first fit of a setting shows the real figure); err = the fit or
evaluation raised (see notes).
bar = PASS if sk time <= {BAR_SPEEDUP} x best peer, |acc - skl acc| <= {BAR_ACC_POINTS} points
and |nSV - skl nSV| <= {BAR_NSV_FRACTION:.0%} of skl nSV; evaluated only for data sets with
>= {BAR_MIN_N_TRAIN:,} training rows ('-' otherwise).
Settings: kernel=rbf, gamma = numeric value of gamma='scale' computed once per training
set (1 / (n_features * X.var())), tol={TOL}, cache_size={CACHE_SIZE}. Fits are interleaved
across libraries. Threads 'all': sk n_jobs=-1, ilx default oneDAL threads, skl single-threaded;
threads '1': sk n_jobs=1, daal4py.daalinit(1), threadpoolctl.threadpool_limits(1).
skl (LIBSVM, single-threaded whatever the setting) is fitted once per data set and C; its
times appear under both thread settings.
sparsekernel gets the CSR matrices as loaded (int64 indices); the peers get int32-index
copies. a9a and w8a are sparse (CSR), the other sets dense."""


class Store(_harness.Store):
    """``svc[_quick].{json,md}``: one entry per (data set, C, threads) case; the summary holds the
    settings, the data sets, the libraries that ran and the notes."""

    prefix = "svc"


def case_key(case: Case) -> str:
    return f"{case.dataset}/C={case.C:g}/{case.threads}"


def stored_case(result: dict) -> Case:
    return Case(**{**result, "stats": {name: FitStats(**s) for name, s in result["stats"].items()}})


def render(store: Store, complete: bool) -> None:
    """svc.md from the store."""
    libraries = [lib for lib in LIBRARIES if lib.name in store.summary["libraries"]]
    cases = [stored_case(e["result"]) for e in store.entries.values()]
    notes = store.summary.get("notes", []) + [note for case in cases for note in case_notes(case)]
    lines = [LEGEND, "", "## Data sets", "",
             *md_table(["data", "n_train", "n_test", "d", "storage", "gamma"],
                       [[d["dataset"], d["n_train"], d["n_test"], d["n_features"], d["storage"], f"{d['gamma']:.6g}"]
                        for d in store.summary["datasets"].values()]),
             "", "## Results", "", *table_lines(table_columns(libraries), cases), ""]
    if notes:
        lines += ["## Notes", "", *[f"- {note}" for note in notes]]
    store.write_md("SVC fit benchmark", lines, complete)


def case_notes(case: Case) -> list[str]:
    """Notes on errors and sklearnex fallbacks in one case."""
    where = f"{case.dataset} C={case.C:g} threads={case.threads}"
    notes = [f"{where}: {name}: {s.error}" for name, s in case.stats.items() if s.error]
    notes += [f"{where}: {name} did not run on oneDAL: {s.route}"
              for name, s in case.stats.items() if s.route not in (None, "oneDAL")]
    return notes


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------

def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Benchmark sparsekernel.SVC against sklearn and sklearnex SVC.")
    parser.add_argument("--datasets", type=csv_list(str, _datasets.ALL),
                        default=_SVC_SETS,
                        help=f"comma-separated data sets (default: {','.join(_SVC_SETS)})")
    parser.add_argument("--C", type=csv_list(float), default=[1.0, 10.0],
                        help="comma-separated C values (default: 1,10)")
    parser.add_argument("--threads", type=csv_list(str, ["all", "1"]), default=["all", "1"],
                        help="comma-separated thread settings among all,1 (default: all,1)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="fits per library and setting; the median is reported (default: 3)")
    parser.add_argument("--quick", action="store_true",
                        help=f"subsample every training set to {QUICK_N_TRAIN} rows (smoke test)")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="data directory (default: $SPARSEKERNEL_DATA or /work/shared/data)")
    _harness.add_render_option(parser)
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.render_only:
        render(Store(quick=args.quick, register_run=False), complete=True)
        return 0
    if args.data_dir is not None:
        _datasets.set_data_dir(args.data_dir)

    libraries, notes = discover_libraries()
    if _harness.daal4py() is None and any(lib.short == "ilx" for lib in libraries):
        notes.append("daal4py could not be imported: intelex is not limited to 1 thread "
                     "in the '1' setting.")
    columns = table_columns(libraries)
    store = Store(quick=args.quick, force=True)
    store.runs[store.run_index]["repeats"] = f"{args.repeats} (median reported)"
    store.summary.update(settings=dict(datasets=args.datasets, C=args.C, threads=args.threads,
                                       repeats=args.repeats, quick=args.quick), notes=notes,
                         libraries=sorted(set(store.summary.get("libraries", [])) | {lib.name for lib in libraries}))
    datasets = store.summary.setdefault("datasets", {})
    for note in notes:
        print(f"note: {note}", flush=True)
    print("\n".join(table_lines(columns, [])), flush=True)

    for name in args.datasets:
        data = prepare(name, args.quick)
        if data is None:
            notes.append(f"{name}: data files missing or unreadable, skipped.")
            print(f"note: {notes[-1]}", flush=True)
            continue
        datasets[name] = data.summary
        for C in args.C:
            reuse: dict[str, FitStats] = {}
            for threads in args.threads:
                case = run_case(libraries, data, C, threads, args.repeats, reuse)
                store.put(case_key(case), {"repeats": args.repeats, "quick": args.quick}, asdict(case))
                print(table_lines(columns, [case])[-1], flush=True)
                for note in case_notes(case):
                    print(f"note: {note}", flush=True)
        render(store, complete=False)
        del data
        gc.collect()

    render(store, complete=True)
    print(f"\nwrote {store.md_path} and {store.json_path}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
