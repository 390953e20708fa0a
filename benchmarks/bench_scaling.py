"""Scaling: sparsekernel.SVC against scikit-learn and scikit-learn-intelex on one core, its
parallel efficiency on two threads, and grid searches over the default ``n_jobs``.

The machine has 2 cores; these measurements are what a many-core result is predicted from: the
speed of each library on one core, and how sparsekernel's fits and searches use a second one.

Parts (``--part``), each writing ``benchmarks/results/scaling_<part>.{json,md}``:

``onecore``
    The benchmark process is pinned to one core (``--cores``, default ``0``) with
    ``os.sched_setaffinity`` at the very start of ``main()``, before numpy, scikit-learn,
    scikit-learn-intelex or sparsekernel are imported (OpenMP, oneDAL's TBB and OpenBLAS size
    their thread pools from the affinity when they start; threads started later inherit it).
    Systems: ``sparsekernel.SVC(n_jobs=1)``, ``sklearnex.svm.SVC`` (scikit-learn-intelex, its
    default threads: one on one core) and ``sklearn.svm.SVC`` (LIBSVM), all with kernel='rbf',
    the same C (``--C``, default 1,10), gamma = the numeric value of scikit-learn's 'scale'
    computed once per set (1 / (n_features * X.var()); for CSR the mean of the squares minus the
    squared mean), tol = 1e-3, cache_size = 200 MB.  Sets: a9a, a9a-dense, w8a, w8a-dense, magic,
    usps, skin, nonlinear, a9a-scaled (``_datasets``; the ``-dense`` sets are the CSR sets as dense
    arrays; ``a9a-scaled`` is a9a after StandardScaler, as a pipeline hands it over: dense, no zeros).
    Per (set, C) the systems are fitted interleaved (ours, intelex, sklearn, ours, ...)
    ``--repeats`` times (default 1; medians).  Recorded per system: fit seconds, nSV, test
    accuracy, the test predictions (agreement with LIBSVM's), the dual objective 1/2 a'Qa - sum a
    (ours: ``dual_objective_[0]``; the peers: recomputed from ``dual_coef_``), and for
    sparsekernel ``solver_stats_[0]``'s n_iter, n_outer_iter, kernel_evals, n_threads and
    ``solver_`` (if the attribute exists).
``threads``
    sparsekernel alone with the process on cores {0, 1} (``--cores``, default ``0,1``): per set
    (a9a, a9a-dense, w8a, w8a-dense, skin, nonlinear with >= 30,000 training rows, for the efficiency
    bar; magic and usps for the two-thread comparison with the peers; ``--min-rows``) and C, fits
    with n_jobs=1 and n_jobs=2 interleaved ``--repeats`` times (default 3; medians), and
    sklearnex's and sklearn's SVC (their default threads) once each on the same two cores.
``search``
    ``GridSearchCV(SVC(), grid, cv=5, n_jobs=-1)`` against ``GridSearchCV(SVC(n_jobs=1), grid,
    cv=5, n_jobs=-1)`` with sparsekernel's SVC (interleaved, ``--repeats`` times, default 3), and
    the same search once with sklearn's and once with sklearnex's SVC; grid: 6 C
    (np.logspace(-1, 4, 6)) x 3 gamma (the 'scale' value x 0.3, 1, 3), on the first 11,000 rows
    of a9a's training set (CSR), process on cores {0, 1}.  Bar: SVC() / SVC(n_jobs=1) <= 1.10.
``assemble``
    ``benchmarks/results/scaling.md``: a paragraph on the method and the machine, then the three
    parts' sections.

Every fit runs inside ``warnings.catch_warnings()`` with the warnings ignored (GridSearchCV hands
the filters to its workers).  Sets whose files are missing are skipped with a note.  Restartable:
every (set, C, system) result is saved to the JSON as soon as it is measured and a rerun skips
entries already there with the same settings (``--force`` redoes them).

Full run (long: LIBSVM alone takes minutes per fit on the larger sets)::

    python benchmarks/bench_scaling.py --part onecore
    python benchmarks/bench_scaling.py --part threads
    python benchmarks/bench_scaling.py --part search
    python benchmarks/bench_scaling.py --part assemble

Smoke test (under a minute in all; writes ``*_quick.*``: 2,000 training and test rows of a9a and
nonlinear, 1,000 rows for the search, 1 repeat)::

    python benchmarks/bench_scaling.py --part onecore --quick
    python benchmarks/bench_scaling.py --part threads --quick
    python benchmarks/bench_scaling.py --part search --quick
    python benchmarks/bench_scaling.py --part assemble --quick
"""

from __future__ import annotations

# Only the standard library at module level: main() pins the process to its cores before numpy,
# scipy, scikit-learn, scikit-learn-intelex or sparsekernel are imported (_import_after_pinning).
import argparse
import base64
import gc
import os
import statistics
import sys
import time
import warnings
from contextlib import nullcontext
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import _harness  # noqa: E402  (standard library only)
from _harness import RESULTS, csv_list, parse_cores  # noqa: E402

# set by _import_after_pinning()
np = sp = _datasets = bench_csmo = bench_svc = None

TOL = 1e-3
CACHE_SIZE = 200  # MB
SEED = 0

#: set name -> (_datasets loader, densify): the -dense sets are the CSR sets as dense arrays
SETS = {
    "a9a": ("a9a", False),
    "a9a-dense": ("a9a", True),
    "a9a-scaled": ("a9a", "scaled"),  # StandardScaler fitted on the training split: dense, no zeros
    "w8a": ("w8a", False),
    "w8a-dense": ("w8a", True),
    "magic": ("magic", False),
    "usps": ("usps", False),
    "skin": ("skin", False),
    "nonlinear": ("nonlinear", False),
}
SYSTEMS = ("sparsekernel", "intelex", "sklearn")
SYSTEM_LABELS = {"sparsekernel": "sparsekernel.SVC", "intelex": "sklearnex.svm.SVC (oneDAL)",
                 "sklearn": "sklearn.svm.SVC (LIBSVM)"}
DEFAULT_C = "1,10"

THREAD_SETS = ("a9a", "a9a-dense", "w8a", "w8a-dense", "skin", "nonlinear", "magic", "usps")
THREAD_MIN_ROWS = 0             # training rows of the full set (--min-rows); the efficiency bar is on >= 3e4
THREAD_COUNTS = (1, 2)

