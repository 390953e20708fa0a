"""The ``sparsekernel`` command end to end, in a subprocess (``python -m sparsekernel``), on temporary
CSV and svmlight files: fit, predict, compare, info, datasets; every bad input is one line on
stderr, a non-zero exit status and no traceback."""

import csv
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file, load_svmlight_file, make_classification
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

import sparsekernel
from sparsekernel import SVC, KernelLogisticRegression, SparseKernelLogisticRegression, load_model, save_model
from sparsekernel.cli import main
from sparsekernel.io import FORMAT_VERSION


# the subprocess imports the sparsekernel this process tests (a source tree on a relative PYTHONPATH too)
_ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(
    [os.path.dirname(os.path.dirname(os.path.abspath(sparsekernel.__file__)))]
    + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))


def run(*args, cwd, check=True):
    """Run the command; returns the CompletedProcess (stdout, stderr as text)."""
    proc = subprocess.run([sys.executable, "-m", "sparsekernel", *map(str, args)], cwd=cwd, env=_ENV,
                          capture_output=True, text=True, timeout=300)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def _write_csv(path, X, labels=None):
    """X as CSV; with labels, a header row and the label column first (so it must be named)."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        if labels is None:
            w.writerows([[repr(v) for v in row] for row in X.tolist()])
            return
        w.writerow(["species"] + [f"f{j}" for j in range(X.shape[1])])
        w.writerows([[label] + [repr(v) for v in row] for label, row in zip(labels, X.tolist())])


def _has_matplotlib():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Train / test CSV (header row, string labels in the first column), a test CSV without labels,
    and svmlight train / test files (labels -1 / +1, 8 features)."""
    d = tmp_path_factory.mktemp("cli")
    X, y = make_classification(160, n_features=5, n_informative=3, n_classes=3, n_clusters_per_class=1,
                               random_state=1)
    names = np.array(["ant", "bee", "cow"])[y]
    Xtr, Xte, ytr, yte = X[:120], X[120:], names[:120], names[120:]
    _write_csv(d / "train.csv", Xtr, ytr)
    _write_csv(d / "test.csv", Xte, yte)
    _write_csv(d / "test_nolabel.csv", Xte)
    Xb, yb = make_classification(150, n_features=8, random_state=2)
    dump_svmlight_file(Xb[:110], 2 * yb[:110] - 1, str(d / "train.svm"), zero_based=False)
    dump_svmlight_file(Xb[110:], 2 * yb[110:] - 1, str(d / "test.svm"), zero_based=False)
    return d, (Xtr, ytr, Xte, yte)


@pytest.fixture(scope="module")
def klr_file(data):
    """klr fitted by the command on train.csv; returns (its stdout, the file)."""
    d, _ = data
    proc = run("fit", "klr", "train.csv", "--label-column", "species", "-o", "klr.skm", "--C", "2", "--gamma", "0.5",
               cwd=d)
    return proc.stdout, d / "klr.skm"


def test_fit_csv_is_the_library_fit(data, klr_file):
    """By default the features are standardised inside the model: the file holds the Pipeline."""
    _, (Xtr, ytr, Xte, _) = data
    stdout, path = klr_file
    assert "klr.skm" in stdout and "training accuracy" in stdout and "n_train" in stdout
    assert "standardised inside the model" in stdout
    model = load_model(path)
    assert isinstance(model, Pipeline) and isinstance(model[0], StandardScaler) and model[0].with_mean
    assert isinstance(model[-1], KernelLogisticRegression) and model[-1].C == 2.0 and model[-1].gamma == 0.5
    reference = make_pipeline(StandardScaler(), KernelLogisticRegression(C=2.0, gamma=0.5)).fit(Xtr, ytr)
    np.testing.assert_array_equal(model.predict_proba(Xte), reference.predict_proba(Xte))


def test_fit_no_scale_is_the_bare_library_fit(data):
    d, (Xtr, ytr, Xte, _) = data
    proc = run("fit", "klr", "train.csv", "--label-column", "species", "-o", "raw.skm", "--no-scale", cwd=d)
    assert "as given (--no-scale)" in proc.stdout
    model = load_model(d / "raw.skm")
    assert isinstance(model, KernelLogisticRegression)
    np.testing.assert_array_equal(model.predict_proba(Xte), KernelLogisticRegression().fit(Xtr, ytr).predict_proba(Xte))
    assert "as given" in run("info", "raw.skm", cwd=d).stdout


