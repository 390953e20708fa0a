"""sparsekernel.plotting rendered with Agg: the artists (collections, lines, scales, labels), not pixels."""

import importlib
import sys
import warnings

import numpy as np
import pytest
from sklearn.calibration import calibration_curve
from sklearn.datasets import make_blobs, make_moons
from sklearn.exceptions import ConvergenceWarning

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import PathCollection  # noqa: E402

from sparsekernel import NSSVC, SLMC, SVC, KernelLogisticRegression  # noqa: E402
from sparsekernel.plotting import (  # noqa: E402
    plot_convergence,
    plot_decision_boundary,
    plot_frontier,
    plot_reliability,
)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def moons():
    return make_moons(n_samples=80, noise=0.2, random_state=0)


def _scatters(ax):
    return [c for c in ax.collections if type(c) is PathCollection]


@pytest.mark.parametrize("make, attr", [
    (lambda: SVC(gamma=1.0), "support_vectors_"),
    (lambda: KernelLogisticRegression(gamma=1.0), "support_vectors_"),
    (lambda: NSSVC(kernel="rbf", gamma=1.0, s=12, random_state=0), "support_vectors_"),
    (lambda: SLMC(n_expansion=5, gamma=1.0, max_iter=5, random_state=0), "expansion_vectors_"),
])
def test_decision_boundary_marks_the_expansion_vectors(moons, make, attr):
    X, y = moons
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = make().fit(X, y)
    fig, ax = plt.subplots()
    assert plot_decision_boundary(model, X, y, ax=ax, grid_resolution=40) is ax
    sc = _scatters(ax)
    assert len(sc) == 3  # one per class, then the expansion vectors
    np.testing.assert_array_equal(sc[0].get_offsets(), X[y == 0])
    np.testing.assert_array_equal(sc[1].get_offsets(), X[y == 1])
    np.testing.assert_array_equal(sc[2].get_offsets(), getattr(model, attr))
    name = "expansion vectors" if attr == "expansion_vectors_" else "support vectors"
    assert sc[2].get_label() == f"{name} ({len(getattr(model, attr))})"
    assert len(sc[2].get_facecolors()) == 0 or sc[2].get_facecolors()[0][3] == 0  # hollow markers
    # the filled decision function and the boundary's contour lines (levels 0 and the margins)
    contours = [c for c in ax.collections if type(c) is not PathCollection]
    assert len(contours) >= 2
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[:2] == ["0", "1"] and legend[2].startswith(name)


def test_decision_boundary_multiclass_probability_and_options():
    X, y = make_blobs(n_samples=60, centers=3, cluster_std=1.0, random_state=1)
    model = KernelLogisticRegression(gamma=0.5).fit(X, y)
    ax = plot_decision_boundary(model, X, y, grid_resolution=30, show_expansion=False)
    assert len(_scatters(ax)) == 3  # the classes only
    xl, yl = ax.get_xlim(), ax.get_ylim()
    assert xl[0] < X[:, 0].min() and xl[1] > X[:, 0].max() and yl[0] < X[:, 1].min() and yl[1] > X[:, 1].max()
    binary = KernelLogisticRegression(gamma=0.5).fit(X[y < 2], y[y < 2])
    ax = plot_decision_boundary(binary, X[y < 2], y[y < 2], response="predict_proba", grid_resolution=30)
    assert len(_scatters(ax)) == 3
    with pytest.raises(ValueError, match="2 features"):
        plot_decision_boundary(model, np.hstack([X, X[:, :1]]), y)


def test_frontier_lines_sorted_with_labels_and_log_scale():
    results = [
        {"model": "S-KLR", "n_expansion": 40, "accuracy": 0.91, "lam": 0.1},
        {"model": "S-KLR", "n_expansion": 10, "accuracy": 0.85, "lam": 1.0},
        {"model": "S-KLR", "n_expansion": 20, "accuracy": 0.89, "lam": 0.5},
        {"model": "SVC", "n_expansion": 60, "accuracy": 0.92},
        {"model": "SVC", "n_expansion": None, "accuracy": 0.5},  # skipped: no size
    ]
    ax = plot_frontier(results, label_by="model", annotate="lam", logx=True)
    lines = ax.get_lines()
    assert [ln.get_label() for ln in lines] == ["S-KLR", "SVC"]
    np.testing.assert_array_equal(lines[0].get_xdata(), [10, 20, 40])
    np.testing.assert_array_equal(lines[0].get_ydata(), [0.85, 0.89, 0.91])
    np.testing.assert_array_equal(lines[1].get_xdata(), [60])
    assert ax.get_xscale() == "log"
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("n_expansion", "accuracy")
    assert sorted(t.get_text() for t in ax.texts) == ["0.1", "0.5", "1", "None"]
    columns = {"s": [5, 50, 500], "error": [0.3, 0.2, 0.1]}  # a table as a dict of columns
    ax = plot_frontier(columns, x="s", y="error")
    (line,) = ax.get_lines()
    np.testing.assert_array_equal(line.get_ydata(), [0.3, 0.2, 0.1])
    assert ax.get_xscale() == "linear" and ax.get_legend() is None


