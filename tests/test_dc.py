"""solver='dc' (DC-SVM, Hsieh, Si & Dhillon 2014): the cluster tree, the divided solve and the early
model.

The exact route must reach the SVM of the plain route to tol (checked against a dense float64
recomputation of the dual: objective, KKT gap, feasibility); the tree must be a tree (every
cluster inside its parent) whose routing of the training rows reproduces their labels, and whose
kernel k-means lowers the within-cluster scatter against a random split; an early model must
predict every point by an independent SVM fitted on that point's cluster alone.
"""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_iris, make_classification, make_regression
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.preprocessing import StandardScaler

from sparsekernel import SVC, SVR, NuSVC, OneClassSVM, _core, _dc
from sparsekernel._engine import KernelSpec

from _dual import check_feasible, dual_objective, kkt_gap, svc_Q, svr_dual_vector, svr_p, svr_Q, svr_y


@pytest.fixture
def small_leaves(monkeypatch):
    """Trees of 2-3 levels on a few thousand rows (the default leaves hold ~4000 points)."""
    monkeypatch.setattr(_dc, "LEAF_SIZE", 90)


def _binary(n=2400, d=6, seed=0):
    X, y = make_classification(n_samples=n, n_features=d, n_informative=4, n_redundant=0, flip_y=0.05,
                               class_sep=0.8, random_state=seed)
    return StandardScaler().fit_transform(X), y


def _svc_dual(model, X, y, C):
    """The fitted binary SVC's dual vector a (all n points) and the dense float64 Q."""
    y_pm = np.where(y == model.classes_[1], -1.0, 1.0)  # LIBSVM's first class is +1
    a = np.zeros(len(y))
    a[model.support_] = np.abs(np.asarray(model.dual_coef_).ravel())
    return a, svc_Q(rbf_kernel(X, gamma=model._gamma), y_pm), y_pm


@pytest.mark.parametrize("C", [1.0, 10.0])
def test_dc_reaches_the_svm_to_tol(small_leaves, C):
    X, y = _binary()
    dc = SVC(C=C, solver="dc", tol=1e-4).fit(X, y)
    plain = SVC(C=C, solver="smo2", tol=1e-4).fit(X, y)
    assert dc.solver_ == "dc" and dc.converged_
    levels = dc.solver_stats_[0]["levels"]
    assert [s["level"] for s in levels] == [2, 1, 0]  # 16 leaves of ~150 rows, 4 clusters, the whole problem
    a, Q, y_pm = _svc_dual(dc, X, y, C)
    check_feasible(y_pm, a, np.full(len(y), C), rel=1e-9)
    # the engine keeps float32 rows: its gap is to tol there, in float64 to a little more
    assert kkt_gap(Q, y_pm, -np.ones(len(y)), a, np.full(len(y), C)) < 3e-4
    a_plain, _, _ = _svc_dual(plain, X, y, C)
    f_dc, f_plain = dual_objective(Q, -np.ones(len(y)), a), dual_objective(Q, -np.ones(len(y)), a_plain)
    assert abs(f_dc - f_plain) <= 1e-4 * abs(f_plain)
    assert np.mean(dc.predict(X) == plain.predict(X)) >= 0.999
    # the sum over the levels: every level's steps and kernel values are in the fit's totals
    assert dc.n_iter_[0] == sum(s["n_iter"] for s in levels)
    assert dc.n_kernel_evals_[0] == sum(s["kernel_evals"] for s in levels)


def test_dc_svr_reaches_the_svm_to_tol(small_leaves):
    X, z = make_regression(n_samples=1500, n_features=5, noise=5.0, random_state=0)
    X = StandardScaler().fit_transform(X)
    z = z / z.std()
    dc = SVR(C=3.0, epsilon=0.1, solver="dc", tol=1e-4).fit(X, z)
    plain = SVR(C=3.0, epsilon=0.1, solver="smo2", tol=1e-4).fit(X, z)
    assert dc.solver_stats_[0]["levels"][0]["clusters"] > 4
    Q = svr_Q(rbf_kernel(X, gamma=dc._gamma))
    p = svr_p(z, 0.1)
    a = svr_dual_vector(dc.dual_coef_, dc.support_, len(z))
    b = svr_dual_vector(plain.dual_coef_, plain.support_, len(z))
    check_feasible(svr_y(len(z)), a, np.full(2 * len(z), 3.0), rel=1e-9)
    assert kkt_gap(Q, svr_y(len(z)), p, a, np.full(2 * len(z), 3.0)) < 3e-4
    assert abs(dual_objective(Q, p, a) - dual_objective(Q, p, b)) <= 1e-4 * abs(dual_objective(Q, p, b))
    np.testing.assert_allclose(dc.predict(X), plain.predict(X), atol=2e-3)


