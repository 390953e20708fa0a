"""The command-line defects of issue 51, through ``main()`` in click's CliRunner isolation: error
messages that elided their list of valid choices, ``predict -o`` over an existing file, CSV and
svmlight copies of the same data giving different models, and ``demo --help``."""

import sys

import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.datasets import dump_svmlight_file, load_svmlight_file, make_classification

from sparsekernel import load_model
from sparsekernel.cli import _common, app, main
from sparsekernel.cli._common import MODELS
from sparsekernel.cli.compare import COMPARE_MODELS


def cli(*args):
    """``sparsekernel ARGS`` through main() in CliRunner isolation: (exit status, stdout, stderr)."""
    with CliRunner().isolation() as (stdout, stderr, _):
        status = main([str(a) for a in args])
    return status, stdout.getvalue().decode(), stderr.getvalue().decode()


def error_line(*args):
    """The one error line of a failing command (without its 'sparsekernel: error: ' prefix)."""
    status, stdout, stderr = cli(*args)
    assert status != 0 and stdout == "" and "Traceback" not in stderr
    (line,) = stderr.splitlines()
    assert line.startswith("sparsekernel: error: "), line
    return line.removeprefix("sparsekernel: error: ")


@pytest.fixture
def files(tmp_path):
    """data.csv (no header, labels 0 / 1 last) and data.svm: the same 80 x 6 data, a third of it
    zeros, features on different scales and off centre (values exact in both formats); test.csv:
    20 more rows of features alone; columns.csv: 10 named columns."""
    X, y = make_classification(100, n_features=6, n_informative=4, random_state=5)
    X = np.round(X * [1.0, 10.0, 0.1, 1.0, 5.0, 2.0] + [3.0, 0.0, 1.0, -2.0, 0.0, 4.0], 3)
    X[np.random.default_rng(0).random(X.shape) < 1 / 3] = 0.0
    X[:, -1] = np.where(X[:, -1] == 0.0, 1.0, X[:, -1])  # the last feature never zero: svmlight keeps 6 features
    np.savetxt(tmp_path / "data.csv", np.column_stack([X[:80], y[:80]]), delimiter=",", fmt="%.3f")
    dump_svmlight_file(X[:80], y[:80], str(tmp_path / "data.svm"), zero_based=False)
    np.savetxt(tmp_path / "test.csv", X[80:], delimiter=",", fmt="%.3f")
    dump_svmlight_file(X[80:], y[80:], str(tmp_path / "test.svm"), zero_based=False)
    names = ["sepal_length", "sepal_width", "petal_length", "petal_width", "stem", "leaf", "root", "bud", "seed",
             "species"]
    np.savetxt(tmp_path / "columns.csv", np.c_[X, X[:, :3], y], delimiter=",", header=",".join(names), comments="",
               fmt="%.3f")
    return tmp_path, X, y, names


# ---------------------------------------------------------------------- 1. the valid choices in full
def test_unknown_model_lists_every_model(files):
    d, *_ = files
    line = error_line("fit", "foo", d / "data.csv")
    assert line == f"unknown model 'foo' (choose from {', '.join(MODELS)})"
    line = error_line("compare", d / "data.csv", "--models", "svc,foo")
    assert line == f"unknown model 'foo' (choose from {', '.join(COMPARE_MODELS)})"


def test_unknown_label_column_lists_the_columns(files):
    d, _, _, names = files
    line = error_line("fit", "svc", d / "columns.csv", "--label-column", "nope")
    assert line.endswith(f"columns.csv: no label column 'nope' (the columns are {', '.join(names)})")


def test_unknown_data_name_lists_the_built_in_sets():
    from sparsekernel.datasets import list_datasets

    line = error_line("fit", "svc", "no_such_set")
    assert all(d["name"] in line for d in list_datasets()) and "..." not in line


def test_malformed_svmlight_file_says_why(tmp_path):
    """Features separated by commas: the loader's reason, with the bad token, in full."""
    (tmp_path / "commas.svm").write_text("1 1:0.5,2:0.7,3:0.1,4:0.2,5:0.3,6:0.4,7:0.5,8:0.6,9:0.7,10:0.8\n-1 1:0.1\n")
    line = error_line("fit", "svc", tmp_path / "commas.svm")
    assert line.endswith("commas.svm: not a valid svmlight/libsvm file (could not convert string to float: "
                         "b'0.5,2:0.7,3:0.1,4:0.2,5:0.3,6:0.4,7:0.5,8:0.6,9:0.7,10:0.8')")


def test_another_librarys_data_is_still_elided(files, monkeypatch):
    """A message raised outside sparsekernel (scikit-learn's, printing 214 labels) keeps its data
    literals short."""
    from sklearn.preprocessing import LabelEncoder

    d, *_ = files
    monkeypatch.setattr(sys.modules["sparsekernel.cli.compare"], "evaluate",  # the package's 'compare' is the command
                        lambda *a, **k: LabelEncoder().fit([0.0]).transform(np.arange(1.0, 215.0)))
    assert error_line("compare", d / "data.csv", "--models", "svc") == "y contains previously unseen labels: [...]"