def test_predict_csv_labels_and_probabilities(data, klr_file):
    d, (_, _, Xte, _) = data
    model = load_model(klr_file[1])
    proc = run("predict", "klr.skm", "test.csv", "--label-column", "species", cwd=d)
    assert proc.stdout.splitlines() == model.predict(Xte).tolist()
    run("predict", "klr.skm", "test_nolabel.csv", "--proba", "-o", "proba.csv", cwd=d)  # features only
    with open(d / "proba.csv") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["ant", "bee", "cow"]
    np.testing.assert_array_equal(np.array(rows[1:], dtype=float), model.predict_proba(Xte))  # bit for bit


@pytest.mark.parametrize("name", ["klr-cv", "sklr-cv"])
def test_fit_klr_cv_saves_the_chosen_model(data, name):
    """fit klr-cv / sklr-cv: C chosen by cross-validation, the file holds the refitted model (the
    library's fit at the same seed), predict reads it."""
    from sparsekernel import KernelLogisticRegressionCV, SparseKernelLogisticRegressionCV

    d, (Xtr, ytr, Xte, _) = data
    proc = run("fit", name, "train.csv", "--label-column", "species", "-o", f"{name}.skm", "--seed", "0", cwd=d)
    assert "training accuracy" in proc.stdout and "expansion vectors" in proc.stdout
    model = load_model(d / f"{name}.skm")
    cls = KernelLogisticRegressionCV if name == "klr-cv" else SparseKernelLogisticRegressionCV
    reference = make_pipeline(StandardScaler(), cls(random_state=0)).fit(Xtr, ytr)
    np.testing.assert_allclose(model.predict_proba(Xte), reference.predict_proba(Xte), atol=1e-12)
    out = run("predict", f"{name}.skm", "test_nolabel.csv", cwd=d).stdout.splitlines()
    assert out == reference.predict(Xte).tolist()


def test_fit_predict_svmlight(data):
    d, _ = data
    proc = run("fit", "sklr", "train.svm", "-o", "sklr.skm", "--lam", "0.1", "--test-size", "0.2", cwd=d)
    assert "test accuracy" in proc.stdout
    model = load_model(d / "sklr.skm")
    assert isinstance(model[-1], SparseKernelLogisticRegression) and model[-1].lam == 0.1
    assert model[0].with_mean  # small sparse data: made dense and standardised, as CSV data
    assert "the sparse data made dense" in proc.stdout
    X, _ = load_svmlight_file(str(d / "test.svm"), n_features=model.n_features_in_)
    proba = run("predict", "sklr.skm", "test.svm", "--proba", cwd=d).stdout.splitlines()
    assert proba[0] == "-1,1"
    np.testing.assert_array_equal(np.array([r.split(",") for r in proba[1:]], dtype=float),
                                  model.predict_proba(X.toarray()))


def test_compare_holdout_table_csv_and_plot(data):
    d, (Xtr, ytr, Xte, yte) = data
    plot = ["--plot", "frontier.png"] if _has_matplotlib() else []
    proc = run("compare", "train.csv", "--test", "test.csv", "--label-column", "0", "--models", "svc,sklr",
               "-o", "results.csv", *plot, cwd=d)
    assert "svc" in proc.stdout and "sklr" in proc.stdout and "ECE" in proc.stdout
    with open(d / "results.csv") as f:
        rows = {r["model"]: r for r in csv.DictReader(f)}
    svc = make_pipeline(StandardScaler(), SVC(random_state=0)).fit(Xtr, ytr)  # --scale by default
    assert float(rows["svc"]["accuracy"]) == svc.score(Xte, yte)
    sklr = make_pipeline(StandardScaler(), SparseKernelLogisticRegression()).fit(Xtr, ytr)
    assert float(rows["sklr"]["accuracy"]) == sklr.score(Xte, yte)
    assert int(float(rows["sklr"]["n_expansion"])) == sklr[-1].n_expansion_
    assert np.isnan(float(rows["svc"]["log_loss"])) and 0 < float(rows["sklr"]["log_loss"]) < 2
    assert 0 <= float(rows["sklr"]["ece"]) < 0.5
    if plot:
        assert (d / "frontier.png").read_bytes()[:4] == b"\x89PNG"


