"""S-KLR probabilities at lam > 0 (the temperature of predict_proba), lam='auto', the ECE helper.

1. On data drawn from a known logistic model the corrected probabilities at lam > 0 are closer to
   the true ones than sigma(f) (mean absolute error and KL divergence).
2. lam = 0 gives exactly sigma(f); predict = argmax predict_proba; probabilities in [0, 1] summing to
   1, two and three classes; predict_log_proba finite where predict_proba underflows.
3. The fitted temperature is the maximum-likelihood one on the training margins (T >= 1).
4. lam='auto' = auto_lam(C, bound) is recorded in lam_ and is sparse where C / 10 keeps every point.
5. The temperature travels through .skm model files and the ONNX graph.
6. expected_calibration_error against a hand count.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit
from sklearn.datasets import load_iris, make_moons
from sklearn.preprocessing import StandardScaler

from sparsekernel import SparseKernelLogisticRegression, expected_calibration_error
from sparsekernel.klr import auto_lam, fit_temperature


def _logistic_data(n, seed):
    """y ~ Bernoulli(sigma(f*(x))), f*(x) = 2 sin(2 x1) + x2 - 0.5 x1 x2 on [-2, 2]^2."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2.0, 2.0, size=(n, 2))
    p = expit(2.0 * np.sin(2.0 * X[:, 0]) + X[:, 1] - 0.5 * X[:, 0] * X[:, 1])
    y = (rng.uniform(size=n) < p).astype(int)
    return X, y, p


@pytest.fixture(scope="module")
def logistic():
    X, y, _ = _logistic_data(600, 0)
    Xt, _, pt = _logistic_data(2000, 1)
    return X, y, Xt, pt


@pytest.mark.parametrize("lam", [5.0, 20.0])
def test_corrected_probabilities_closer_to_the_truth(logistic, lam):
    X, y, Xt, pt = logistic
    model = SparseKernelLogisticRegression(C=10.0, lam=lam, gamma=1.0).fit(X, y)
    raw = expit(model.decision_function(Xt))
    corrected = model.predict_proba(Xt)[:, 1]
    assert model.temperature_ > 1.0

    def kl(q):  # KL(true || q), averaged over the test points
        q = np.clip(q, 1e-12, 1 - 1e-12)
        return np.mean(pt * np.log(pt / q) + (1 - pt) * np.log((1 - pt) / (1 - q)))

    assert np.mean(np.abs(corrected - pt)) < 0.8 * np.mean(np.abs(raw - pt))
    assert kl(corrected) < 0.5 * kl(raw)


def test_lam_zero_is_sigmoid_of_f(logistic):
    X, y, Xt, _ = logistic
    model = SparseKernelLogisticRegression(C=10.0, lam=0.0, gamma=1.0).fit(X, y)
    assert model.lam_ == 0.0 and model.temperature_ == 1.0
    f = model.decision_function(Xt)
    P = model.predict_proba(Xt)
    np.testing.assert_array_equal(P[:, 1], expit(f))
    np.testing.assert_array_equal(P[:, 0], expit(-f))


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("lam", [0.0, 3.0])
def test_probabilities_are_a_distribution_and_predict_is_their_argmax(n_classes, lam):
    if n_classes == 2:
        X, y = make_moons(200, noise=0.3, random_state=0)
    else:
        X, y = load_iris(return_X_y=True)
        X = StandardScaler().fit_transform(X)
    model = SparseKernelLogisticRegression(C=10.0, lam=lam).fit(X, y)
    T = np.atleast_1d(model.temperature_)
    assert T.shape == ((1,) if n_classes == 2 else (n_classes,))
    assert np.all(T >= 1.0) and (lam > 0 or np.all(T == 1.0))
    P = model.predict_proba(X)
    assert P.shape == (len(X), n_classes)
    assert np.all((P >= 0) & (P <= 1))
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_array_equal(model.predict(X), model.classes_[np.argmax(P, axis=1)])
    np.testing.assert_allclose(np.exp(model.predict_log_proba(X)), P, rtol=1e-12, atol=1e-300)
    if n_classes == 2:  # the temperature keeps the sign of f: the same labels as sign(f)
        np.testing.assert_array_equal(model.predict(X), model.classes_[(model.decision_function(X) > 0).astype(int)])


def test_log_proba_has_no_log_zero():
    X, y = make_moons(200, noise=0.1, random_state=0)
    model = SparseKernelLogisticRegression(C=10.0, lam=0.0, kernel="linear").fit(X, y)
    far = 1e5 * model.decision_function(X[:1]).reshape(1, 1) * np.array([[1.0, -1.0]])  # |f| ~ 1e5
    assert np.min(model.predict_proba(far)) == 0.0  # underflows
    L = model.predict_log_proba(far)
    assert np.all(np.isfinite(L)) and np.max(L) == 0.0 and np.min(L) < -1e3


