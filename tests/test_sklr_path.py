"""sklr_path: S-KLR along lam at fixed C with warm starts.

1. Every path point equals a cold fit (dual objective to 1e-6 relative at tol 1e-8, the same
   expansion and probabilities), binary and one-vs-rest.
2. Warm starts: every point after the first is warm-started and the path takes fewer SMO steps in
   total than the cold fits.
3. Beyond the Proposition 1 value (klr_lambda_bound) the minority class stays in the model and the
   kept fraction no longer falls (the paper claims no monotonicity below it; none is asserted).
4. Test-set metrics (accuracy, log-loss, ECE) are those of the returned models; bad input is refused.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_iris, make_moons
from sklearn.metrics import log_loss
from sklearn.preprocessing import StandardScaler

from sparsekernel import SparseKernelLogisticRegression, expected_calibration_error, klr_lambda_bound, sklr_path
from sparsekernel._warm import DualState, warm_point


@pytest.fixture(scope="module")
def moons():
    X, y = make_moons(300, noise=0.25, random_state=0)
    Xt, yt = make_moons(300, noise=0.25, random_state=1)
    return X, y, Xt, yt


def test_path_points_equal_cold_fits_and_warm_starts_save_steps(moons):
    X, y, Xt, yt = moons
    C, lams = 50.0, [0.0, 1.0, 2.5, 5.0, 10.0, 20.0]
    est = SparseKernelLogisticRegression(tol=1e-8)
    path = sklr_path(X, y, lams=lams[::-1], C=C, estimator=est, return_models=True)  # walked ascending
    assert [e["lam"] for e in path] == lams
    assert [e["warm_started"] for e in path] == [False] + [True] * (len(lams) - 1)
    cold_iters = 0
    for e in path:
        cold = SparseKernelLogisticRegression(C=C, lam=e["lam"], tol=1e-8).fit(X, y)
        cold_iters += int(np.sum(cold.n_iter_))
        assert e["objective"] == pytest.approx(float(cold.dual_objective_[0]), rel=1e-6)
        model = e["estimator"]
        assert model.lam_ == e["lam"] and model.C == C
        assert e["kept"] == pytest.approx(cold.kept_fraction_, abs=2 / len(y))
        np.testing.assert_allclose(model.predict_proba(Xt), cold.predict_proba(Xt), atol=1e-5)
        assert model.temperature_ == pytest.approx(cold.temperature_, rel=1e-4)
    assert sum(e["n_iter"] for e in path) < cold_iters
    assert path[-1]["kept"] < 1.0  # the walk reaches sparse models


def test_beyond_the_proposition_1_value_the_minority_class_stays_in_the_model():
    """Proposition 1: for lam >= klr_lambda_bound every minority point has a_i >= C - bound (kept), so
    from there on the kept fraction stays at its floor (non-increasing, >= n_- / N). Below it the
    paper claims no monotonicity, and the kept fraction is U-shaped in lam (sparsest well below the
    bound, then back up as a -> C, Proposition 3); only the first step is asserted to sparsify."""
    X, y = make_moons(400, noise=0.3, random_state=2)
    idx = np.r_[np.flatnonzero(y == 0), np.flatnonzero(y == 1)[:60]]  # 200 against 60
    X, y = X[idx], y[idx]
    C = 10.0
    lam_max = klr_lambda_bound(X, y, C=C)
    lams = [0.0, 0.2 * lam_max, lam_max, 1.5 * lam_max, 2.0 * lam_max]
    path = sklr_path(X, y, lams=lams, C=C, return_models=True)
    kept = [e["kept"] for e in path]
    assert kept[1] < kept[0] == 1.0
    minority = np.flatnonzero(y == 1)
    for e in path[2:]:
        assert np.all(np.isin(minority, e["estimator"].support_))
        assert e["kept"] >= len(minority) / len(y)
    for a, b in zip(kept[2:], kept[3:]):
        assert b <= a + 1 / len(y)


def test_multiclass_path_equals_cold_fits():
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    path = sklr_path(X, y, lams=[0.0, 2.0, 8.0], C=20.0, estimator=SparseKernelLogisticRegression(tol=1e-8))
    for e in path:
        cold = SparseKernelLogisticRegression(C=20.0, lam=e["lam"], tol=1e-8).fit(X, y)
        np.testing.assert_allclose(e["dual_objective"], cold.dual_objective_, rtol=1e-6)
        assert len(np.atleast_1d(e["temperature"])) == 3


def test_test_metrics_are_those_of_the_models(moons):
    X, y, Xt, yt = moons
    path = sklr_path(X, y, lams=[0.0, 4.0], C=10.0, X_test=Xt, y_test=yt, n_bins=10, return_models=True)
    for e in path:
        model = e["estimator"]
        P = model.predict_proba(Xt)
        assert e["accuracy"] == pytest.approx(np.mean(model.predict(Xt) == yt))
        assert e["log_loss"] == pytest.approx(log_loss(yt, P))
        assert e["ece"] == pytest.approx(expected_calibration_error(yt, P, n_bins=10))
        assert "estimator" in e
    assert "estimator" not in sklr_path(X, y, lams=[1.0], C=10.0)[0]


def test_bad_input():
    X, y = make_moons(50, random_state=0)
    with pytest.raises(ValueError, match="lam"):
        sklr_path(X, y, lams=[-1.0], C=1.0)
    with pytest.raises(ValueError, match="empty"):
        sklr_path(X, y, lams=[], C=1.0)
    with pytest.raises(ValueError, match="SparseKernelLogisticRegression"):
        sklr_path(X, y, lams=[1.0], estimator=object())
    with pytest.raises(ValueError, match="X_test"):
        sklr_path(X, y, lams=[1.0], X_test=X)


def test_entropic_warm_point_keeps_the_box_and_shifts_the_gradient():
    a, G = np.array([0.2, 0.5, 0.3]), np.array([0.1, -0.2, 0.05])
    hi, p = np.full(3, 1.0), np.full(3, -0.5)
    state = DualState(a, G, hi, p, ("rbf", 1.0, 0.0, 3))
    a0, g0 = warm_point(state, hi, np.full(3, -2.0), ("rbf", 1.0, 0.0, 3), entropic=True)
    np.testing.assert_array_equal(a0, a)
    np.testing.assert_allclose(g0, G - 1.5)
    assert warm_point(state, hi, p, ("rbf", 2.0, 0.0, 3), entropic=True)[1] is None  # new kernel: recomputed
    assert warm_point(state, 2 * hi, p, ("rbf", 1.0, 0.0, 3), entropic=True) == (None, None)  # new box: cold
