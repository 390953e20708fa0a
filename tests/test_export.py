"""ONNX and skops export (sparsekernel.export): onnxruntime's outputs against the library's
predictions, skops round trips, and the errors for what cannot be exported."""

import importlib
import sys
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_classification, make_regression
from sklearn.exceptions import ConvergenceWarning
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import sparsekernel
from sparsekernel import (
    NSSVC,
    SLMC,
    SVC,
    SVR,
    KernelLogisticRegression,
    NuSVC,
    NuSVR,
    OneClassSVM,
    SparseKernelLogisticRegression,
    SparseKFD,
)
from sparsekernel.slmc import ReducedSVM

pytest.importorskip("skl2onnx")
ort = pytest.importorskip("onnxruntime")
skops_io = pytest.importorskip("skops.io")

from sparsekernel.export import load_skops, save_skops, to_onnx, trusted_types  # noqa: E402

KERNELS = ["rbf", "linear", "poly", "sigmoid", "laplacian"]
# kernel parameters that keep every kernel well away from saturation on standardised data
KERNEL_PARAMS = {"rbf": {"gamma": 0.3}, "linear": {}, "poly": {"gamma": 0.3, "coef0": 1.0, "degree": 3},
                 "sigmoid": {"gamma": 0.05, "coef0": 0.1}, "laplacian": {"gamma": 0.2}}


def _data(n_classes, n=90, d=4, seed=0):
    X, y = make_classification(n_samples=n, n_features=d, n_informative=d, n_redundant=0, n_classes=n_classes,
                               n_clusters_per_class=1, class_sep=1.0, random_state=seed)
    X = StandardScaler().fit_transform(X)
    X_new = np.random.RandomState(seed + 1).normal(scale=1.5, size=(40, d))  # beyond the training range too
    return X, y, np.vstack([X, X_new])


