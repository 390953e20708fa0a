"""The C++ kernels (sparsekernel._core.kernel_matrix) against sklearn.metrics.pairwise, for dense,
CSR and mixed inputs; gamma='scale'/'auto' against sklearn.svm.SVC."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics.pairwise import (
    laplacian_kernel,
    linear_kernel,
    polynomial_kernel,
    rbf_kernel,
    sigmoid_kernel,
)
from sklearn.svm import SVC as SkSVC

from _helpers import dataset, sparsify, with_int64_indices
from sparsekernel import SVC, _core
from sparsekernel._base import KERNELS, core_matrix, n_threads, resolve_gamma

# (name, params, sklearn function): params are (gamma, coef0, degree)
KERNEL_CASES = [
    ("linear", (0.0, 0.0, 0), lambda A, B, g, c, d: linear_kernel(A, B)),
    ("poly", (0.05, 1.0, 3), lambda A, B, g, c, d: polynomial_kernel(A, B, degree=d, gamma=g, coef0=c)),
    ("poly", (0.2, 0.0, 2), lambda A, B, g, c, d: polynomial_kernel(A, B, degree=d, gamma=g, coef0=c)),
    ("poly", (0.1, -0.5, 5), lambda A, B, g, c, d: polynomial_kernel(A, B, degree=d, gamma=g, coef0=c)),
    ("poly", (0.1, 2.0, 1), lambda A, B, g, c, d: polynomial_kernel(A, B, degree=d, gamma=g, coef0=c)),
    # degree 0 is allowed by SVC (as by LIBSVM) but not by polynomial_kernel: K = 1
    ("poly", (0.1, 2.0, 0), lambda A, B, g, c, d: (g * linear_kernel(A, B) + c) ** d),
    ("rbf", (0.05, 0.0, 0), lambda A, B, g, c, d: rbf_kernel(A, B, gamma=g)),
    ("rbf", (2.0, 0.0, 0), lambda A, B, g, c, d: rbf_kernel(A, B, gamma=g)),
    ("sigmoid", (0.01, 0.5, 0), lambda A, B, g, c, d: sigmoid_kernel(A, B, gamma=g, coef0=c)),
    ("sigmoid", (0.3, -1.0, 0), lambda A, B, g, c, d: sigmoid_kernel(A, B, gamma=g, coef0=c)),
    ("laplacian", (0.05, 0.0, 0), lambda A, B, g, c, d: laplacian_kernel(A, B, gamma=g)),
    ("laplacian", (1.0, 0.0, 0), lambda A, B, g, c, d: laplacian_kernel(A, B, gamma=g)),
]
CASE_IDS = [f"{k}-g{p[0]}-c{p[1]}-d{p[2]}" for k, p, _ in KERNEL_CASES]


def _data(seed=0, n_a=300, n_b=170, d=25, density=0.3):
    """Sparse-ish A, B (dense arrays) of standardised scale, plus a few empty rows."""
    rng = np.random.default_rng(seed)
    A = sparsify(rng.standard_normal((n_a, d)), density, seed)
    B = sparsify(rng.standard_normal((n_b, d)) * 1.5 + 0.2, density, seed + 1)
    A[7] = 0.0  # an all-zero row (empty in CSR)
    B[3] = 0.0
    B[5] = A[11]  # a duplicate point: distance exactly 0
    return A, B


def _as(X, fmt):
    if fmt == "dense":
        return X
    if fmt == "csr":
        return sp.csr_matrix(X)
    if fmt == "csr64":
        return with_int64_indices(sp.csr_matrix(X))
    raise ValueError(fmt)


def _ours(A, B, kernel, g, c, d, n_jobs=-1):
    return _core.kernel_matrix(core_matrix(A), core_matrix(B), KERNELS[kernel], g, c, d, n_threads(n_jobs))


def _assert_kernel_close(K, R, kernel):
    assert K.shape == R.shape and K.dtype == np.float64
    # 1e-9 relative; an absolute floor for entries that are differences of large terms
    # (rbf/laplacian from norms, dot products that cancel)
    np.testing.assert_allclose(K, R, rtol=1e-9, atol=1e-12 * max(1.0, np.abs(R).max()))


@pytest.mark.parametrize("fmt_a,fmt_b", [("dense", "dense"), ("csr", "csr"), ("dense", "csr"),
                                         ("csr", "dense"), ("csr64", "csr64"), ("dense", "csr64")])
@pytest.mark.parametrize("kernel,params,ref", KERNEL_CASES, ids=CASE_IDS)
def test_kernel_matrix_matches_sklearn(kernel, params, ref, fmt_a, fmt_b):
    A, B = _data()
    g, c, d = params
    K = _ours(_as(A, fmt_a), _as(B, fmt_b), kernel, g, c, d)
    R = ref(A, B, g, c, d)
    _assert_kernel_close(K, R, kernel)
    if kernel in ("rbf", "laplacian"):
        assert K[11, 5] == pytest.approx(1.0, abs=1e-12)  # x_11 == b_5
        assert np.all(K <= 1.0 + 1e-12) and np.all(K >= 0)


@pytest.mark.parametrize("kernel,params,ref", KERNEL_CASES, ids=CASE_IDS)
def test_kernel_matrix_symmetric_gram(kernel, params, ref):
    A, _ = _data(seed=2, n_a=280)
    g, c, d = params
    for fmt in ("dense", "csr"):
        K = _ours(_as(A, fmt), _as(A, fmt), kernel, g, c, d)
        _assert_kernel_close(K, ref(A, A, g, c, d), kernel)
        np.testing.assert_allclose(K, K.T, rtol=1e-12, atol=1e-12)
        if kernel in ("rbf", "laplacian"):
            np.testing.assert_allclose(np.diag(K), 1.0, atol=1e-12)


@pytest.mark.parametrize("kernel", ["linear", "rbf", "laplacian", "poly"])
def test_kernel_matrix_threads_do_not_change_values(kernel):
    A, B = _data(seed=3, n_a=600, n_b=400)
    for fa, fb in (("dense", "dense"), ("csr", "csr"), ("dense", "csr")):
        Aa, Bb = _as(A, fa), _as(B, fb)
        K1 = _ours(Aa, Bb, kernel, 0.1, 1.0, 2, n_jobs=1)
        K2 = _ours(Aa, Bb, kernel, 0.1, 1.0, 2, n_jobs=2)
        np.testing.assert_array_equal(K1, K2)


@pytest.mark.parametrize("kernel,params,ref", KERNEL_CASES, ids=CASE_IDS)
def test_a_kernel_value_does_not_depend_on_the_batch_it_is_computed_in(kernel, params, ref):
    """K(a, b) is a function of the pair alone, bit for bit: whichever rows of A surround a (its
    register tile: 32, 8 or 1 rows), whichever rows of B are asked for, whichever argument has more
    rows (kernel_matrix may compute the transpose). A distributed NSSVC fit relies on it: each row
    block computes the kernel columns of the in-memory fit. Before the tiles stopped contracting
    multiply-adds, a row's values changed with the width of the tile it fell in."""
    A, B = _data(seed=7, n_a=75, n_b=700)
    g, c, d = params
    for fa, fb in (("dense", "dense"), ("csr", "csr"), ("dense", "csr"), ("float32", "float32")):
        Aa, Bb = _as(A.astype(np.float32), "dense") if fa == "float32" else _as(A, fa), \
            _as(B.astype(np.float32), "dense") if fb == "float32" else _as(B, fb)
        full = _ours(Aa, Bb, kernel, g, c, d)
        for lo, hi in ((0, 75), (3, 40), (37, 38), (64, 75)):  # rows of A in other tiles, alone, at the end
            np.testing.assert_array_equal(_ours(Aa[lo:hi], Bb, kernel, g, c, d), full[lo:hi])
        for lo, hi in ((0, 50), (123, 700), (500, 501)):  # fewer rows of B than of A: the transposed route
            np.testing.assert_array_equal(_ours(Aa, Bb[lo:hi], kernel, g, c, d), full[:, lo:hi])


