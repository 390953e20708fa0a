"""sparsekernel.io: .skm model files round-trip every supported estimator bit for bit, and
reject what they cannot hold or should not trust (pickles, newer formats, garbage)."""

import json
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_classification, make_regression
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import MinMaxScaler, StandardScaler

import sparsekernel
from sparsekernel import (NSSVC, SLMC, SVC, SVR, KernelLogisticRegression, NuSVC, NuSVR, OneClassSVM,
                          SparseKernelLogisticRegression, SparseKFD, load_model, save_model)
from sparsekernel.io import FORMAT_VERSION, ModelVersionWarning, read_header

CLASSIFIERS = {
    "svc": lambda: SVC(C=2.0),
    "svc_poly_ovo": lambda: SVC(kernel="poly", degree=2, gamma=0.3, coef0=1.0, decision_function_shape="ovo"),
    "svc_proba": lambda: SVC(probability=True, random_state=0),
    "nusvc": lambda: NuSVC(nu=0.3),
    "nusvc_proba_ovo": lambda: NuSVC(nu=0.4, kernel="poly", degree=2, probability=True, random_state=0,
                                     decision_function_shape="ovo"),
    "klr": lambda: KernelLogisticRegression(C=3.0, gamma="auto"),
    "sklr": lambda: SparseKernelLogisticRegression(lam=0.2),
    "nssvc": lambda: NSSVC(random_state=0),
    "nssvc_rbf": lambda: NSSVC(kernel="rbf", s=20, random_state=0),
    "slmc": lambda: SLMC(n_expansion=4, max_iter=5, random_state=0),
    "skfd": lambda: SparseKFD(n_expansion=4, max_iter=5, kernel="laplacian", random_state=0),
}
METHODS = ("predict", "decision_function", "predict_proba", "score_samples")


def _data(n_classes, sparse, seed=0):
    X, y = make_classification(90, n_features=6, n_informative=4, n_classes=n_classes, n_clusters_per_class=1,
                               random_state=seed)
    if sparse:
        X[np.abs(X) < 0.7] = 0.0
        X = sp.csr_matrix(X)
    return X, y