SEARCH_SET = "a9a"
SEARCH_ROWS = 11_000
SEARCH_C = (-1, 4, 6)           # np.logspace arguments
SEARCH_GAMMA_FACTORS = (0.3, 1.0, 3.0)
SEARCH_FOLDS = 5
SEARCH_VARIANTS = ("sk-default", "sk-n_jobs1", "intelex", "sklearn")
SEARCH_LABELS = {"sk-default": "sparsekernel SVC()", "sk-n_jobs1": "sparsekernel SVC(n_jobs=1)",
                 "intelex": "sklearnex.svm.SVC()", "sklearn": "sklearn.svm.SVC()"}
SEARCH_BAR = 1.10               # SVC() / SVC(n_jobs=1) wall time

QUICK_SETS = ("a9a", "nonlinear")
QUICK_N_TRAIN = 2000
QUICK_N_TEST = 2000
QUICK_SEARCH_ROWS = 1000

DEFAULT_CORES = {"onecore": "0", "threads": "0,1", "search": "0,1"}
DEFAULT_REPEATS = {"onecore": 1, "threads": 3, "search": 3}
DUAL_BLOCK = 1024               # rows of K(SV, SV) per block when recomputing a peer's dual


class Store(_harness.Store):
    prefix = "scaling"


# ======================================================================================== imports
def _import_after_pinning() -> None:
    """The module's numeric imports (after pinning)."""
    global np, sp, _datasets, bench_csmo, bench_svc
    import numpy
    import scipy.sparse

    import _datasets as datasets_module
    import bench_csmo as csmo_module  # dual_objective_sklearn
    import bench_svc as svc_module    # scale_gamma, subsample_rows, sklearnex routes

    np, sp, _datasets, bench_csmo, bench_svc = numpy, scipy.sparse, datasets_module, csmo_module, svc_module


def threading_note(store) -> list[str]:
    """Affinity and thread pools as the libraries see them (recorded in the store's summary)."""
    info = dict(affinity=sorted(os.sched_getaffinity(0)), threads_by_cpus=_harness.thread_cpus())
    try:
        from sparsekernel._base import available_threads
        info["sparsekernel_default_threads"] = int(available_threads())
    except Exception as exc:
        info["sparsekernel_default_threads"] = f"n/a ({exc.__class__.__name__})"
    try:
        import daal4py
        info["onedal_threads"] = int(daal4py.num_threads())
    except Exception:
        info["onedal_threads"] = "n/a"
    store.summary["threading"] = info
    by = ", ".join(f"{n} on CPUs {c}" for c, n in sorted(info["threads_by_cpus"].items()))
    return [f"Process affinity: CPUs {','.join(map(str, info['affinity']))}; threads of the process after the "
            f"fits: {by}; sparsekernel n_jobs=None would use {info['sparsekernel_default_threads']} thread(s), "
            f"oneDAL {info['onedal_threads']}."]


# ======================================================================================== data
class Data:
    """One set, with the int32-index copies scikit-learn needs for CSR and the 'scale' gamma."""

    def __init__(self, name, n_full, X_train, y_train, X_test, y_test):
        self.name, self.n_full = name, n_full
        self.X_train, self.y_train, self.X_test, self.y_test = X_train, y_train, X_test, y_test
        self.X_train_peer = _datasets.as_int32_indices(X_train)
        self.X_test_peer = _datasets.as_int32_indices(X_test)
        self.gamma = bench_svc.scale_gamma(X_train)   # 1 / (d * var); CSR: E[x^2] - E[x]^2
        self.sparse = sp.issparse(X_train)

    def train(self, system: str):
        return self.X_train if system.startswith("sparsekernel") else self.X_train_peer

    def test(self, system: str):
        return self.X_test if system.startswith("sparsekernel") else self.X_test_peer

    @property
    def n(self) -> int:
        return self.X_train.shape[0]

    @property
    def d(self) -> int:
        return self.X_train.shape[1]

    def summary(self) -> dict:
        return dict(set=self.name, n_train=self.n, n_full=self.n_full, n_test=self.X_test.shape[0], d=self.d,
                    storage="CSR" if self.sparse else "dense", gamma=self.gamma)


_split_cache: dict[str, object] = {}


def load_set(name: str, quick: bool) -> Data | None:
    """Set ``name`` of SETS (``None`` when its files are missing); --quick: 2,000 training and test
    rows (seeded random subsets, the same rows for a set and its -dense variant)."""
    base, dense = SETS[name]
    if base not in _split_cache:
        _split_cache.clear()           # keep one loaded split (a set and its -dense variant follow each other)
        _split_cache[base] = _datasets.load(base)
    split = _split_cache[base]
    if split is None:
        return None
    X_train, y_train, X_test, y_test = split
    n_full = X_train.shape[0]
    if quick:
        X_train, y_train = bench_svc.subsample_rows(X_train, y_train, QUICK_N_TRAIN, seed=SEED)
        X_test, y_test = bench_svc.subsample_rows(X_test, y_test, QUICK_N_TEST, seed=SEED)
    if dense:
        X_train, X_test = X_train.toarray(), X_test.toarray()
    if dense == "scaled":  # what make_pipeline(StandardScaler(), SVC()) hands the SVC
        mean, std = X_train.mean(0), X_train.std(0)
        std[std == 0] = 1.0
        X_train, X_test = (X_train - mean) / std, (X_test - mean) / std
    return Data(name, n_full, X_train, y_train, X_test, y_test)


# ======================================================================================== fits
def available_systems(wanted) -> tuple[list[str], list[str]]:
    """The systems of ``wanted`` that import; the others with a note."""
    out, notes = [], []
    for system in wanted:
        try:
            if system == "sparsekernel":
                from sparsekernel import SVC  # noqa: F401
            elif system == "intelex":
                from sklearnex.svm import SVC  # noqa: F401
            else:
                from sklearn.svm import SVC  # noqa: F401
        except Exception as exc:
            notes.append(f"{SYSTEM_LABELS[system]} could not be imported ({exc!r}): skipped.")
            continue
        out.append(system)
    return out, notes


def make_svc(system: str, C: float, gamma: float, n_jobs: int = 1):
    common = dict(C=C, kernel="rbf", gamma=gamma, tol=TOL, cache_size=CACHE_SIZE)
    if system == "sparsekernel":
        from sparsekernel import SVC
        return SVC(**common, n_jobs=n_jobs)
    if system == "intelex":
        from sklearnex.svm import SVC
    else:
        from sklearn.svm import SVC
    return SVC(**common)


