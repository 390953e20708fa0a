"""Synthetic / bundled data sets and helpers shared by the sparsekernel test suite.

Everything here is built from scikit-learn's generators and bundled data sets: no file outside
the repository is read. Data sets are cached per process (they are immutable by convention: tests
must copy before modifying).
"""

from __future__ import annotations

import functools

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import (
    load_breast_cancer,
    load_digits,
    load_iris,
    load_wine,
    make_circles,
    make_classification,
    make_moons,
)
from sklearn.metrics.pairwise import (
    laplacian_kernel,
    linear_kernel,
    polynomial_kernel,
    rbf_kernel,
    sigmoid_kernel,
)
from sklearn.preprocessing import StandardScaler


def _std(X):
    return StandardScaler().fit_transform(X)


def _frozen(X, y):
    X = np.ascontiguousarray(X, dtype=np.float64)
    y = np.asarray(y)
    X.setflags(write=False)
    y.setflags(write=False)
    return X, y


@functools.lru_cache(maxsize=None)
def dataset(name):
    """(X, y) of a named problem; X dense float64 (read-only), y integer labels."""
    if name == "clf_easy":
        X, y = make_classification(n_samples=300, n_features=8, n_informative=5, n_redundant=1,
                                   class_sep=1.5, random_state=0)
        X = _std(X)
    elif name == "clf_hard":
        X, y = make_classification(n_samples=500, n_features=20, n_informative=6, n_redundant=4,
                                   flip_y=0.1, class_sep=0.8, random_state=1)
        X = _std(X)
    elif name == "clf_wide":  # dense, more than 32 features: the engine's working copy holds float32 rows
        X, y = make_classification(n_samples=400, n_features=48, n_informative=10, n_redundant=6, flip_y=0.05,
                                   random_state=6)
        X = _std(X)
    elif name == "clf_imbalanced":
        X, y = make_classification(n_samples=400, n_features=10, n_informative=4, weights=[0.85, 0.15],
                                   flip_y=0.02, random_state=2)
        X = _std(X)
    elif name == "clf_multi":
        X, y = make_classification(n_samples=450, n_features=12, n_informative=6, n_classes=4,
                                   n_clusters_per_class=1, random_state=3)
        X = _std(X)
    elif name == "moons":
        X, y = make_moons(n_samples=300, noise=0.25, random_state=4)
    elif name == "circles":
        X, y = make_circles(n_samples=300, noise=0.1, factor=0.5, random_state=5)
    elif name == "breast_cancer":
        X, y = load_breast_cancer(return_X_y=True)
        X = _std(X)
    elif name == "digits":
        X, y = load_digits(return_X_y=True)
        X, y = X[:600] / 16.0, y[:600]
    elif name == "digits_binary":  # 3 vs 8: the hardest pair of digits
        X, y = load_digits(return_X_y=True)
        keep = (y == 3) | (y == 8)
        X, y = X[keep] / 16.0, y[keep]
    elif name == "iris":
        X, y = load_iris(return_X_y=True)
    elif name == "wine":
        X, y = load_wine(return_X_y=True)
        X = _std(X)
    else:
        raise KeyError(name)
    return _frozen(X, y)


def sparsify(X, density=0.3, seed=0):
    """X with most entries zeroed (so that CSR storage is meaningful), as a dense array."""
    rng = np.random.default_rng(seed)
    X = np.array(X, dtype=np.float64)
    X[rng.random(X.shape) > density] = 0.0
    return X


def with_int64_indices(A):
    """Copy of CSR A whose indices/indptr are int64 (assigned after construction: scipy's
    constructor would narrow them)."""
    A = sp.csr_matrix(A, copy=True)
    A.indices = A.indices.astype(np.int64)
    A.indptr = A.indptr.astype(np.int64)
    assert A.indices.dtype == np.int64 and A.indptr.dtype == np.int64
    return A


def sklearn_kernel(kernel, gamma, coef0=0.0, degree=3):
    """K(A, B) with scikit-learn's pairwise functions, for the parameters of a fitted model."""
    if kernel == "rbf":
        return lambda A, B: rbf_kernel(A, B, gamma=gamma)
    if kernel == "linear":
        return lambda A, B: linear_kernel(A, B)
    if kernel == "poly":
        return lambda A, B: polynomial_kernel(A, B, degree=degree, gamma=gamma, coef0=coef0)
    if kernel == "sigmoid":
        return lambda A, B: sigmoid_kernel(A, B, gamma=gamma, coef0=coef0)
    if kernel == "laplacian":
        return lambda A, B: laplacian_kernel(A, B, gamma=gamma)
    raise ValueError(kernel)


def model_kernel(model):
    """K(A, B) of a fitted (sparsekernel or scikit-learn) SVC, from its hyper-parameters."""
    return sklearn_kernel(model.kernel, model._gamma, model.coef0, model.degree)


def pair_coefs(dual_coef, n_support, a, b):
    """LIBSVM layout: the signed coefficients of pair problem (a, b) and the positions of their
    support vectors in support_ / support_vectors_ (class-a SVs first, then class-b SVs)."""
    starts = np.concatenate([[0], np.cumsum(n_support)])
    sa = np.arange(starts[a], starts[a + 1])
    sb = np.arange(starts[b], starts[b + 1])
    c = np.concatenate([dual_coef[b - 1, sa], dual_coef[a, sb]])
    return np.concatenate([sa, sb]), c


def to_dense(a):
    """An array, densified when scipy sparse (fitted attributes after a fit on sparse X)."""
    return a.toarray() if sp.issparse(a) else np.asarray(a)


def dual_objectives(model, K_sv):
    """Dual objective 1/2 c'Kc - sum|c| of every pair problem of a fitted SVC (either library),
    from its dual_coef_ and the kernel matrix K_sv between its support vectors."""
    k = len(model.classes_)
    if k == 2:
        c = np.asarray(to_dense(model.dual_coef_)[0], dtype=np.float64)
        return np.array([0.5 * c @ K_sv @ c - np.abs(c).sum()])
    out = []
    for a in range(k):
        for b in range(a + 1, k):
            pos, c = pair_coefs(to_dense(model.dual_coef_), model.n_support_, a, b)
            Kp = K_sv[np.ix_(pos, pos)]
            out.append(0.5 * c @ Kp @ c - np.abs(c).sum())
    return np.array(out)


def spy_engine_solves(monkeypatch, argument):
    """Record, for every engine solve from now on (``_engine``'s call of ``_core.solve``), whether it
    was given ``argument`` ('a0': a start point, 'g0': its gradient, i.e. a warm start with the
    kernel unchanged). Returns the list the calls append to."""
    import sparsekernel._engine as engine

    calls = []
    real = engine._core.solve

    def spy(**kwargs):
        calls.append(kwargs[argument] is not None)
        return real(**kwargs)

    monkeypatch.setattr(engine._core, "solve", spy)
    return calls