def test_temperature_is_the_training_likelihood_optimum():
    rng = np.random.default_rng(0)
    f = rng.normal(0.0, 4.0, 500)
    y = np.where(rng.uniform(size=500) < expit(f / 3.0), 1.0, -1.0)  # true temperature 3
    T = fit_temperature(y * f)
    grid = np.linspace(1.0, 10.0, 2001)
    nll = [np.mean(np.logaddexp(0.0, -y * f / t)) for t in grid]
    assert abs(T - grid[int(np.argmin(nll))]) < 0.01
    assert 2.0 < T < 4.5
    assert fit_temperature(np.abs(f) + 1.0) == 1.0  # separable margins ask for no deflation: T = 1
    w = rng.uniform(0.5, 2.0, 500)
    Tw = fit_temperature(y * f, w)
    nll_w = [np.sum(w * np.logaddexp(0.0, -y * f / t)) for t in grid]
    assert abs(Tw - grid[int(np.argmin(nll_w))]) < 0.01


def test_auto_lam_rule():
    b = 1e-5
    assert auto_lam(1000.0) == pytest.approx(100.0)  # C / 10, the paper's lambda-choice, for large C
    assert auto_lam(100.0) == pytest.approx(np.log((100.0 - b) / b))  # the log-odds threshold
    assert auto_lam(1.0) == pytest.approx(0.25)  # C / 4 where no lam is sparse and accurate
    assert auto_lam(100.0, bound=1e-3) == pytest.approx(np.log((100.0 - 1e-3) / 1e-3))
    model = SparseKernelLogisticRegression(C=100.0).fit(*make_moons(100, noise=0.3, random_state=0))
    assert model.lam_ == pytest.approx(auto_lam(100.0))


def test_default_lam_is_sparse_where_c_over_10_keeps_every_point():
    X, y = make_moons(400, noise=0.2, random_state=0)
    X = StandardScaler().fit_transform(X)
    old = SparseKernelLogisticRegression(C=30.0, lam=3.0).fit(X, y)  # the former 'auto' = C / 10
    new = SparseKernelLogisticRegression(C=30.0).fit(X, y)
    assert old.kept_fraction_ == 1.0 and old.sparsity_ == 0.0
    assert new.kept_fraction_ < 0.97
    assert np.mean(new.predict(X) == y) >= np.mean(old.predict(X) == y) - 0.01


def test_temperature_survives_model_files_and_onnx(tmp_path):
    from sparsekernel import load_model, save_model

    X, y = make_moons(150, noise=0.3, random_state=1)
    model = SparseKernelLogisticRegression(C=10.0, lam=5.0).fit(X, y)
    assert model.temperature_ > 1.0
    save_model(model, tmp_path / "m.skm")
    loaded = load_model(tmp_path / "m.skm")
    assert loaded.temperature_ == model.temperature_ and loaded.lam_ == model.lam_
    np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))

    pytest.importorskip("skl2onnx")
    ort = pytest.importorskip("onnxruntime")
    from sparsekernel.export import to_onnx

    onx = to_onnx(model, X)
    sess = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    label, proba = sess.run(None, {sess.get_inputs()[0].name: X.astype(np.float64)})
    np.testing.assert_allclose(proba, model.predict_proba(X), rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(label, model.predict(X))


def test_expected_calibration_error_by_hand():
    y = np.array([0, 1, 1, 0, 1])
    p1 = np.array([0.1, 0.8, 0.65, 0.7, 0.95])  # confidences 0.9, 0.8, 0.65, 0.7, 0.95
    # 2 bins: [0.5, 1) holds all; accuracy 4/5 (the 0.7 is wrong), mean confidence 0.8
    assert expected_calibration_error(y, p1, n_bins=2) == pytest.approx(abs(0.8 - 0.8))
    # 10 bins: 0.6 bin {0.65 right}, 0.7 {0.7 wrong}, 0.8 {0.8 right}, 0.9 {0.9 right, 0.95 right}
    want = (abs(1 - 0.65) + abs(0 - 0.7) + abs(1 - 0.8) + 2 * abs(1 - 0.925)) / 5
    assert expected_calibration_error(y, p1, n_bins=10) == pytest.approx(want)
    P = np.column_stack([1 - p1, p1])
    assert expected_calibration_error(y, P, n_bins=10) == pytest.approx(want)
    assert expected_calibration_error(np.array(["a", "b"]), np.array([[0.2, 0.8], [0.3, 0.7]]),
                                      classes=np.array(["a", "b"]), n_bins=15) == pytest.approx(
        (abs(0 - 0.8) + abs(1 - 0.7)) / 2)
    with pytest.raises(ValueError, match="n_bins"):
        expected_calibration_error(y, p1, n_bins=0)
