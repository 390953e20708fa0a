"""What the commands share: the model names, the model options, data loading, progress and output."""

from __future__ import annotations

import contextlib
import os
import re
import sys
import time
import traceback

import click
import numpy as np
import scipy.sparse as sp
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

from .._registry import cli_models
from ..datasets import _BUILTIN, load_data

# results (tables, summaries) on stdout, progress on stderr; piped output is not cut at 80 columns
out = Console(highlight=False, width=None if sys.stdout.isatty() else 200)
err = Console(stderr=True, highlight=False)

# command-line name -> (estimator class, one-line description): the registry's
MODELS = cli_models()


# ---------------------------------------------------------------------- messages
def one_line(text, limit=300, elide=True):
    """A message as one line: white space collapsed, at most ``limit`` characters; with ``elide``
    (for another library's message: scikit-learn's, numpy's) long data literals (a set of 214
    labels, an array) cut to "{...}". sparsekernel's own messages are not elided: their bracketed
    parts are lists of valid choices or the reason of an error (see :func:`own_message`)."""
    text = " ".join(str(text).split())
    if elide:
        text = _elide_long_brackets(text)
    return text if len(text) <= limit else text[:limit - 3].rstrip() + "..."


def _elide_long_brackets(text, longest=60):
    """Each outermost bracketed part ((), [], {}) longer than ``longest`` characters that holds data
    rather than words (under half letters, or more than 8 commas) as "[...]"."""
    pairs, stack, long = {")": "(", "]": "[", "}": "{"}, [], []
    for i, c in enumerate(text):
        if c in "([{":
            stack.append(i)
        elif c in pairs and stack and text[stack[-1]] == pairs[c]:
            start = stack.pop()
            inside = text[start + 1:i]
            if len(inside) > longest and (sum(ch.isalpha() for ch in inside) < len(inside) / 2
                                          or inside.count(",") > 8):
                long = [(a, b) for a, b in long if a < start] + [(start, i)]  # drops the parts inside it
    for start, end in reversed(long):
        text = text[:start + 1] + "..." + text[end:]
    return text


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def own_message(exc):
    """Whether sparsekernel composed the message of ``exc``: a CliError or click usage error, or an
    error raised in the package's own code (the data loader's, the model file reader's), rather than
    in a library beneath it, whose messages may print whole arrays."""
    if isinstance(exc, click.ClickException):
        return True
    frames = traceback.extract_tb(exc.__traceback__)
    return bool(frames) and os.path.abspath(frames[-1].filename).startswith(_PACKAGE_DIR + os.sep)


class CliError(click.ClickException):
    """An error reported as one line on stderr, exit status 1."""


def model_class(name):
    """The estimator class of a command-line model name (CliError for an unknown one)."""
    if name not in MODELS:
        raise CliError(f"unknown model {name!r} (choose from {', '.join(MODELS)})")
    return MODELS[name][0]


# ---------------------------------------------------------------------- option types
class NumberOr(click.ParamType):
    """A number (an int when written as one, if ints are allowed) or one of a few keywords."""

    name = "number"

    def __init__(self, *words, integer=False):
        self.words, self.integer = words, integer
        self.name = "|".join(words + ("INT|FLOAT" if integer else "FLOAT",))

    def convert(self, value, param, ctx):
        if not isinstance(value, str) or value in self.words:
            return value
        try:
            return int(value) if self.integer and re.fullmatch(r"[-+]?\d+", value.strip()) else float(value)
        except ValueError:
            choices = " or ".join([*map(repr, self.words), "a number"])
            self.fail(f"{value!r} is not {choices}", param, ctx)


def parse_value(text):
    """A ``-p NAME=VALUE`` value: true/false/none, an int, a float, else the string."""
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    if low == "none":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


