"""Shared machinery of the estimators: input validation, kernel parameters, conversion of X to the
C++ core's matrix view, per-sample bounds, threads, and the chunked kernel evaluation used by
prediction."""

from __future__ import annotations

import atexit
import contextlib
import functools
from dataclasses import dataclass, fields
import inspect
import math
import numbers
from numbers import Integral, Real
import os
import sys
import threading
import time
import warnings
import weakref
from concurrent.futures import ThreadPoolExecutor

import joblib
import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import assert_all_finite
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.metaestimators import available_if
from sklearn.utils._param_validation import (Interval, Options, RealNotInt, StrOptions, make_constraint,
                                             validate_parameter_constraints)
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _num_samples, check_is_fitted, validate_data
from threadpoolctl import ThreadpoolController

from . import _core, _dask_predict
from ._budget import parse_budget

KERNELS = {"linear": 0, "poly": 1, "rbf": 2, "sigmoid": 3, "laplacian": 4, "precomputed": 5}

# rows of test points per kernel block during prediction (bounds the memory of K(X, SV))
_PREDICT_CHUNK_ENTRIES = 1 << 22


def available_threads():
    """The OpenMP threads this process may use: the core's OpenMP limit (``OMP_NUM_THREADS``,
    threadpoolctl's ``threadpool_limits``, the limit joblib sets in its workers) and, unless
    ``OMP_NUM_THREADS`` says otherwise, the CPUs the process may run on (affinity, a container's
    CPU quota) -- as scikit-learn's OpenMP estimators resolve their threads."""
    limit = max(1, int(_core.max_threads()))
    if os.environ.get("OMP_NUM_THREADS"):
        return limit
    return max(1, min(limit, _cpu_count()))


_CPU_COUNTS = {}  # (pid, CPUs of the affinity mask, LOKY_MAX_CPU_COUNT) -> joblib.cpu_count()


def _cpu_count():
    """joblib's ``cpu_count()`` (the CPUs of the affinity mask, a cgroup CPU quota,
    ``LOKY_MAX_CPU_COUNT``), kept per process, affinity size and environment: it reads the cgroup
    files on every call (130 us, every fit of n_jobs=None). Of its inputs only the cgroup's quota
    is not in the key: it is read once per process (a container resized while the process runs
    keeps the count it started with)."""
    try:
        affinity = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # (no sched_getaffinity: macOS, Windows)
        affinity = None
    key = (os.getpid(), affinity, os.environ.get("LOKY_MAX_CPU_COUNT"))
    count = _CPU_COUNTS.get(key)
    if count is None:
        count = _CPU_COUNTS[key] = int(joblib.cpu_count())
    return count


def idle_cpus():
    """The CPUs of this machine that nothing else is running on now (the kernel's instantaneous
    count of runnable threads, /proc/loadavg, this thread included), at least 1; None where the
    count is not available. Read in microseconds, once per fit: the threads a fit at n_jobs=None
    takes (a second thread on a core another process holds makes a fit 2-3x slower than one thread:
    issue 48's measurements; OpenMP's own dynamic adjustment, omp_set_dynamic, reads the load too)."""
    try:
        with open("/proc/loadavg", "rb") as f:
            running = int(f.read().split()[3].split(b"/")[0])
    except (OSError, ValueError, IndexError):
        return None
    return max(1, (os.cpu_count() or 1) - max(0, running - 1))


def n_threads(n_jobs):
    """Number of threads for ``n_jobs``: None means every thread the process may use
    (:func:`available_threads`) that another process is not running on now (:func:`idle_cpus`),
    -1 every thread the process may use, -2 one fewer, and so on; a positive count is taken as
    given."""
    if n_jobs is None:
        limit = available_threads()
        idle = idle_cpus() if limit > 1 else None
        return limit if idle is None else min(limit, idle)
    if not isinstance(n_jobs, numbers.Integral) or n_jobs == 0:
        raise ValueError(f"n_jobs must be a non-zero integer or None, got {n_jobs!r}")
    return max(1, available_threads() + 1 + int(n_jobs)) if n_jobs < 0 else int(n_jobs)


@functools.lru_cache(maxsize=None)
def init_params(cls):
    """The parameters of estimator class ``cls`` (``BaseEstimator._get_param_names``, which reads the
    signature of ``__init__``: 90 us a call, every fit), kept per class."""
    return frozenset(cls._get_param_names())


class NumInterval(Interval):
    """scikit-learn's ``Interval`` without the bools (True is an int to Python: ``C=True`` or
    ``degree=True`` is a mistake, not 1), and with ``RealNotInt`` read as "a number that is not an
    integer" (numpy's float32 included, which ``RealNotInt`` itself, a float, leaves out). Its test
    is Interval's in plain comparisons (cheaper than Interval's np.isnan: it runs on every fit)."""

    def __init__(self, type, left, right, *, closed):
        super().__init__(type, left, right, closed=closed)
        self._lo = -math.inf if left is None else left
        self._hi = math.inf if right is None else right
        self._lo_closed = closed in ("left", "both")
        self._hi_closed = closed in ("right", "both")

    def is_satisfied_by(self, val):
        if isinstance(val, (bool, np.bool_)):
            return False
        if self.type is Integral:
            if not isinstance(val, Integral):
                return False
        elif not isinstance(val, Real) or (self.type is RealNotInt and isinstance(val, Integral)):
            return False
        if val != val:  # NaN
            return False
        if val < self._lo or (val == self._lo and not self._lo_closed):
            return False
        return not (val > self._hi or (val == self._hi and not self._hi_closed))


class LatencyString(StrOptions):
    """A latency budget such as '20us' (a positive number and a unit us, ms or s per sample:
    ``_budget.parse_budget``)."""

    def __init__(self):
        super().__init__(set())

    def is_satisfied_by(self, val):
        if not isinstance(val, str):
            return False
        try:
            parse_budget(val)
        except ValueError:
            return False
        return True

    def __str__(self):
        return "a latency such as '20us' (a positive number with a unit us, ms or s per sample)"


class _NoLimit(Options):
    """max_iter=-1: no limit on the iterations."""

    def __init__(self):
        super().__init__(Integral, {-1})

    def is_satisfied_by(self, val):
        return not isinstance(val, (bool, np.bool_)) and super().is_satisfied_by(val)

    def __str__(self):
        return "-1 (no limit)"