# ---------------------------------------------------------------------- 2. -o never over a file without --force
@pytest.mark.parametrize("command", ["fit", "predict"])
def test_output_file_is_not_replaced_without_force(files, command):
    d, *_ = files
    assert cli("fit", "svc", d / "data.csv", "-o", d / "model.skm")[0] == 0
    args = (["fit", "svc", d / "data.csv", "--C", "5"] if command == "fit"
            else ["predict", d / "model.skm", d / "test.csv"])
    out = d / "out.file"
    out.write_bytes(b"keep me\n")
    assert error_line(*args, "-o", out) == f"{out} exists: give --force to replace it, or -o another file"
    assert out.read_bytes() == b"keep me\n"
    status, _, stderr = cli(*args, "-o", out, "--force")
    assert status == 0, stderr
    assert out.read_bytes() != b"keep me\n"


def test_predict_checks_its_output_file_first(files):
    """-o's mistakes are reported before the model file is read (missing.skm is not)."""
    d, *_ = files
    assert "is a directory" in error_line("predict", "missing.skm", "test.csv", "-o", d)
    line = error_line("predict", "missing.skm", "test.csv", "-o", d / "nodir" / "p.csv")
    assert line.startswith(f"cannot write {d / 'nodir' / 'p.csv'}: no directory")


# ---------------------------------------------------------------------- 3. one scaling rule for every format
def _decision(path, X):
    return load_model(path).decision_function(X)


def test_csv_and_svmlight_copies_give_the_same_model(files):
    """fit on data.csv and on data.svm (the same numbers): the same standardised model, the same
    predictions by predict; the summary names the scaling."""
    d, X, y, _ = files
    summaries = {}
    for kind in ("csv", "svm"):
        status, stdout, stderr = cli("fit", "svc", d / f"data.{kind}", "-o", d / f"{kind}.skm")
        assert status == 0, stderr
        summaries[kind] = {key: value.strip() for key, value in (line.split("  ", 1) for line in stdout.splitlines())}
    np.testing.assert_array_equal(_decision(d / "csv.skm", X), _decision(d / "svm.skm", X))
    assert summaries["csv"]["model"] == summaries["svm"]["model"]  # gamma 'scale': the same number
    predictions = [cli("predict", d / f"{kind}.skm", d / f"test.{ext}")[1] for kind in ("csv", "svm")
                   for ext in ("csv", "svm")]
    assert len(set(predictions)) == 1 and len(predictions[0].split()) == 20
    assert summaries["csv"]["features"] == "standardised inside the model (StandardScaler: centred, unit variance)"
    assert summaries["svm"]["features"] == \
        "standardised inside the model (StandardScaler: centred, unit variance; the sparse data made dense)"


def test_compare_gives_csv_and_svmlight_copies_the_same_rows(files):
    d, *_ = files
    rows, texts = [], []
    for kind in ("csv", "svm"):
        status, stdout, stderr = cli("compare", d / f"data.{kind}", "--models", "svc,klr", "-o", d / f"{kind}.rows")
        assert status == 0, stderr
        rows.append([r.split(",")[:3] for r in (d / f"{kind}.rows").read_text().splitlines()])  # model, accuracy...
        texts.append(" ".join(stdout.split()))
    assert rows[0] == rows[1]
    assert "features standardised (StandardScaler: centred, unit variance)" in texts[0]
    assert "features standardised (StandardScaler: centred, unit variance; the sparse data made dense)" in texts[1]


def test_large_sparse_data_is_scaled_not_centred_and_says_so(files, monkeypatch):
    """Sparse data beyond DENSE_LIMIT entries stays sparse: scaled, not centred, as the summary
    says; predict of a centring model makes sparse input dense in blocks of rows."""
    d, X, *_ = files
    monkeypatch.setattr(_common, "DENSE_LIMIT", 50)  # 8 rows of 6 features
    status, stdout, stderr = cli("fit", "svc", d / "data.svm", "-o", d / "sparse.skm")
    assert status == 0, stderr
    assert "scaled to unit variance inside the model, not centred (StandardScaler(with_mean=False): sparse data " \
           "of more than 50 entries stays sparse)" in stdout
    model = load_model(d / "sparse.skm")
    assert not model[0].with_mean
    assert "not centred" in cli("info", d / "sparse.skm")[1]
    assert cli("fit", "svc", d / "data.csv", "-o", d / "dense.skm")[0] == 0  # dense data: centred
    Xte, _ = load_svmlight_file(str(d / "test.svm"), n_features=6)
    labels = cli("predict", d / "dense.skm", d / "test.svm")[1].split()
    assert labels == [str(v) for v in load_model(d / "dense.skm").predict(Xte.toarray()).tolist()]


# ---------------------------------------------------------------------- 4. demo --help
def test_demo_help_has_the_program_name_and_option_help():
    result = CliRunner().invoke(app, ["demo", "--help"], prog_name="sparsekernel")
    assert result.exit_code == 0 and result.output.startswith("Usage: sparsekernel demo [OPTIONS]")
    text = " ".join(result.output.split())
    for option, words in (("--C FLOAT RANGE", "C of the SVC, S-KLR and SLMC tables' models"),
                          ("--n-synthetic INTEGER RANGE", "Samples of the synthetic data set"),
                          ("--n-nssvm INTEGER RANGE", "Training samples (and as many test samples) of the NSSVC")):
        assert f"{option} {words}" in text
    status, stdout, _ = cli("demo", "--help")  # the real entry point, the same text
    assert status == 0 and stdout == result.output


def test_demo_entry_point_and_bad_option():
    from sparsekernel.cli import demo_main

    with CliRunner().isolation() as (stdout, _, _):
        assert demo_main(["--help"]) == 0
    assert "--n-nssvm" in stdout.getvalue().decode()
    assert error_line("demo", "--n-synthetic", "5").startswith("Invalid value for '--n-synthetic'")