def _quiet(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", FutureWarning)  # SVC(probability=...)
        return model.fit(X, y)


def _run(onx, X, dtype=np.float64):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(onx.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return sess.run(None, {"X": np.ascontiguousarray(X, dtype=dtype)})


def _assert_close64(got, want, tol=(1e-9, 1e-12)):
    """Equal to tol[0] relative; the absolute floor tol[1] times the largest value covers entries
    that are sums cancelling to ~0 (their rounding is relative to the terms, not to the sum)."""
    want = np.asarray(want, dtype=np.float64)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=tol[0], atol=tol[1] * max(1.0, float(np.abs(want).max())))


# The library's laplacian prediction runs the C++ kernel rows, whose exp is the training-grade
# polynomial (simd.hpp exp_nonpositive<8>, ~1e-9 relative); the graph's Exp is exact, so the graph is
# compared with the library to 1e-8 there (its absolute floor 1e-8 of the largest value: a decision
# value is a sum of terms each off by 1e-9) and with the exact expansion to 1e-12 in
# test_laplacian_graph_is_exact.
TOL = {"laplacian": (1e-8, 1e-8)}


def _two_columns(dec):
    return np.column_stack([-dec, dec]) if dec.ndim == 1 else dec


# models and what the ONNX "probabilities" output must equal
CLASSIFIERS = {
    "svc": (lambda kw: SVC(C=2.0, **kw), "decision_function"),
    "nusvc": (lambda kw: NuSVC(nu=0.3, **kw), "decision_function"),
    "klr": (lambda kw: KernelLogisticRegression(C=2.0, **kw), "predict_proba"),
    "sklr": (lambda kw: SparseKernelLogisticRegression(C=2.0, lam=0.3, **kw), "predict_proba"),
    "nssvc": (lambda kw: NSSVC(s=30, random_state=0, **kw), "decision_function"),
    "slmc": (lambda kw: SLMC(n_expansion=5, max_iter=10, random_state=0, **kw), "decision_function"),
    "skfd": (lambda kw: SparseKFD(n_expansion=5, max_iter=10, random_state=0, **kw), "decision_function"),
}


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("name", list(CLASSIFIERS))
def test_classifier_float64_equals_library(name, kernel, n_classes):
    make, scores_of = CLASSIFIERS[name]
    if name in ("slmc", "skfd") and kernel == "sigmoid":
        pytest.skip("SLMC / SparseKFD need a positive definite kernel (the sigmoid kernel is not)")
    X, y, Xt = _data(n_classes)
    model = _quiet(make({"kernel": kernel, **KERNEL_PARAMS[kernel]}), X, y)
    label, scores = _run(to_onnx(model, X), Xt)
    want_labels = model.predict(Xt)
    np.testing.assert_array_equal(label, want_labels)
    assert label.dtype == np.int64
    want = getattr(model, scores_of)(Xt)
    _assert_close64(scores, _two_columns(want) if scores_of == "decision_function" else want,
                    TOL.get(kernel, (1e-9, 1e-12)))
    assert len(np.unique(want_labels)) == n_classes  # a model that predicts every class


REGRESSORS = {"svr": lambda kw: SVR(C=10.0, epsilon=1.0, **kw), "nusvr": lambda kw: NuSVR(C=10.0, nu=0.3, **kw)}


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("name", list(REGRESSORS))
def test_svr_float64_equals_library(name, kernel):
    X, y = make_regression(n_samples=80, n_features=3, noise=5.0, random_state=0)
    X = StandardScaler().fit_transform(X)
    model = REGRESSORS[name]({"kernel": kernel, **KERNEL_PARAMS[kernel]}).fit(X, y)
    (out,) = _run(to_onnx(model, 3), X)
    assert out.shape == (len(X), 1)
    _assert_close64(out[:, 0], model.predict(X), TOL.get(kernel, (1e-9, 1e-12)))


def _assert_one_class_outputs(label, scores, model, Xt, tol=(1e-9, 1e-12)):
    """skl2onnx's outputs of an outlier detector: label (n, 1) int64 = predict (+1 / -1), scores
    (n, 1) = decision_function (float64, to rounding)."""
    assert label.shape == scores.shape == (len(Xt), 1) and label.dtype == np.int64
    np.testing.assert_array_equal(label[:, 0], model.predict(Xt))
    _assert_close64(scores[:, 0], model.decision_function(Xt), tol)


@pytest.mark.parametrize("kernel", KERNELS)
def test_one_class_svm_float64_equals_library(kernel):
    X, _, Xt = _data(2)
    model = OneClassSVM(nu=0.2, kernel=kernel, **KERNEL_PARAMS[kernel]).fit(X)
    label, scores = _run(to_onnx(model, X), Xt)
    _assert_one_class_outputs(label, scores, model, Xt, TOL.get(kernel, (1e-9, 1e-12)))
    assert set(np.unique(label)) == {-1, 1}  # inliers and outliers among the test points


def test_one_class_svm_zero_score_is_an_outlier():
    """A score of exactly 0 is labelled -1, as by predict (skl2onnx's Sign would give 0): with
    nu = 1 both points are at their bound, a = (1, 1), so sum_i a_i x_i x = 0 for every x; the
    model's rho set to 0 makes f = 0 everywhere."""
    model = OneClassSVM(kernel="linear", nu=1.0).fit(np.array([[-1.0], [1.0]]))
    np.testing.assert_array_equal(model.dual_coef_, [[1.0, 1.0]])
    model._intercept = model.intercept_ = np.zeros(1)
    model.offset_ = np.zeros(1)
    Xt = np.array([[0.0], [3.0]])
    np.testing.assert_array_equal(model.decision_function(Xt), 0.0)
    label, scores = _run(to_onnx(model, 1), Xt)
    _assert_one_class_outputs(label, scores, model, Xt)
    np.testing.assert_array_equal(label[:, 0], [-1, -1])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("bare", [False, True], ids=["pipeline", "bare"])
def test_one_class_svm_plain_skl2onnx(bare, dtype):
    """skl2onnx.to_onnx with no options (skl2onnx's outlier parser): label and scores as for
    scikit-learn's OneClassSVM, alone or after a StandardScaler, in float64 (to rounding) and
    float32 (to ~1e-5)."""
    from skl2onnx import to_onnx as skl_to_onnx

    X, _, Xt = _scaled(2)
    pipe = make_pipeline(StandardScaler(), OneClassSVM(nu=0.2, gamma=0.3))
    if bare:  # the model alone, on standardised data
        scaler = StandardScaler().fit(X)
        X, Xt, pipe = scaler.transform(X), scaler.transform(Xt), pipe[-1]
    pipe.fit(X)
    onx = skl_to_onnx(pipe, X[:1].astype(dtype))
    assert [o.name for o in onx.graph.output] == ["label", "scores"]
    label, scores = _skl2onnx_session(onx).run(None, {"X": np.ascontiguousarray(Xt, dtype=dtype)})
    if dtype == np.float64:
        _assert_one_class_outputs(label, scores, pipe, Xt)
    else:
        assert scores.dtype == np.float32 and label.shape == (len(Xt), 1)
        want = pipe.decision_function(Xt)
        np.testing.assert_allclose(scores[:, 0], want, rtol=1e-4, atol=1e-5 * max(1.0, float(np.abs(want).max())))
        assert np.mean(label[:, 0] == pipe.predict(Xt)) >= 0.97


def test_laplacian_graph_is_exact():
    from sklearn.metrics.pairwise import laplacian_kernel

    X, y, Xt = _data(2)
    model = SVC(kernel="laplacian", gamma=0.2).fit(X, y)
    exact = laplacian_kernel(Xt, model.support_vectors_, gamma=0.2) @ model.dual_coef_[0] + model.intercept_[0]
    _, scores = _run(to_onnx(model, X), Xt)
    np.testing.assert_allclose(scores[:, 1], exact, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("shape, break_ties", [("ovr", False), ("ovo", False), ("ovr", True)])
def test_svc_multiclass_vote_scores_and_ties(shape, break_ties):
    """Four classes: LIBSVM's vote with its tie rule (many 2-2-1-1 ties at C small), the 'ovo' values
    and break_ties."""
    X, y, Xt = _data(4, n=120)
    model = SVC(C=0.05, kernel="rbf", gamma=0.5, decision_function_shape=shape, break_ties=break_ties).fit(X, y)
    label, scores = _run(to_onnx(model, X), Xt)
    np.testing.assert_array_equal(label, model.predict(Xt))
    _assert_close64(scores, model.decision_function(Xt))
    assert scores.shape[1] == (6 if shape == "ovo" else 4)
    if not break_ties:  # the tie rule is exercised: some vote ties are resolved towards the first class
        from sparsekernel.svm import _ovo_votes

        votes = _ovo_votes(model._ovo_decision(Xt), 4)
        assert np.any((votes == votes.max(axis=1, keepdims=True)).sum(axis=1) > 1)


def test_svc_exact_zero_decision_goes_to_second_class():
    """A point on the binary boundary (dec = 0 exactly): SVC predicts classes_[1], NSSVC-style
    models classes_[0]; a symmetric linear problem puts x = 0 on it."""
    X = np.array([[-2.0], [-1.0], [1.0], [2.0]])
    y = np.array([0, 0, 1, 1])
    model = SVC(kernel="linear", C=10.0).fit(X, y)
    Xt = np.array([[0.0], [0.5], [-0.5]])
    assert model.decision_function(Xt)[0] == 0.0
    label, _ = _run(to_onnx(model, 1), Xt)
    np.testing.assert_array_equal(label, model.predict(Xt))
    assert label[0] == 1


def test_svc_binary_probability():
    X, y, Xt = _data(2)
    model = _quiet(SVC(kernel="rbf", gamma=0.3, probability=True, random_state=0), X, y)
    label, proba = _run(to_onnx(model, X), Xt)
    np.testing.assert_array_equal(label, model.predict(Xt))
    _assert_close64(proba, model.predict_proba(Xt))
    _, scores = _run(to_onnx(model, X, raw_scores=True), Xt)
    _assert_close64(scores, _two_columns(model.decision_function(Xt)))


def test_svc_multiclass_probability_is_refused_unless_raw_scores():
    X, y, Xt = _data(3)
    model = _quiet(SVC(kernel="rbf", probability=True, random_state=0), X, y)
    with pytest.raises(ValueError, match="raw_scores"):
        to_onnx(model, X)
    _, scores = _run(to_onnx(model, X, raw_scores=True), Xt)
    _assert_close64(scores, model.decision_function(Xt))


def test_klr_raw_scores():
    X, y, Xt = _data(2)
    model = KernelLogisticRegression(gamma=0.3).fit(X, y)
    _, scores = _run(to_onnx(model, X, raw_scores=True), Xt)
    _assert_close64(scores, _two_columns(model.decision_function(Xt)))


def test_reduced_svm_and_sparse_fit():
    """A baseline of the SLMC module, and an SVC fitted on CSR data (sparse support vectors)."""
    X, y, Xt = _data(2)
    model = _quiet(ReducedSVM(n_expansion=6, gamma=0.3, random_state=0), X, y)
    label, scores = _run(to_onnx(model, X), Xt)
    np.testing.assert_array_equal(label, model.predict(Xt))
    _assert_close64(scores, _two_columns(model.decision_function(Xt)))
    svc = SVC(gamma=0.3).fit(sp.csr_matrix(X), y)
    label, scores = _run(to_onnx(svc, X), Xt)
    np.testing.assert_array_equal(label, svc.predict(Xt))
    _assert_close64(scores, _two_columns(svc.decision_function(Xt)))


def test_string_and_float_labels():
    X, y, Xt = _data(3)
    names = np.array(["bird", "cat", "dog"])[y]
    model = SVC(gamma=0.3).fit(X, names)
    label, _ = _run(to_onnx(model, X), Xt)
    np.testing.assert_array_equal(label, model.predict(Xt))
    model = NSSVC(s=30, random_state=0).fit(X, y.astype(np.float64) * 2.0)  # float labels 0.0, 2.0, 4.0
    label, _ = _run(to_onnx(model, X), Xt)
    assert label.dtype == np.int64
    np.testing.assert_array_equal(label, model.predict(Xt))


@pytest.mark.parametrize("name", ["svc", "nusvc", "klr", "nssvc", "slmc"])
def test_float32_is_close(name):
    make, scores_of = CLASSIFIERS[name]
    X, y, Xt = _data(3)
    model = _quiet(make({"kernel": "rbf", "gamma": 0.3}), X, y)
    onx = to_onnx(model, X, dtype=np.float32)
    label, scores = _run(onx, Xt, dtype=np.float32)
    assert scores.dtype == np.float32
    want = getattr(model, scores_of)(Xt)
    np.testing.assert_allclose(scores, want, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(want).max())))
    assert np.mean(label == model.predict(Xt)) >= 0.97