def test_dc_multiclass_sparse_and_weights(small_leaves):
    X, y = make_classification(n_samples=1800, n_features=8, n_informative=5, n_classes=3, random_state=1)
    X = StandardScaler().fit_transform(X)
    w = np.random.RandomState(0).uniform(0.5, 2.0, len(y))
    kw = dict(C=2.0, tol=1e-4, class_weight={0: 2.0, 1: 1.0, 2: 0.5})
    dc = SVC(solver="dc", **kw).fit(X, y, sample_weight=w)
    plain = SVC(solver="smo2", **kw).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(dc.dual_objective_, plain.dual_objective_, rtol=1e-4)
    assert np.mean(dc.predict(X) == plain.predict(X)) >= 0.998
    # CSR input: the same tree (the clustering reads the same kernel values), the same SVM
    dc_sp = SVC(solver="dc", **kw).fit(sp.csr_matrix(X), y, sample_weight=w)
    np.testing.assert_allclose(dc_sp.dual_objective_, plain.dual_objective_, rtol=1e-4)


def test_the_tree_is_a_tree_and_routes_its_rows(small_leaves):
    X, _ = _binary(n=3000)
    kernel = KernelSpec("rbf", gamma=0.2)
    part = _dc.build_partition(X, kernel, 4, 3, np.random.RandomState(0))
    assert part.n_levels == 3 and len(part.labels) == 3
    for lev in range(1, 3):  # every cluster lies inside its parent (ids parent * k + child)
        np.testing.assert_array_equal(part.labels[lev] // 4, part.labels[lev - 1])
    assert part.labels[2].max() < 64
    # routing the training rows afresh gives their labels (prediction uses the same routing)
    np.testing.assert_array_equal(part.route(X, _dc.evaluator_for(kernel)), part.labels[2])
    # level 1 splits the rows, with no empty top cluster on this data
    assert len(np.unique(part.labels[0])) == 4


def _scatter(K, labels):
    """Within-cluster scatter in the feature space: sum_c sum_{i in c} ||phi_i - mu_c||^2."""
    total = 0.0
    for c in np.unique(labels):
        m = labels == c
        total += np.trace(K[np.ix_(m, m)]) - K[np.ix_(m, m)].sum() / m.sum()
    return total


def test_kernel_kmeans_beats_a_random_split():
    rng = np.random.RandomState(0)
    centres = rng.normal(scale=4.0, size=(4, 3))
    X = np.vstack([c + rng.normal(size=(100, 3)) for c in centres])
    K = rbf_kernel(X, gamma=0.1)
    labels = _dc._kernel_kmeans(K, 4, np.random.RandomState(1))
    random_labels = np.random.RandomState(2).randint(4, size=len(X))
    assert _scatter(K, labels) < 0.5 * _scatter(K, random_labels)
    # well separated blobs: every blob in one cluster
    truth = np.repeat(np.arange(4), 100)
    for c in range(4):
        assert len(np.unique(labels[truth == c])) == 1


def test_early_model_is_each_clusters_own_svm(small_leaves):
    X, y = _binary(n=1500)
    early = SVC(C=1.0, solver="dc", early_stop_level=1, tol=1e-5).fit(X, y)
    assert early.solver_stats_[0]["levels"][-1]["level"] == 1
    assert early.__dict__["_early"] is not None
    kernel = KernelSpec("rbf", gamma=early._gamma)
    # the same tree as the fit's (a fixed seed): each point's level-1 cluster
    part = _dc.build_partition(X, kernel, 4, 1, np.random.RandomState(0))  # an early model's tree: its levels
    X_new = np.random.RandomState(5).normal(size=(400, X.shape[1]))
    where = early.__dict__["_early"].partition.route(X_new, _dc.evaluator_for(kernel), 1)
    dec = early.decision_function(X_new)
    checked = 0
    for c in np.unique(part.labels[0]):
        rows = part.labels[0] == c
        if len(np.unique(y[rows])) < 2 or not np.any(where == c):
            continue
        own = SVC(C=1.0, gamma=early._gamma, solver="smo2", tol=1e-5).fit(X[rows], y[rows])
        np.testing.assert_allclose(dec[where == c], own.decision_function(X_new[where == c]), atol=5e-3)
        checked += 1
    assert checked >= 2
    # pickled and back: the same predictions
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(early)).predict(X_new), early.predict(X_new))