@pytest.mark.parametrize("kernel", ["rbf", "poly", "laplacian", "linear"])
def test_kernel_columns_written_in_place_equal_kernel_matrix(kernel):
    """_core.kernel_columns writes K(a_r, B) into column slots[r] of a column-major block: the
    values of kernel_matrix bit for bit, the other columns untouched; bad slots are refused."""
    A, B = _data(seed=8, n_a=300, n_b=900)
    for fa, fb in (("dense", "dense"), ("csr", "csr")):
        a, b = core_matrix(_as(A, fa)), core_matrix(_as(B, fb))
        params = (KERNELS[kernel], 0.1, 1.0, 2)
        out = np.full((900, 310), -7.0, order="F")
        slots = np.random.default_rng(0).permutation(310)[:300].astype(np.int64)
        _core.kernel_columns(a, b, *params, out, slots, 2)
        np.testing.assert_array_equal(out[:, slots], _core.kernel_matrix(a, b, *params, 1).T)
        untouched = np.setdiff1d(np.arange(310), slots)
        assert np.all(out[:, untouched] == -7.0)
    with pytest.raises(ValueError, match="slot"):
        _core.kernel_columns(a, b, *params, out, np.full(300, 310, dtype=np.int64), 1)
    with pytest.raises(ValueError, match="row per row"):
        _core.kernel_columns(a, b, *params, np.zeros((10, 310), order="F"), slots, 1)