def _skl2onnx_session(onx):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    return ort.InferenceSession(onx.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def _scaled(n_classes):
    """Data a StandardScaler changes (mean 3, scale 10), so a pipeline's first step matters."""
    X, y, Xt = _data(n_classes)
    return X * 10.0 + 3.0, y, Xt * 10.0 + 3.0


PIPELINE_CLASSIFIERS = {**CLASSIFIERS,
                        "svc_proba": (lambda kw: SVC(C=2.0, probability=True, random_state=0, **kw), "predict_proba"),
                        "nusvc_proba": (lambda kw: NuSVC(nu=0.3, probability=True, random_state=0, **kw),
                                        "predict_proba"),
                        "reduced_svm": (lambda kw: ReducedSVM(n_expansion=6, random_state=0, **kw), "decision_function")}


@pytest.mark.parametrize("bare", [False, True], ids=["pipeline", "bare"])
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("kernel", ["rbf", "linear"])
@pytest.mark.parametrize("name", list(PIPELINE_CLASSIFIERS))
def test_plain_skl2onnx_to_onnx_float64(name, kernel, n_classes, bare):
    """skl2onnx.to_onnx(pipe, X64) with no options and no registration call (importing
    sparsekernel.export registered the converters): a graph onnxruntime runs (no ZipMap over
    doubles), labels equal to predict, probabilities / scores equal to the model's to 1e-9."""
    from skl2onnx import to_onnx as skl_to_onnx

    make, scores_of = PIPELINE_CLASSIFIERS[name]
    if name in ("svc_proba", "nusvc_proba") and n_classes > 2:
        pytest.skip("multiclass SVC(probability=True) is not exported (test_svc_multiclass_probability_...)")
    X, y, Xt = _scaled(n_classes)
    model = make({"kernel": kernel, **KERNEL_PARAMS[kernel]})
    if bare:  # the model alone, on standardised data
        scaler = StandardScaler().fit(X)
        X, Xt, pipe = scaler.transform(X), scaler.transform(Xt), model
    else:
        pipe = make_pipeline(StandardScaler(), model)
    _quiet(pipe, X, y)
    onx = skl_to_onnx(pipe, X[:1].astype(np.float64))
    sess = _skl2onnx_session(onx)
    label, scores = sess.run(None, {"X": np.ascontiguousarray(Xt, dtype=np.float64)})
    np.testing.assert_array_equal(label, pipe.predict(Xt))
    want = getattr(pipe, scores_of)(Xt)
    _assert_close64(scores, _two_columns(want) if scores_of == "decision_function" else want)


@pytest.mark.parametrize("kernel", ["rbf", "linear"])
@pytest.mark.parametrize("name", list(REGRESSORS))
def test_plain_skl2onnx_to_onnx_svr_pipeline(name, kernel):
    from skl2onnx import to_onnx as skl_to_onnx

    X, y = make_regression(n_samples=80, n_features=3, noise=5.0, random_state=0)
    X = X * 10.0 + 3.0
    pipe = make_pipeline(StandardScaler(), REGRESSORS[name]({"kernel": kernel, **KERNEL_PARAMS[kernel]})).fit(X, y)
    (out,) = _skl2onnx_session(skl_to_onnx(pipe, X[:1].astype(np.float64))).run(None, {"X": X})
    assert out.shape == (len(X), 1)
    _assert_close64(out[:, 0], pipe.predict(X))


@pytest.mark.parametrize("name", ["klr", "nssvc", "svc"])
def test_plain_skl2onnx_to_onnx_float32_zipmap(name):
    """float32 keeps skl2onnx's ZipMap by default (a list of {class: value} dicts), and a tensor with
    options {'zipmap': False}."""
    from skl2onnx import to_onnx as skl_to_onnx

    make, scores_of = CLASSIFIERS[name]
    X, y, Xt = _scaled(3)
    pipe = _quiet(make_pipeline(StandardScaler(), make({"kernel": "rbf", "gamma": 0.3})), X, y)
    want = getattr(pipe, scores_of)(Xt)
    X32 = Xt.astype(np.float32)
    label, dicts = _skl2onnx_session(skl_to_onnx(pipe, X32[:1])).run(None, {"X": X32})
    assert isinstance(dicts, list) and sorted(dicts[0]) == [0, 1, 2]
    got = np.array([[d[k] for k in (0, 1, 2)] for d in dicts])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(want).max())))
    assert np.mean(label == pipe.predict(Xt)) >= 0.97
    _, tensor = _skl2onnx_session(skl_to_onnx(pipe, X32[:1], options={"zipmap": False})).run(None, {"X": X32})
    assert tensor.dtype == np.float32 and tensor.shape == (len(Xt), 3)
    np.testing.assert_allclose(tensor, got, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_plain_skl2onnx_to_onnx_svc_pairwise_scores(dtype):
    """An SVC's 'ovo' scores (one column per pair, here 6 pairs of 4 classes) never go into a ZipMap,
    which would label them as classes; zipmap='columns' is refused."""
    from skl2onnx import to_onnx as skl_to_onnx

    X, y, Xt = _data(4, n=120)
    pipe = make_pipeline(StandardScaler(), SVC(gamma=0.5, decision_function_shape="ovo")).fit(X, y)
    label, scores = _skl2onnx_session(skl_to_onnx(pipe, X[:1].astype(dtype))).run(None, {"X": Xt.astype(dtype)})
    assert scores.dtype == dtype and scores.shape == (len(Xt), 6)
    np.testing.assert_allclose(scores, pipe.decision_function(Xt), rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="columns"):
        skl_to_onnx(pipe, X[:1], options={"zipmap": "columns"})


def test_skl2onnx_zipmap_options_float64():
    """float64: zipmap=True (skl2onnx's default) can only mean the tensor (ZipMap takes float32);
    'columns' gives one float64 output per class."""
    from skl2onnx import to_onnx as skl_to_onnx

    X, y, Xt = _scaled(3)
    pipe = make_pipeline(StandardScaler(), KernelLogisticRegression(gamma=0.3)).fit(X, y)
    want = pipe.predict_proba(Xt)
    for options in ({"zipmap": True}, {"zipmap": False}, {KernelLogisticRegression: {"zipmap": True}}):
        _, proba = _skl2onnx_session(skl_to_onnx(pipe, X[:1], options=options)).run(None, {"X": Xt})
        _assert_close64(proba, want)
    label, *columns = _skl2onnx_session(skl_to_onnx(pipe, X[:1], options={"zipmap": "columns"})).run(None, {"X": Xt})
    np.testing.assert_array_equal(label, pipe.predict(Xt))
    _assert_close64(np.column_stack(columns), want)


def test_importing_export_registers_the_converters():
    """In a fresh interpreter, ``import sparsekernel.export`` alone makes skl2onnx convert a pipeline
    (no MissingShapeCalculator); register_converters() stays public and idempotent."""
    import subprocess

    code = (
        "import numpy as np, onnxruntime as ort, skl2onnx\n"
        "from sklearn.pipeline import make_pipeline\n"
        "from sklearn.preprocessing import StandardScaler\n"
        "from sparsekernel import NSSVC\n"
        "rng = np.random.RandomState(0)\n"
        "X = rng.normal(size=(60, 3)); y = (X[:, 0] > 0).astype(int)\n"
        "pipe = make_pipeline(StandardScaler(), NSSVC(s=10, random_state=0)).fit(X, y)\n"
        "try:\n"
        "    skl2onnx.to_onnx(pipe, X[:1])\n"
        "    raise SystemExit('converted before sparsekernel.export was imported')\n"
        "except skl2onnx.common.exceptions.MissingShapeCalculator:\n"
        "    pass\n"
        "import sparsekernel.export\n"
        "assert 'sparsekernel.export.onnx' in __import__('sys').modules\n"
        "sparsekernel.export.register_converters(); sparsekernel.export.register_converters()\n"
        "sess = ort.InferenceSession(skl2onnx.to_onnx(pipe, X[:1]).SerializeToString(),\n"
        "                            providers=['CPUExecutionProvider'])\n"
        "label, scores = sess.run(None, {'X': X})\n"
        "assert (label == pipe.predict(X)).all()\n"
        "assert np.allclose(scores[:, 1], pipe.decision_function(X), rtol=1e-9, atol=1e-12)\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stdout + out.stderr


# ---------------------------------------------------------------------- errors
def test_unsupported_kernels_and_models_raise():
    X, y, _ = _data(2)
    K = X @ X.T
    with pytest.raises(ValueError, match="precomputed"):
        to_onnx(SVC(kernel="precomputed").fit(K, y), len(X))
    with pytest.raises(ValueError, match="callable"):
        to_onnx(SVC(kernel=lambda A, B: A @ B.T).fit(X, y), X)
    with pytest.raises(ValueError, match="features"):
        to_onnx(SVC().fit(X, y), 7)
    with pytest.raises(ValueError, match="dtype"):
        to_onnx(SVC().fit(X, y), X, dtype=np.int64)
    from sklearn.svm import SVC as SkSVC

    with pytest.raises(TypeError, match="no sparsekernel ONNX converter"):
        to_onnx(SkSVC().fit(X, y), X)
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        to_onnx(SVC(), X)


def test_missing_extra_gives_one_clear_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "skl2onnx", None)  # "import skl2onnx" now raises ImportError
    monkeypatch.delitem(sys.modules, "sparsekernel.export.onnx", raising=False)
    X, y, _ = _data(2)
    model = SVC().fit(X, y)  # the core works without the extra
    with pytest.raises(ImportError, match=r"sparsekernel\[export\]"):
        to_onnx(model, X)
    monkeypatch.setitem(sys.modules, "skops", None)
    monkeypatch.setitem(sys.modules, "skops.io", None)
    with pytest.raises(ImportError, match="skops.*export"):
        save_skops(model, "unused.skops")
    assert "sparsekernel.svm.SVC" in trusted_types()  # needs no extra
    assert importlib.import_module("sparsekernel") is sparsekernel


# ---------------------------------------------------------------------- skops
SKOPS_MODELS = {
    "svc": lambda: SVC(gamma=0.3),
    "svc_csr": lambda: SVC(kernel="poly", gamma=0.3, coef0=1.0),
    "svr": lambda: SVR(),
    "nusvc": lambda: NuSVC(nu=0.3, gamma=0.3),
    "nusvr": lambda: NuSVR(),
    "ocsvm": lambda: OneClassSVM(nu=0.2, gamma=0.3),
    "klr": lambda: KernelLogisticRegression(gamma=0.3),
    "sklr": lambda: SparseKernelLogisticRegression(lam=0.3, gamma=0.3),
    "nssvc": lambda: NSSVC(s=30, random_state=0),
    "nssvc_rbf": lambda: NSSVC(kernel="rbf", s=30, random_state=0),
    "slmc": lambda: SLMC(n_expansion=4, max_iter=5, random_state=0),
    "skfd": lambda: SparseKFD(n_expansion=4, max_iter=5, random_state=0),
}


@pytest.mark.parametrize("name", list(SKOPS_MODELS))
def test_skops_round_trip(name, tmp_path):
    X, y, Xt = _data(3)
    if name in ("svr", "nusvr"):
        y = X[:, 0] + 0.1 * y
    if name == "svc_csr":
        X = sp.csr_matrix(X)
    model = _quiet(SKOPS_MODELS[name](), X, y)
    model.predict(Xt[:2])  # (a model keeps the view for the C++ core its predictions made, if any)
    path = tmp_path / "model.skops"
    save_skops(model, path)
    untrusted = skops_io.get_untrusted_types(file=path)
    assert set(untrusted) <= set(trusted_types()), untrusted
    loaded = load_skops(path)
    assert type(loaded) is type(model)
    # the view is left out on save, made again by the loaded model's first prediction that needs it
    assert "_sv_core" not in model.__getstate__() and "_sv_core" not in vars(loaded)
    np.testing.assert_array_equal(loaded.predict(Xt), model.predict(Xt))
    method = "predict" if name in ("svr", "nusvr") else "decision_function"
    np.testing.assert_array_equal(getattr(loaded, method)(Xt), getattr(model, method)(Xt))
    with pytest.raises(Exception, match="[Uu]ntrusted"):
        skops_io.load(path)  # nothing of the library is trusted by default


def test_skops_pipeline_needs_only_the_library_types(tmp_path):
    X, y, Xt = _data(2)
    pipe = make_pipeline(StandardScaler(), SVC(gamma=0.3)).fit(X, y)
    path = tmp_path / "pipe.skops"
    save_skops(pipe, path)
    loaded = load_skops(path)
    np.testing.assert_array_equal(loaded.decision_function(Xt), pipe.decision_function(Xt))


CV_MODELS = {
    # the exact route's search (PathSearchCV), its approximate leave-one-out, the shared-basis route's
    "klr_cv": lambda: sparsekernel.KernelLogisticRegressionCV(Cs=3, cv=3),
    "klr_cv_alo": lambda: sparsekernel.KernelLogisticRegressionCV(Cs=3, cv="alo"),
    "sklr_cv": lambda: sparsekernel.SparseKernelLogisticRegressionCV(Cs=[1.0, 100.0], cv=3, solver="smo"),
    "klr_cv_basis": lambda: sparsekernel.KernelLogisticRegressionCV(Cs=3, cv=3, solver="nystrom", n_components=30,
                                                                    random_state=0),
    "sklr_cv_basis": lambda: sparsekernel.SparseKernelLogisticRegressionCV(Cs=3, cv=3, solver="nystrom",
                                                                          random_state=0),
}


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("name", list(CV_MODELS))
def test_cv_classes_save_load_and_export(name, n_classes, tmp_path):
    """Every KLR-CV class is saved (.skm and skops), loaded and exported (ONNX, alone and in a
    pipeline through ``sparsekernel.export.to_onnx``), its predictions equal to 1e-9: .skm and
    ONNX hold the refitted ``estimator_`` (the model that predicts), skops the whole search."""
    from sparsekernel.io import load_model, read_header, save_model

    X, y, Xt = _data(n_classes)
    model = _quiet(CV_MODELS[name](), X, y)
    proba = model.predict_proba(Xt)
    header = save_model(model, tmp_path / "m.skm")
    assert header["selected_by"]["estimator"] == type(model).__name__
    assert header["selected_by"]["C_"] == model.C_ and read_header(tmp_path / "m.skm")["estimator"] == type(
        model.estimator_).__name__
    loaded = load_model(tmp_path / "m.skm")
    assert type(loaded) is type(model.estimator_)
    np.testing.assert_allclose(loaded.predict_proba(Xt), proba, rtol=0, atol=1e-12)
    save_skops(model, tmp_path / "m.skops")
    assert set(skops_io.get_untrusted_types(file=tmp_path / "m.skops")) <= set(trusted_types())
    again = load_skops(tmp_path / "m.skops")
    assert type(again) is type(model) and again.C_ == model.C_
    np.testing.assert_array_equal(again.predict_proba(Xt), proba)
    _, p = _run(to_onnx(model, X), Xt)
    np.testing.assert_allclose(p, proba, rtol=0, atol=1e-9)
    pipe = _quiet(make_pipeline(StandardScaler(), CV_MODELS[name]()), X, y)
    label, p = _run(to_onnx(pipe, X), Xt)
    np.testing.assert_allclose(p, pipe.predict_proba(Xt), rtol=0, atol=1e-9)
    np.testing.assert_array_equal(label, pipe.predict(Xt))


def test_cv_class_without_refit_is_refused_with_the_reason(tmp_path):
    from sparsekernel.io import save_model

    X, y, _ = _data(2)
    model = _quiet(sparsekernel.KernelLogisticRegressionCV(Cs=2, cv=2, refit=False), X, y)
    with pytest.raises(ValueError, match="refit=False"):
        save_model(model, tmp_path / "m.skm")
    with pytest.raises(ValueError, match="refit=False"):
        to_onnx(model, X)


def test_to_onnx_names_skl2onnx_for_other_pipelines():
    from sklearn.linear_model import LogisticRegression

    X, y, _ = _data(2)
    pipe = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
    with pytest.raises(TypeError, match="skl2onnx.to_onnx"):
        to_onnx(pipe, X)