def test_compare_builtin_cv(capsys):  # in this process: the command is the same as above
    assert main(["compare", "iris", "--cv", "3", "--models", "svc,klr,nssvc"]) == 0
    out = capsys.readouterr().out
    assert "3-fold CV" in out and "nssvc" in out and "±" in out


def test_compare_uses_the_cross_validated_klrs_by_default(tmp_path):
    """compare's default models are KLR and S-KLR with C chosen by cross-validation (issue 35): at
    the default C = 1 the plain KLR under-fits; their rows report the chosen model's size."""
    from sparsekernel.cli.compare import _names

    defaults = _names("classification", default_only=True)
    assert "klr-cv" in defaults and "sklr-cv" in defaults and "klr" not in defaults
    out = tmp_path / "rows.csv"
    assert main(["compare", "breast_cancer", "--models", "klr-cv,sklr-cv,klr", "-o", str(out)]) == 0
    rows = {r["model"]: r for r in csv.DictReader(out.open())}
    assert float(rows["klr-cv"]["log_loss"]) < float(rows["klr"]["log_loss"])
    assert 0 < float(rows["sklr-cv"]["n_expansion"]) <= float(rows["klr-cv"]["n_expansion"])


def test_info(data, klr_file):
    d, _ = data
    proc = run("info", "klr.skm", cwd=d)
    for text in ("KernelLogisticRegression", "sparsekernel 0.1.0", "C=2.0", "gamma=0.5", "n_features_in_",
                 "ant, bee, cow", "standardised inside the model (StandardScaler", "model format 2"):
        assert text in proc.stdout


def test_datasets_and_help(tmp_path, capsys):
    proc = run("datasets", cwd=tmp_path)
    assert all(name in proc.stdout for name in ("breast_cancer", "digits", "iris", "wine", "nssvm", "moons"))
    proc = run(cwd=tmp_path)  # python -m sparsekernel without a command: the help, exit status 0
    assert "Usage" in proc.stdout and "compare" in proc.stdout
    assert main(["demo", "--help"]) == 0
    assert "--n-nssvm" in capsys.readouterr().out


