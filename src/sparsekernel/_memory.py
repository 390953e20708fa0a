"""Memory: the budget each estimator states for a fit, and the refusal of a request that cannot fit.

The budget of a fit is its peak resident memory above what the process held before it:

    cache_size + c * bytes(X) + k * N + F

with c and k per estimator (each states its terms, ``fit_budget``), F a fixed allowance for the thread
stacks and allocator arenas of the C++ core and the numpy temporaries of validation.
``benchmarks/bench_memory.py`` measures it in a subprocess per fit (peak RSS; tracemalloc cannot see
C++) on a9a, w8a and skin.

Working memory that the caller sizes by a hyper-parameter rather than by ``cache_size`` (NSSVC's
resident kernel columns and s x s systems, SLMC's N_z x N kernel blocks) is checked before it is
allocated: a request larger than the memory the machine has available is refused with
:class:`InsufficientMemoryError` naming the request and the parameter to lower. Blocks whose size
the library chooses (prediction's kernel blocks, the compact KLR route's blocks under cache_size)
degrade instead: they are cut to fit.
"""

from __future__ import annotations

import os

import numpy as np
import scipy.sparse as sp

MB = 2**20

#: F: thread stacks, OpenMP and allocator arenas, validation temporaries
FIXED_BYTES = 64 * MB


class InsufficientMemoryError(MemoryError, ValueError):
    """A fit whose working memory is larger than the memory available; raised before allocating.

    A ValueError (a request that cannot be served with these parameters) and a MemoryError.

    Parameters
    ----------
    message : str
        What needs how much memory, how much is available, and the parameter to lower.
    """

    def __init__(self, message):
        super().__init__(message)


def available_bytes():
    """Memory the machine can give this process now (MemAvailable, or free pages), None if unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def require(nbytes, what, fix):
    """Refuse (InsufficientMemoryError) a working set of ``nbytes`` larger than the available memory.

    ``what`` names the working set, ``fix`` says which parameter lowers it."""
    free = available_bytes()
    if free is not None and nbytes > free:
        raise InsufficientMemoryError(f"{what} needs {nbytes / MB:,.0f} MB, more than the {free / MB:,.0f} MB of "
                                      f"memory available; {fix}")


def x_bytes(X):
    """Bytes of the arrays of X (dense, or the three arrays of a CSR matrix)."""
    if sp.issparse(X):
        X = X.tocsr()
        return int(X.data.nbytes + X.indices.nbytes + X.indptr.nbytes)
    return int(np.asarray(X).nbytes)


class Budget:
    """The terms of a fit's memory budget (bytes) and their sum."""

    def __init__(self, **terms):
        self.terms = {k: float(v) for k, v in terms.items()}
        self.total = sum(self.terms.values())

    def __repr__(self):
        return "Budget(" + ", ".join(f"{k}={v / MB:.1f} MB" for k, v in self.terms.items()) + ")"


def fit_budget(model, X, *, n_splits=None):
    """The memory budget of ``model.fit(X, y)`` as the estimators' docstrings state it (a
    :class:`Budget`), for a fitted ``model`` (the sizes a fit chose: NSSVC's largest s, the compact
    route's basis). Each estimator states its own terms (``_fit_budget``, from the helpers below);
    with ``n_splits``, those of a PathSearchCV of ``model`` over that many folds (SMO estimators)."""
    terms = getattr(model, "_fit_budget", None)
    if terms is None:
        raise ValueError(f"no memory budget is stated for {type(model).__name__}")
    return terms(X, n_splits=n_splits)


def smo_budget(model, X, c, k, n_splits=None, compact=None):
    """An SMO fit's budget: cache_size + c bytes(X) + k N + F, with c and k the estimator's (c: the
    validated copy of X, float64 with int32 indices, and for CSR the core's CSC copy for its rows;
    k per sample: the engine's vectors -- alpha, gradient, G_bar, labels, bounds, active set, index
    maps -- and the model's output arrays), and ``compact`` bytes of a compact KLR route's working
    set when it has one.

    With ``n_splits``: a PathSearchCV over that many folds: each fold's kept caches hold at most
    ``cache_size`` (a fold's binary problems share it), the shared kernel rows at most N^2 float32
    values (capped at SHARED_MEMORY_FRACTION of the available memory); the splitter copies every
    fold's rows once, and the refit is not counted."""
    n, xb = X.shape[0], x_bytes(X)
    cache = float(getattr(model, "cache_size", 0.0)) * MB
    if n_splits is not None:
        return Budget(cache=n_splits * cache, shared_rows=shared_rows_mb(n) * MB, X=(c + 2.0) * xb,
                      per_sample=2 * k * n, fixed=FIXED_BYTES)
    terms = dict(cache=cache, X=c * xb, per_sample=k * n, fixed=FIXED_BYTES)
    if compact is not None:
        terms["compact"] = compact
    return Budget(**terms)


def compact_working_bytes(n, M):
    """The compact KLR route beside its N x (M + 1) block (which cache_size bounds): the subsample
    preconditioner (n_s x M rows, a scaled copy, M x M matrices) and K_ZZ, float64."""
    n_s = min(n, max(2000, 2 * (M + 1)))
    return 8.0 * (2 * n_s * M + 5 * M * M)


def nssvc_working_bytes(kernel, m, n, s):
    """NSSVC's working memory for level s: kernel: the resident m x ceil(1.1 s) block of kernel
    columns (twice while it grows: the old and the new block) and the s x s Gram matrix, its scaled
    copy and Cholesky factor; linear: the s x n rows of T and an s x s (or n x n, Woodbury) system."""
    s = int(s)
    if kernel == "linear":
        r = min(s, n)
        return 8.0 * (2 * s * n + 3 * r * r)
    cap = int(np.ceil(1.1 * s))
    return 8.0 * (2 * m * cap + 3 * s * s)


def expansion_working_bytes(n, n_z):
    """SLMC / SparseKFD: the N_z x N kernel block Psi, its gradient weights and a temporary of each
    (float64), and the N_z x N_z matrices."""
    return 8.0 * (4 * n * n_z + 4 * n_z * n_z)


#: The most of the machine's available memory (at the start of a search) its shared kernel rows may
#: hold; below it they hold every row (N^2 float32 values).
SHARED_MEMORY_FRACTION = 0.25


def shared_rows_mb(n_samples):
    """The size (MB) of a search's shared kernel rows over n_samples points: all N^2 float32 values
    when they fit SHARED_MEMORY_FRACTION of the available memory, else that much."""
    want = (4.0 * n_samples * n_samples + 2**20) / 2**20
    free = available_bytes()
    return want if free is None else min(want, SHARED_MEMORY_FRACTION * free / 2**20)


def fold_rows_mb(n_samples, n_splits):
    """The size (MB) of each fold's shared kernel rows in a Pipeline's search of n_splits folds over
    n_samples points: all of a fold's (n_samples (n_splits - 1) / n_splits)^2 float32 values when the
    n_splits folds' together fit SHARED_MEMORY_FRACTION of the available memory, else that share."""
    n_fold = n_samples if n_splits < 2 else -(-n_samples * (n_splits - 1) // n_splits)
    want = (4.0 * n_fold * n_fold + 2**20) / 2**20
    free = available_bytes()
    return want if free is None else min(want, SHARED_MEMORY_FRACTION * free / 2**20 / max(1, n_splits))