def test_early_model_multiclass_and_svr(small_leaves):
    X, y = load_iris(return_X_y=True)
    X = np.repeat(X, 4, axis=0) + np.random.RandomState(0).normal(scale=0.05, size=(600, 4))
    y = np.repeat(y, 4)
    early = SVC(solver="dc", early_stop_level=1).fit(X, y)
    assert early.decision_function(X).shape == (600, 3)
    assert early.score(X, y) > 0.9
    Xr, z = make_regression(n_samples=800, n_features=4, noise=1.0, random_state=0)
    reg = SVR(solver="dc", early_stop_level=1, C=10.0).fit(Xr, z / z.std())
    assert reg.score(Xr, z / z.std()) > 0.8


def test_dc_errors():
    X, y = _binary(n=200)
    with pytest.raises(ValueError, match="early_stop_level applies to solver='dc'"):
        SVC(early_stop_level=1).fit(X, y)
    with pytest.raises(ValueError, match="The 'early_stop_level' parameter of SVC must be None or an int"):
        SVC(solver="dc", early_stop_level=0).fit(X, y)
    with pytest.raises(ValueError, match="The 'early_stop_level' parameter of SVC must be None or an int"):
        SVC(solver="dc", early_stop_level=1.5).fit(X, y)
    with pytest.raises(ValueError, match="precomputed"):
        SVC(solver="dc", kernel="precomputed").fit(X @ X.T, y)
    with pytest.raises(ValueError, match="precomputed or callable"):
        SVC(solver="dc", kernel=lambda A, B: A @ B.T).fit(X, y)
    with pytest.raises(ValueError, match="probability"):
        SVC(solver="dc", early_stop_level=1, probability=True).fit(X, y)
    for cls in (NuSVC, OneClassSVM):
        with pytest.raises(ValueError, match=f"The 'solver' parameter of {cls.__name__} must be a str among"):
            cls(solver="dc").fit(X, y)


def test_early_models_are_not_exported(tmp_path):
    from sparsekernel.io import save_model

    X, y = _binary(n=600)
    early = SVC(solver="dc", early_stop_level=1).fit(X, y)
    with pytest.raises(ValueError, match="early_stop_level"):
        save_model(early, tmp_path / "m.skm")
    exact = SVC(solver="dc").fit(X, y)
    save_model(exact, tmp_path / "exact.skm")  # the exact route's model is an ordinary SVC
    onnx = pytest.importorskip("sparsekernel.export.onnx")
    with pytest.raises(ValueError, match="early_stop_level"):
        onnx.model_expansion(early)


def test_early_model_routes_raw_points_when_the_engine_reads_x_shifted():
    # mostly one value per column (sparse data after StandardScaler): the engine reads X - modes as
    # CSR (the rbf kernel is translation invariant); prediction gets X itself
    from sparsekernel._base import engine_storage

    rng = np.random.RandomState(0)
    X = np.where(rng.uniform(size=(1200, 20)) < 0.05, rng.normal(size=(1200, 20)) * 3, 0.0) - 1.5
    y = np.where(X[:, :5].sum(axis=1) > -7.5, 1, 0)
    stored = engine_storage(X, "rbf")
    assert sp.issparse(stored)  # the case under test
    early = SVC(solver="dc", early_stop_level=1).fit(X, y)
    kernel = KernelSpec("rbf", gamma=early._gamma)
    fit_tree = _dc.build_partition(stored, kernel, 4, 1, np.random.RandomState(0))
    routed = early.__dict__["_early"].partition.route(X, _dc.evaluator_for(kernel), 1)
    assert len(np.unique(fit_tree.labels[0])) > 1
    assert np.mean(routed == fit_tree.labels[0]) > 0.99


def test_auto_divides_large_dense_rbf_problems_only(monkeypatch):
    from sparsekernel import svm

    monkeypatch.setattr(svm, "_DC_MIN_ROWS", 1000)
    X, y = _binary(n=1200)
    assert SVC().fit(X, y).solver_ == "dc"
    assert SVC().fit(X[:900], y[:900]).solver_ == "smo2"  # below the threshold
    assert SVC(kernel="poly").fit(X, y).solver_ == "smo2"  # measured for rbf only
    assert SVC().fit(sp.csr_matrix(X), y).solver_ == "smo2"  # sparse input: the pair route
    assert SVR().fit(X, X[:, 0]).solver_ == "smo2"  # SVR: not measured
    Xw, yw = _binary(n=2400, d=36)  # 36 features and >= 2000 rows: the batched route
    assert SVC().fit(Xw, yw).solver_ == "batched"