#: the constraints that several estimators share, each written once (scikit-learn's
#: sklearn.svm._base.BaseLibSVM._parameter_constraints is the model): a finite number > 0 or >= 0
POSITIVE = NumInterval(Real, 0.0, None, closed="neither")
NON_NEGATIVE = NumInterval(Real, 0.0, None, closed="left")
#: the kernel's parameters (``kernel`` itself differs: which names, and whether a callable)
KERNEL_PARAM_CONSTRAINTS = {
    "gamma": [StrOptions({"scale", "auto"}), POSITIVE],
    "coef0": [NumInterval(Real, None, None, closed="neither")],  # finite
    "degree": [NumInterval(Integral, 0, 2**31, closed="left")],
}
#: n_jobs: None, or an int that is not 0 (-1: every thread, -2 one fewer, ...: n_threads)
N_JOBS_CONSTRAINT = [None, NumInterval(Integral, None, -1, closed="right"), NumInterval(Integral, 1, None, closed="left")]
#: max_iter of the engines: -1 (no limit) or a positive int
MAX_ITER_CONSTRAINT = [_NoLimit(), NumInterval(Integral, 1, None, closed="left")]
TIME_LIMIT_CONSTRAINT = [None, POSITIVE]
CLASS_WEIGHT_CONSTRAINT = [StrOptions({"balanced"}), dict, None]
#: budget of SLMC, SparseKFD and NSSVC: None, a number of vectors, or a latency
BUDGET_CONSTRAINT = [None, NumInterval(Integral, 1, None, closed="left"), LatencyString()]


_MADE_CONSTRAINTS = {}  # estimator class -> (its _parameter_constraints, ((name, made constraints), ...))


def _made_constraints(cls):
    """The constraints of ``cls._parameter_constraints`` made into constraint objects once per class
    (scikit-learn's validate_parameter_constraints makes them again on every call), for the
    parameters of its ``__init__``."""
    declared = cls._parameter_constraints
    kept = _MADE_CONSTRAINTS.get(cls)
    if kept is None or kept[0] is not declared:
        names = init_params(cls)
        made = tuple((name, tuple(make_constraint(c) for c in constraints))
                     for name, constraints in declared.items() if name in names and constraints != "no_validation")
        kept = _MADE_CONSTRAINTS[cls] = (declared, made)
    return kept[1]


def validate_constrained_params(estimator):
    """Every parameter that ``_parameter_constraints`` names checked against its constraints:
    scikit-learn's ``BaseEstimator._validate_params`` (its checks, its InvalidParameterError, a
    ValueError, and its message "The 'C' parameter of SVC must be ... Got ... instead."), with the
    constraint objects made once per class and without ``get_params``'s signature reading. The
    first parameter that satisfies none of its constraints is handed to scikit-learn's
    validate_parameter_constraints, which raises. (Run on every fit, whatever scikit-learn's
    ``skip_parameter_validation``: the C++ core relies on it.)"""
    cls = type(estimator)
    for name, constraints in _made_constraints(cls):
        value = getattr(estimator, name)
        for constraint in constraints:
            if constraint.is_satisfied_by(value):
                break
        else:
            validate_parameter_constraints({name: cls._parameter_constraints[name]}, {name: value},
                                           caller_name=cls.__name__)


class ConstrainedParamsMixin:
    """The parameter checks at the start of a fit: every parameter against its
    ``_parameter_constraints`` (one rule per parameter, scikit-learn's checks and messages), then
    the rules that involve several parameters (``_check_cross_params``, one method per estimator
    family); ``_check_params`` returns the fit's thread count (``n_threads(n_jobs)``)."""

    _parameter_constraints: dict = {}

    def _check_params(self):
        validate_constrained_params(self)
        self._check_cross_params()
        return n_threads(self.n_jobs)

    def _check_cross_params(self):
        """The rules over several parameters (none here)."""


def check_positive(name, value, *, allow_zero=False):
    """A finite number > 0 (>= 0 with allow_zero): for values that are not an estimator's parameter
    (the entries of a grid, a function's arguments)."""
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and np.isfinite(value)
    ok = ok and (value >= 0 if allow_zero else value > 0)
    if not ok:
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be a finite number {bound}, got {value!r}")


def resolve_gamma(gamma, X):
    """scikit-learn's meaning of gamma: 'scale' = 1 / (n_features * X.var()), 'auto' = 1 / n_features."""
    n_features = X.shape[1]
    if gamma == "scale":
        if sp.issparse(X):  # in float64 whatever the dtype of X; two passes, as np.var: E[x^2] - E[x]^2
            X = canonical_csr(X)  # would leave a constant X a variance of rounding (fuzzing found gamma 4.5e15)
            size = X.shape[0] * X.shape[1]
            mean = X.data.sum(dtype=np.float64) / size if size else 0.0
            dev = X.data.astype(np.float64) - mean
            var = (float(dev @ dev) + (size - X.nnz) * mean**2) / size if size else 0.0
        else:
            var = np.var(X, dtype=np.float64)
        return 1.0 / (n_features * var) if var != 0 else 1.0
    if gamma == "auto":
        return 1.0 / n_features
    return float(gamma)


# the largest value a float32 kernel row (the engine's caches) holds
_FLOAT32_MAX = float(np.finfo(np.float32).max)


def check_kernel_range(kernel, gamma, coef0, degree, X):
    """Refuse (ValueError) a kernel whose values on X can exceed the float32 range of the engine's
    row caches (they would be inf there, and the solution NaN): the linear kernel's largest K(x, x)
    = max ||x||^2 bounds every |K(x, z)| (Cauchy-Schwarz), and (gamma max ||x||^2 + |coef0|)^degree
    the polynomial's. rbf, laplacian and sigmoid are bounded by 1."""
    if kernel not in ("linear", "poly") or X.shape[0] == 0:
        return
    top = float(np.max(_row_sqnorms(X)))
    bound = top if kernel == "linear" else (abs(gamma) * top + abs(coef0)) ** degree
    if not bound <= _FLOAT32_MAX:
        what = "||x||^2" if kernel == "linear" else f"(gamma ||x||^2 + |coef0|)^degree with gamma={gamma:.3g}"
        raise ValueError(f"kernel values up to {bound:.3g} ({what}) exceed the float32 range of the kernel cache "
                         f"({_FLOAT32_MAX:.3g}); scale X, or lower gamma or degree")


def canonical_csr(X):
    """CSR X without duplicate entries (scipy reads duplicates as their sum), sorted indices, and
    int32 index arrays when they fit (load_svmlight_file gives int64 ones, which scikit-learn's
    own routines used inside a fit, such as KMeans, reject)."""
    X = sp.csr_matrix(X)
    if X.indices.dtype != np.int32 and max(X.nnz, X.shape[1]) < 2**31:
        X = sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), shape=X.shape)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    return X


def core_array(a, dtype=None):
    """``a`` as the C++ core reads it: C-contiguous with aligned items (no copy unless it is not).
    Arrays unpickled from a byte buffer (Dask workers), made by np.frombuffer at an offset or taken
    from a packed record can hold doubles at addresses that are not a multiple of 8 (UBSan)."""
    return np.require(a, dtype=dtype, requirements=["C", "A"])