def test_kernel_margins_sum_in_support_order_for_any_row_block():
    """_core.nssvm_kernel_margins: f = K[:, slots] @ coef (to rounding) and, bit for bit, the same
    rows whatever block of rows it is given and however many threads share it."""
    rng = np.random.default_rng(0)
    K = np.asfortranarray(rng.standard_normal((5000, 40)))
    slots = rng.permutation(40)[:25].astype(np.int64)
    coef = rng.standard_normal(25)
    f = _core.nssvm_kernel_margins(K, slots, coef, 1)
    np.testing.assert_allclose(f, K[:, slots] @ coef, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(_core.nssvm_kernel_margins(K, slots, coef, 2), f)
    for lo, hi in ((0, 1), (7, 4103), (4097, 5000)):
        np.testing.assert_array_equal(_core.nssvm_kernel_margins(np.asfortranarray(K[lo:hi]), slots, coef, 2), f[lo:hi])
    with pytest.raises(ValueError, match="slot"):
        _core.nssvm_kernel_margins(K, np.array([40], dtype=np.int64), coef[:1], 1)


def test_kernel_matrix_shapes_and_edge_sizes():
    rng = np.random.default_rng(4)
    for n_a, n_b in ((1, 1), (1, 300), (257, 1), (513, 7)):  # around the 256-row blocks
        A = rng.standard_normal((n_a, 4))
        B = rng.standard_normal((n_b, 4))
        for fa, fb in (("dense", "dense"), ("csr", "csr"), ("csr", "dense")):
            K = _ours(_as(A, fa), _as(B, fb), "rbf", 0.3, 0.0, 0)
            _assert_kernel_close(K, rbf_kernel(A, B, gamma=0.3), "rbf")


def test_kernel_matrix_very_wide_sparse():
    """d * rows above the densified-block budget: the rows are processed in smaller groups."""
    rng = np.random.default_rng(5)
    n_a, n_b, d = 260, 40, 20_000  # 256-row blocks x 20000 columns > 2**22 entries
    A = sp.random(n_a, d, density=5e-4, format="csr", random_state=rng)
    B = sp.random(n_b, d, density=5e-4, format="csr", random_state=rng)
    B = sp.vstack([A[:1], B[1:]], format="csr")
    for kernel, ref in (("linear", linear_kernel(A, B)), ("rbf", rbf_kernel(A, B, gamma=0.5)),
                        ("laplacian", laplacian_kernel(A, B, gamma=0.5))):
        K = _ours(A, B, kernel, 0.5, 0.0, 0)
        _assert_kernel_close(K, ref, kernel)
        if kernel != "linear":
            assert K[0, 0] == pytest.approx(1.0, abs=1e-12)
    K_mixed = _ours(A, B.toarray(), "rbf", 0.5, 0.0, 0)
    _assert_kernel_close(K_mixed, rbf_kernel(A, B, gamma=0.5), "rbf")


def test_rbf_large_distances_and_tiny_values():
    """exp of large negative arguments: underflow to 0, no NaN, relative accuracy where > 0."""
    rng = np.random.default_rng(6)
    A = rng.standard_normal((50, 3)) * 10
    B = rng.standard_normal((40, 3)) * 10
    for g in (1e-3, 0.1, 1.0, 10.0, 1e3):
        K = _ours(A, B, "rbf", g, 0.0, 0)
        R = rbf_kernel(A, B, gamma=g)
        assert np.all(np.isfinite(K)) and np.all(K >= 0)
        big = R > 1e-300
        np.testing.assert_allclose(K[big], R[big], rtol=1e-9)
        assert np.all(K[~big] <= 1e-300)


def test_core_matrix_int64_csr_narrowed_and_unchanged():
    A, _ = _data()
    A64 = with_int64_indices(sp.csr_matrix(A))
    before = (A64.indices.copy(), A64.indptr.copy(), A64.data.copy())
    m = core_matrix(A64)
    assert m.sparse and m.shape == A.shape
    # the caller's matrix is not modified
    assert A64.indices.dtype == np.int64 and A64.indptr.dtype == np.int64
    np.testing.assert_array_equal(A64.indices, before[0])
    np.testing.assert_array_equal(A64.indptr, before[1])
    np.testing.assert_array_equal(A64.data, before[2])


# ---------------------------------------------------------------------------------------- gamma
def _gamma_inputs():
    out = []
    for name in ("breast_cancer", "iris", "digits"):
        X, y = dataset(name)
        out.append((name, X[:200], y[:200]))
    X, y = dataset("clf_hard")
    out.append(("clf_hard-sparsified", sparsify(X[:200], 0.3), y[:200]))
    return out


@pytest.mark.parametrize("gamma", ["scale", "auto", 0.37])
@pytest.mark.parametrize("fmt", ["dense", "csr", "csr64"])
@pytest.mark.parametrize("name,X,y", _gamma_inputs(), ids=[c[0] for c in _gamma_inputs()])
def test_gamma_matches_sklearn(name, X, y, fmt, gamma):
    Xin = _as(X, fmt)
    ref = SkSVC(gamma=gamma).fit(sp.csr_matrix(X) if fmt != "dense" else X, y)
    model = SVC(gamma=gamma).fit(Xin, y)
    assert model._gamma == pytest.approx(ref._gamma, rel=1e-12)
    assert resolve_gamma(gamma, Xin) == pytest.approx(ref._gamma, rel=1e-12)
    if gamma == "auto":
        assert model._gamma == pytest.approx(1.0 / X.shape[1], rel=1e-15)
    if gamma == "scale":
        assert model._gamma == pytest.approx(1.0 / (X.shape[1] * X.var()), rel=1e-10)


def test_gamma_scale_zero_variance():
    X = np.full((6, 3), 2.5)
    y = np.arange(6) % 2
    assert SVC().fit(X, y)._gamma == SkSVC().fit(X, y)._gamma == 1.0


@pytest.mark.parametrize("name", ["breast_cancer", "digits"])
def test_gamma_scale_float32_input_as_sklearn(name):
    """sklearn converts X to float64 before computing X.var(): gamma='scale' is a float64
    quantity and the same for float32 data and its float64 cast (so both fit the same model)."""
    X, y = dataset(name)
    X32 = X.astype(np.float32)
    ref = SkSVC().fit(X32, y)
    model = SVC().fit(X32, y)
    assert model._gamma == pytest.approx(ref._gamma, rel=1e-12)
    assert model._gamma == pytest.approx(SVC().fit(X32.astype(np.float64), y)._gamma, rel=1e-12)
    assert np.asarray(model._gamma).dtype == np.float64


@pytest.mark.parametrize("kernel, params, ref", KERNEL_CASES, ids=CASE_IDS)
@pytest.mark.parametrize("d, shift", [(3, 0.0), (10, 0.0), (10, 1000.0), (40, 0.0)])
@pytest.mark.parametrize("shrinking", [True, False])
@pytest.mark.parametrize("cache_mb, tol, bound", [(200.0, 1e-3, 3e-7), (1.0, 1e-3, 3e-7), (1.0, 1e-5, 1e-8)])
def test_start_up_gradient_of_a_warm_start_equals_a_dense_product(kernel, params, ref, d, shift, shrinking, cache_mb,
                                                                  tol, bound):
    """The engine's gradient at a warm start a0 (no step taken): y * K (a0 * y) + p, against
    numpy's product with sklearn's K. A cache that holds every row computes them as blocks; a
    smaller one streams kernel-vector products (for the exp kernels on dense data, the fused
    float32 products; at a tight tol, doubles: a smaller error). Enough nonzero a0 (free and at the bound, for G_bar) to take the block
    route; sizes off the panels and tiles; data far from the origin (shift) would show
    cancellation in the distances."""
    from sparsekernel._engine import DualProblem, KernelSpec, SolverOptions, solve

    gamma, coef0, degree = params
    rng = np.random.RandomState(d)
    n = 1003
    X = rng.randn(n, d) * 0.5 + shift
    if kernel in ("poly", "sigmoid", "linear") and shift:
        pytest.skip("the dot-product kernels of points far from the origin overflow")
    y = np.where(rng.rand(n) < 0.5, 1.0, -1.0)
    pos, neg = np.flatnonzero(y > 0)[:151], np.flatnonzero(y < 0)[:151]
    a0 = np.zeros(n)
    a0[pos] = rng.rand(151)
    a0[neg] = a0[pos][::-1]  # y'a0 = 0
    a0[pos[:40]] = a0[neg[:40]] = 1.0  # at the upper bound
    g = gamma / d
    problem = DualProblem(y=y, p=-np.ones(n), hi=np.ones(n))
    r = solve(X, KernelSpec(kernel, gamma=g, coef0=coef0, degree=degree), problem,
              SolverOptions(max_iter=0, shrinking=shrinking, threads=2, cache_mb=cache_mb, tol=tol), a0=a0)
    assert r.n_iter == 0
    np.testing.assert_array_equal(r.alpha, a0)
    K = ref(X, X, g, coef0, degree)
    expected = y * (K @ (a0 * y)) - 1.0
    scale = np.abs(K) @ np.abs(a0) + 1.0
    np.testing.assert_array_less(np.abs(r.grad - expected) / scale, bound)


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
@pytest.mark.parametrize("d, gamma, shift", [(3, 0.5, 0.0), (8, 2.0, 0.0), (20, 0.05, 100.0), (40, 0.025, 0.0),
                                             (300, 1.0 / 300, 3.0)])
def test_float32_kernel_sums_stay_within_their_stated_bound(kernel, d, gamma, shift):
    """The fused float32 kernel-vector products (the engine's start-up, reconstructed and DC start
    gradients) against the same sums in double: every output within the bound they report (worst
    case, kernels.cpp's fused_weighted_sum), weights up to 1e4 of both signs (large C), data far
    from the origin too. A max_error below the bound gives the double sums exactly."""
    rng = np.random.RandomState(d)
    n = 1100
    X = rng.randn(n, d) * rng.uniform(0.5, 2.0, d) + shift
    M = core_matrix(X)
    rows = np.arange(0, n, 3, dtype=np.int32)
    cols = np.arange(n, dtype=np.int32)
    w = rng.uniform(0, 1e4, len(rows)) * np.where(rng.rand(len(rows)) < 0.5, -1.0, 1.0)
    code = KERNELS[kernel]
    s32, bound = _core.kernel_weighted_sum(M, code, gamma, 0.0, 3, rows, w, cols, 1e300, 2)
    s64, none = _core.kernel_weighted_sum(M, code, gamma, 0.0, 3, rows, w, cols, 0.0, 2)
    K = (rbf_kernel if kernel == "rbf" else laplacian_kernel)(X[rows], X, gamma=gamma)
    np.testing.assert_allclose(s64, w @ K, rtol=1e-10, atol=1e-9 * np.abs(w).sum())
    assert none == 0.0 and 0.0 < bound
    assert np.all(np.abs(s32 - s64) <= bound), (np.abs(s32 - s64).max(), bound)
    again, used = _core.kernel_weighted_sum(M, code, gamma, 0.0, 3, rows, w, cols, 0.5 * bound, 2)
    assert used == 0.0
    np.testing.assert_array_equal(again, s64)
