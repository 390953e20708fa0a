"""Differential tests: sparsekernel.SVC against sklearn.svm.SVC (LIBSVM) on the same problems.

Both libraries solve the same convex dual (up to the stopping tolerance), so for every problem,
kernel, C and solver route:

* the dual objective 1/2 c'Kc - sum|c| of every pairwise problem, recomputed here from each
  model's dual_coef_ and a float64 kernel matrix from sklearn.metrics.pairwise, agrees to 1e-3
  relative (in practice ~1e-6);
* sparsekernel's own dual_objective_ agrees with that recomputation;
* predictions agree on >= 99.5% of the training points and of perturbed off-training points;
* n_support_ agrees within max(2%, 1 SV) in total;
* intercept_ and the one-vs-one decision values are close.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC as SkSVC

from _helpers import dataset, dual_objectives, model_kernel, sklearn_kernel
from sparsekernel import SVC

BINARY = ["clf_easy", "clf_hard", "clf_imbalanced", "moons", "circles", "breast_cancer", "digits_binary"]
MULTICLASS = ["digits", "iris", "wine", "clf_multi"]


def _cases():
    cases = []
    for p in BINARY + MULTICLASS:
        for C in (1e-2, 1.0):
            cases.append((p, "rbf", (), C))
    # large C only where the problem is small / (nearly) separable in feature space
    for p in ["moons", "circles", "iris", "wine", "breast_cancer", "clf_easy"]:
        cases.append((p, "rbf", (), 1e3))
    for p in ["clf_easy", "clf_hard", "breast_cancer", "digits_binary", "iris", "wine", "digits"]:
        for C in (1e-2, 1.0):
            cases.append((p, "linear", (), C))
    for p in ["moons", "circles", "clf_easy", "breast_cancer", "wine"]:
        for C in (1e-2, 1.0):
            cases.append((p, "poly", (("degree", 3), ("coef0", 1.0)), C))
    cases.append(("clf_easy", "poly", (("degree", 2), ("coef0", 0.5), ("gamma", 0.1)), 1.0))
    # sigmoid is not PSD: only where LIBSVM and the SMO engine both converge to the same point
    for p in ["breast_cancer", "clf_easy", "moons", "iris"]:
        for C in (1e-2, 1.0):
            cases.append((p, "sigmoid", (("gamma", 0.01), ("coef0", 0.0)), C))
    for p, base in [("breast_cancer", "rbf"), ("moons", "rbf"), ("iris", "rbf"), ("wine", "linear")]:
        cases.append((p, "precomputed-" + base, (), 1.0))
    return cases


CASES = _cases()
ROUTES = [("smo2", None), ("smo1", None), ("batched", None), ("batched", 16)]


def _case_id(case):
    p, k, kp, C = case
    extra = ",".join(f"{a}={b}" for a, b in kp)
    return f"{p}-{k}{'(' + extra + ')' if extra else ''}-C{C:g}"


def _eval_points(X, seed=0):
    """The training points, then perturbed copies of them (off-training points near the data)."""
    rng = np.random.default_rng(seed)
    return np.vstack([X, X + 0.25 * X.std(axis=0) * rng.standard_normal(X.shape)])


@functools.lru_cache(maxsize=None)
def _problem(case):
    """(X_fit, y, X_eval, kernel, params, full kernel fn or None) for a case."""
    p, kern, kp, C = case
    X, y = dataset(p)
    Xe = _eval_points(X)
    params = dict(kp)
    if kern.startswith("precomputed"):
        base = kern.split("-", 1)[1]
        gamma = 1.0 / (X.shape[1] * X.var())
        kf = sklearn_kernel(base, gamma)
        return kf(X, X), y, kf(Xe, X), "precomputed", params
    return X, y, Xe, kern, params


@functools.lru_cache(maxsize=None)
def _sklearn_model(case):
    Xf, y, Xe, kernel, params = _problem(case)
    return SkSVC(kernel=kernel, C=case[3], **params).fit(Xf, y)


def _sv_kernel(model, Xf):
    if model.kernel == "precomputed":
        return Xf[np.ix_(model.support_, model.support_)]
    kf = model_kernel(model)
    return kf(model.support_vectors_, model.support_vectors_)


@pytest.mark.parametrize("solver,q", ROUTES, ids=[f"{s}-q{q}" for s, q in ROUTES])
@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_matches_libsvm(case, solver, q):
    Xf, y, Xe, kernel, params = _problem(case)
    C = case[3]
    ref = _sklearn_model(case)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = SVC(kernel=kernel, C=C, solver=solver, working_set_size=q, **params).fit(Xf, y)
    assert model.converged_
    np.testing.assert_array_equal(model.classes_, ref.classes_)

    # --- dual objective of every pair problem, both recomputed the same way in float64
    obj = dual_objectives(model, _sv_kernel(model, Xf))
    obj_ref = dual_objectives(ref, _sv_kernel(ref, Xf))
    assert obj.shape == obj_ref.shape == model.dual_objective_.shape
    assert np.all(obj_ref < 0)  # sanity: a = 0 is feasible with objective 0, so the optimum is < 0
    np.testing.assert_allclose(obj, obj_ref, rtol=1e-3, atol=0)
    # the solver's own report of its objective (float32 kernel cache) matches the recomputation
    np.testing.assert_allclose(model.dual_objective_, obj, rtol=1e-4, atol=1e-9)

    # --- predictions (Xe = the training points, then perturbed copies of them)
    pred, pred_ref = model.predict(Xe), ref.predict(Xe)
    n = Xf.shape[0]
    agree_train = np.mean(pred[:n] == pred_ref[:n])
    agree_eval = np.mean(pred[n:] == pred_ref[n:])
    assert agree_train >= 0.995, agree_train
    assert agree_eval >= 0.995, agree_eval

    # --- support vectors
    n_sv, n_sv_ref = model.n_support_.sum(), ref.n_support_.sum()
    assert abs(int(n_sv) - int(n_sv_ref)) <= max(0.02 * n_sv_ref, 1), (model.n_support_, ref.n_support_)
    # per class a few SVs more or less: at tol=1e-3 two solvers stop at different points of the
    # tolerance band (clf_imbalanced, C=0.01, batched q=16: 87 vs 90 in one class with a KKT gap of
    # 9.7e-4; at tol=1e-6 both give exactly [92, 64]); the total above holds the 2% bar
    per_class_slack = np.maximum(0.03 * ref.n_support_, 3)
    assert np.all(np.abs(model.n_support_ - ref.n_support_) <= per_class_slack), (model.n_support_,
                                                                                   ref.n_support_)
    assert model.support_.shape == (n_sv,)
    assert model.dual_coef_.shape == ref.dual_coef_.shape[:1] + (n_sv,)

    # --- intercept and decision values (tol = 1e-3 bounds the KKT violation, not these directly)
    b, b_ref = model.intercept_, ref.intercept_
    assert b.shape == b_ref.shape
    np.testing.assert_allclose(b, b_ref, atol=1e-2, rtol=1e-2)
    if len(ref.classes_) == 2:
        dec, dec_ref = model.decision_function(Xe), ref.decision_function(Xe)
    else:
        model.set_params(decision_function_shape="ovo")
        ref_ovo = SkSVC(kernel=kernel, C=C, decision_function_shape="ovo", **params).fit(Xf, y)
        dec, dec_ref = model.decision_function(Xe), ref_ovo.decision_function(Xe)
    assert dec.shape == dec_ref.shape
    scale = max(1.0, np.abs(dec_ref).max())
    np.testing.assert_allclose(dec, dec_ref, atol=0.05 * scale, rtol=0)
    # the fraction of points whose decision values are far apart must be tiny
    assert np.mean(np.abs(dec - dec_ref) > 0.01 * scale) <= 0.05


@pytest.mark.parametrize("kernel", ["rbf", "linear", "poly"])
def test_multiclass_ovr_and_predict_match_libsvm(kernel):
    """The one-vs-rest transform of the one-vs-one votes and the vote itself, as LIBSVM/sklearn."""
    X, y = dataset("wine")
    for shape in ("ovr", "ovo"):
        ref = SkSVC(kernel=kernel, decision_function_shape=shape, tol=1e-6).fit(X, y)
        model = SVC(kernel=kernel, decision_function_shape=shape, tol=1e-6).fit(X, y)
        d, d_ref = model.decision_function(X), ref.decision_function(X)
        assert d.shape == d_ref.shape
        np.testing.assert_allclose(d, d_ref, atol=1e-3)
        np.testing.assert_array_equal(model.predict(X), ref.predict(X))


def test_tight_tolerance_gives_the_libsvm_solution():
    """With tol=1e-7 both solvers sit at the (unique, strictly convex in w) optimum: the decision
    functions and intercepts agree to ~1e-4, far tighter than the default-tol comparisons."""
    X, y = dataset("breast_cancer")
    for solver in ("smo2", "smo1", "batched"):
        ref = SkSVC(C=1.0, tol=1e-7).fit(X, y)
        model = SVC(C=1.0, tol=1e-7, solver=solver).fit(X, y)
        np.testing.assert_array_equal(model.support_, ref.support_)
        np.testing.assert_allclose(model.dual_coef_, ref.dual_coef_, atol=1e-4)
        np.testing.assert_allclose(model.intercept_, ref.intercept_, atol=1e-4)
        np.testing.assert_allclose(model.decision_function(X), ref.decision_function(X), atol=1e-4)