@pytest.fixture(scope="module")
def bad_files(data):
    """Broken inputs next to the good ones: a model of a newer format, garbage, a pickle, a CSV with
    a non-numeric cell, an svmlight file with a bad value; and a good svc model (5 features)."""
    d, (Xtr, ytr, _, _) = data
    save_model(SVC().fit(Xtr, ytr), d / "good.skm")
    with np.load(d / "good.skm", allow_pickle=False) as f:
        members = {k: f[k] for k in f.files}
    header = json.loads(bytes(members["__header__"]).decode())
    header["format_version"] = FORMAT_VERSION + 1
    members["__header__"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    with open(d / "newer.skm", "wb") as f:
        np.savez_compressed(f, **members)
    (d / "garbage.skm").write_bytes(b"\x00\x01 not a model")
    (d / "pickle.skm").write_bytes(b"\x80\x04\x95 pretend pickle")
    (d / "bad_cell.csv").write_text("a,b,y\n1,2,0\n3,x4,1\n5,6,0\n")
    (d / "bad.svm").write_text("1 1:0.5 2:oops\n-1 1:0.1\n")
    return d


def _assert_one_line_error(returncode, stdout, stderr, expected):
    assert returncode != 0
    assert "Traceback" not in stdout + stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("sparsekernel: error: ") and expected in lines[0], lines[0]
    assert stdout == ""


# the bad inputs of the issue, each in its own process
BAD_INPUTS = {
    "non-numeric cell": (["fit", "svc", "bad_cell.csv"], "non-numeric cell 'x4' at row 3, column 2 ('b')"),
    "missing label column": (["fit", "svc", "train.csv", "--label-column", "nope"], "no label column 'nope'"),
    "bad svmlight file": (["fit", "svc", "bad.svm"], "bad.svm: not a valid svmlight/libsvm file"),
    "model of a newer format": (["predict", "newer.skm", "test.csv"], "upgrade sparsekernel"),
    "unknown model": (["fit", "svm", "train.svm"], "unknown model 'svm'"),
}

# more of them, through main() in this process (the same code path without the start-up cost)
MORE_BAD_INPUTS = {
    "missing data file": (["fit", "svc", "missing.csv"], "missing.csv"),
    "unknown data name": (["compare", "no_such_set"], "no_such_set"),
    "unknown model in compare": (["compare", "train.svm", "--models", "svc,foo"], "unknown model 'foo'"),
    "regressor in compare": (["compare", "train.svm", "--models", "svr"], "svr is a regressor"),
    "garbage model file": (["predict", "garbage.skm", "test.csv"], "not a sparsekernel model file"),
    "pickle as model file": (["info", "pickle.skm"], "pickle"),
    "missing model file": (["predict", "nope.skm", "test.csv"], "nope.skm"),
    "wrong number of features": (["predict", "good.skm", "test.svm"], "features"),
    "no probabilities": (["predict", "good.skm", "test.csv", "--proba"], "SVC models have no probabilities"),
    "label column out of range": (["predict", "good.skm", "test.csv", "--label-column", "9"], "out of range"),
    "option of another model": (["fit", "svc", "train.svm", "--lam", "0.1"], "--lam does not apply to svc"),
    "bad option value": (["fit", "nssvc", "train.svm", "--s", "many"], "--s"),
    "test and cv": (["compare", "train.svm", "--test", "test.svm", "--cv", "3"], "not both"),
    "missing argument": (["predict", "good.skm"], "Missing argument"),
    "model file in a missing directory": (["fit", "svc", "train.svm", "-o", "nodir/m.skm"],
                                          "cannot write nodir/m.skm: no directory"),
    "model file named as a directory": (["fit", "svc", "train.svm", "-o", "newdir/"], "newdir/ is a directory"),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_inputs_one_line_no_traceback(bad_files, case):
    args, expected = BAD_INPUTS[case]
    proc = run(*args, cwd=bad_files, check=False)
    _assert_one_line_error(proc.returncode, proc.stdout, proc.stderr, expected)


@pytest.mark.parametrize("case", list(MORE_BAD_INPUTS))
def test_more_bad_inputs_in_process(bad_files, case, capsys, monkeypatch):
    args, expected = MORE_BAD_INPUTS[case]
    monkeypatch.chdir(bad_files)
    status = main(args)
    captured = capsys.readouterr()
    _assert_one_line_error(status, captured.out, captured.err, expected)


# ---------------------------------------------------------------------- issue 35, item 4: as a new user tries it
def test_error_is_one_short_line_without_data(bad_files, capsys, monkeypatch):
    """A library error that prints its data (scikit-learn's "y_true contains values {np.float64(136.0),
    ...}", several kB) is one short line."""
    compare_module = sys.modules["sparsekernel.cli.compare"]  # the package's name 'compare' is the command

    def fails(*args, **kwargs):
        raise ValueError(f"y_true contains values {set(np.arange(300.0).tolist())}. Labels: {np.arange(300.0)}")

    monkeypatch.setattr(compare_module, "evaluate", fails)
    monkeypatch.chdir(bad_files)
    status = main(["compare", "train.svm", "--models", "svc"])
    captured = capsys.readouterr()
    _assert_one_line_error(status, captured.out, captured.err, "y_true contains values {...}. Labels: [...]")
    assert len(captured.err) < 120 and "136.0" not in captured.err


REGRESSION_MISUSE = {
    "classifier on built-in regression": (["fit", "svc", "diabetes"], "diabetes is a regression data set: use `fit svr`"),
    "compare classifiers on regression": (["compare", "diabetes", "--models", "svc,klr"],
                                          "diabetes is a regression data set: svc, klr are classifiers"),
    "svr on built-in classification": (["fit", "svr", "iris"], "iris is a classification data set: use a classifier"),
    "classifier on non-integer targets": (["fit", "klr", "reg.csv"], "non-integer numeric labels"),
    "classifier on many integer targets": (["fit", "svc", "counts.csv"],
                                           "looks like regression data (60 distinct integer labels in 80 samples): "
                                           "use `fit svr`, or --task classification"),
    "compare svr on class labels": (["compare", "train.csv", "--label-column", "0", "--models", "svr"],
                                    "non-numeric labels (classes): svr is a regressor"),
    "regression on strings": (["compare", "train.csv", "--label-column", "0", "--task", "regression"],
                              "non-numeric labels: they cannot be regression targets"),
}


@pytest.fixture(scope="module")
def regression_files(bad_files):
    """reg.csv: continuous targets; counts.csv: 80 samples, 60 distinct integer targets."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3))
    np.savetxt(bad_files / "reg.csv", np.column_stack([X, X @ [1.0, 2.0, -1.0] + 0.1 * rng.normal(size=80)]),
               delimiter=",")
    np.savetxt(bad_files / "counts.csv", np.column_stack([X, np.arange(80) % 60]), delimiter=",", fmt="%.6g")
    return bad_files


@pytest.mark.parametrize("case", list(REGRESSION_MISUSE))
def test_regression_data_and_classifiers_do_not_mix(regression_files, case, capsys, monkeypatch):
    args, expected = REGRESSION_MISUSE[case]
    monkeypatch.chdir(regression_files)
    status = main(args)
    captured = capsys.readouterr()
    _assert_one_line_error(status, captured.out, captured.err, expected)
    assert not any(p.name.endswith(".skm") and p.stat().st_size == 0 for p in regression_files.iterdir())


def test_task_overrides_the_guess(regression_files, capsys, monkeypatch):
    """--task classification fits a classifier on integer labels that look like regression targets."""
    monkeypatch.chdir(regression_files)
    assert main(["fit", "svc", "counts.csv", "--task", "classification", "-o", "counts_svc.skm"]) == 0
    assert len(load_model(regression_files / "counts_svc.skm").classes_) == 60
    capsys.readouterr()


def test_compare_regression_data_compares_regressors(tmp_path, capsys, monkeypatch):
    """compare diabetes: sparsekernel's SVR against scikit-learn's SVR, R^2 and RMSE as the library
    computes them on the same split, features standardised."""
    from sklearn.datasets import load_diabetes
    from sklearn.metrics import mean_squared_error, r2_score
    from sklearn.model_selection import train_test_split
    from sklearn.svm import SVR as SklearnSVR

    from sparsekernel import SVR

    monkeypatch.chdir(tmp_path)
    assert main(["compare", "diabetes", "--C", "10", "-o", "reg.csv"]) == 0
    out = capsys.readouterr().out
    assert "regression" in out and "R^2" in out and "sklearn-svr" in out and "accuracy" not in out
    with open(tmp_path / "reg.csv") as f:
        rows = {r["model"]: r for r in csv.DictReader(f)}
    assert list(rows) == ["svr", "sklearn-svr"] and set(rows["svr"]) >= {"r2", "r2_std", "rmse", "n_expansion"}
    X, y = load_diabetes(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0)
    for name, cls in (("svr", SVR), ("sklearn-svr", SklearnSVR)):
        pred = make_pipeline(StandardScaler(), cls(C=10.0)).fit(Xtr, ytr).predict(Xte)
        assert float(rows[name]["r2"]) == pytest.approx(r2_score(yte, pred), abs=1e-12)
        assert float(rows[name]["rmse"]) == pytest.approx(np.sqrt(mean_squared_error(yte, pred)), rel=1e-12)
    assert float(rows["svr"]["r2"]) == pytest.approx(float(rows["sklearn-svr"]["r2"]), abs=1e-3)
    assert main(["compare", "diabetes", "--cv", "3", "--models", "svr"]) == 0  # K folds, not stratified
    assert "3-fold CV" in capsys.readouterr().out


def test_fit_svr_on_regression_data(tmp_path):
    proc = run("fit", "svr", "diabetes", "--test-size", "0.2", cwd=tmp_path)
    assert "test R^2" in proc.stdout
    model = load_model(tmp_path / "svr.skm")
    from sklearn.datasets import load_diabetes

    X, _ = load_diabetes(return_X_y=True)
    lines = run("predict", "svr.skm", "diabetes", cwd=tmp_path).stdout.splitlines()
    np.testing.assert_array_equal(np.array(lines, dtype=float), model.predict(X))


def test_fit_refuses_to_replace_a_model_file(tmp_path):
    run("fit", "svc", "iris", cwd=tmp_path)
    before = (tmp_path / "svc.skm").read_bytes()
    proc = run("fit", "svc", "iris", "--C", "5", cwd=tmp_path, check=False)
    _assert_one_line_error(proc.returncode, proc.stdout, proc.stderr, "svc.skm exists: give --force")
    assert (tmp_path / "svc.skm").read_bytes() == before
    run("fit", "svc", "iris", "--C", "5", "--force", cwd=tmp_path)
    assert load_model(tmp_path / "svc.skm")[-1].C == 5.0


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077])
def test_model_file_follows_the_umask(tmp_path, umask):
    import stat

    proc = subprocess.run([sys.executable, "-m", "sparsekernel", "fit", "svc", "iris"], cwd=tmp_path, env=_ENV,
                          capture_output=True, text=True, timeout=300, preexec_fn=lambda: os.umask(umask))
    assert proc.returncode == 0, proc.stderr
    assert stat.S_IMODE(os.stat(tmp_path / "svc.skm").st_mode) == 0o666 & ~umask


def _read_then_close(args, cwd):
    """Run ``args`` with stdout into a pipe whose reader takes one line and goes away (as ``| head -1``);
    returns (exit status, stderr)."""
    proc = subprocess.Popen(args, cwd=cwd, env=_ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.wait(timeout=300)
    assert first
    return proc.returncode, err


def test_predict_into_a_closed_pipe_ends_quietly(tmp_path):
    from sparsekernel.datasets import load_data

    X, y, _ = load_data("moons")
    save_model(KernelLogisticRegression().fit(X, y), tmp_path / "klr.skm")
    status, err = _read_then_close([sys.executable, "-m", "sparsekernel", "predict", "klr.skm", "moons:100000",
                                    "--proba"], tmp_path)  # 4 MB of probabilities: far beyond a pipe's buffer
    assert status == 141 and err == ""


def test_demo_into_a_closed_pipe_ends_quietly(tmp_path):
    """sparsekernel-demo's entry point (sparsekernel.cli:demo_main), its tables replaced by a long print."""
    code = ("import sparsekernel.cli as cli, sparsekernel.cli.demo as demo\n"
            "demo._tables = lambda *args: [print('x' * 99) for _ in range(100000)] and 0\n"
            "raise SystemExit(cli.demo_main([]))\n")
    status, err = _read_then_close([sys.executable, "-c", code], tmp_path)
    assert status == 141 and err == ""


def test_scale_makes_raw_features_work_and_survives_predict_info_export(tmp_path):
    """Features on wildly different scales: the default (standardised inside the model) beats
    --no-scale; predict applies the scaler (also to sparse input of a model fitted on dense data),
    info says so, and skl2onnx converts the loaded Pipeline."""
    X, y = make_classification(300, n_features=6, n_informative=4, random_state=3)
    X = X * np.array([1e4, 1e-3, 1.0, 50.0, 1e3, 0.1]) + 100.0
    _write_csv(tmp_path / "raw.csv", X[:200], np.array(["no", "yes"])[y[:200]])
    _write_csv(tmp_path / "raw_test.csv", X[200:])
    dump_svmlight_file(X[200:], y[200:], str(tmp_path / "raw_test.svm"), zero_based=False)
    scaled_fit = run("fit", "svc", "raw.csv", "--label-column", "species", "-o", "scaled.skm", cwd=tmp_path)
    raw_fit = run("fit", "svc", "raw.csv", "--label-column", "species", "-o", "raw.skm", "--no-scale", cwd=tmp_path)

    def accuracy(stdout):
        return float(next(line for line in stdout.splitlines() if line.startswith("training accuracy")).split()[-1])

    assert accuracy(scaled_fit.stdout) > accuracy(raw_fit.stdout) + 0.1
    model = load_model(tmp_path / "scaled.skm")
    labels = run("predict", "scaled.skm", "raw_test.csv", cwd=tmp_path).stdout.splitlines()
    assert labels == model.predict(X[200:]).tolist()
    from_svm = run("predict", "scaled.skm", "raw_test.svm", cwd=tmp_path).stdout.splitlines()  # sparse input
    assert from_svm == labels
    assert "standardised inside the model" in run("info", "scaled.skm", cwd=tmp_path).stdout
    pytest.importorskip("skl2onnx")
    pytest.importorskip("onnxruntime")
    import onnxruntime
    from skl2onnx import to_onnx

    import sparsekernel.export  # noqa: F401  (registers the converters)

    onx = to_onnx(model, X[:1].astype(np.float64))
    session = onnxruntime.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    got = session.run(None, {"X": X[200:].astype(np.float64)})[0]
    assert got.tolist() == labels


def test_compare_scales_by_default_and_not_with_no_scale(data, capsys):
    d, (Xtr, ytr, Xte, yte) = data
    Xtr, Xte = Xtr * [1e3, 1.0, 1e-2, 1.0, 10.0], Xte * [1e3, 1.0, 1e-2, 1.0, 10.0]
    _write_csv(d / "skewed_train.csv", Xtr, ytr)
    _write_csv(d / "skewed_test.csv", Xte, yte)
    for flag, model in (([], make_pipeline(StandardScaler(), SVC(random_state=0))),
                        (["--no-scale"], SVC(random_state=0))):
        assert main(["compare", str(d / "skewed_train.csv"), "--test", str(d / "skewed_test.csv"), "--label-column",
                     "0", "--models", "svc", "-o", str(d / "skewed.csv"), *flag]) == 0
        with open(d / "skewed.csv") as f:
            (row,) = csv.DictReader(f)
        assert float(row["accuracy"]) == model.fit(Xtr, ytr).score(Xte, yte)
    assert "features as given (--no-scale)" in capsys.readouterr().out


def test_compare_nssvc_uses_the_kernel_of_the_others(tmp_path, capsys):
    """NSSVC's own default is linear; in compare it is rbf like the others, or --kernel's."""
    from sklearn.model_selection import train_test_split

    from sparsekernel import NSSVC
    from sparsekernel.datasets import load_data

    X, y, _ = load_data("moons")
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)

    def nssvc_accuracy(*options):
        assert main(["compare", "moons", "--models", "nssvc", "-o", str(tmp_path / "n.csv"), *options]) == 0
        with open(tmp_path / "n.csv") as f:
            (row,) = csv.DictReader(f)
        return float(row["accuracy"])

    def reference(kernel):
        return make_pipeline(StandardScaler(), NSSVC(kernel=kernel, random_state=0)).fit(Xtr, ytr).score(Xte, yte)

    assert reference("rbf") > reference("linear") + 0.05  # the two differ on moons
    assert nssvc_accuracy() == reference("rbf")
    assert nssvc_accuracy("--kernel", "linear") == reference("linear")
    capsys.readouterr()


def test_lam_help_says_what_auto_lam_computes(capsys):
    """lam='auto' is auto_lam: log(C / b) clipped to [C / 10, C / 4], not C / 10."""
    from sparsekernel.klr import auto_lam

    assert auto_lam(100.0) == pytest.approx(np.log(100.0 / 1e-5), rel=1e-6)  # neither C / 10 nor C / 4
    assert auto_lam(1000.0) == 100.0 and auto_lam(10.0) == 2.5
    assert main(["fit", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "'auto' = C / 10" not in text
    assert "log(C / b)" in text and "clipped to between C / 10 and C / 4" in text
    assert "smaller of 1e-5 and C / 1000" in text


# ---------------------------------------------------------------------- the nu formulations, outlier detection
def test_fit_nusvc_and_nusvr_are_the_library_fits(data, tmp_path):
    """fit nusvc / nusvr with --nu: the saved models are the library's fits (standardised inside);
    predict and info work on them; --nu does not apply to svc."""
    from sklearn.datasets import load_diabetes

    from sparsekernel import NuSVC, NuSVR

    d, (Xtr, ytr, Xte, _) = data
    proc = run("fit", "nusvc", "train.csv", "--label-column", "species", "--nu", "0.3", "-o", "nusvc.skm", cwd=d)
    assert "nusvc (NuSVC)" in proc.stdout and "training accuracy" in proc.stdout
    model = load_model(d / "nusvc.skm")
    assert isinstance(model[-1], NuSVC) and model[-1].nu == 0.3
    reference = make_pipeline(StandardScaler(), NuSVC(nu=0.3)).fit(Xtr, ytr)
    np.testing.assert_array_equal(model.decision_function(Xte), reference.decision_function(Xte))
    assert run("predict", "nusvc.skm", "test.csv", "--label-column", "species", cwd=d).stdout.splitlines() == \
        model.predict(Xte).tolist()
    assert "nu=0.3" in run("info", "nusvc.skm", cwd=d).stdout

    proc = run("fit", "nusvr", "diabetes", "--nu", "0.4", "--C", "10", "--test-size", "0.2", cwd=tmp_path)
    assert "test R^2" in proc.stdout
    model = load_model(tmp_path / "nusvr.skm")
    assert isinstance(model[-1], NuSVR) and (model[-1].nu, model[-1].C) == (0.4, 10.0)
    X, _ = load_diabetes(return_X_y=True)
    lines = run("predict", "nusvr.skm", "diabetes", cwd=tmp_path).stdout.splitlines()
    np.testing.assert_array_equal(np.array(lines, dtype=float), model.predict(X))
    assert "--nu does not apply to svc" in run("fit", "svc", "iris", "--nu", "0.2", cwd=tmp_path, check=False).stderr


def _summary(stdout):
    """fit's 'key  value' lines as a dict."""
    return dict(line.split("  ", 1) for line in stdout.splitlines())


def test_fit_ocsvm_reports_outliers_and_the_auc_against_labels(tmp_path):
    """fit ocsvm breast_cancer: the fit ignores the labels (the library's OneClassSVM fitted on X
    alone); the summary's outlier fractions and AUC (majority class as inliers) are the library's
    numbers on the same split; predict writes 1 / -1 per line; info describes the model."""
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import train_test_split

    from sparsekernel import OneClassSVM
    from sparsekernel.datasets import load_data

    proc = run("fit", "ocsvm", "breast_cancer", "--nu", "0.1", "--test-size", "0.2", cwd=tmp_path)
    rows = {k: v.strip() for k, v in _summary(proc.stdout).items()}
    model = load_model(tmp_path / "ocsvm.skm")
    assert isinstance(model[-1], OneClassSVM) and model[-1].nu == 0.1
    X, y, _ = load_data("breast_cancer")
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=0, stratify=y)
    reference = make_pipeline(StandardScaler(), OneClassSVM(nu=0.1)).fit(Xtr)
    np.testing.assert_array_equal(model.decision_function(Xte), reference.decision_function(Xte))
    inlier = np.bincount(y).argmax()
    for part, Xp, yp in (("training", Xtr, ytr), ("test", Xte, yte)):
        flagged = reference.predict(Xp) == -1
        assert rows[f"{part} outliers"].startswith(f"{100 * flagged.mean():.1f} % of the {len(Xp)} {part} rows")
        auc = roc_auc_score(yp == inlier, reference.score_samples(Xp))
        assert rows[f"{part} AUC"].startswith(f"{auc:.4f} of score_samples with the majority class {inlier} ")
    assert float(rows["training outliers"].split()[0]) <= 10.0 + 1.0  # nu bounds it (about)
    lines = run("predict", "ocsvm.skm", "breast_cancer", cwd=tmp_path)
    assert lines.stdout.splitlines() == [str(v) for v in model.predict(X).tolist()]
    assert set(lines.stdout.split()) == {"1", "-1"} and "outliers:" in lines.stderr
    info = run("info", "ocsvm.skm", cwd=tmp_path).stdout
    assert "OneClassSVM" in info and "nu=0.1" in info and "classes_" not in info
    assert "no probabilities" in run("predict", "ocsvm.skm", "breast_cancer", "--proba", cwd=tmp_path,
                                     check=False).stderr


def test_fit_ocsvm_without_class_labels(tmp_path):
    """Data without labels (an .npz with X alone) or with regression targets: the outlier fraction
    only, no AUC."""
    X = np.random.default_rng(0).normal(size=(120, 3))
    np.savez(tmp_path / "unlabelled.npz", X=X)
    rows = _summary(run("fit", "ocsvm", "unlabelled.npz", "--nu", "0.2", "--no-scale", cwd=tmp_path).stdout)
    from sparsekernel import OneClassSVM

    reference = OneClassSVM(nu=0.2).fit(X)
    assert rows["training outliers"].strip().startswith(f"{100 * np.mean(reference.predict(X) == -1):.1f} %")
    assert not any("AUC" in key for key in rows)
    rows = _summary(run("fit", "ocsvm", "diabetes", "-o", "d.skm", cwd=tmp_path).stdout)
    assert "training outliers" in rows and not any("AUC" in key for key in rows)


def test_compare_lists_nusvc_and_nusvr(capsys):
    """nusvc and nusvr are compare models (not default ones); --nu reaches them only."""
    from sparsekernel.cli.compare import COMPARE_MODELS, _names

    assert "nusvc" in _names("classification") and "nusvc" not in _names("classification", default_only=True)
    assert "nusvr" in _names("regression") and "ocsvm" not in COMPARE_MODELS
    assert main(["compare", "iris", "--models", "svc,nusvc", "--nu", "0.2"]) == 0
    assert "nusvc" in capsys.readouterr().out
    assert main(["compare", "diabetes", "--models", "nusvr", "--cv", "3"]) == 0
    assert "nusvr" in capsys.readouterr().out