def _fit(factory, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning of the capped fits, probability's FutureWarning
        return factory().fit(X, y)


def _assert_same_predictions(a, b, X):
    assert type(a) is type(b)
    checked = 0
    for method in METHODS:
        if hasattr(a, method):
            expected, got = getattr(a, method)(X), getattr(b, method)(X)
            assert got.dtype == expected.dtype and got.shape == expected.shape
            np.testing.assert_array_equal(got, expected, err_msg=method)  # bit for bit
            checked += 1
    assert checked >= 2


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("name", list(CLASSIFIERS))
def test_round_trip_classifiers(tmp_path, name, n_classes, sparse):
    X, y = _data(n_classes, sparse)
    model = _fit(CLASSIFIERS[name], X, y)
    path = tmp_path / "model.skm"
    save_model(model, path)
    loaded = load_model(path)
    _assert_same_predictions(model, loaded, X)
    _assert_same_predictions(model, loaded, X.toarray() if sparse else sp.csr_matrix(X))  # the other format
    assert loaded.get_params() == model.get_params()
    np.testing.assert_array_equal(loaded.classes_, model.classes_)
    assert loaded.n_features_in_ == model.n_features_in_ and loaded._gamma == model._gamma


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("factory", [lambda: SVR(C=10.0, epsilon=0.05), lambda: NuSVR(C=10.0, nu=0.3)],
                         ids=["svr", "nusvr"])
def test_round_trip_svr(tmp_path, factory, sparse):
    X, y = make_regression(80, n_features=5, noise=0.5, random_state=0)
    X = sp.csr_matrix(np.where(np.abs(X) < 0.5, 0.0, X)) if sparse else X
    model = factory().fit(X, y)
    save_model(model, tmp_path / "svr.skm")
    loaded = load_model(tmp_path / "svr.skm")
    assert type(loaded) is type(model) and loaded.get_params() == model.get_params()
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    assert sp.issparse(loaded.dual_coef_) == sparse


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("kernel", ["rbf", "linear"])
def test_round_trip_one_class_svm(tmp_path, kernel, sparse):
    """OneClassSVM: predict (+1 / -1), decision_function and score_samples bit for bit, offset_ kept."""
    X, _ = _data(2, sparse)
    model = OneClassSVM(nu=0.2, kernel=kernel).fit(X)
    save_model(model, tmp_path / "ocsvm.skm")
    loaded = load_model(tmp_path / "ocsvm.skm")
    _assert_same_predictions(model, loaded, X)
    _assert_same_predictions(model, loaded, X.toarray() if sparse else sp.csr_matrix(X))
    assert loaded.get_params() == model.get_params()
    np.testing.assert_array_equal(loaded.offset_, model.offset_)
    assert set(np.unique(loaded.predict(X))) == {-1, 1} and sp.issparse(loaded.dual_coef_) == sparse


def test_sparse_attributes_keep_their_type_and_index_dtype(tmp_path):
    X, y = _data(2, sparse=True)
    model = SVC().fit(X, y)
    sv = model.support_vectors_.copy()  # int64 indices, as a fit on int64-indexed CSR may keep (scipy decides)
    sv.indices, sv.indptr = sv.indices.astype(np.int64), sv.indptr.astype(np.int64)
    model.support_vectors_ = sv
    save_model(model, tmp_path / "m.skm")
    loaded = load_model(tmp_path / "m.skm")
    for attr in ("support_vectors_", "dual_coef_"):
        a, b = getattr(model, attr), getattr(loaded, attr)
        assert type(a) is type(b) and a.indices.dtype == b.indices.dtype and a.indptr.dtype == b.indptr.dtype
        assert (a != b).nnz == 0
    assert loaded.support_vectors_.indices.dtype == np.int64
    _assert_same_predictions(model, loaded, X)


@pytest.mark.parametrize("labels", ["str", "object"])
def test_string_labels(tmp_path, labels):
    X, y = _data(3, sparse=False)
    y = np.array(["cat", "dog", "eel"])[y].astype(object if labels == "object" else str)
    model = SparseKernelLogisticRegression().fit(X, y)
    save_model(model, tmp_path / "m.skm")
    loaded = load_model(tmp_path / "m.skm")
    assert loaded.classes_.dtype == model.classes_.dtype
    _assert_same_predictions(model, loaded, X)


def test_header_contents(tmp_path):
    X, y = _data(2, sparse=False)
    model = SVC(C=3.0, gamma="scale", class_weight={0: 1.0, 1: 2.0}).fit(X, y)
    header = save_model(model, tmp_path / "m.skm")
    assert header == read_header(tmp_path / "m.skm")
    assert header["format_version"] == 1 and header["library_version"] == sparsekernel.__version__  # no Pipeline: 1
    assert header["estimator"] == "SVC" and header["params"]["C"] == 3.0
    assert header["kernel"] == {"kernel": "rbf", "gamma": model._gamma, "coef0": 0.0, "degree": 3}
    assert "class_weight" in header["dropped_params"]  # a dict with int keys is no JSON object
    assert {"_dual_coef", "_intercept", "support_vectors_", "classes_", "_gamma"} <= set(header["attributes"])
    with np.load(tmp_path / "m.skm", allow_pickle=False) as members:  # every member loads without pickle
        for key in members.files:
            assert members[key].dtype != object


def test_save_writes_exactly_the_path(tmp_path):
    X, y = _data(2, sparse=False)
    save_model(SVC().fit(X, y), tmp_path / "model.bin")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.bin"]  # no .npz appended, no temporary left


@pytest.mark.parametrize("proc", [True, False], ids=["proc", "os.umask"])
@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_saved_file_follows_the_umask(tmp_path, monkeypatch, umask, proc):
    """A model file gets 0o666 less the umask, like any file the user creates (mkstemp's 0600 was kept)."""
    import os
    import stat

    import sparsekernel.io as skio

    if not proc:  # no /proc: the umask read by setting and restoring it
        def no_proc(path, *args, **kwargs):
            if str(path).startswith("/proc/"):
                raise FileNotFoundError(path)
            return open(path, *args, **kwargs)
        monkeypatch.setattr(skio, "open", no_proc, raising=False)
    X, y = _data(2, sparse=False)
    model = SVC().fit(X, y)
    old = os.umask(umask)
    try:
        save_model(model, tmp_path / "new.skm")
        (tmp_path / "old.skm").write_bytes(b"")
        os.chmod(tmp_path / "old.skm", 0o600)
        save_model(model, tmp_path / "old.skm")  # a replaced file too
        assert os.umask(umask) == umask  # the fallback restored it
    finally:
        os.umask(old)
    for name in ("new.skm", "old.skm"):
        assert stat.S_IMODE(os.stat(tmp_path / name).st_mode) == 0o666 & ~umask, name


@pytest.mark.parametrize("model, match", [
    (SVC(kernel="precomputed"), "precomputed"),
    (SVC(kernel=lambda A, B: A @ B.T), "callable"),
    (LogisticRegression(), "cannot save a LogisticRegression"),
])
def test_unsupported_models(tmp_path, model, match):
    X, y = _data(2, sparse=False)
    model.fit(X @ X.T if getattr(model, "kernel", None) == "precomputed" else X, y)
    with pytest.raises(ValueError, match=match):
        save_model(model, tmp_path / "m.skm")


def test_unfitted_model(tmp_path):
    with pytest.raises(NotFittedError):
        save_model(SVC(), tmp_path / "m.skm")
    X, y = _data(2, sparse=False)
    with pytest.raises(NotFittedError):  # a Pipeline whose scaler was never fitted
        save_model(Pipeline([("scale", StandardScaler()), ("svc", SVC().fit(X, y))]), tmp_path / "m.skm")


# ---------------------------------------------------------------------- pipelines
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("name", ["svc_proba", "sklr", "nssvc_rbf", "svr", "nusvc", "nusvr", "ocsvm"])
def test_round_trip_pipeline(tmp_path, name, sparse):
    """StandardScaler (with_mean=False for sparse input) then an estimator: loaded as the same
    Pipeline (step names, scaler state), predicting bit for bit; the file is format version 2."""
    if name in ("svr", "nusvr"):
        X, y = make_regression(80, n_features=5, noise=0.5, random_state=0)
        X = sp.csr_matrix(np.where(np.abs(X) < 0.5, 0.0, X)) if sparse else X
        final = SVR(C=10.0) if name == "svr" else NuSVR(C=10.0, nu=0.3)
    elif name == "ocsvm":
        X, y = _data(2, sparse)
        final = OneClassSVM(nu=0.2)
    else:
        X, y = _data(3, sparse)
        final = CLASSIFIERS[name]()
    X = X * 50.0 + (0.0 if sparse else 7.0)  # features far from standardised
    model = _fit(lambda: make_pipeline(StandardScaler(with_mean=not sparse), final), X, y)
    header = save_model(model, tmp_path / "pipe.skm")
    assert header["format_version"] == 2 == FORMAT_VERSION and header["estimator"] == type(final).__name__
    assert header["pipeline"]["steps"] == [n for n, _ in model.steps]
    loaded = load_model(tmp_path / "pipe.skm")
    assert isinstance(loaded, Pipeline) and [n for n, _ in loaded.steps] == [n for n, _ in model.steps]
    scaler, loaded_scaler = model.steps[0][1], loaded.steps[0][1]
    assert loaded_scaler.get_params() == scaler.get_params()
    for attr in ("mean_", "var_", "scale_", "n_samples_seen_", "n_features_in_"):
        np.testing.assert_array_equal(getattr(loaded_scaler, attr), getattr(scaler, attr), err_msg=attr)
    for method in METHODS:
        if hasattr(model, method):
            np.testing.assert_array_equal(getattr(loaded, method)(X), getattr(model, method)(X), err_msg=method)
    assert loaded.n_features_in_ == model.n_features_in_
    if name not in ("svr", "nusvr", "ocsvm"):
        np.testing.assert_array_equal(loaded.classes_, model.classes_)


@pytest.mark.parametrize("steps", [
    [("a", StandardScaler(with_std=False)), ("b", StandardScaler()), ("klr", KernelLogisticRegression())],
    [("klr", KernelLogisticRegression())],
], ids=["two scalers", "no scaler"])
def test_pipeline_of_other_lengths(tmp_path, steps):
    X, y = _data(2, sparse=False)
    model = Pipeline(steps).fit(X, y)
    save_model(model, tmp_path / "m.skm")
    loaded = load_model(tmp_path / "m.skm")
    assert isinstance(loaded, Pipeline) and [n for n, _ in loaded.steps] == [n for n, _ in steps]
    if len(steps) == 3:
        assert loaded.steps[0][1].scale_ is None and loaded.steps[0][1].with_std is False
    np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))


