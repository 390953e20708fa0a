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


def test_fit_predict_svmlight(data):
    d, _ = data
    proc = run("fit", "sklr", "train.svm", "-o", "sklr.skm", "--lam", "0.1", "--test-size", "0.2", cwd=d)
    assert "test accuracy" in proc.stdout
    model = load_model(d / "sklr.skm")
    assert isinstance(model[-1], SparseKernelLogisticRegression) and model[-1].lam == 0.1
    assert not model[0].with_mean  # sparse data: scaled, not centred
    X, _ = load_svmlight_file(str(d / "test.svm"), n_features=model.n_features_in_)
    proba = run("predict", "sklr.skm", "test.svm", "--proba", cwd=d).stdout.splitlines()
    assert proba[0] == "-1,1"
    np.testing.assert_array_equal(np.array([r.split(",") for r in proba[1:]], dtype=float), model.predict_proba(X))


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
    with pytest.raises(SystemExit) as exit_:  # the demo's own argparse help, reached through the command
        main(["demo", "--help"])
    assert exit_.value.code == 0 and "--n-nssvm" in capsys.readouterr().out


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
