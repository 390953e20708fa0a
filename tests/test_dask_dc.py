"""SVC / SVR with solver='dc' on dask arrays (SVC.fit on a dask array; sparsekernel._dask_rows): on a LocalCluster of two worker
processes the fit equals the in-memory solver='dc' fit (the same tree, the same problems solved from
the same starts on the same rows: the same model), the clusters of the levels are solved on the
workers and the client never holds X."""

import numpy as np
import pytest
import scipy.sparse as sp

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

from sklearn.datasets import make_classification, make_regression  # noqa: E402

import sparsekernel._dc as dc  # noqa: E402
from sparsekernel import SVC, SVR  # noqa: E402
from sparsekernel._base import engine_storage  # noqa: E402

N = 6000


@pytest.fixture(autouse=True)
def small_leaves(monkeypatch):
    """Leaves of ~300 rows: 6000 rows make a tree of two levels (16 clusters, then 4, then all)."""
    monkeypatch.setattr(dc, "LEAF_SIZE", 300)


def _dask(X, sizes):
    chunks = (tuple(sizes),)
    if sp.issparse(X):
        return da.from_array(X.toarray(), chunks=chunks + (X.shape[1],)).map_blocks(sp.csr_matrix,
                                                                                   meta=sp.csr_matrix((0, 0)))
    return da.from_array(X, chunks=chunks + (X.shape[1],))


def _binary(n=N, random_state=0):
    return make_classification(n_samples=n, n_features=10, n_informative=6, flip_y=0.05, random_state=random_state)


def _csr():
    X, y = make_classification(n_samples=N, n_features=40, n_informative=12, random_state=3)
    return sp.csr_matrix(np.where(np.abs(X) > 1.0, X, 0.0)), y


def _mostly_constant():
    """Dense, mostly its columns' value 5: the engine stores X - 5 as CSR (rbf)."""
    rng = np.random.RandomState(1)
    X = np.where(rng.rand(N, 20) < 0.1, rng.randn(N, 20), 0.0) + 5.0
    return X, (X[:, :5].sum(axis=1) + 0.3 * rng.randn(N) > 25).astype(int)


CASES = {
    # uneven chunks; gamma='scale' by the blocked reduction
    "dense": lambda: (SVC, *_binary(), (2500, 1700, 1800), {}),
    "float32": lambda: (SVC, _binary(random_state=1)[0].astype(np.float32), _binary(random_state=1)[1],
                        (3100, 2900), {"gamma": 0.1, "C": 10.0}),
    "csr": lambda: (SVC, *_csr(), (2000, 1000, 3000), {"gamma": 0.02}),
    "mostly-constant": lambda: (SVC, *_mostly_constant(), (3000, 3000), {"gamma": 0.5}),
    "3class": lambda: (SVC, *make_classification(n_samples=N, n_features=8, n_informative=5, n_classes=3,
                                                 random_state=2), (1500, 2500, 2000), {"C": 3.0}),
    "svr": lambda: (SVR, *make_regression(n_samples=N, n_features=6, noise=5.0, random_state=4), (4000, 2000),
                    {"C": 50.0, "epsilon": 2.0}),
    "early": lambda: (SVC, *_binary(random_state=5), (2000, 4000), {"early_stop_level": 1}),
    "weighted": lambda: (SVC, *_binary(random_state=7), (3500, 2500), {"class_weight": {0: 2.0, 1: 0.5}},
                         {"sample_weight": np.linspace(0.2, 2.0, N)}),
}


def _same_model(a, b):
    np.testing.assert_array_equal(a.support_, b.support_)
    np.testing.assert_array_equal(a.n_support_, b.n_support_)
    for name in ("dual_coef_", "intercept_", "support_vectors_"):
        va, vb = getattr(a, name), getattr(b, name)
        if sp.issparse(va):
            va, vb = va.toarray(), vb.toarray()
        np.testing.assert_allclose(va, vb, rtol=0, atol=1e-8, err_msg=name)
    assert a.support_vectors_.dtype == b.support_vectors_.dtype
    np.testing.assert_allclose(a._gamma, b._gamma, rtol=1e-12)
    assert a.n_features_in_ == b.n_features_in_ and a.shape_fit_ == b.shape_fit_
    assert a._sparse_fit == b._sparse_fit and a.solver_ == b.solver_ == "dc"