# (option flags, estimator parameter, click type, help)
_MODEL_OPTIONS = [
    (("--C",), "C", float, "Regularisation C."),
    (("--kernel",), "kernel", click.Choice(["linear", "poly", "rbf", "sigmoid", "laplacian"]), "Kernel."),
    (("--gamma",), "gamma", NumberOr("scale", "auto"), "Kernel gamma: 'scale', 'auto' or a number."),
    (("--degree",), "degree", int, "Degree of the poly kernel."),
    (("--coef0",), "coef0", float, "coef0 of the poly and sigmoid kernels."),
    (("--lam",), "lam", NumberOr("auto"),
     "sklr: sparsity coefficient, a number or 'auto' (the default): log(C / b), the log-odds at which a point "
     "leaves the model (b: the coefficients' lower bound, -p bound=..., by default the smaller of 1e-5 and "
     "C / 1000), clipped to between C / 10 and C / 4."),
    (("--s",), "s", NumberOr("auto", integer=True), "nssvc: support vectors (int) or a fraction of the samples."),
    (("--n-expansion",), "n_expansion", NumberOr(integer=True),
     "slmc, skfd: expansion vectors (int) or a fraction of the SVM's support vectors."),
    (("--epsilon",), "epsilon", float, "svr: width of the insensitive tube."),
    (("--nu",), "nu", click.FloatRange(0.0, 1.0, min_open=True),
     "nusvc, nusvr, ocsvm: in (0, 1], an upper bound on the fraction of training errors (ocsvm: of training "
     "rows flagged as outliers) and a lower bound on the fraction of support vectors [default: 0.5]."),
    (("--tol",), "tol", float, "Stopping tolerance."),
    (("--max-iter",), "max_iter", int, "Iteration cap."),
    (("--n-jobs",), "n_jobs", int, "Threads (default: every thread the process may use)."),
]


def model_options(fn):
    """Add the estimator options, ``-p NAME=VALUE`` and ``--seed`` to a command (options not given
    are None; :func:`split_model_params` collects them)."""
    fn = click.option("--seed", type=int, default=0, show_default=True,
                      help="random_state of the estimators that have one, and of data splits.")(fn)
    fn = click.option("-p", "--param", "extra", multiple=True, metavar="NAME=VALUE",
                      help="Any other estimator parameter (repeatable), e.g. -p class_weight=balanced.")(fn)
    for flags, param, kind, text in reversed(_MODEL_OPTIONS):
        fn = click.option(*flags, param, type=kind, default=None, help=text)(fn)
    return fn


def split_model_params(kwargs):
    """Pop the model options out of a command's keyword arguments: (params given, seed)."""
    params = {}
    for _, param, _, _ in _MODEL_OPTIONS:
        value = kwargs.pop(param, None)
        if value is not None:
            params[param] = value
    for item in kwargs.pop("extra", ()):
        name, eq, value = item.partition("=")
        if not eq or not name.strip().isidentifier():
            raise click.BadParameter(f"{item!r} is not NAME=VALUE", param_hint="'-p'")
        params[name.strip()] = parse_value(value)
    return params, kwargs.pop("seed")


def flag_of(param):
    """The command-line spelling of an estimator parameter."""
    for flags, name, _, _ in _MODEL_OPTIONS:
        if name == param:
            return flags[0]
    return f"-p {param}=..."


def build_model(name, params, seed, *, strict=True, cls=None, defaults=None):
    """An estimator for a command-line model name with the given parameters.

    ``random_state`` is ``seed`` where the estimator has it (unless given). With ``strict`` a
    parameter the estimator does not have is a CliError; otherwise it is left out for this model.
    ``cls`` is the estimator class (default: the name's in MODELS); ``defaults`` are parameters
    that the given ones override.
    """
    cls = model_class(name) if cls is None else cls
    known = cls().get_params(deep=False)
    unknown = [p for p in params if p not in known]
    if strict and unknown:
        raise CliError(f"{', '.join(map(flag_of, unknown))} does not apply to {name} ({cls.__name__})")
    chosen = {**(defaults or {}), **{k: v for k, v in params.items() if k in known}}
    if "random_state" in known and "random_state" not in chosen:
        chosen["random_state"] = seed
    return cls(**chosen)


# --scale: sparse data up to this many entries (80 MB as float64) is made dense to be centred
DENSE_LIMIT = 10_000_000
SCALE_RULE = (f"sparse (svmlight) data alike, made dense to be centred unless it has more than {DENSE_LIMIT:,} "
              "entries (then only scaled)")


def for_scaling(X, scale, where=""):
    """(X, how): X as --scale fits on it, and the scaling in words (``where`` follows the verb).
    One rule for every file format, so that a CSV file and an svmlight copy of it give the same
    model: the features are standardised (centred, unit variance), sparse X made dense for it, unless
    it has more than DENSE_LIMIT entries: then it stays sparse and is only scaled (see SCALE_RULE)."""
    if not scale:
        return X, "as given (--no-scale)"
    if not sp.issparse(X):
        return X, f"standardised{where} (StandardScaler: centred, unit variance)"
    if X.shape[0] * X.shape[1] <= DENSE_LIMIT:
        return X.toarray(), f"standardised{where} (StandardScaler: centred, unit variance; the sparse data made dense)"
    return X, (f"scaled to unit variance{where}, not centred (StandardScaler(with_mean=False): sparse data of more "
               f"than {DENSE_LIMIT:,} entries stays sparse)")