def timed_fit(system: str, model, X, y) -> tuple[float, str | None]:
    """Wall seconds of ``model.fit`` (warnings ignored); for sklearnex also its route."""
    gc.collect()
    log = bench_svc.sklearnex_messages() if system == "intelex" else nullcontext()
    with warnings.catch_warnings(), log as messages:
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        model.fit(X, y)
        seconds = time.perf_counter() - t0
    return seconds, (None if messages is None else bench_svc._route(messages))


def warm_up(systems, n_jobs_list=(1,)) -> None:
    """Untimed tiny fits: imports, thread pools and first-touch allocations."""
    rng = np.random.RandomState(0)
    X = rng.standard_normal((300, 4))
    y = np.where(X[:, 0] * X[:, 1] > 0, 1.0, -1.0)
    for system in systems:
        for n_jobs in (n_jobs_list if system == "sparsekernel" else (1,)):
            try:
                timed_fit(system, make_svc(system, 1.0, 0.25, n_jobs), X, y)
            except Exception:
                pass


def pack_predictions(pred) -> dict:
    """Binary test predictions as base64 of the packed bits ``pred > 0``."""
    pred = np.asarray(pred)
    return dict(n=int(len(pred)), bits=base64.b64encode(np.packbits(pred > 0).tobytes()).decode())


def unpack_predictions(packed: dict):
    bits = np.frombuffer(base64.b64decode(packed["bits"]), dtype=np.uint8)
    return np.unpackbits(bits)[:packed["n"]].astype(bool)


def agreement(a: dict | None, b: dict | None) -> float | None:
    if not a or not b or a.get("n") != b.get("n"):
        return None
    return float(np.mean(unpack_predictions(a) == unpack_predictions(b)))


def dual_from_dual_coef(model, X, gamma: float) -> float:
    """1/2 c'Kc - sum |c| (= 1/2 a'Qa - sum a, c = y a) of a fitted scikit-learn / sklearnex SVC, as
    ``bench_csmo.dual_objective_sklearn`` computes it, with K(SV, SV) in blocks of rows (a9a's or
    nonlinear's support vectors would need gigabytes at once)."""
    from sklearn.metrics.pairwise import rbf_kernel

    c = model.dual_coef_
    c = (c.toarray() if sp.issparse(c) else np.asarray(c)).ravel()
    Xs = X[np.asarray(model.support_)]
    quad = 0.0
    for i in range(0, len(c), DUAL_BLOCK):
        K = rbf_kernel(Xs[i:i + DUAL_BLOCK], Xs, gamma=gamma)
        quad += float(c[i:i + DUAL_BLOCK] @ (K @ c))
    return 0.5 * quad - float(np.sum(np.abs(c)))