@pytest.mark.parametrize("case", list(CASES))
def test_dask_dc_fit_equals_in_memory_fit(client, case):
    Estimator, X, y, sizes, params, *fit_params = CASES[case]()
    fit_params = fit_params[0] if fit_params else {}
    memory = Estimator(solver="dc", **params).fit(X, y, **fit_params)
    distributed_fit = Estimator(solver="dc", **params).fit(_dask(X, sizes), da.from_array(y, chunks=(sizes,)),
                                                           **{k: da.from_array(v, chunks=(sizes,))
                                                              for k, v in fit_params.items()})
    if params.get("gamma", "scale") == "scale":
        # 'scale' by the cluster's blocked reduction may differ from np.var's in its last bit, and a
        # float32 kernel sum admitted by its error bound (a share of tol) may then run in double, or
        # the reverse: another solution within tol. At the same gamma, the same model.
        np.testing.assert_allclose(distributed_fit._gamma, memory._gamma, rtol=1e-12)
        np.testing.assert_allclose(distributed_fit.dual_objective_, memory.dual_objective_, rtol=1e-6)
        assert np.mean(distributed_fit.predict(X) == memory.predict(X)) >= 0.999
        memory = Estimator(solver="dc", **{**params, "gamma": distributed_fit._gamma}).fit(X, y, **fit_params)
    _same_model(distributed_fit, memory)
    if params.get("gamma", "scale") != "scale":  # the same kernel: the same model bit for bit
        np.testing.assert_array_equal(distributed_fit.intercept_, memory.intercept_)
    np.testing.assert_array_equal(distributed_fit.predict(X), memory.predict(X))
    # the levels of the tree, as in memory, and their clusters solved on the cluster's workers
    levels = [[s["level"] for s in r["levels"]] for r in memory.solver_stats_]
    assert [[s["level"] for s in r["levels"]] for r in distributed_fit.solver_stats_] == levels
    assert levels[0][-1] == 1 if case == "early" else levels[0] == [2, 1, 0]
    workers = set(client.scheduler_info()["workers"])
    assert distributed_fit.dc_workers_ and distributed_fit.dc_workers_ <= workers
    if case == "dense":  # 16 clusters at the lowest level: both workers solve some
        assert distributed_fit.dc_workers_ == workers
    if case == "mostly-constant":
        assert sp.issparse(engine_storage(X, "rbf"))  # (the case is the engine's shifted CSR storage)


@pytest.mark.parametrize("data", ["gaussian", "mostly-zeros", "mostly-constant", "csr"])
def test_blocks_are_stored_as_the_engine_stores_X(client, data):
    """Each block converted where it lives, as ``engine_storage`` converts all of X: the same rows."""
    from sparsekernel._dask_rows import engine_rows as _engine_rows, resident_rows as _resident_rows

    rng = np.random.RandomState(0)
    X = {"gaussian": lambda: rng.randn(3000, 12),
         "mostly-zeros": lambda: np.where(rng.rand(3000, 12) < 0.1, rng.randn(3000, 12), 0.0),
         "mostly-constant": lambda: _mostly_constant()[0][:3000],
         "csr": lambda: _csr()[0][:3000]}[data]()
    blocks, rows, nonzero = _resident_rows(client, _dask(X, (1000, 1200, 800)))
    stored = _engine_rows(client, rows, "rbf", nonzero)
    expected = engine_storage(X, "rbf")
    assert stored.sparse == sp.issparse(expected) == (data != "gaussian")
    got = stored[np.arange(3000)]
    assert sp.issparse(got) == stored.sparse
    np.testing.assert_array_equal(got.toarray() if stored.sparse else got,
                                  expected.toarray() if sp.issparse(expected) else expected)
    if data == "mostly-constant":  # (X - its columns' value 5)
        assert expected.nnz < 0.15 * X.size
    assert _engine_rows(client, rows, "linear", nonzero).sparse == (data in ("mostly-zeros", "csr"))


def _rows_of_X_gathered(monkeypatch, n_features):
    """The rows of the arrays with X's number of columns that the client receives from the cluster,
    per gather that has some (a list, filled as the client gathers)."""
    seen = []

    def rows(obj):
        if isinstance(obj, (list, tuple)):
            return sum(rows(v) for v in obj)
        if isinstance(obj, dict):
            return sum(rows(v) for v in obj.values())
        if (sp.issparse(obj) or isinstance(obj, np.ndarray)) and obj.ndim == 2 and obj.shape[1] == n_features:
            return obj.shape[0]
        return 0

    gather = distributed.Client._gather

    async def spy(self, *args, **kwargs):
        out = await gather(self, *args, **kwargs)
        if rows(out):
            seen.append(rows(out))
        return out

    monkeypatch.setattr(distributed.Client, "_gather", spy)
    return seen


def test_the_client_never_holds_X(client, monkeypatch):
    """What reaches the client with X's columns: the sample of the clustering, the 64 rows that
    screen whether X may be mostly its columns' most frequent values (rbf: ``engine_storage``; this
    X is not, so the 1024 rows of the modes are not fetched) and the support vectors; never X (the
    spy sees X when it is computed)."""
    X, y = _binary(random_state=6)
    Xd = _dask(X, (2000, 2000, 2000))
    seen = _rows_of_X_gathered(monkeypatch, X.shape[1])
    model = SVC(solver="dc", C=0.3).fit(Xd, y)
    memory = SVC(solver="dc", C=0.3).fit(X, y)
    _same_model(model, memory)
    sample = dc.sample_size(N, dc.CHILDREN, 2)
    assert sorted(seen) == sorted([sample, 64, len(model.support_)])
    assert sum(seen) < N
    Xd[:10].compute()
    assert seen[-1] == 10
    Xd.compute()  # the spy sees it when it happens
    assert seen[-1] == N


def test_dask_dc_refusals(client):
    X, y = _binary(2000)
    Xbad = X.copy()
    Xbad[1500, 3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        SVC(solver="dc").fit(_dask(Xbad, (1000, 1000)), y)
    with pytest.raises(ValueError, match="only solver='dc'"):
        SVC(solver="smo2").fit(_dask(X, (1000, 1000)), y)
    with pytest.raises(ValueError, match="only solver='dc'"):
        SVR().fit(_dask(X, (1000, 1000)), y.astype(float))
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        SVC(solver="dc").fit(_dask(X, (1000, 1000)), y[:-1])
    with pytest.raises(ValueError, match="precomputed"):
        SVC(solver="dc", kernel="precomputed").fit(_dask(X, (1000, 1000)), y)
