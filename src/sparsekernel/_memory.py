"""Memory: the budget each estimator states for a fit, and the refusal of a request that cannot fit.

The budget of a fit is its peak resident memory above what the process held before it:

    cache_size + c * bytes(X) + k * N + F

with c and k per estimator (``fit_budget`` names every term), F a fixed allowance for the thread
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


# c (times the bytes of X) and k (bytes per sample) of each estimator's budget:
# - X: the validated copy (float64, int32 indices) and, for CSR, the core's CSC copy for its rows;
# - per sample: the engine's vectors (alpha, gradient, G_bar, labels, bounds, active set, index
#   maps), the model's output arrays; SVR has 2N variables.
_SMO = {"SVC": (2.0, 256), "SVR": (2.0, 512), "KernelLogisticRegression": (2.0, 320),
        "SparseKernelLogisticRegression": (2.0, 320)}


def fit_budget(model, X, *, n_splits=None):
    """The memory budget of ``model.fit(X, y)`` as the estimators' docstrings state it (a
    :class:`Budget`), for a fitted ``model`` (the sizes a fit chose: NSSVC's largest s, the compact
    route's basis).

    With ``n_splits``: a PathSearchCV of ``model`` over that many folds: each fold's kept caches
    hold at most ``cache_size`` (a fold's binary problems share it), the shared kernel rows at most
    N^2 float32 values (capped at SHARED_MEMORY_FRACTION of the available memory); the splitter
    copies every fold's rows once, and the refit is not counted."""
    name = type(model).__name__
    n = X.shape[0]
    xb = x_bytes(X)
    cache = float(getattr(model, "cache_size", 0.0)) * MB
    if n_splits is not None:
        from ._warm import shared_rows_mb

        c, k = _SMO[name]
        return Budget(cache=n_splits * cache, shared_rows=shared_rows_mb(n) * MB, X=(c + 2.0) * xb,
                      per_sample=2 * k * n, fixed=FIXED_BYTES)
    if name in _SMO:
        c, k = _SMO[name]
        terms = dict(cache=cache, X=c * xb, per_sample=k * n, fixed=FIXED_BYTES)
        if getattr(model, "solver_", None) == "nystrom":  # the block itself is within cache_size
            terms["compact"] = compact_working_bytes(n, int(model.n_expansion_))
        elif name != "SVC" and name != "SVR":  # the exact route's compact start (freed before SMO)
            terms["compact"] = compact_working_bytes(n, 512)
        return Budget(**terms)
    if name == "NSSVC":
        s = int(np.max(model.s_))
        return Budget(working_set=nssvc_working_bytes(model.kernel, n, X.shape[1], s), X=2.0 * xb,
                      per_sample=256 * n, fixed=FIXED_BYTES)
    if name in ("SLMC", "SparseKFD"):
        n_z = int(model.n_expansion_.max()) if np.ndim(model.n_expansion_) else int(model.n_expansion_)
        return Budget(cache=cache, expansion=expansion_working_bytes(n, n_z), X=3.0 * xb, per_sample=512 * n,
                      fixed=FIXED_BYTES)
    raise ValueError(f"no memory budget is stated for {name}")


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