def test_convergence_log_scale_tol_and_skipped_records():
    history = [{"iteration": 0, "kkt_gap": 2.0}, {"iteration": 10, "kkt_gap": 0.1},
               {"iteration": 15, "elapsed": 0.3},  # no gap in this record
               {"iteration": 20, "kkt_gap": 1e-4}, {"iteration": 30, "kkt_gap": 0.0}]  # 0: not on a log axis
    fig, ax = plt.subplots()
    assert plot_convergence(history, ax=ax, tol=1e-3) is ax
    gap, tol = ax.get_lines()
    np.testing.assert_array_equal(gap.get_xdata(), [0, 10, 20])
    np.testing.assert_array_equal(gap.get_ydata(), [2.0, 0.1, 1e-4])
    np.testing.assert_array_equal(tol.get_ydata(), [1e-3, 1e-3])
    assert tol.get_label() == "tol"
    assert ax.get_yscale() == "log" and ax.get_ylabel() == "kkt_gap" and ax.get_xlabel() == "iteration"


def test_convergence_groups_and_nssvm_history():
    records = [{"iteration": k, "problem": p, "kkt_gap": 10.0 ** -k} for p in ("0 vs 1", "0 vs 2") for k in range(4)]
    ax = plot_convergence(records, label_by="problem")
    assert [ln.get_label() for ln in ax.get_lines()] == ["0 vs 1", "0 vs 2"]
    X, y = make_moons(n_samples=200, noise=0.2, random_state=0)
    model = NSSVC(s=20, random_state=0).fit(X, y)
    hist = {"NSSVC": [{"iteration": i, "norm_F": h[0]} for i, h in enumerate(model.history_[0])]}
    ax = plot_convergence(hist, metric="norm_F", tol=1e-6)
    line = ax.get_lines()[0]
    assert line.get_label() == "NSSVC"
    np.testing.assert_array_equal(line.get_ydata(), [h[0] for h in model.history_[0] if h[0] > 0])
    assert ax.get_ylabel() == "norm_F"


def test_reliability_bins_equal_calibration_curve():
    rng = np.random.RandomState(0)
    y = rng.randint(0, 2, size=300)
    good = np.clip(0.5 + (y - 0.5) * rng.uniform(0.0, 0.9, size=300), 0, 1)
    bad = rng.uniform(size=300)
    fig, ax = plt.subplots()
    assert plot_reliability(y, {"KLR": good, "SVC + Platt": np.column_stack([1 - bad, bad])}, ax=ax, n_bins=5) is ax
    diag, klr, svc = ax.get_lines()
    np.testing.assert_array_equal(diag.get_xdata(), [0, 1])
    np.testing.assert_array_equal(diag.get_ydata(), [0, 1])
    for line, p in ((klr, good), (svc, bad)):
        frac, mean = calibration_curve(y, p, n_bins=5)
        np.testing.assert_allclose(line.get_xdata(), mean)
        np.testing.assert_allclose(line.get_ydata(), frac)
    assert klr.get_label().startswith("KLR (ECE ") and svc.get_label().startswith("SVC + Platt (ECE ")
    assert (ax.get_xlim(), ax.get_ylim()) == ((0.0, 1.0), (0.0, 1.0))
    assert ax.get_xlabel() == "mean predicted probability"


def test_reliability_of_real_models_and_top_label():
    X, y = make_blobs(n_samples=90, centers=3, cluster_std=2.0, random_state=0)
    klr = KernelLogisticRegression(gamma=0.5).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        svc = SVC(gamma=0.5, probability=True, random_state=0).fit(X, y)
    ax = plot_reliability(y, {"KLR": klr.predict_proba(X), "SVC + Platt": svc.predict_proba(X)}, n_bins=4)
    assert len(ax.get_lines()) == 3
    P = klr.predict_proba(X)
    frac, mean = calibration_curve(klr.predict(X) == y, P.max(axis=1), n_bins=4)
    np.testing.assert_allclose(ax.get_lines()[1].get_ydata(), frac)
    np.testing.assert_allclose(ax.get_lines()[1].get_xdata(), mean)
    with pytest.raises(ValueError, match="classes"):
        plot_reliability(y[y < 2], {"m": P[y < 2]})


def test_missing_matplotlib_gives_one_clear_import_error(monkeypatch):
    """The module imports without matplotlib (the command line reads expansion_points from it); a
    figure asked for without axes names the extra."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    monkeypatch.delitem(sys.modules, "sparsekernel.plotting")
    plotting = importlib.import_module("sparsekernel.plotting")
    with pytest.raises(ImportError, match=r"sparsekernel\[plot\]"):
        plotting.plot_convergence([np.array([1.0, 0.1])])