def test_verbose_reports_each_level(small_leaves, capsys):
    """verbose: a line per level of the divided solve, as its solver_stats_ record them (the
    clusters climbed lowest first), then the whole problem's progress as in any fit."""
    X, y = _binary()
    model = SVC(solver="dc", verbose=True).fit(X, y)
    out = capsys.readouterr().out.splitlines()
    lines = [ln for ln in out if "of the divided solve" in ln]
    levels = [s for s in model.solver_stats_[0]["levels"] if s["level"] > 0]
    assert len(lines) == len(levels) == 2
    for ln, s in zip(lines, levels):
        assert f"level {s['level']} of the divided solve: {s['clusters']} clusters, {s['n_iter']} iterations" in ln
    assert out.index(lines[-1]) < len(out) - 1 and "converged" in out[-1]


def _spy_starts(monkeypatch):
    """Every start that carries its gradient (a cluster's above the lowest level, the final solve's):
    (its problem, a0, g0, gbar0, the kernel values the assembly computed)."""
    seen = []
    orig = _dc.StartGradient.assemble

    def assemble(self, X, kernel, problem, a0, tol, threads):
        g0, gbar0, evals, error = orig(self, X, kernel, problem, a0, tol, threads)
        # the float32 products' bound: within the engine's share of tol per sum, children's included
        assert 0.0 <= error <= self.error + 2.0 * _core.SINGLE_SUMS_TOL_SHARE * tol
        seen.append((problem, a0.copy(), g0, gbar0, evals))
        return g0, gbar0, evals, error

    monkeypatch.setattr(_dc.StartGradient, "assemble", assemble)
    return seen


@pytest.mark.parametrize("weights", [False, True])
def test_start_gradients_between_clusters_equal_a_dense_product(small_leaves, monkeypatch, weights):
    """Each level's start carries its gradient, the children's own plus the products between them:
    G = y * K (a * y) + p and G_bar = the same over the variables at their upper bound, against
    numpy with sklearn's K, at every level, per-sample bounds too. Without the products between
    clusters the error is of order 1."""
    X, y = _binary(n=1500)
    seen = _spy_starts(monkeypatch)
    sw = np.random.RandomState(0).uniform(0.5, 2.0, len(y)) if weights else None
    model = SVC(C=1.0, solver="dc", tol=1e-3).fit(X, y, sample_weight=sw)
    assert len(model.solver_stats_[0]["levels"]) >= 3 and len(seen) >= 2  # level 1's clusters, the whole
    K = rbf_kernel(X, gamma=model._gamma)
    for problem, a, g0, gbar0, evals in seen:
        pts = np.arange(len(y)) if problem.idx is None else problem.idx
        yy, hi = problem.y, problem.hi
        Kr = K[np.ix_(pts, pts)]
        G = yy * (Kr @ (a * yy)) + problem.p
        bounded = (a > 0) & (a >= hi)
        Gbar = yy * (Kr[:, bounded] @ (a[bounded] * yy[bounded]))
        assert bounded.any() and (~bounded & (a > 0)).any()
        np.testing.assert_allclose(g0, G, atol=1e-4)
        np.testing.assert_allclose(gbar0, Gbar, atol=1e-4)
        # only the products between children: fewer than the start-up from scratch, n x nnz(a0)
        assert evals < 0.9 * len(a) * np.count_nonzero(a)


def test_start_gradients_change_nothing_but_the_cost(small_leaves, monkeypatch):
    """The divided fit with the assembled start gradients against the same fit whose starts compute
    their gradients in the engine: the same SVM (objective to tol, predictions)."""
    X, y = _binary(n=2400)
    with_starts = SVC(C=1.0, solver="dc", tol=1e-4).fit(X, y)
    monkeypatch.setattr(_dc._Gradients, "start", lambda self, var, child: None)
    without = SVC(C=1.0, solver="dc", tol=1e-4).fit(X, y)
    obj_a, obj_b = with_starts.dual_objective_[0], without.dual_objective_[0]
    assert abs(obj_a - obj_b) <= 1e-6 * abs(obj_b)
    assert np.mean(with_starts.predict(X) == without.predict(X)) >= 0.999