# dense X with at most this fraction of nonzeros is handed to the SMO engine as CSR: a kernel row
# then costs its nonzeros instead of n_features (a9a as a dense array: 11 % nonzeros, the CSR fit
# 1.9x faster than the dense one; w8a: 4 %, 4.7x; benchmarks/results/scaling.md)
_SPARSE_ENGINE_DENSITY = 0.15


def engine_storage(X, kernel="rbf", threads=1):
    """X as the SMO engine should read it: a dense X that is mostly zeros as a CSR copy, anything
    else as given (the kernel values are the same function of the pair; only the work differs).
    For the translation-invariant kernels (rbf, laplacian: K(x - c, z - c) = K(x, z)) the zeros
    may be anywhere: X minus its columns' most frequent values is used when that is mostly zeros
    (sparse data after StandardScaler, whose zeros all moved to -mean / std). The entries are
    counted and copied by the C++ core on ``threads`` threads."""
    if sp.issparse(X) or X.ndim != 2 or X.size == 0:
        return X
    csr = _sparse_copy(X, None, threads)
    if csr is None and kernel in ("rbf", "laplacian") and _mostly_modes_on_a_sample(_screen_rows(X)):
        shift = _column_modes(X)
        if shift.any():
            csr = _sparse_copy(X, shift, threads)
    return X if csr is None else csr


def _sparse_copy(X, shift, threads, max_density=_SPARSE_ENGINE_DENSITY):
    """Dense X - shift (shift None: X) as CSR when at most max_density of its entries are nonzero,
    else None. The C++ pass takes threads only where its work pays for them (chunks_for); the
    result does not depend on their count."""
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    shift = None if shift is None else core_array(shift, np.float64)
    parts = _core.dense_as_csr(core_array(X), shift, float(max_density), max(1, int(threads)))
    if parts is None:
        return None
    indptr, indices, values = parts
    return sp.csr_matrix((values, indices, indptr), shape=X.shape)


SCREEN_ROWS = 64  # rows that screen whether a dense X may be mostly its columns' modes
MODE_ROWS = 1024  # rows whose columns' most frequent values shift X


@functools.lru_cache(maxsize=64)
def _evenly_spaced(n, n_sample):
    """min(n_sample, n) evenly spaced row indices of n rows (read-only: one array per (n, n_sample),
    kept, as every fit on the same number of rows asks again)."""
    idx = np.linspace(0, n - 1, min(n_sample, n)).astype(np.intp)
    idx.flags.writeable = False
    return idx


def _screen_rows(X):
    """The rows of X that ``_mostly_modes_on_a_sample`` judges: _evenly_spaced(n, SCREEN_ROWS), all
    of X (itself, not a copy) when it has no more rows."""
    return X if X.shape[0] <= SCREEN_ROWS else X[_evenly_spaced(X.shape[0], SCREEN_ROWS)]


def _mostly_modes_on_a_sample(rows):
    """Whether X may be mostly its columns' most frequent values, judged on ``rows``, X's rows
    _evenly_spaced(n, SCREEN_ROWS): at least 1 - 2 * _SPARSE_ENGINE_DENSITY of their entries equal their
    column's most frequent value there. A screen that spares dense data the modes and the count
    (usps: 56 %, 2.5 ms a fit).

    The entries equal to a column's mode are its longest run of equal values once sorted, at most
    one more than the column's equal neighbours: with fewer equal neighbours than the fraction
    needs (data of distinct values: every small data set we measured), the answer is no without
    the runs (150-400 us of a small fit)."""
    m, d = rows.shape
    need = 1.0 - 2.0 * _SPARSE_ENGINE_DENSITY
    if m > 1 and d > 0:
        ordered = np.sort(rows, axis=0)
        equal_neighbours = int(np.count_nonzero(ordered[1:] == ordered[:-1]))
        if (d + equal_neighbours) / (m * d) < need:
            return False
    return float(np.mean(rows == _column_modes(rows))) >= need


