"""Every estimator of the registry (``sparsekernel._registry``) works with every tool that claims it:
its fitted expansion reproduces its decision values (checked against a NumPy kernel written here),
the memory budget, skops, ONNX, the .skm files, plotting and the command line."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import is_classifier, is_outlier_detector, is_regressor
from sklearn.datasets import make_classification

from sparsekernel import (NSSVC, SLMC, SVC, KernelLogisticRegressionCV, PathSearchCV,
                          SparseKernelLogisticRegressionCV, SparseKFD)
from sparsekernel._base import fitted_expansion
from sparsekernel._memory import fit_budget
from sparsekernel._registry import ESTIMATORS, ONNX_FAMILIES, cli_models, entries
from sparsekernel.slmc import ReducedSetClassifier, ReducedSVM

#: a quick fit of every registered class (a class added to the registry fails here until it has one)
RECIPES = {
    "SLMC": lambda: SLMC(n_expansion=5, max_iter=3, random_state=0),
    "SparseKFD": lambda: SparseKFD(n_expansion=5, max_iter=3, random_state=0),
    "ReducedSetClassifier": lambda: ReducedSetClassifier(n_expansion=5, n_init=1, max_iter=5, random_state=0),
    "ReducedSVM": lambda: ReducedSVM(n_expansion=5, random_state=0),
    "NSSVC": lambda: NSSVC(random_state=0),
    "KernelLogisticRegressionCV": lambda: KernelLogisticRegressionCV(Cs=3),
    "SparseKernelLogisticRegressionCV": lambda: SparseKernelLogisticRegressionCV(Cs=3),
    "PathSearchCV": lambda: PathSearchCV(SVC(), {"C": [1.0, 10.0]}, cv=3),
}
IDS = [e.name for e in ESTIMATORS]


def _data():
    X, y = make_classification(n_samples=120, n_features=5, n_informative=3, random_state=0)
    return X, y


def _fitted(entry):
    X, y = _data()
    model = RECIPES.get(entry.name, entry.cls)()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if is_outlier_detector(model):
            model.fit(X)
        elif is_regressor(model):
            model.fit(X, X[:, 0] + 0.1 * y)
        else:
            model.fit(X, y)
    return model, X


def _kernel(e, X, B):
    """K(X, B) of an expansion's kernel, in NumPy."""
    if e.kernel == "linear":
        return X @ B.T
    if e.kernel == "poly":
        return (e.gamma * X @ B.T + e.coef0) ** e.degree
    if e.kernel == "sigmoid":
        return np.tanh(e.gamma * X @ B.T + e.coef0)
    d2 = (X**2).sum(1)[:, None] + (B**2).sum(1)[None, :] - 2 * X @ B.T
    if e.kernel == "rbf":
        return np.exp(-e.gamma * np.maximum(d2, 0))
    assert e.kernel == "laplacian"
    return np.exp(-e.gamma * np.abs(X[:, None, :] - B[None, :, :]).sum(-1))


def _scores(model, X):
    """The model's own decision values, one column per expansion row (sign as the expansion's)."""
    if is_regressor(model):
        return model.predict(X)[:, None]
    dec = model.decision_function(X)
    dec = dec[:, None] if dec.ndim == 1 else dec
    fitted = getattr(model, "estimator_", model)
    if isinstance(fitted, SVC) or type(fitted).__name__ == "NuSVC":
        if dec.shape[1] == 1:  # LIBSVM's pair (0, 1) is positive for classes_[0]; scikit-learn's sign is flipped
            return -dec
    return dec


def test_every_entry_has_a_recipe_and_known_capabilities():
    for e in ESTIMATORS:
        assert e.name in RECIPES or e.cls().get_params() is not None
        assert e.onnx is None or e.onnx in ONNX_FAMILIES
        assert (e.cli is None) == (e.summary == "")
    names = [e.cli for e in ESTIMATORS if e.cli]
    assert len(names) == len(set(names)) == len(cli_models())


@pytest.mark.parametrize("entry", entries(expansion=True), ids=lambda e: e.name)
def test_the_fitted_expansion_gives_the_decision_values(entry):
    model, X = _fitted(entry)
    e = fitted_expansion(model).dense()
    K = _kernel(e, X, e.B)
    dec = K + e.b if e.W is None else K @ e.W.T + e.b
    ours = _scores(model, X)
    if is_outlier_detector(model):
        ours = model.decision_function(X)[:, None]
    np.testing.assert_allclose(dec, ours, rtol=1e-7, atol=1e-7)
    assert e.n_points == e.B.shape[0] and e.B.shape[1] == X.shape[1]


