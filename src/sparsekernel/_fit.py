"""The fit driver: what every estimator's fit does between its problems and the engine.

A fit states its dual problems (``_engine.DualProblem``); this module solves them: where they start
(:class:`FitWarmth`: a search's warm starts and kept engine sessions, handed to the fit as its
``search_rows`` fit parameter, or the estimator's own last solution with ``warm_start=True``), how
X is stored for the engine (:func:`fit_storage`), how many problems run at once
(:func:`problem_workers`) and, in :func:`solve_problems`, each problem's solve: in a kept session,
from a warm point, or by divide and conquer (``_dc``) when it has no warm start.

Layering: the engine (``_engine``) below, the strategies (``_dc``, ``_warm``) beside each other,
the estimators above; nothing here knows an estimator class.
"""

from __future__ import annotations

import numpy as np

from . import _core, _engine  # (_engine's functions read at call time: a test may wrap the solve)
from ._base import core_matrix, engine_storage, run_parallel
from ._dc import solve_in_memory
from ._warm import DualState, data_fingerprint, own_store, search_store, warm_point


class FitWarmth:
    """Where one fit's problems start and keep their engine sessions: a search's store (explicit, from
    the fit's ``search_rows``), else the estimator's own last solution (``warm_start=True``), else
    nowhere (a cold fit).

    ``data_key`` names the fit's data (X as the engine sees it, labels and weights): a state or a
    session applies only to the same data; ``rows`` are the fit's rows in the search's training
    set when the fit reads the search's X as it is (shared kernel rows apply). ``warm`` False: the
    fit starts cold (``problem.start``) but still keeps its engine sessions and reads the shared
    rows of the store (:meth:`cold`)."""

    def __init__(self, store=None, data_key=None, rows=None, deadline=None, threads=None, warm=True):
        self.store = store
        self.data_key = data_key
        self.rows = rows
        self.deadline = deadline
        self.threads = threads  # the search's thread policy for its fits (None: the estimator's n_jobs)
        self.warm = warm

    def cold(self):
        """This FitWarmth without its warm starts: for the nu formulations, whose start fixes the
        sums of a that the solve keeps (a previous nu's solution is infeasible for another nu), the
        sessions (row caches) and a search's shared kernel rows still apply, as its deadline and
        threads."""
        return FitWarmth(self.store, self.data_key, self.rows, self.deadline, self.threads, warm=False)

    def fit_threads(self, threads):
        """The threads of the fit: the search's choice, else the estimator's own."""
        return threads if self.threads is None else self.threads

    def restricted(self, keep):
        """The FitWarmth of a fit that solves on rows ``keep`` of its X (KLR leaves out the points of
        zero weight): the same states, the shared rows of those points."""
        rows = None if self.rows is None or len(keep) == len(self.rows) else self.rows[keep]
        return FitWarmth(self.store, self.data_key, self.rows if rows is None else rows, self.deadline, self.threads,
                         self.warm)

    def steps_per_variable(self, n_problems):
        """The SMO steps per variable the previous solves of the fit's problems took (their states
        in the store, when the fit starts warm from them); 0 without them."""
        if self.store is None or not self.warm:
            return 0.0
        states = [self.store.state((self.data_key, k)) for k in range(n_problems)]
        if not states or any(s is None for s in states):
            return 0.0
        return sum(s.n_iter for s in states) / max(1, sum(len(s.alpha) for s in states))

    def has_states(self, n_problems):
        return self.store is not None and self.warm and all(self.store.state((self.data_key, k)) is not None
                                                            for k in range(n_problems))


def problem_workers(X, sizes, threads):
    """How many of a fit's problems (of ``sizes`` variables, on the rows of X) to solve at once, in
    threads of their own (each engine then on one thread): ``threads`` when there are at least as
    many problems and each is large enough for the engine to start a team of threads itself
    (``_core.TEAM_MIN_OPS`` operations per pass of a step: solver.hpp's team_pays), else 1 (the
    engine decides its own team). A pool for small problems costs more than the solves (iris, three
    one-vs-one problems of 100 rows: 1.6 ms a fit on one thread, 3.7 ms in a pool of two; 8 ms with
    another process on a core)."""
    if threads <= 1 or len(sizes) < threads:
        return 1
    n, d = X.shape
    cost = X.nnz / max(1, n) if hasattr(X, "nnz") else d
    return threads if min(sizes) * (4.0 + cost) >= _core.TEAM_MIN_OPS else 1