def _column_modes(X, n_sample=MODE_ROWS):
    """The most frequent value of each column among evenly spaced rows (ties: the smallest): the
    runs of equal values in each sorted column, all columns at once."""
    rows = X[_evenly_spaced(X.shape[0], n_sample)]
    m, d = rows.shape
    flat = np.sort(np.ascontiguousarray(rows.T), axis=1).ravel()  # column after column, each ascending
    new_run = np.ones(flat.size, dtype=bool)
    new_run[1:] = flat[1:] != flat[:-1]
    new_run[::m] = True  # a column starts a run
    starts = np.flatnonzero(new_run)
    lengths = np.diff(np.append(starts, flat.size))
    column = starts // m
    longest = np.maximum.reduceat(lengths, np.searchsorted(column, np.arange(d)))
    best = starts[lengths == longest[column]]  # runs of the longest length; the first is the smallest
    first = np.unique(best // m, return_index=True)[1]
    return flat[best[first]].astype(X.dtype, copy=False)


def _count_unequal(X, shift):
    """Entries of X that differ from their column's shift, counted a block of rows at a time (a Dask
    block's share of the count engine_storage decides by)."""
    step = max(1, (1 << 22) // X.shape[1])
    return sum(int(np.count_nonzero(X[r:r + step] != shift)) for r in range(0, X.shape[0], step))


def core_matrix(X):
    """View of dense or CSR X for the C++ core (float64, C order, int32 column indices).

    CSR input may carry int64 indices (scikit-learn's load_svmlight_file returns them); they are
    narrowed here.
    """
    if sp.issparse(X):
        X = canonical_csr(X)
        if X.shape[1] >= 2**31:
            raise ValueError("sparse X with 2**31 or more features is not supported")
        indptr = core_array(X.indptr, np.int64)
        indices = core_array(X.indices, np.int32)
        data = core_array(X.data, np.float64)
        return _core.Matrix.csr(indptr, indices, data, int(X.shape[1]))
    return _core.Matrix.dense(core_array(X, np.float64))


def class_labels(y):
    """``classes_`` and y encoded as their indices (np.unique), after scikit-learn's
    ``check_classification_targets``. For the y of almost every fit, a validated 1-D array of
    integers, booleans or integral floats, that check's answer is known ('binary' or 'multiclass':
    allowed) and costs 230 us of a 1.5 ms fit; it is made here with the test scikit-learn makes
    (floats equal to their int64 cast), with its warning for more classes than half the samples.
    Anything else goes through scikit-learn's function itself (its errors and messages)."""
    if (isinstance(y, np.ndarray) and y.ndim == 1 and y.size
            and (y.dtype.kind in "biu" or (y.dtype.kind == "f" and not np.any(y != y.astype(np.int64).astype(y.dtype))))):
        classes, y_enc = np.unique(y, return_inverse=True)
        if len(classes) > 2 and y.shape[0] > 20 and len(classes) > round(0.5 * y.shape[0]):
            warnings.warn("The number of unique classes is greater than 50% of the number of samples. `y` could "
                          "represent a regression problem, not a classification problem.", UserWarning, stacklevel=2)
        return classes, y_enc
    check_classification_targets(y)
    return np.unique(y, return_inverse=True)


def sample_weights(sample_weight, n_samples):
    """Per-sample weights as float64 (ones for None, a scalar broadcast). As in LIBSVM and
    scikit-learn, a weight of zero or below masks its sample (it is returned as 0: C_i = 0, a_i = 0);
    raises when no sample is left."""
    if sample_weight is None:
        return np.ones(n_samples)
    sw = np.asarray(sample_weight, dtype=np.float64)
    if sw.ndim == 0:
        sw = np.full(n_samples, float(sw))
    if sw.shape != (n_samples,):
        raise ValueError(f"sample_weight.shape == {sw.shape}, expected {(n_samples,)}!")
    assert_all_finite(sw, input_name="sample_weight")
    if not np.any(sw > 0):
        raise ValueError("Invalid input - all samples have zero or negative weights.")
    return np.maximum(sw, 0.0)


def per_sample_bounds(C, classes, y_enc, class_weight, sample_weight, n_samples):
    """Upper bounds C_i = C * class_weight[y_i] * sample_weight_i (LIBSVM's weighted C); 0 for a
    masked sample (also when C is inf: a hard margin on the others)."""
    sw = sample_weights(sample_weight, n_samples)
    if class_weight is not None:  # (compute_class_weight costs ~0.5 ms: a path fits thousands of small problems)
        cw = compute_class_weight(class_weight, classes=classes, y=classes[y_enc])
        if np.any(cw < 0) or not np.all(np.isfinite(cw)):
            raise ValueError("class_weight must be finite and non-negative")
        sw = sw * cw[y_enc]
    return np.where(sw > 0, C * sw, 0.0)


# kernels of a dot product or a squared distance: prediction's K(X, B) is then one BLAS product
_GEMM_KERNELS = ("linear", "poly", "rbf", "sigmoid")
# sparse input: scipy's sparse product wins only with many features (the C++ rows densify one point
# at a time); measured rbf 2000 x 3000 points, 50 entries per row: 300 features C++ 0.075 s, scipy
# 0.40 s; 20,000 features 0.24 s against 0.11 s
_SPARSE_GEMM_MIN_FEATURES = 4096


def _row_sqnorms(X):
    return np.asarray(X.multiply(X).sum(axis=1), dtype=np.float64).ravel() if sp.issparse(X) \
        else np.einsum("ij,ij->i", X, X, dtype=np.float64)


@dataclass(frozen=True)
class KernelSpec:
    """One kernel setting: its name and parameters (hashable: the key of warm starts, engine sessions
    and shared kernel rows). ``precomputed``: X is the kernel matrix itself."""

    name: str
    gamma: float = 0.0
    coef0: float = 0.0
    degree: int = 3

    def __post_init__(self):
        if self.name not in KERNELS:
            raise ValueError(f"unknown kernel {self.name!r}")
        object.__setattr__(self, "gamma", float(self.gamma))
        object.__setattr__(self, "coef0", float(self.coef0))
        object.__setattr__(self, "degree", int(self.degree))

    @property
    def code(self):
        return KERNELS[self.name]

    @property
    def args(self):
        """(code, gamma, coef0, degree): the kernel as the core's kernel functions take it."""
        return (self.code, self.gamma, self.coef0, self.degree)

    @property
    def core(self):
        """The kernel as the C++ core takes it, made per call (about a microsecond): a KernelSpec is a
        value kept by warm-start states, search stores and module constants (``_expansion._LINEAR``),
        and keeps no object of the C++ core."""
        return _core.KernelParams(self.code, self.gamma, self.coef0, self.degree)

    def __getstate__(self):
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def __setstate__(self, state):
        for k, v in state.items():
            object.__setattr__(self, k, v)



def ovo_pairs(n_classes):
    """The one-vs-one problems in LIBSVM's order: (a, b) for a < b."""
    return [(a, b) for a in range(n_classes) for b in range(a + 1, n_classes)]


class Expansion:
    """A fitted model's decision values as one kernel expansion, ``K(X, B) @ W.T + b``: the one
    object the tools read a fitted estimator by (export, plotting, the command line), made by
    the estimator's ``_expansion()`` (see :func:`fitted_expansion`).

    Attributes
    ----------
    kernel, gamma, coef0, degree : the kernel (gamma resolved from 'scale' / 'auto')
    B : ndarray or sparse matrix (m, n_features), the points the kernel is evaluated at
    W : ndarray or sparse matrix (k, m), or None (dec = K(X, B) + b: NSSVC's primal weights)
    b : ndarray (k,)
    platt : (A, B) of Platt's sigmoid per problem (SVC with probability=True), or None
    """

    def __init__(self, kernel, gamma, coef0, degree, B, W, b, platt=None):
        self.kernel, self.gamma, self.coef0, self.degree = kernel, float(gamma), float(coef0), int(degree)
        self.B, self.W, self.b, self.platt = B, W, np.asarray(b, dtype=np.float64).ravel(), platt

    @property
    def n_points(self):
        """The points a prediction evaluates the kernel at."""
        return int(self.B.shape[0])

    def dense(self):
        """This expansion with B and W as dense float64 arrays."""
        def dense(A):
            return None if A is None else np.asarray(A.toarray() if sp.issparse(A) else A, dtype=np.float64)

        return Expansion(self.kernel, self.gamma, self.coef0, self.degree, dense(self.B), dense(self.W), self.b,
                         self.platt)


def fitted_expansion(model):
    """The :class:`Expansion` of a fitted sparsekernel estimator (a cross-validated one: of the model
    it chose). NotFittedError when unfitted; TypeError for an object without one; ValueError for a
    model that has no single expansion (a DC-SVM stopped at a level)."""
    check_is_fitted(model)
    if not hasattr(model, "_expansion"):
        raise TypeError(f"{type(model).__name__} is not a sparsekernel estimator with a kernel expansion")
    return model._expansion()


class KernelEvaluator:
    """K(X, B) for the fitted kernel, evaluated in row chunks.

    With the stored points B given as an array (dense or CSR) and a kernel of dot products or squared
    distances, the block is X @ B' by BLAS followed by the kernel's transform (rbf from the dot
    products and the squared norms, as the C++ blocks do): prediction's few-columns-many-rows
    block is a matrix product, where BLAS runs at several times the C++ row kernels' rate (20000 x
    256 against 87 points: 11 ms with BLAS in scikit-learn-intelex, 128 ms with the row kernels).
    For sparse input with few features the dot products come from the C++ rows instead of scipy's
    sparse product (several times faster), the transform still in numpy. Otherwise (laplacian,
    precomputed, or no array) the C++ core computes the block."""

    def __init__(self, kernel, gamma, coef0, degree, n_jobs):
        self.kernel = kernel
        self.code = KERNELS[kernel]
        self.gamma = gamma
        self.coef0 = coef0
        self.degree = degree
        self.n_jobs = n_jobs

    def needs_core(self, X, B):
        """Whether the blocks K(X, B) read B through its C++ view (``B_core``): without B as an array,
        for the kernels not computed from BLAS products, and for sparse input with few features (the
        dot products from the C++ rows); not for the fused dense pass (``decision``)."""
        if B is None or self.kernel not in _GEMM_KERNELS:
            return True
        return (sp.issparse(X) or sp.issparse(B)) and X.shape[1] < _SPARSE_GEMM_MIN_FEATURES

    def __call__(self, X, B_core, B=None, B_sqnorms=None):
        if B is not None and self.kernel in _GEMM_KERNELS:
            return self._gemm(X, B, B_sqnorms, B_core)
        return _core.kernel_matrix(core_matrix(X), B_core, self.code, self.gamma, self.coef0, self.degree,
                                   self.n_jobs)

    def _gemm(self, X, B, B_sqnorms, B_core=None):
        X, B = X.astype(np.float64, copy=False), B.astype(np.float64, copy=False)  # float32 in float64
        if (sp.issparse(X) or sp.issparse(B)) and X.shape[1] < _SPARSE_GEMM_MIN_FEATURES and B_core is not None:
            # the dot products by the C++ rows (exact sums), the transform below in numpy (exact exp)
            K = _core.kernel_matrix(core_matrix(X), B_core, KERNELS["linear"], 0.0, 0.0, 1, self.n_jobs)
        else:
            K = B @ X.T if sp.issparse(B) else X @ B.T   # (n, m) or its transpose for sparse B
            if sp.issparse(K):
                K = K.toarray()
            K = np.array(K.T if sp.issparse(B) else K, dtype=np.float64, order="C", copy=True)
        if self.kernel == "linear":
            return K
        if self.kernel == "rbf":
            K *= -2.0
            K += _row_sqnorms(X)[:, None]
            K += (_row_sqnorms(B) if B_sqnorms is None else B_sqnorms)[None, :]
            np.maximum(K, 0.0, out=K)
            K *= -self.gamma
            return np.exp(K, out=K)
        K *= self.gamma
        K += self.coef0
        if self.kernel == "sigmoid":
            return np.tanh(K, out=K)
        return np.power(K, self.degree, out=K)  # poly

    def decision(self, X, B, B_core, coef, intercept):
        """intercept + K(X, B) @ coef.T, shape (n, k), for X validated *without* the finiteness check.

        For dense X and B and a kernel of dot products or squared distances this is one fused C++
        pass over X (_core/predict.hpp): X is read once, and the rows' squared norms it computes
        anyway tell whether X is finite, so prediction needs no validation pass of its own.
        Otherwise X is checked here and the blocks come from ``chunks``."""
        coef = core_array(coef, np.float64)
        intercept = core_array(intercept, np.float64)
        if B is not None and self.kernel in _GEMM_KERNELS and not sp.issparse(X) and not sp.issparse(B):
            out = _core.expansion_decision(core_array(X, np.float64), core_array(B, np.float64), coef, intercept,
                                           self.code, self.gamma, self.coef0, self.degree, self.n_jobs)
            if out is None:
                assert_all_finite(X, input_name="X")  # scikit-learn's message for NaN / inf
                raise ValueError("Input X contains values too large to square in float64 (|x| > 1e154)")
            return out
        assert_all_finite(X.data if sp.issparse(X) else X, input_name="X")
        out = np.empty((X.shape[0], coef.shape[0]))
        for sl, K in self.chunks(X, B_core, coef.shape[1], B):
            out[sl] = K @ coef.T + intercept
        return out

    def chunks(self, X, B_core, n_b, B=None):
        """Yield (slice, K(X[slice], B)) over row chunks of X (``B_core`` None: made here when needed,
        once for all the chunks)."""
        step = max(1, _PREDICT_CHUNK_ENTRIES // max(1, n_b))
        if B_core is None and B is not None and self.needs_core(X, B):
            B_core = core_matrix(B)
        B_sqnorms = _row_sqnorms(B) if B is not None and self.kernel == "rbf" else None
        for start in range(0, X.shape[0], step):
            sl = slice(start, min(X.shape[0], start + step))
            yield sl, self(X[sl], B_core, B, B_sqnorms)


def callable_gram(kernel, A, B):
    """kernel(A, B) of a user's callable kernel as a dense float64 matrix (a sparse result is
    densified), checked to have one row per point of A and one column per point of B."""
    K = kernel(A, B)
    if sp.issparse(K):
        K = K.toarray()
    K = np.asarray(K, dtype=np.float64, order="C")
    expected = (_num_samples(A), _num_samples(B))
    if K.shape != expected:
        raise ValueError(f"the callable kernel returned an array of shape {K.shape}; kernel(X, Y) must have shape "
                         f"(n_samples_X, n_samples_Y) = {expected}")
    assert_all_finite(K, input_name="the callable kernel's matrix")
    return K


# the prediction methods that take a dask array (sparsekernel.dask runs them block by block)
DASK_METHODS = ("predict", "decision_function", "predict_proba", "predict_log_proba", "score")


def is_dask_array(X):
    """True for a dask array, without importing dask (X can only be one when dask.array is loaded)."""
    da = sys.modules.get("dask.array")
    return da is not None and isinstance(X, da.Array)


def _dask_dispatching(fn):
    """``fn`` (a prediction method) sending a dask array X to ``_dask_predict``'s function of the
    same name, which runs ``fn`` itself on every block."""
    @functools.wraps(fn)
    def method(self, X, *args, **kwargs):
        if is_dask_array(X):
            return getattr(_dask_predict, fn.__name__)(self, X, *args, **kwargs)
        return fn(self, X, *args, **kwargs)

    method._sparsekernel_dask_dispatch = True
    return method


class DaskDispatchMixin:
    """Prediction methods that accept dask arrays: ``model.predict(dask_X)`` returns a dask array
    computed block by block on the workers (``score``: a float), as ``sparsekernel.dask.predict``.

    Every estimator defines its own predict / decision_function / ..., and ``score`` comes from
    scikit-learn's mixins, which precede this one in the method resolution order; so rather than
    methods of its own, the mixin wraps the class's (defined or inherited) ``DASK_METHODS`` when a
    subclass is created, once per method (a subclass inherits the wrapped one). Methods behind
    ``available_if`` (SVC.predict_proba) keep their availability check."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in DASK_METHODS:
            raw = inspect.getattr_static(cls, name, None)
            fn, check = getattr(raw, "fn", None), getattr(raw, "check", None)
            if callable(fn) and callable(check):  # an available_if descriptor
                if not getattr(fn, "_sparsekernel_dask_dispatch", False):
                    setattr(cls, name, available_if(check)(_dask_dispatching(fn)))
            elif inspect.isfunction(raw) and not getattr(raw, "_sparsekernel_dask_dispatch", False):
                setattr(cls, name, _dask_dispatching(raw))


# ------------------------------------------------------------------- C++ objects kept between calls
# The objects that keep an object of the C++ core from one call to the next -- a fitted model's view
# of its support vectors, the engine sessions (row caches) of an estimator's own warm starts -- by
# weak reference. At interpreter exit (atexit: before the modules are torn down) each still alive
# drops it (``_release_core()``). An object can outlive the teardown: kept by ``gc.callbacks``
# (hypothesis's timing hook keeps a pytest session's collected items, and with them the estimators
# of its ``parametrize`` lists), by a reference cycle through a C extension, by a daemon thread; any
# core object it still held then is what nanobind reports as leaked at exit.
_CORE_KEEPERS = weakref.WeakSet()


def release_at_exit(obj):
    """Have ``obj._release_core()`` drop the C++ core objects ``obj`` keeps, at interpreter exit if
    ``obj`` is alive then (registered once per object; no reference to it is kept)."""
    _CORE_KEEPERS.add(obj)


@atexit.register
def _release_core_objects():
    for obj in list(_CORE_KEEPERS):  # (atexit: after the non-daemon threads are joined)
        obj._release_core()


class KernelModelMixin(DaskDispatchMixin):
    """What every kernel-expansion estimator shares: input checks for dense / CSR / precomputed X,
    the kernel between new points and the stored expansion vectors, pickling and tags.

    The estimator sets ``kernel``, ``gamma``-derived ``_gamma``, ``coef0``, ``degree``, ``n_jobs``,
    ``shape_fit_``, ``support_`` and ``support_vectors_`` through ``_set_support_vectors``. A
    callable kernel (SVC, SVR) is fitted as a precomputed one on its Gram matrix; prediction calls
    it between the new points and the training inputs (as scikit-learn does: a user's kernel may
    assume it) and keeps the support vectors' columns.

    The C++ core's view of the support vectors (``_sv_view``) is made by the first prediction that
    reads it and kept for the next ones (it computes the rows' norms: O(nnz) per view); it is not
    pickled, and it is dropped at interpreter exit (``release_at_exit``).
    """

    def _kernel_matrix_input(self):
        """True when X is (or becomes) a kernel matrix: 'precomputed' or a callable kernel."""
        return callable(self.kernel) or self.kernel == "precomputed"

    def _set_support_vectors(self, X, support, inputs=None):
        """Keep X[support] (nothing for a kernel matrix; for a callable kernel, the training inputs
        it is called against at prediction)."""
        self._release_core()
        if self._kernel_matrix_input():
            self.support_vectors_ = np.empty((0, 0), dtype=np.float64)
            if callable(self.kernel):  # all of them: a user's kernel may expect the training set (scikit-learn does so)
                self._fit_inputs = inputs
        else:
            self.support_vectors_ = X[support]

    def _sv_view(self):
        """The C++ core's view of ``support_vectors_`` (no copy of the values), kept for the next
        prediction while ``support_vectors_`` is the same array."""
        kept = self.__dict__.get("_sv_core")
        if kept is not None and kept[0] is self.support_vectors_:
            return kept[1]
        view = core_matrix(self.support_vectors_)
        self._sv_core = (self.support_vectors_, view)
        release_at_exit(self)
        return view

    def _release_core(self):
        self.__dict__.pop("_sv_core", None)

    def _accept_sparse(self):
        return False if self.kernel == "precomputed" else "csr"

    def _check_precomputed(self, X, fit):
        if not self._kernel_matrix_input():
            return
        if fit and X.shape[0] != X.shape[1]:
            raise ValueError(f"Precomputed matrix must be a square matrix. Input is a {X.shape[0]}x{X.shape[1]} "
                             "matrix.")
        if not fit and X.shape[1] != self.shape_fit_[0]:
            raise ValueError(
                f"X.shape[1] = {X.shape[1]} should be equal to {self.shape_fit_[0]}, the number of samples at "
                f"training time (a precomputed kernel for prediction has one column per training sample)")

    def _validate_X(self, X, ensure_all_finite=True):
        if callable(self.kernel):
            return X  # anything the callable accepts (strings, graphs, ...)
        X = validate_data(self, X, accept_sparse=self._accept_sparse(), dtype=[np.float64, np.float32], order="C",
                          reset=False, ensure_all_finite=ensure_all_finite)
        self._check_precomputed(X, fit=False)
        return X

    def _evaluator(self):
        return KernelEvaluator(self.kernel, self._gamma, float(self.coef0), int(self.degree), n_threads(self.n_jobs))

    def _decision_values(self, X, coef, intercept):
        """intercept + K(X, support vectors) @ coef.T, shape (n, k): the expansion's decision values,
        X validated here (its finiteness by the fused pass where that applies)."""
        coef = coef.toarray() if sp.issparse(coef) else np.asarray(coef, dtype=np.float64)
        if self._kernel_matrix_input():
            ((_, K),) = self._kernel_chunks(self._validate_X(X))
            return K @ coef.T + intercept
        X = self._validate_X(X, ensure_all_finite=False)
        ev, B = self._evaluator(), self.support_vectors_
        return ev.decision(X, B, self._sv_view() if ev.needs_core(X, B) else None, coef, intercept)

    def _kernel_chunks(self, X):
        """Yield (slice, K(X[slice], support vectors)) in row chunks of bounded memory (X validated)."""
        if callable(self.kernel):
            yield slice(0, _num_samples(X)), callable_gram(self.kernel, X, self._fit_inputs)[:, self.support_]
            return
        if self.kernel == "precomputed":
            yield slice(0, X.shape[0]), np.asarray(X, dtype=np.float64)[:, self.support_]
            return
        ev, B = self._evaluator(), self.support_vectors_
        yield from ev.chunks(X, self._sv_view() if ev.needs_core(X, B) else None, len(self.support_), B)

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_sv_core", None)  # a view of C++ memory: made again by the first prediction
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = self.kernel != "precomputed"
        tags.input_tags.pairwise = self.kernel == "precomputed"
        return tags


# ---------------------------------------------------------------------------------------- progress
try:  # scikit-learn >= 1.9: the callback protocol (set_callbacks, ProgressBar, ...)
    from sklearn.callback import CallbackSupportMixin, with_callbacks
except ImportError:  # older scikit-learn: no callbacks, everything else works
    class CallbackSupportMixin:  # noqa: D101 - placeholder base class
        pass

    def with_callbacks(method):
        return method

# A sub-problem's progress is reported to scikit-learn's callbacks as this many leaf tasks, ticked
# off as the KKT gap falls from its first reported value to tol (on a log scale), all of them at
# the end of the solve.
PROGRESS_TICKS = 100
# seconds between two lines of verbose progress text
_VERBOSE_INTERVAL = 1.0


# the engine's statuses (also those of the Python loops of NSSVC and SLMC)
STATUS_CONVERGED, STATUS_MAX_ITER, STATUS_STOPPED, STATUS_TIME_LIMIT = 0, 1, 2, 3


def warn_if_stopped_early(estimator, statuses, max_iter_message):
    """One ConvergenceWarning for a fit whose problems did not all converge, by the first reason of
    time limit, a callback's request and max_iter (whose message the estimator gives)."""
    statuses = set(statuses)
    name = type(estimator).__name__
    if STATUS_TIME_LIMIT in statuses:
        warnings.warn(f"{name}: time_limit reached (time_limit={getattr(estimator, 'time_limit', None)!r} s, or an "
                      "enclosing search's): the model holds the solver's current iterate, converged_ is False.",
                      ConvergenceWarning)
    elif STATUS_STOPPED in statuses:
        warnings.warn(f"{name}: a callback stopped the solver: the model holds its current iterate, converged_ is "
                      "False.", ConvergenceWarning)
    elif STATUS_MAX_ITER in statuses:
        warnings.warn(max_iter_message, ConvergenceWarning)


class FitMonitor:
    """The one progress hook of a fit: the time budget (``time_limit``), ``verbose`` text and
    scikit-learn's callbacks (``set_callbacks``), all fed by the engines' reports.

    The C++ loops report (iteration, KKT gap or ||F||, active-set size) at most every 0.1 s; a
    report goes to the sub-problem's ``ProblemProgress`` (the callable handed to the engine, or
    called by a Python loop), which prints it when verbose, passes it to the callbacks as the
    ``metadata`` of leaf tasks, and answers whether to stop (a callback asked for it). Nothing is
    called back at all when no one listens. The root task is the fit, one sub-task per binary
    problem (one-vs-one pairs, one-vs-rest classes)."""

    def __init__(self, estimator, n_problems, *, tol, X=None, y=None, parallel=False, metric="kkt_gap",
                 max_iter=None, deadline=None):
        # metric: what the reports carry ('kkt_gap', 'norm_F': falls to tol, progress on a log scale;
        # 'W': the objective, progress as the iteration's share of max_iter)
        self.estimator, self.n_problems, self.tol, self.metric = estimator, n_problems, tol, metric
        self.max_iter = max_iter
        self.t0 = time.perf_counter()
        self.time_limit = getattr(estimator, "time_limit", None)
        # the end of the budget: the estimator's time_limit, or an enclosing search's deadline if sooner
        ends = [t for t in (deadline, None if self.time_limit is None else self.t0 + float(self.time_limit))
                if t is not None]
        self.deadline = min(ends) if ends else None
        self.verbose = bool(getattr(estimator, "verbose", False))
        self.parallel = parallel
        self.ctx = None
        self._problems = {}  # k -> its ProblemProgress
        listening = getattr(estimator, "_skl_callbacks", None) or hasattr(estimator, "_parent_callback_ctx")
        if listening and hasattr(estimator, "_init_callback_context"):
            self.ctx = estimator._init_callback_context(max_subtasks=n_problems, sequential_subtasks=not parallel)
            self.ctx.call_on_fit_task_begin(estimator=estimator, X=X, y=y)

    @property
    def listening(self):
        return self.calls_back or self.verbose

    @property
    def calls_back(self):
        """Whether the fit's callback context has callbacks to call: a context without any (a fit
        inside a scikit-learn search or Pipeline, which hands every sub-estimator one) keeps its
        root task only, and the engines report to no one (a KLR-CV search on 537 points opened
        about 3,000 sub-tasks for nothing)."""
        return self.ctx is not None and bool(getattr(self.ctx, "_callbacks", True))

    def elapsed(self):
        return time.perf_counter() - self.t0

    def remaining(self):
        """Seconds left of the budget for the next solve (0.0: no limit; never 0 when there is one)."""
        if self.deadline is None:
            return 0.0
        return max(self.deadline - time.perf_counter(), 1e-9)

    def out_of_time(self):
        return self.deadline is not None and time.perf_counter() >= self.deadline

    def problem(self, k):
        """The progress of sub-problem k (a callable for the engine's ``progress`` argument): one
        per sub-problem for the whole fit, also when a route solves it several times (the compact
        route's basis growth, KLR's compact start before SMO), so that the callbacks see one task."""
        progress = self._problems.get(k)
        if progress is None:
            progress = self._problems[k] = ProblemProgress(self, k)
        return progress

    def problem_if_needed(self, k):
        """problem(k) for a Python loop, or None when no one listens and there is no budget (the
        loop then skips its reports)."""
        return self.problem(k) if self.listening or self.deadline is not None else None

    def close(self):
        if self.ctx is not None:
            self.ctx.call_on_fit_task_end(estimator=self.estimator)


class ProblemProgress:
    """The progress of one sub-problem; called as progress(iteration, value, active_size) -> stop."""

    def __init__(self, monitor, k):
        self.monitor, self.k = monitor, k
        self.ticks, self.first, self.last_print = 0, None, -np.inf
        self.ctx, self.ended = None, False
        if monitor.calls_back:
            self.ctx = monitor.ctx.subcontext(task_name=f"problem {k + 1}/{monitor.n_problems}",
                                              task_id=k if monitor.parallel else None, max_subtasks=PROGRESS_TICKS)
            self.ctx.call_on_fit_task_begin(estimator=monitor.estimator)

    def engine_callback(self):
        """What to hand to the engine: this object when someone listens, else None (no calls)."""
        return self if self.monitor.listening else None

    def record(self, iteration, value, active_size):
        m = self.monitor
        return {"problem": self.k, "iteration": int(iteration), m.metric: float(value), "tol": m.tol,
                "active_size": int(active_size), "elapsed": m.elapsed()}

    def __call__(self, iteration, value, active_size):
        m = self.monitor
        rec = self.record(iteration, value, active_size)
        if m.verbose and rec["elapsed"] - self.last_print >= _VERBOSE_INTERVAL:
            self.last_print = rec["elapsed"]
            self._print(rec)
        if self.ctx is None or not np.isfinite(value):
            return False
        if m.max_iter:
            frac = iteration / m.max_iter
        else:
            if self.first is None:
                self.first = max(float(value), m.tol * 1.0001)
            span = np.log(self.first / m.tol)
            frac = np.log(self.first / max(float(value), m.tol)) / span if span > 0 else 0.0
        return self._tick_to(int(min(frac, 0.99) * PROGRESS_TICKS), rec)

    def level(self, stats):
        """A level of a divided solve (``_dc.LevelStats``) is done: a line when verbose. (The
        callbacks' task counts its progress ticks, which begin with the whole problem's solve;
        Ctrl-C and time_limit reach the levels' solves themselves.)"""
        m = self.monitor
        if m.verbose:
            print(f"[{type(m.estimator).__name__}] problem {self.k + 1}/{m.n_problems}: level {stats.level} of the "
                  f"divided solve: {stats.clusters} clusters, {stats.n_iter} iterations, {stats.seconds:.1f} s "
                  f"({m.elapsed():.1f} s in all)", flush=True)

    def end(self, iteration, value, active_size, status):
        """The final report of the solve (status as the engine's: 0 converged, 1 max_iter, 2 stopped,
        3 time limit)."""
        rec = self.record(iteration, value, active_size)
        rec["status"] = int(status)
        if self.monitor.verbose:
            self._print(rec, final=True)
        if self.ctx is not None and not self.ended:  # (a problem solved again reports to no new task)
            self._tick_to(PROGRESS_TICKS, rec)
            self.ctx.call_on_fit_task_end(estimator=self.monitor.estimator, metadata=rec)
        self.ended = True

    def _tick_to(self, n, rec):
        stop = False
        while self.ticks < n:
            leaf = self.ctx.subcontext(task_name="iterations")
            leaf.call_on_fit_task_begin(estimator=self.monitor.estimator, metadata=rec)
            stop |= bool(leaf.call_on_fit_task_end(estimator=self.monitor.estimator, metadata=rec))
            self.ticks += 1
        return stop

    def _print(self, rec, final=False):
        m = self.monitor
        what = {STATUS_CONVERGED: "converged", STATUS_MAX_ITER: "stopped at max_iter", STATUS_STOPPED: "stopped",
                STATUS_TIME_LIMIT: "stopped at time_limit"}
        tail = f" -> {what.get(rec.get('status'), '')}" if final else ""
        print(f"[{type(m.estimator).__name__}] problem {self.k + 1}/{m.n_problems}: iteration {rec['iteration']}, "
              f"{m.metric} {rec[m.metric]:.3g} (tol {m.tol:.3g}), active {rec['active_size']}, "
              f"{rec['elapsed']:.1f} s{tail}", flush=True)


_ONE_THREAD_LOCK = threading.Lock()
_ONE_THREAD_USERS = {}  # user_api -> (fits inside one_thread, the limiter that restores the original)
_CONTROLLER = [None, -1]  # threadpoolctl's ThreadpoolController, len(sys.modules) when it was made


def _thread_pools():
    """threadpoolctl's ThreadpoolController of the loaded libraries, made again only after new
    modules were imported (a new library is loaded by an import): threadpool_limits() scans
    /proc/self/maps on every call, 3.5 ms, a third of a 10 ms fit that limits its BLAS once per
    step (KernelLogisticRegressionCV's leave-one-out walk on 398 rows)."""
    with _ONE_THREAD_LOCK:
        if _CONTROLLER[0] is None or _CONTROLLER[1] != len(sys.modules):
            _CONTROLLER[0], _CONTROLLER[1] = ThreadpoolController(), len(sys.modules)
        return _CONTROLLER[0]


@contextlib.contextmanager
def one_thread(user_api="blas"):
    """Run the block with ``user_api`` ('blas' or 'openmp') on one thread, for results that must not
    depend on the thread count. BLAS's setting is process-wide (threadpoolctl), so fits running at
    once from several Python threads share it: the first to enter sets it, the last to leave restores
    the original (nested threadpool_limits contexts, left in another order than entered, would leave
    it at one thread). OpenMP's is per thread: each thread sets and restores its own."""
    pools = _thread_pools()
    if user_api == "openmp":
        # OpenMP's thread count is a per-thread setting (omp_set_num_threads sets the calling thread's
        # ICV): each Python thread sets and restores its own. Shared, a second thread entering while
        # the first is inside ran KMeans on every thread (k-means centres of SLMC's one-vs-rest
        # problems fitted in parallel differed in their last bits with n_jobs)
        with pools.limit(limits=1, user_api="openmp"):
            yield
        return
    with _ONE_THREAD_LOCK:
        users, limiter = _ONE_THREAD_USERS.get(user_api, (0, None))
        if users == 0:
            limiter = pools.limit(limits=1, user_api=user_api)
        _ONE_THREAD_USERS[user_api] = (users + 1, limiter)
    try:
        yield
    finally:
        with _ONE_THREAD_LOCK:
            users, limiter = _ONE_THREAD_USERS[user_api]
            if users == 1:
                limiter.restore_original_limits()
                del _ONE_THREAD_USERS[user_api]
            else:
                _ONE_THREAD_USERS[user_api] = (users - 1, limiter)


_BLOCK_POOL = {"threads": 0, "pool": None}
_BLOCK_POOL_LOCK = threading.Lock()


def block_pool(threads):
    """The threads of the row-block products (the compact route's DesignMatrix, SLMC's expansion
    maps): one pool for the process, sized to the CPUs (replaced by a larger one if more threads are
    asked for; a fit still mapping over the old one keeps it until it is done, so it is never shut
    down under anyone)."""
    with _BLOCK_POOL_LOCK:
        if _BLOCK_POOL["threads"] < threads:
            size = max(threads, os.cpu_count() or 1)
            _BLOCK_POOL["pool"] = ThreadPoolExecutor(size, thread_name_prefix="sparsekernel-blocks")
            _BLOCK_POOL["threads"] = size
        return _BLOCK_POOL["pool"]


def run_parallel(fn, tasks, n_workers):
    """Run fn(task) for every task, in threads when n_workers > 1 (the C++ solves release the GIL).

    On Ctrl-C in the main thread every running solve is cancelled through its token.
    """
    tokens = [_core.CancelToken() for _ in tasks]
    if n_workers <= 1 or len(tasks) <= 1:
        return [fn(t, tok) for t, tok in zip(tasks, tokens)]
    with ThreadPoolExecutor(max_workers=n_workers) as pool:
        futures = [pool.submit(fn, t, tok) for t, tok in zip(tasks, tokens)]
        try:
            return [f.result() for f in futures]
        except BaseException:
            for tok in tokens:
                tok.cancel()
            for f in futures:
                f.cancel()
            raise