@pytest.mark.parametrize("steps, match", [
    ([("m", MinMaxScaler()), ("svc", SVC())], "cannot save a Pipeline of MinMaxScaler, SVC"),
    ([("s", StandardScaler()), ("lr", LogisticRegression())], "cannot save a LogisticRegression"),
])
def test_unsupported_pipelines(tmp_path, steps, match):
    X, y = _data(2, sparse=False)
    with pytest.raises(ValueError, match=match):
        save_model(Pipeline(steps).fit(X, y), tmp_path / "m.skm")


@pytest.mark.parametrize("pipeline", [
    {"steps": ["s", "svc", "x"], "preprocessing": [{"estimator": "StandardScaler", "params": {},
                                                      "attributes": {}}]},
    {"steps": ["s", "s"], "preprocessing": [{"estimator": "StandardScaler", "params": {}, "attributes": {}}]},
    {"steps": ["s", "svc"], "preprocessing": [{"estimator": "MinMaxScaler", "params": {}, "attributes": {}}]},
    {"steps": ["s", "svc"], "preprocessing": [{"estimator": "StandardScaler", "params": {"bad": 1},
                                                 "attributes": {}}]},
    {"steps": "s"},
])
def test_corrupt_pipeline_is_rejected(tmp_path, pipeline):
    X, y = _data(2, sparse=False)
    save_model(make_pipeline(StandardScaler(), SVC()).fit(X, y), tmp_path / "good.skm")
    bad = _rewrite(tmp_path / "good.skm", tmp_path / "bad.skm", header={"pipeline": pipeline})
    with pytest.raises(ValueError, match="invalid pipeline"):
        load_model(bad)