def threads_and_cache(threads, cache_mb, workers):
    """(threads, cache MB) of each of the ``workers`` problems a fit solves at once, out of its
    ``threads`` and ``cache_mb``: the cache budget holds for the problems together, and a problem
    in a pool runs its engine on one thread (the pool is the parallelism)."""
    return (1 if workers > 1 else threads), float(cache_mb) / workers


def solve_problems(X, kernel, problems, options, *, warmth=None, monitor=None, workers=1, divide=None):
    """Solve the problems (DualProblems over rows of X) in ``workers`` threads (each with
    ``options.threads`` of its own), warm-started and in kept sessions where ``warmth`` (FitWarmth)
    has them, reporting to the fit's ``monitor`` (progress, time limit). ``divide`` (a
    ``_dc.Divide``): a problem without a warm start is solved by divide and conquer. Returns
    SolveResults."""
    warmth = warmth if warmth is not None else FitWarmth()
    store = warmth.store
    precomputed = kernel.name == "precomputed"
    source = None
    if store is not None and not precomputed:
        source = store.row_source(kernel, rows=warmth.rows, data_key=warmth.data_key, X=X)
    # sessions outlive the fit (a path, a search's folds): together a fit's keep its cache_size
    session_mb = min(options.cache_mb, options.cache_mb * workers / len(problems))

    def solve_one(k, token):
        pr = problems[k]
        Xc = core_matrix(_engine.problem_rows(X, pr, precomputed))
        a0 = g0 = session = None
        if store is not None:
            key = (warmth.data_key, k)
            if warmth.warm:
                a0, g0 = warm_point(store.state(key), pr.hi, pr.p, kernel, entropic=pr.entropic)
            session = store.take_session(key, kernel)
            if session is None:
                rows_of = None if source is None else source.index[pr.idx if pr.idx is not None else slice(None)]
                session = _engine.open_session(Xc, kernel, pr, cache_mb=session_mb, threads=options.threads,
                                       shared=None if source is None else source.rows, global_index=rows_of)
        progress = monitor.problem(k) if monitor is not None else None
        time_limit = monitor.remaining() if monitor is not None else 0.0
        callback = progress.engine_callback() if progress is not None else None
        if divide is not None and a0 is None:
            r = solve_in_memory(divide, X, Xc, kernel, pr, options, solve=_engine.solve, cancel=token,
                                time_limit=time_limit, progress=callback, session=session)
        else:
            r = _engine.solve(Xc, kernel, pr, options, a0=a0, g0=g0, session=session, cancel=token,
                              time_limit=time_limit, progress=callback)
        if progress is not None:
            progress.end(r.n_iter, r.gap, len(pr.y), r.status)
        r.warm_started = a0 is not None
        if store is not None:
            store.put_session(key, kernel, session)
            store.put_state(key, DualState(r.alpha, r.grad, pr.hi, pr.p, kernel, int(r.n_iter)))
        return r

    return run_parallel(solve_one, list(range(len(problems))), workers)


def fit_storage(X, kernel_name, warmth=None, threads=1):
    """X as the engine reads it (``_base.engine_storage``, on ``threads`` threads), made once for the
    fits of a search that share it (a Pipeline's fold: ``PathStore.derived``)."""
    if warmth is None or warmth.store is None:
        return engine_storage(X, kernel_name, threads)
    return warmth.store.derived(X, ("engine storage", kernel_name), lambda: engine_storage(X, kernel_name, threads))


def fit_warmth(estimator, X, y, sample_weight=None, search_rows=None):
    """The FitWarmth of one fit of ``estimator`` on (X, y, sample_weight) as the engine sees them:
    its search's (``search_rows``, see SearchRows), else with ``warm_start=True`` the estimator's
    own store of its last fit's solutions and sessions, else none."""
    store = search_store(search_rows)
    if store is not None:
        if search_rows.raw and len(search_rows) == X.shape[0]:
            # X is rows ``search_rows`` of the search's training set: they name it (no pass over X)
            rows = np.asarray(search_rows)
            return FitWarmth(store, data_fingerprint(rows, y, sample_weight), rows, store.deadline, store.fit_threads)
        return FitWarmth(store, store.fingerprint(X, y, sample_weight), None, store.deadline, store.fit_threads)
    if bool(getattr(estimator, "warm_start", False)):
        own = estimator.__dict__.get("_warm_store")
        if own is None:
            own = estimator._warm_store = own_store()
        key = data_fingerprint(X, y, sample_weight)
        own.keep_only(key)
        return FitWarmth(own, key)
    return FitWarmth()
