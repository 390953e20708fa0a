"""Property-based fuzzing of the ``sparsekernel`` command (hypothesis).

Data files of every kind a user might hand it (CSV with or without a header, ragged rows, empty
cells, text in numeric columns, NaN / inf, several separators; svmlight with bad indices; .npz;
binary garbage; empty files) and argument lists built from the real grammar with wrong words mixed
in. Whatever comes in, ``main`` returns 0 (success), 1 (an error) or 2 (a usage error); an error is
one line on stderr that is not an "internal error"; nothing escapes as an exception. A successful
fit writes a model file that ``predict`` and ``info`` then read, and ``predict`` writes one line per
row of its data.

Profiles as in test_fuzz_estimators.py (``ci`` by default, SK_FUZZ_PROFILE=long).
"""

import contextlib
import io
import os
import tempfile

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from sparsekernel.cli import main
from sparsekernel.cli._common import MODELS as CLI_MODELS

from _fuzz import TIME_LIMIT, pick as _pick, rarely, record

MODELS = sorted(CLI_MODELS)
MODEL_CLASSES = {name: cls for name, (cls, _) in CLI_MODELS.items()}

CELLS = st.one_of(
    st.integers(-5, 5).map(str),
    st.floats(-1e3, 1e3, allow_nan=False).map(lambda v: f"{v:.3g}"),
    st.sampled_from(["nan", "inf", "-inf", "", " ", "abc", '"1,5"', "1e400", "0x10", "TRUE", "-", "1;2"]),
)
LABELS = st.sampled_from(["0", "1", "2", "-1", "a", "b", "0.5", "yes", ""])


@st.composite
def csv_text(draw):
    """A CSV: an optional header, rows of numeric-looking cells (some bad), a label column; ragged
    rows sometimes; one of several separators."""
    sep = draw(st.sampled_from([",", ",", ";", "\t", " "]))
    n_rows = draw(st.integers(0, 30))
    n_cols = draw(st.integers(1, 4))
    clean = draw(st.integers(0, 3)) > 0  # most files are well-formed, so that fits happen
    lines = []
    if draw(st.booleans()):
        lines.append(sep.join([f"x{j}" for j in range(n_cols)] + ["label"]))
    for _ in range(n_rows):
        width = n_cols if clean or draw(st.integers(0, 9)) else draw(st.integers(0, n_cols + 2))
        if clean:
            cells = [f"{draw(st.floats(-10, 10, allow_nan=False)):.4g}" for _ in range(width)]
            label = draw(st.sampled_from(["0", "1", "2"]))
        else:
            cells = [draw(CELLS) for _ in range(width)]
            label = draw(LABELS)
        lines.append(sep.join(cells + [label]))
    return "\n".join(lines) + draw(st.sampled_from(["\n", "", "\n\n"]))


@st.composite
def svmlight_text(draw):
    lines = []
    for _ in range(draw(st.integers(0, 15))):
        label = draw(st.sampled_from(["+1", "-1", "1", "0", "2", "x"]))
        feats = []
        for _ in range(draw(st.integers(0, 4))):
            index = draw(st.sampled_from(["1", "2", "3", "7", "0", "-1", "a"]))
            value = draw(st.sampled_from(["1", "0.5", "-2", "nan", "inf", "", "b"]))
            feats.append(f"{index}:{value}")
        lines.append(" ".join([label] + feats))
    return "\n".join(lines) + "\n"


@st.composite
def data_file(draw, directory):
    """A path to a data file of a random kind, or a built-in name, or a path that does not exist."""
    kind = draw(st.sampled_from(["csv"] * 6 + ["svm", "npz", "garbage", "empty", "missing", "builtin"]))
    path = os.path.join(directory, f"d{draw(st.integers(0, 10**6))}")
    if kind == "csv":
        path += draw(st.sampled_from([".csv", ".txt", ""]))
        with open(path, "w") as f:
            f.write(draw(csv_text()))
    elif kind == "svm":
        path += ".svm"
        with open(path, "w") as f:
            f.write(draw(svmlight_text()))
    elif kind == "npz":
        path += ".npz"
        n = draw(st.integers(0, 12))
        arrays = {"X": np.arange(n * 2, dtype=float).reshape(n, 2) % 5}
        if draw(st.booleans()):
            arrays["y"] = np.arange(n) % draw(st.integers(1, 3))
        if draw(st.booleans()):
            arrays = {"Z": np.zeros(3)}
        np.savez(path, **arrays)
    elif kind == "garbage":
        with open(path, "wb") as f:
            f.write(draw(st.binary(max_size=200)))
    elif kind == "empty":
        open(path, "w").close()
    elif kind == "missing":
        path += ".csv"
    else:
        return draw(st.sampled_from(["iris", "breast_cancer", "moons:60", "nosuchset", "moons:-3", "moons:x"]))
    return path