# ---------------------------------------------------------------------- files that must be rejected
def _rewrite(src, dst, header=None, members=None):
    """Copy a model file with header fields and members replaced (members may hold object arrays:
    numpy then pickles them, as an attacker's file would)."""
    with np.load(src, allow_pickle=False) as f:
        data = {k: f[k] for k in f.files}
    h = json.loads(bytes(data["__header__"]).decode())
    h.update(header or {})
    data["__header__"] = np.frombuffer(json.dumps(h).encode(), dtype=np.uint8)
    data.update(members or {})
    with open(dst, "wb") as out:
        np.savez_compressed(out, **data)
    return dst


@pytest.fixture
def model_file(tmp_path):
    X, y = _data(2, sparse=False)
    path = tmp_path / "good.skm"
    save_model(KernelLogisticRegression().fit(X, y), path)
    return path


def test_pickle_inside_is_rejected(model_file, tmp_path):
    class_ = np.array([0, 1], dtype=object)
    bad = _rewrite(model_file, tmp_path / "bad.skm", members={"attr/classes_": class_})
    with pytest.raises(ValueError, match="pickle"):
        load_model(bad)


def test_pickle_file_is_rejected(tmp_path):
    X, y = _data(2, sparse=False)
    path = tmp_path / "model.skm"
    path.write_bytes(pickle.dumps(SVC().fit(X, y)))
    with pytest.raises(ValueError, match="pickle"):
        load_model(path)


def test_newer_format_is_rejected(model_file, tmp_path):
    bad = _rewrite(model_file, tmp_path / "new.skm", header={"format_version": FORMAT_VERSION + 1,
                                                             "library_version": "9.0.0"})
    with pytest.raises(ValueError, match=f"format {FORMAT_VERSION + 1}.*upgrade"):
        load_model(bad)
    with pytest.raises(ValueError, match="upgrade"):
        read_header(bad)


def test_other_library_version_warns(model_file, tmp_path):
    other = _rewrite(model_file, tmp_path / "old.skm", header={"library_version": "0.0.1"})
    with pytest.warns(ModelVersionWarning, match="0.0.1"):
        loaded = load_model(other)
    X, _ = _data(2, sparse=False)
    _assert_same_predictions(load_model(model_file), loaded, X)


@pytest.mark.parametrize("header, members, match", [
    ({"estimator": "os.system"}, None, "unknown estimator"),
    ({"format": "something-else"}, None, "not a sparsekernel model file"),
    ({"format_version": "1"}, None, "invalid format version"),
    ({"params": {"kernel": "precomputed"}}, None, "invalid kernel"),
    ({"params": {"kernel": "rbf", "no_such_param": 1}}, None, "does not know"),
    ({"attributes": {"predict": {"kind": "json", "value": 1}}}, None, "invalid attribute name"),
    ({"attributes": {"classes_": {"kind": "array"}, "x_": {"kind": "array"}}}, None, "'attr/x_' is missing"),
    (None, {"__header__": np.frombuffer(b"{not json", dtype=np.uint8)}, "corrupt header"),
])
def test_corrupt_files_are_rejected(model_file, tmp_path, header, members, match):
    bad = _rewrite(model_file, tmp_path / "bad.skm", header=header, members=members)
    with pytest.raises(ValueError, match=match):
        load_model(bad)


@pytest.mark.parametrize("content", [b"garbage, not a model\n", b"", b"PK\x03\x04 truncated zip"])
def test_garbage_is_rejected(tmp_path, content):
    path = tmp_path / "garbage.skm"
    path.write_bytes(content)
    with pytest.raises(ValueError, match="not a sparsekernel model file"):
        load_model(path)


def test_truncated_file_is_rejected(model_file, tmp_path):
    data = model_file.read_bytes()
    path = tmp_path / "truncated.skm"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError):
        load_model(path)


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_model(tmp_path / "nope.skm")