def describe_fit(system: str, model, data: Data, *, predictions: bool, dual: bool) -> dict:
    """nSV, test accuracy (and predictions), the dual objective and the solver's statistics."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pred = np.asarray(model.predict(data.test(system)))
    out = dict(n_sv=int(len(model.support_)), accuracy=100.0 * float(np.mean(pred == data.y_test)))
    if predictions:
        out["predictions"] = pack_predictions(pred)
    n_iter = getattr(model, "n_iter_", None)
    out["n_iter_attr"] = None if n_iter is None else int(np.sum(n_iter))
    if system.startswith("sparsekernel"):
        st = model.solver_stats_[0]
        out.update(dual=float(model.dual_objective_[0]), n_iter=st.get("n_iter"),
                   n_outer_iter=st.get("n_outer_iter"), kernel_evals=st.get("kernel_evals"),
                   n_threads=st.get("n_threads"), solver=getattr(model, "solver_", None),
                   converged=bool(getattr(model, "converged_", True)))
    elif dual:
        try:
            out["dual"] = dual_from_dual_coef(model, data.train(system), data.gamma)
        except Exception as exc:
            out["dual_error"] = repr(exc)
    return out


def key_of(name: str, C: float, system: str) -> str:
    return f"{name}|C={C:g}|{system}"


def med(result: dict | None) -> float | None:
    if not result or result.get("error") or not result.get("times"):
        return None
    return statistics.median(result["times"])


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def rel_diff(a, b):
    if a is None or b is None:
        return None
    return abs(a - b) / max(abs(a), abs(b), 1e-12)


def sets_for(args, defaults) -> list[str]:
    if args.sets:
        return list(args.sets)
    return list(QUICK_SETS) if args.quick else list(defaults)


# ======================================================================================== onecore
def onecore_config(args, data: Data, C: float) -> dict:
    return dict(part="onecore", n_train=data.n, n_test=data.X_test.shape[0], d=data.d, gamma=data.gamma, C=C,
                tol=TOL, cache_size=CACHE_SIZE, repeats=args.repeats, cores=sorted(args.cores), quick=args.quick)


def cmd_onecore(args) -> int:
    store = Store("onecore", args.quick, args.force)
    wanted = [s for s in SYSTEMS if s not in args.skip_systems]
    systems, notes = available_systems(wanted)
    names = sets_for(args, SETS)
    print(f"onecore: CPUs {sorted(os.sched_getaffinity(0))}; sets {names}; C {args.C}; systems {systems}; "
          f"repeats {args.repeats}", flush=True)
    warm_up(systems)
    render_onecore(store, names, notes, complete=False)
    for name in names:
        data = load_set(name, args.quick)
        if data is None:
            notes.append(f"{name}: data files missing, skipped.")
            print(notes[-1], flush=True)
            continue
        for C in args.C:
            cfg = onecore_config(args, data, C)
            todo = [s for s in systems if not store.done(key_of(name, C, s), cfg)]
            if not todo:
                print(f"{name} C={C:g}: done", flush=True)
                continue
            times = {s: [] for s in todo}
            extra = {s: {} for s in todo}
            models = {}
            for _ in range(args.repeats):            # interleaved: ours, intelex, sklearn, ours, ...
                for s in todo:
                    if extra[s].get("error"):
                        continue
                    models.pop(s, None)              # free the previous fit first
                    model = make_svc(s, C, data.gamma, n_jobs=1)
                    try:
                        seconds, route = timed_fit(s, model, data.train(s), data.y_train)
                    except Exception as exc:
                        extra[s]["error"] = f"fit failed: {exc!r}"
                        continue
                    times[s].append(seconds)
                    models[s] = model
                    if route is not None:
                        extra[s]["route"] = route
            for s in todo:
                res = dict(set=name, C=C, system=s, data=data.summary(), times=times[s], **extra[s])
                if s in models:
                    try:
                        res.update(describe_fit(s, models[s], data, predictions=True, dual=True))
                    except Exception as exc:
                        res["error"] = f"evaluation failed: {exc!r}"
                store.put(key_of(name, C, s), cfg, res)
            models.clear()
            row = onecore_row(store, name, C)
            print(_harness.md_table(ONECORE_HEADERS, [row])[-1], flush=True)
            render_onecore(store, names, notes, complete=False)
        del data
        gc.collect()
    render_onecore(store, names, notes + threading_note(store), complete=True)
    print(f"wrote {store.md_path}", flush=True)
    return 0


ONECORE_HEADERS = ["data", "C", "n_train", "d", "sparsekernel s", "intelex s", "sklearn s", "ours/intelex",
                   "ours/best peer", "nSV (ours/sklearn)", "acc % (ours / intelex / sklearn)",
                   "agreement with LIBSVM %"]
ONECORE_DETAIL_HEADERS = ["data", "C", "ours n_iter", "ours n_outer_iter", "ours kernel evals (M)", "ours solver_",
                          "ours threads", "dual ours", "dual intelex", "dual sklearn", "rel diff ours/sklearn",
                          "sklearn n_iter", "intelex route"]


def _entries(store, name: str, C: float, systems) -> dict[str, dict | None]:
    out = {}
    for s in systems:
        e = store.entries.get(key_of(name, C, s))
        out[s] = None if e is None else e["result"]
    return out


def onecore_row(store, name: str, C: float) -> list[str]:
    fmt = _harness.fmt
    r = _entries(store, name, C, SYSTEMS)
    t = {s: med(r[s]) for s in SYSTEMS}
    peers = [t[s] for s in ("intelex", "sklearn") if t[s] is not None]
    data = next((x["data"] for x in r.values() if x and x.get("data")), {})

    def sec(s):
        x = r[s]
        if x is None:
            return "-"
        return "err" if x.get("error") and t[s] is None else fmt(t[s], ".3f")

    def get(s, k, spec):
        return fmt(r[s].get(k) if r[s] else None, spec)

    agree = agreement((r["sparsekernel"] or {}).get("predictions"), (r["sklearn"] or {}).get("predictions"))
    return [name, f"{C:g}", fmt(data.get("n_train"), "d"), fmt(data.get("d"), "d"),
            sec("sparsekernel"), sec("intelex"), sec("sklearn"),
            fmt(ratio(t["sparsekernel"], t["intelex"]), ".2f"),
            fmt(ratio(t["sparsekernel"], min(peers) if peers else None), ".2f"),
            f"{get('sparsekernel', 'n_sv', 'd')} / {get('sklearn', 'n_sv', 'd')}",
            f"{get('sparsekernel', 'accuracy', '.2f')} / {get('intelex', 'accuracy', '.2f')} / "
            f"{get('sklearn', 'accuracy', '.2f')}",
            fmt(None if agree is None else 100.0 * agree, ".2f")]


def onecore_detail_row(store, name: str, C: float) -> list[str]:
    fmt = _harness.fmt
    r = _entries(store, name, C, SYSTEMS)
    o, ilx, skl = (r[s] or {} for s in SYSTEMS)
    kev = o.get("kernel_evals")
    return [name, f"{C:g}", fmt(o.get("n_iter"), "d"), fmt(o.get("n_outer_iter"), "d"),
            fmt(None if kev is None else kev / 1e6, ".1f"), str(o.get("solver") or "-"),
            fmt(o.get("n_threads"), "d"), fmt(o.get("dual"), ".6g"), fmt(ilx.get("dual"), ".6g"),
            fmt(skl.get("dual"), ".6g"), fmt(rel_diff(o.get("dual"), skl.get("dual")), ".1e"),
            fmt(skl.get("n_iter_attr"), "d"), ilx.get("route") or "-"]


def _present(store, names):
    """(set, C) pairs with at least one stored entry, in the order of ``names`` then C."""
    seen = {(e["result"].get("set"), float(e["result"].get("C"))) for e in store.entries.values()}
    order = list(names) + sorted({n for n, _ in seen} - set(names), key=list(SETS).index)
    return [(n, C) for n in order for C in sorted({c for m, c in seen if m == n})]


def render_onecore(store, names, notes, complete: bool) -> None:
    pairs = _present(store, names)
    body = [
        f"Every fit with the benchmark process pinned to one core (`os.sched_setaffinity` before numpy, "
        f"scikit-learn, scikit-learn-intelex and sparsekernel are imported; nproc above).  Systems: "
        f"sparsekernel.SVC(n_jobs=1), sklearnex.svm.SVC (oneDAL, default threads), sklearn.svm.SVC (LIBSVM); "
        f"kernel rbf, gamma = the value of 'scale' computed once per set, tol = {TOL:g}, cache_size = "
        f"{CACHE_SIZE} MB.  The three systems are fitted interleaved (ours, intelex, sklearn, ours, ...); "
        f"seconds = median wall-clock `fit` time over the repeats (the JSON has every time).  ours/intelex and "
        f"ours/best peer: ratios of the medians (below 1: ours is faster; best peer = the faster of intelex "
        f"and sklearn).  acc % on the test split; agreement with LIBSVM = fraction of the test predictions "
        f"equal to sklearn.svm.SVC's.  The -dense sets are the CSR sets as dense float64 arrays; sparsekernel "
        f"gets the CSR matrices as loaded, the peers int32-index copies.",
        "",
    ]
    body += _harness.md_table(ONECORE_HEADERS, [onecore_row(store, n, C) for n, C in pairs])
    body += ["", "## Solver details", "",
             "sparsekernel: `solver_stats_[0]` (n_iter, n_outer_iter, kernel_evals, n_threads) and `solver_` "
             "('-' when the attribute does not exist); dual = 1/2 a'Qa - sum a (ours: `dual_objective_[0]`; "
             "the peers: recomputed from `dual_coef_` and the support vectors); sklearn n_iter = `n_iter_`; "
             "intelex route = whether sklearnex ran its oneDAL fit.", ""]
    body += _harness.md_table(ONECORE_DETAIL_HEADERS, [onecore_detail_row(store, n, C) for n, C in pairs])
    errors = [f"{e['result']['set']} C={e['result']['C']:g} {e['result']['system']}: {e['result']['error']}"
              for e in store.entries.values() if e["result"].get("error")]
    errors += [f"{e['result']['set']} C={e['result']['C']:g} {e['result']['system']}: dual not computed "
               f"({e['result']['dual_error']})" for e in store.entries.values() if e["result"].get("dual_error")]
    if notes or errors:
        body += ["", "Notes:", "", *[f"- {n}" for n in notes + errors]]
    store.write_md("One core: sparsekernel vs scikit-learn-intelex vs scikit-learn", body, complete)


# ======================================================================================== threads
def threads_config(args, data: Data, C: float, system: str) -> dict:
    return dict(part="threads", n_train=data.n, n_test=data.X_test.shape[0], d=data.d, gamma=data.gamma, C=C,
                tol=TOL, cache_size=CACHE_SIZE, cores=sorted(args.cores), quick=args.quick,
                repeats=args.repeats if system.startswith("sparsekernel") else 1)


def cmd_threads(args) -> int:
    store = Store("threads", args.quick, args.force)
    wanted = [s for s in SYSTEMS if s not in args.skip_systems]
    systems, notes = available_systems(wanted)
    names = sets_for(args, THREAD_SETS)
    ours = [f"sparsekernel-{j}" for j in THREAD_COUNTS] if "sparsekernel" in systems else []
    peers = [s for s in ("intelex", "sklearn") if s in systems]
    print(f"threads: CPUs {sorted(os.sched_getaffinity(0))}; sets {names}; C {args.C}; "
          f"ours {ours}; peers {peers}; repeats {args.repeats}", flush=True)
    warm_up(systems, THREAD_COUNTS)
    render_threads(store, names, notes, complete=False)
    for name in names:
        data = load_set(name, args.quick)
        if data is None:
            notes.append(f"{name}: data files missing, skipped.")
            print(notes[-1], flush=True)
            continue
        if data.n_full < args.min_rows:
            notes.append(f"{name}: {data.n_full:,} training rows (< {args.min_rows:,}), skipped.")
            print(notes[-1], flush=True)
            continue
        for C in args.C:
            todo = [s for s in ours + peers if not store.done(key_of(name, C, s), threads_config(args, data, C, s))]
            if not todo:
                print(f"{name} C={C:g}: done", flush=True)
                continue
            times = {s: [] for s in todo}
            extra = {s: {} for s in todo}
            models = {}
            todo_ours = [s for s in todo if s.startswith("sparsekernel")]
            for _ in range(args.repeats):            # interleaved: 1 thread, 2 threads, 1, 2, ...
                for s in todo_ours:
                    if extra[s].get("error"):
                        continue
                    models.pop(s, None)
                    model = make_svc("sparsekernel", C, data.gamma, n_jobs=int(s.rsplit("-", 1)[1]))
                    try:
                        seconds, _ = timed_fit("sparsekernel", model, data.train(s), data.y_train)
                    except Exception as exc:
                        extra[s]["error"] = f"fit failed: {exc!r}"
                        continue
                    times[s].append(seconds)
                    models[s] = model
            for s in todo:
                if s.startswith("sparsekernel"):
                    continue
                model = make_svc(s, C, data.gamma)   # the peers once, their default threads
                try:
                    seconds, route = timed_fit(s, model, data.train(s), data.y_train)
                except Exception as exc:
                    extra[s]["error"] = f"fit failed: {exc!r}"
                    continue
                times[s].append(seconds)
                models[s] = model
                if route is not None:
                    extra[s]["route"] = route
            for s in todo:
                res = dict(set=name, C=C, system=s, data=data.summary(), times=times[s], **extra[s])
                if s in models:
                    try:
                        res.update(describe_fit(s, models.pop(s), data, predictions=False, dual=False))
                    except Exception as exc:
                        res["error"] = f"evaluation failed: {exc!r}"
                store.put(key_of(name, C, s), threads_config(args, data, C, s), res)
            models.clear()
            print(_harness.md_table(THREADS_HEADERS, [threads_row(store, name, C)])[-1], flush=True)
            render_threads(store, names, notes, complete=False)
        del data
        gc.collect()
    render_threads(store, names, notes + threading_note(store), complete=True)
    print(f"wrote {store.md_path}", flush=True)
    return 0


THREADS_HEADERS = ["data", "C", "n_train", "T(1) s", "T(2) s", "T(1)/T(2)", "threads used (1 / 2)",
                   "intelex s (2 cores)", "sklearn s (2 cores)", "ours(2 threads)/best peer(2 cores)",
                   "nSV (1 / 2 / sklearn)", "acc % (1 / 2 / sklearn)"]
THREAD_SYSTEMS = ("sparsekernel-1", "sparsekernel-2", "intelex", "sklearn")


def threads_row(store, name: str, C: float) -> list[str]:
    fmt = _harness.fmt
    r = _entries(store, name, C, THREAD_SYSTEMS)
    t = {s: med(r[s]) for s in THREAD_SYSTEMS}
    libsvm_from_onecore = False
    if t["sklearn"] is None:
        # LIBSVM runs one thread whatever the cores: its one-core time stands for two cores
        onecore = Store.load("onecore", store.quick)
        if onecore is not None:
            one = _entries(onecore, name, C, ("sklearn",))["sklearn"]
            t["sklearn"] = med(one)
            if one:
                r["sklearn"] = one
            libsvm_from_onecore = t["sklearn"] is not None
    peers = [t[s] for s in ("intelex", "sklearn") if t[s] is not None]
    data = next((x["data"] for x in r.values() if x and x.get("data")), {})

    def get(s, k, spec):
        return fmt(r[s].get(k) if r[s] else None, spec)

    def sec(s):
        return "err" if r[s] and r[s].get("error") and t[s] is None else fmt(t[s], ".3f")

    return [name, f"{C:g}", fmt(data.get("n_train"), "d"), sec("sparsekernel-1"), sec("sparsekernel-2"),
            fmt(ratio(t["sparsekernel-1"], t["sparsekernel-2"]), ".2f"),
            f"{get('sparsekernel-1', 'n_threads', 'd')} / {get('sparsekernel-2', 'n_threads', 'd')}",
            sec("intelex"), sec("sklearn") + (" (1 core)" if libsvm_from_onecore else ""),
            fmt(ratio(t["sparsekernel-2"], min(peers) if peers else None), ".2f"),
            f"{get('sparsekernel-1', 'n_sv', 'd')} / {get('sparsekernel-2', 'n_sv', 'd')} / "
            f"{get('sklearn', 'n_sv', 'd')}",
            f"{get('sparsekernel-1', 'accuracy', '.2f')} / {get('sparsekernel-2', 'accuracy', '.2f')} / "
            f"{get('sklearn', 'accuracy', '.2f')}"]


def render_threads(store, names, notes, complete: bool) -> None:
    pairs = _present(store, names)
    reps = sorted({len(e["result"].get("times", [])) for k, e in store.entries.items()
                   if k.endswith(("sparsekernel-1", "sparsekernel-2"))})
    body = [
        "sparsekernel's parallel efficiency: the benchmark process on two cores (affinity set with "
        "`os.sched_setaffinity` before the libraries are imported), sparsekernel.SVC fitted with n_jobs=1 and "
        f"n_jobs=2 interleaved (1, 2, 1, 2, ...; repeats per setting: {', '.join(map(str, reps)) or '-'}); "
        "T(1), T(2) = median wall-clock `fit` seconds, T(1)/T(2) = the speed-up from the second thread.  "
        "threads used = `solver_stats_[0]['n_threads']`.  sklearnex.svm.SVC and sklearn.svm.SVC are fitted "
        "once per set and C on the same two cores with their default threads (oneDAL: all the process may "
        "use; LIBSVM: one); ours(2 threads)/best peer(2 cores) = T(2) / the faster of the two (below 1: ours "
        f"is faster); a sklearn time marked (1 core) is the onecore part's (LIBSVM runs one thread whatever "
        f"the cores; the threads part then ran with --skip-systems sklearn).  The issue's efficiency bar "
        f"(T(1)/T(2) >= 1.85) is on the sets of >= 30,000 rows; the smaller ones are here for the two-thread "
        f"comparison with the peers.  Kernel rbf, gamma = the value of "
        f"'scale', tol = {TOL:g}, cache_size = {CACHE_SIZE} MB.",
        "",
    ]
    body += _harness.md_table(THREADS_HEADERS, [threads_row(store, n, C) for n, C in pairs])
    errors = [f"{e['result']['set']} C={e['result']['C']:g} {e['result']['system']}: {e['result']['error']}"
              for e in store.entries.values() if e["result"].get("error")]
    errors += [f"{e['result']['set']} C={e['result']['C']:g} intelex did not run on oneDAL: {e['result']['route']}"
               for e in store.entries.values() if e["result"].get("route") not in (None, "oneDAL")]
    if notes or errors:
        body += ["", "Notes:", "", *[f"- {n}" for n in notes + errors]]
    store.write_md("Threads: sparsekernel on 1 and 2 threads, peers on 2 cores", body, complete)


# ======================================================================================== search
def search_estimator(variant: str):
    if variant == "sk-default":
        from sparsekernel import SVC
        return SVC()
    if variant == "sk-n_jobs1":
        from sparsekernel import SVC
        return SVC(n_jobs=1)
    if variant == "intelex":
        from sklearnex.svm import SVC
        return SVC()
    from sklearn.svm import SVC
    return SVC()


def run_search(variant: str, grid: dict, X, y, cv: int = SEARCH_FOLDS) -> tuple[float, object]:
    from sklearn.model_selection import GridSearchCV

    search = GridSearchCV(search_estimator(variant), grid, cv=cv, n_jobs=-1)
    gc.collect()
    with warnings.catch_warnings():      # GridSearchCV hands these filters to its workers
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        search.fit(X, y)
        seconds = time.perf_counter() - t0
    return seconds, search


def cmd_search(args) -> int:
    from joblib import cpu_count

    store = Store("search", args.quick, args.force)
    wanted = [v for v in SEARCH_VARIANTS
              if not (v.startswith("sk-") and "sparsekernel" in args.skip_systems) and v not in args.skip_systems]
    ok, notes = available_systems(sorted({"sparsekernel" if v.startswith("sk-") else v for v in wanted}))
    variants = [v for v in wanted if ("sparsekernel" if v.startswith("sk-") else v) in ok]
    rows = QUICK_SEARCH_ROWS if args.quick else SEARCH_ROWS
    split = _datasets.load(SEARCH_SET)
    if split is None:
        notes.append(f"{SEARCH_SET}: data files missing, the search was skipped.")
        print(notes[-1], flush=True)
        render_search(store, notes, complete=True)
        return 0
    X_full, y_full = split[0], split[1]
    X = _datasets.with_index_dtype(X_full[:rows], X_full.indices.dtype) if sp.issparse(X_full) else X_full[:rows]
    y = y_full[:rows]
    X_peer = _datasets.as_int32_indices(X)
    del split, X_full, y_full
    gamma = bench_svc.scale_gamma(X)
    grid = {"C": [float(c) for c in np.logspace(*SEARCH_C)],
            "gamma": [float(f * gamma) for f in SEARCH_GAMMA_FACTORS]}
    cfg = dict(part="search", set=SEARCH_SET, rows=int(X.shape[0]), d=int(X.shape[1]), grid=grid, cv=SEARCH_FOLDS,
               n_jobs=-1, cores=sorted(args.cores), quick=args.quick)
    store.summary.update(search=dict(set=SEARCH_SET, rows=int(X.shape[0]), d=int(X.shape[1]), gamma_scale=gamma,
                                     grid=grid, joblib_cpu_count=int(cpu_count())))
    print(f"search: CPUs {sorted(os.sched_getaffinity(0))}; joblib cpu_count {cpu_count()}; {SEARCH_SET} first "
          f"{X.shape[0]:,} rows; variants {variants}; repeats {args.repeats}", flush=True)

    # warm-up (untimed): the worker processes start and import every library
    small = slice(0, min(300, X.shape[0]))
    for v in variants:
        try:
            run_search(v, {"C": [1.0], "gamma": [gamma]}, (X if v.startswith("sk-") else X_peer)[small],
                       y[small], cv=2)
        except Exception:
            pass
    render_search(store, notes, complete=False)

    def one(variant: str, rep: int) -> None:
        key = f"{SEARCH_SET}|{variant}|{rep}"
        if store.done(key, cfg):
            print(f"{key}: done", flush=True)
            return
        try:
            seconds, search = run_search(variant, grid, X if variant.startswith("sk-") else X_peer, y)
        except Exception as exc:
            store.put(key, cfg, dict(variant=variant, rep=rep, error=f"search failed: {exc!r}"))
            print(f"{key}: error {exc!r}", flush=True)
            return
        cvr = search.cv_results_
        res = dict(variant=variant, rep=rep, seconds=seconds, n_fits=int(len(cvr["params"]) * SEARCH_FOLDS),
                   fit_seconds_sum=float(np.sum(cvr["mean_fit_time"]) * SEARCH_FOLDS),
                   refit_seconds=float(getattr(search, "refit_time_", float("nan"))),
                   best_params=search.best_params_, best_score=float(search.best_score_),
                   mean_test_score=[float(s) for s in cvr["mean_test_score"]])
        store.put(key, cfg, res)
        print(f"{key}: {seconds:.2f} s, best {search.best_params_} {search.best_score_:.4f}", flush=True)
        render_search(store, notes, complete=False)

    for rep in range(args.repeats):          # interleaved: SVC(), SVC(n_jobs=1), SVC(), ...
        for v in ("sk-default", "sk-n_jobs1"):
            if v in variants:
                one(v, rep)
    for v in ("intelex", "sklearn"):         # the peers once
        if v in variants:
            one(v, 0)
    render_search(store, notes + threading_note(store), complete=True)
    print(f"wrote {store.md_path}", flush=True)
    return 0


def render_search(store, notes, complete: bool) -> None:
    fmt = _harness.fmt
    info = store.summary.get("search", {})
    by = {}
    for e in store.entries.values():
        r = e["result"]
        by.setdefault(r["variant"], []).append(r)
    med_s = {v: statistics.median(r["seconds"] for r in rs if not r.get("error"))
             for v, rs in by.items() if any(not r.get("error") for r in rs)}
    rows = []
    for v in SEARCH_VARIANTS:
        rs = sorted(by.get(v, []), key=lambda r: r["rep"])
        good = [r for r in rs if not r.get("error")]
        if not rs:
            continue
        if not good:
            rows.append([SEARCH_LABELS[v], "err", "-", "-", "-", "-", "-", "-", "-"])
            continue
        last = good[-1]
        bp = last["best_params"]
        rows.append([SEARCH_LABELS[v], fmt(med_s[v], ".2f"), ", ".join(fmt(r["seconds"], ".2f") for r in good),
                     str(last["n_fits"]), fmt(statistics.median(r["fit_seconds_sum"] for r in good), ".2f"),
                     fmt(statistics.median(r["refit_seconds"] for r in good), ".2f"),
                     f"C={bp.get('C'):g}, gamma={bp.get('gamma'):.4g}", fmt(100.0 * last["best_score"], ".2f"),
                     fmt(ratio(med_s[v], med_s.get("sk-n_jobs1")), ".2f")])
    grid = info.get("grid", {})
    body = [
        f"`GridSearchCV(SVC(), grid, cv={SEARCH_FOLDS}, n_jobs=-1)` (default refit=True, accuracy) on the first "
        f"{fmt(info.get('rows'), ',d')} rows of {SEARCH_SET}'s training set (CSR, d = {info.get('d', '-')}), the "
        f"benchmark process on two cores (joblib cpu_count = {info.get('joblib_cpu_count', '-')}, so n_jobs=-1 "
        f"runs {info.get('joblib_cpu_count', '-')} worker processes); grid: C in "
        f"{', '.join(f'{c:g}' for c in grid.get('C', []))} x gamma in "
        f"{', '.join(f'{g:.4g}' for g in grid.get('gamma', []))} (the value of 'scale' = "
        f"{fmt(info.get('gamma_scale'), '.4g')} x {', '.join(f'{f:g}' for f in SEARCH_GAMMA_FACTORS)}).  "
        "Every SVC with its defaults (rbf, tol 1e-3, cache 200 MB) apart from n_jobs.  The two sparsekernel "
        "searches run interleaved; wall = median wall-clock seconds of `search.fit` (every run listed), after "
        "an untimed warm-up search that starts the workers; fit s = the summed mean fit times of the grid "
        "points x folds (time inside the workers), refit s = `refit_time_`; best = `best_params_` and "
        "`best_score_` of the last run; / SVC(n_jobs=1) = median wall / sparsekernel SVC(n_jobs=1)'s.",
        "",
    ]
    body += _harness.md_table(["method", "wall s (median)", "wall s (runs)", "fits", "fit s (sum)", "refit s",
                               "best", "best CV acc %", "/ SVC(n_jobs=1)"], rows)
    r = ratio(med_s.get("sk-default"), med_s.get("sk-n_jobs1"))
    verdict = "-" if r is None else ("PASS" if r <= SEARCH_BAR else "FAIL")
    store.summary["ratio_default_over_n_jobs1"] = r
    store.summary["bar"] = verdict
    body += ["", f"SVC() / SVC(n_jobs=1) = {fmt(r, '.3f')}; bar (within {100 * (SEARCH_BAR - 1):.0f} %: "
                 f"ratio <= {SEARCH_BAR:.2f}): **{verdict}**."]
    errors = [f"{e['result']['variant']} run {e['result']['rep']}: {e['result']['error']}"
              for e in store.entries.values() if e["result"].get("error")]
    if notes or errors:
        body += ["", "Notes:", "", *[f"- {n}" for n in notes + errors]]
    store.write_md("Grid search: sparsekernel SVC() vs SVC(n_jobs=1) in GridSearchCV(n_jobs=-1), and peers",
                   body, complete)


# ======================================================================================== assemble
def region_work_section(args) -> list[str]:
    """The work each parallel region of sparsekernel's fits carries, from the onecore entries: per
    outer iteration of the two-level route (kernel block, gradient update, scans) or per step of
    the pair route (gradient update + scan, kernel rows on a cache miss), in multiply-adds."""
    store = Store.load("onecore", args.quick)
    if store is None:
        return []
    fmt, md_table = _harness.fmt, _harness.md_table
    rows = []
    for key in sorted(store.entries):
        r = store.entries[key]["result"]
        if r.get("system") != "sparsekernel" or r.get("error") or not r.get("n_iter"):
            continue
        n, d = r["data"]["n_train"], r["data"]["d"]
        if r.get("solver") == "batched":
            outer = max(1, r["n_outer_iter"])
            q = 256  # the default block at 1-4 threads (every set here has room for it in 200 MB)
            rows.append([r["set"], fmt(r["C"], "g"), "batched", n, d, outer,
                         fmt(r["kernel_evals"] / outer * d / 1e6, ".0f"), fmt(q * n / 1e6, ".1f"),
                         fmt(2 * n / 1e6, ".2f"), fmt(r["n_iter"] / outer * q / 1e6, ".3f")])
        else:
            steps = max(1, r["n_iter"])
            rows.append([r["set"], fmt(r["C"], "g"), r.get("solver") or "smo2", n, d, steps,
                         fmt(r["kernel_evals"] / steps * d / 1e6, ".2f"), fmt(2 * n / 1e6, ".2f"),
                         fmt(2 * n / 1e6, ".2f"), "-"])
    if not rows:
        return []
    return [
        "## Work per parallel region",
        "",
        "From the onecore fits (counts, not times): per outer iteration of the two-level route ('batched': "
        "q = 256 rows per block), or per step of the pair route ('smo2'), the millions of multiply-adds each "
        "parallel region carries: the kernel values computed (entries x d, an upper bound for CSR data; for "
        "the block spread over column tiles of 32 points, for a pair step over the positions of the rows "
        "missing from the cache), the gradient update (at most q x N for a block, 2N for a pair step; spread over positions) "
        "and the scans (selection of the block or of the pair, about 2N). The serial part of an outer "
        "iteration is the inner problem on the q x q sub-matrix (its pair steps x q, last column). A parallel "
        "region pays off on t threads when each thread's share is well above a task hand-off (about 1e4 "
        "multiply-adds): the block regions carry 1e3-1e4 times that at N = 1e5 and grow as N (the block and "
        "the update are q x N); a pair step carries 2N = 2e5 in all, about 1e4 per thread at 16 threads, "
        "which is why the pair route stops scaling there and the two-level route does not (the scans, 2N per "
        "outer iteration, are its smallest regions; they are once per block instead of once per pair step).",
        "",
        *md_table(["data", "C", "route", "N", "d", "outer iterations / steps", "kernel values x d (M)",
                   "gradient update (M)", "scans (M)", "serial inner (M)"], rows),
        "",
    ]


def cmd_assemble(args) -> int:
    cpu = _harness.cpu_model()
    lines = [
        f"Produced by `benchmarks/bench_scaling.py` (`--part onecore`, `--part threads`, `--part search`, "
        f"`--part assemble`) on {cpu} ({os.cpu_count()} CPUs); each section lists its own date, command, "
        f"versions and repository revision.",
        "",
        "Method.  Every part sets the CPU affinity of the benchmark process with `os.sched_setaffinity` at the "
        "start of `main()`, before numpy, scikit-learn, scikit-learn-intelex or sparsekernel are imported, so that "
        "OpenMP, oneDAL's TBB and OpenBLAS size their thread pools from it: `onecore` runs on one core, "
        "`threads` and `search` on two.  Each section ends with the affinity of the process's threads after "
        "the fits.  Fits of the systems compared in one row are interleaved (A, B, C, A, B, C, ...) so that all "
        "see the same machine load, and the tables give the median wall-clock time over the repeats (the JSON "
        "next to each section has every time).  Untimed warm-up fits run first.  All SVCs use kernel rbf, "
        "tol 1e-3 and a 200 MB cache; the fits use gamma = the value of scikit-learn's 'scale' computed once "
        "per set.",
        "",
        "- `onecore`: sparsekernel.SVC(n_jobs=1), sklearnex.svm.SVC and sklearn.svm.SVC on one core.",
        "- `threads`: sparsekernel.SVC with n_jobs=1 and n_jobs=2 on two cores; sklearnex and sklearn once "
        "each on the same two cores with their default threads.",
        "- `search`: GridSearchCV(SVC(), cv=5, n_jobs=-1) against GridSearchCV(SVC(n_jobs=1), cv=5, n_jobs=-1) "
        "with sparsekernel's SVC, and the same search with sklearn's and sklearnex's SVC, on two cores.",
        "",
    ]
    sections, missing = [], []
    for part in ("onecore", "threads", "search"):
        md = RESULTS / f"{Store.stem(part, args.quick)}.md"
        if md.exists():
            sections.append(md.read_text())
        else:
            missing.append(part)
    if missing:
        lines += [f"Parts not run yet (no results file): {', '.join(missing)}.", ""]
    lines += region_work_section(args)
    _harness.write_assembled(RESULTS / ("scaling_quick.md" if args.quick else "scaling.md"),
                             "Scaling: one core, two threads, grid searches", lines, sections, args.quick)
    return 0


# ======================================================================================== command line


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", required=True, choices=["onecore", "threads", "search", "assemble"])
    parser.add_argument("--quick", action="store_true",
                        help=f"smoke test: {QUICK_N_TRAIN:,} training / {QUICK_N_TEST:,} test rows of "
                             f"{' and '.join(QUICK_SETS)}, {QUICK_SEARCH_ROWS:,} rows for the search, 1 repeat "
                             "(*_quick files)")
    parser.add_argument("--cores", type=parse_cores, default=None,
                        help="CPU ids the process is pinned to (default: 0 for onecore, 0,1 for threads and search)")
    parser.add_argument("--C", type=csv_list(float), default=csv_list(float)(DEFAULT_C),
                        help=f"C values (default {DEFAULT_C})")
    parser.add_argument("--sets", type=csv_list(str, SETS), default=None,
                        help=f"comma-separated sets (onecore default: {','.join(SETS)}; threads default: "
                             f"{','.join(THREAD_SETS)})")
    parser.add_argument("--skip-systems", type=csv_list(str, SYSTEMS), default=[],
                        help=f"comma-separated systems not to run, of {','.join(SYSTEMS)} (search: sparsekernel "
                             "skips both sparsekernel searches)")
    parser.add_argument("--min-rows", type=int, default=THREAD_MIN_ROWS,
                        help="threads part: skip sets with fewer training rows (default: none skipped)")
    parser.add_argument("--repeats", type=int, default=None,
                        help="interleaved repeats, medians (default: onecore 1, threads 3, search 3; --quick 1)")
    parser.add_argument("--force", action="store_true", help="redo entries already in the JSON")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="data directory (default: $SPARSEKERNEL_DATA or /work/shared/data)")
    args = parser.parse_args(argv)
    if args.repeats is None:
        args.repeats = 1 if args.quick else DEFAULT_REPEATS.get(args.part, 1)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    if args.cores is None and args.part in DEFAULT_CORES:
        args.cores = parse_cores(DEFAULT_CORES[args.part])
    return args


COMMANDS = {"onecore": cmd_onecore, "threads": cmd_threads, "search": cmd_search, "assemble": cmd_assemble}


def main(argv=None) -> int:
    args = parse_args(argv)          # the standard library only
    if args.cores is not None:       # first of all: before numpy and the SVC libraries are imported
        try:
            _harness.pin(args.cores)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    _import_after_pinning()
    if args.data_dir is not None:
        _datasets.set_data_dir(args.data_dir)
        os.environ["SPARSEKERNEL_DATA"] = str(args.data_dir)
    return COMMANDS[args.part](args)


if __name__ == "__main__":
    sys.exit(main())