# option -> (valid values, malformed or out-of-range values)
OPTIONS = {
    "--C": (["1", "0.5", "100"], ["0", "-1", "x", "nan"]),
    "--gamma": (["scale", "auto", "0.1"], ["-2", "big"]),
    "--kernel": (["rbf", "linear", "poly", "sigmoid", "laplacian"], ["cubic"]),
    "--tol": (["1e-3", "1e-12"], ["0"]),
    "--max-iter": (["5", "-1"], ["0", "1.5"]),
    "--lam": (["auto", "0.1"], ["-1"]),
    "--s": (["auto", "3", "0.5"], ["0"]),
    "--n-expansion": (["2", "0.5"], ["0"]),
    "--epsilon": (["0.1"], ["-1"]),
    "--degree": (["2"], ["x"]),
    "-p": (["verbose=0", "verbose=false"], ["nosuch=1", "junk", "class_weight=balanced"]),
    "--seed": (["0", "7"], ["-5", "x"]),
}


def _option(draw, model):
    """One model option: one the model has, with a valid value, 11 times in 12."""
    params = MODEL_CLASSES[model]().get_params() if model in MODEL_CLASSES else {}
    applies = [f for f in sorted(OPTIONS) if f in ("-p", "--seed") or f[2:].replace("-", "_") in params]
    flag = draw(st.sampled_from(_pick(draw, ([applies], [sorted(OPTIONS)]))))
    return [flag, _pick(draw, OPTIONS[flag])]


@contextlib.contextmanager
def _inside(directory):
    """The working directory for the block (contextlib.chdir needs Python 3.11)."""
    before = os.getcwd()
    os.chdir(directory)
    try:
        yield
    finally:
        os.chdir(before)


def _run(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    return status, out.getvalue(), err.getvalue()


def _assert_clean_exit(status, err, argv):
    assert status in (0, 1, 2), (argv, status, err)
    assert "Traceback" not in err and "internal error" not in err, (argv, err)
    if status:
        errors = [line for line in err.splitlines() if "error:" in line]
        assert len(errors) == 1 and errors[0].strip() != "sparsekernel: error:", (argv, err)


@given(st.data())
def test_fuzz_cli(draw):
    with tempfile.TemporaryDirectory() as tmp:
        data = draw.draw(data_file(tmp))
        model_file = os.path.join(tmp, "m.skm")
        model = _pick(draw.draw, (MODELS, ["svm", ""]))
        options = [word for _ in range(draw.draw(st.integers(0, 3))) for word in _option(draw.draw, model)]
        # every fit gets a time budget (the engine polls it), so no case can run for long
        argv = ["fit", model, data, "-o", model_file, "-p", f"time_limit={TIME_LIMIT}", *options]
        if draw.draw(st.booleans()):
            argv += ["--test-size", _pick(draw.draw, (["0.25", "0.5"], ["1.5", "x"]))]
        if rarely(draw.draw, 20):  # a word in the wrong place
            argv.insert(draw.draw(st.integers(0, len(argv))), draw.draw(st.sampled_from(["--bogus", "fit", "-o"])))
        status, _, err = _run(argv)
        _assert_clean_exit(status, err, argv)
        record("cli", "fit" if status == 0 else f"exit {status}")
        if status or not os.path.exists(model_file):
            return

        status, out, err = _run(["info", model_file])
        assert status == 0, err
        assert out.strip()

        # predict on the training file (labels are read if present, else features only) or another file
        target = data if draw.draw(st.booleans()) else draw.draw(data_file(tmp))
        proba = draw.draw(st.booleans()) and model not in ("svr", "skfd")
        argv = ["predict", model_file, target] + (["--proba"] if proba else [])
        status, out, err = _run(argv)
        _assert_clean_exit(status, err, argv)
        if status == 0 and target == data:
            lines = out.strip().splitlines()
            assert lines, argv
            # one line per row (plus the header of class names for --proba)
            assert all(line.strip() for line in lines)


@given(st.lists(st.sampled_from(["fit", "predict", "info", "compare", "datasets", "demo", "--help", "-h",
                                 "--version", "svc", "iris", "x.csv", "--C", "1", "-o", "--bogus", "", "-"]),
                max_size=5))
def test_fuzz_cli_words(argv):
    """Argument lists of command-line words in any order: a usage error, an error, or help."""
    if "compare" in argv or "demo" in argv:  # these run whole benchmarks on a built-in set
        argv = [w for w in argv if w not in ("compare", "demo")]
    with tempfile.TemporaryDirectory() as tmp, _inside(tmp):  # 'fit svc iris' writes svc.skm there
        status, _, err = _run(argv)
    _assert_clean_exit(status, err, argv)
    record("cli-words", f"exit {status}")