def on_dense_blocks(method, X):
    """``method(X)`` for sparse X made dense a block of rows at a time (DENSE_LIMIT entries), not all
    at once: a model that centres the features cannot take sparse X."""
    rows = max(1, DENSE_LIMIT // max(1, X.shape[1]))
    return np.concatenate([method(X[i:i + rows].toarray()) for i in range(0, X.shape[0], rows)])


def scaled(model, X, scale):
    """``model``, or with ``scale`` a Pipeline that standardises the features first (StandardScaler;
    without centring for sparse X: prepare X with :func:`for_scaling`)."""
    if not scale:
        return model
    return make_pipeline(StandardScaler(with_mean=not sp.issparse(X)), model)


def final_step(model):
    """The estimator of a model: itself, or a Pipeline's last step."""
    return model.steps[-1][1] if isinstance(model, Pipeline) else model


def scale_option(default, text):
    return click.option("--scale/--no-scale", default=default, show_default=True, help=text)


# ---------------------------------------------------------------------- the task of a data set
TASKS = ("classification", "regression")


def task_option(fn):
    return click.option("--task", type=click.Choice(TASKS),
                        help="Read the labels as classes or as regression targets [default: the built-in data "
                             "set's task, else guessed from the labels].")(fn)


def data_task(spec, y, name, task=None):
    """(task, what, sure) of the labels ``y`` of data ``spec``: task 'classification' or
    'regression'; ``what`` says so in words ("diabetes is a regression data set"); ``sure`` is False
    when the task is only guessed from integer labels (--task overrides the guess). An explicit
    ``task`` the labels cannot have (regression on strings, classes of non-integer numbers) is a
    CliError."""
    y = np.asarray(y)
    numeric = y.dtype.kind in "biuf"
    integral = numeric and (y.dtype.kind != "f" or bool(np.all(np.isfinite(y)) and np.all(y == np.round(y))))
    if task == "regression" and not numeric:
        raise CliError(f"{name} has non-numeric labels: they cannot be regression targets")
    if task == "classification" and not integral:
        raise CliError(f"{name} has non-integer numeric labels: they cannot be classes")
    if task is not None:
        return task, f"--task {task}", True
    builtin = None if os.path.exists(spec) else _builtin_task(spec)
    if builtin is not None:
        return builtin, f"{name} is a {builtin} data set", True
    if not numeric:
        return "classification", f"{name} has non-numeric labels (classes)", True
    if not integral:
        return "regression", f"{name} has non-integer numeric labels (regression targets)", True
    n, n_distinct = y.size, len(np.unique(y))
    if (n > 20 and n_distinct > 0.5 * n) or (n_distinct > 50 and n_distinct > n / 5):
        return "regression", f"{name} looks like regression data ({n_distinct} distinct integer labels in {n} " \
                             "samples)", False
    return "classification", f"{name} looks like classification data ({n_distinct} distinct integer labels)", False


def _builtin_task(spec):
    """The task of a built-in data set name ('name' or 'name:n_samples'), or None."""
    entry = _BUILTIN.get(str(spec).partition(":")[0])
    return None if entry is None else entry[0]


# ---------------------------------------------------------------------- data, progress, sizes
def read_data(spec, label_column=None, n_features=None, *, need_labels=True):
    """load_data for a command: (X, y, name); labels required unless ``need_labels`` is False."""
    X, y, name = load_data(spec, label_column, n_features=n_features)
    if need_labels and y is None:
        raise CliError(f"{name} has no labels")
    return X, y, name


@contextlib.contextmanager
def progress(description):
    """A spinner with the elapsed time on stderr while the block runs (only on a terminal, so that
    logs and error output stay clean). Yields a callable returning the seconds elapsed so far."""
    t0 = time.perf_counter()
    elapsed = lambda: time.perf_counter() - t0  # noqa: E731
    if not err.is_terminal:
        yield elapsed
        return
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=err,
                  transient=True) as bar:
        bar.add_task(description, total=None)
        yield elapsed


def n_expansion_vectors(model):
    """The points a prediction evaluates the kernel at: expansion or support vectors."""
    model = getattr(model, "estimator_", model)  # a cross-validated model: the one it chose
    if hasattr(model, "expansion_vectors_"):
        return int(model.expansion_vectors_.shape[0])
    return int(len(model.support_))


def describe_data(X, y, name):
    shape = f"{X.shape[0]} samples x {X.shape[1]} features"
    return f"{name}: {shape}" + ("" if y is None else f", {len(np.unique(y))} classes")