@pytest.mark.parametrize("entry", entries(budget=True), ids=lambda e: e.name)
def test_every_entry_with_a_budget_states_it(entry):
    model, X = _fitted(entry)
    budget = fit_budget(model, X)
    assert budget.total == pytest.approx(sum(budget.terms.values())) and budget.total > X.nbytes
    assert fit_budget(model, np.vstack([X, X])).total > budget.total


@pytest.mark.parametrize("entry", ESTIMATORS, ids=lambda e: e.name)
def test_skops_round_trip(entry, tmp_path):
    pytest.importorskip("skops")
    from sparsekernel.export import load_skops, save_skops, trusted_types

    assert f"{entry.cls.__module__}.{entry.cls.__qualname__}" in trusted_types()
    model, X = _fitted(entry)
    save_skops(model, tmp_path / "m.skops")
    from skops.io import get_untrusted_types

    # none of the library's types is left untrusted (a search holds scikit-learn's scorer and splitter)
    others = [t for t in get_untrusted_types(file=tmp_path / "m.skops") if t not in trusted_types()]
    assert not [t for t in others if t.startswith("sparsekernel")]
    loaded = load_skops(tmp_path / "m.skops", trusted=others)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))


@pytest.mark.parametrize("entry", entries(onnx=True), ids=lambda e: e.name)
def test_onnx_export(entry):
    ort = pytest.importorskip("onnxruntime")
    from sparsekernel.export import to_onnx

    model, X = _fitted(entry)
    sess = ort.InferenceSession(to_onnx(model, X).SerializeToString(), providers=["CPUExecutionProvider"])
    out = sess.run(None, {"X": X.astype(np.float64)})
    if is_regressor(model):
        np.testing.assert_allclose(out[0].ravel(), model.predict(X), rtol=1e-9, atol=1e-9)
    else:
        np.testing.assert_array_equal(out[0].ravel(), model.predict(X))


@pytest.mark.parametrize("entry", entries(skm=True), ids=lambda e: e.name)
def test_skm_round_trip(entry, tmp_path):
    from sparsekernel.io import load_model, save_model

    model, X = _fitted(entry)
    save_model(model, tmp_path / "m.skm")
    loaded = load_model(tmp_path / "m.skm")
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))


@pytest.mark.parametrize("entry", entries(expansion=True), ids=lambda e: e.name)
def test_plotting_reads_the_expansion_points(entry):
    from sparsekernel.plotting import expansion_points

    model, X = _fitted(entry)
    pts = expansion_points(getattr(model, "estimator_", model))
    assert pts.ndim == 2 and pts.shape[1] == X.shape[1] and pts.shape[0] >= 1


@pytest.mark.parametrize("entry", [e for e in ESTIMATORS if e.cli], ids=lambda e: e.cli)
def test_the_command_line_fits_and_predicts_every_model_it_names(entry, tmp_path):
    from click.testing import CliRunner

    from sparsekernel.cli import main

    def cli(*args):
        with CliRunner().isolation() as (stdout, stderr, _):
            status = main(list(args))
        return status, stdout.getvalue().decode() + stderr.getvalue().decode()

    X, y = _data()
    if is_regressor(entry.cls()):
        y = X[:, 0] + 0.1 * y
    data = tmp_path / "d.csv"
    np.savetxt(data, np.column_stack([X, y]), delimiter=",", header=",".join([f"x{i}" for i in range(5)] + ["y"]),
               comments="")
    model = tmp_path / "m.skm"
    args = ["fit", entry.cli, str(data), "-o", str(model)]
    status, output = cli(*args)
    assert status == 0, output
    status, output = cli("predict", str(model), str(data))
    assert status == 0, output
    assert len(output.split()) >= len(y)  # one prediction per row


def test_the_tools_derive_their_tables_from_the_registry():
    from sparsekernel import io
    from sparsekernel.cli._common import MODELS

    assert set(io.SUPPORTED_ESTIMATORS) == {e.name for e in entries(skm=True, chooses=False)}
    assert {k: v[0] for k, v in MODELS.items()} == {k: v[0] for k, v in cli_models().items()}
    assert is_classifier(KernelLogisticRegressionCV())
