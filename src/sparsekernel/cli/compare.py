"""``sparsekernel compare``: models side by side on one data set (a held-out split, a test file or
K-fold cross-validation). Classification data ranks the classifiers: accuracy, log-loss and
calibration error where the model has probabilities, model size, fit and predict time; regression
data ranks the regressors (sparsekernel's SVR against scikit-learn's): R^2, RMSE, model size, fit
and predict time. Optionally the score / model-size picture."""

from __future__ import annotations

import csv
import time
import warnings
from typing import NamedTuple

import click
import numpy as np
import scipy.sparse as sp
from rich.table import Table
from sklearn.metrics import log_loss, mean_squared_error, r2_score
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.svm import SVC as SklearnSVC, SVR as SklearnSVR

from ..metrics import expected_calibration_error
from ..plotting import plot_frontier as draw
from ._common import (MODELS, SCALE_RULE, CliError, build_model, data_task, final_step, flag_of, for_scaling, model_options,
                      n_expansion_vectors, one_line, out, progress, read_data, scale_option, scaled, split_model_params,
                      task_option)
from .model import split


class Entry(NamedTuple):
    """One model of ``compare``."""

    task: str  # 'classification' or 'regression': the data it is compared on
    cls: type  # the estimator class
    default: bool  # in the default --models of its task
    text: str  # for --help
    params: dict = {}  # parameters of its own; the options given override them


def _ours(name):
    """The class of the library's estimator the command line names ``name`` (the registry's)."""
    return MODELS[name][0]


# compare's models, one entry each: which are compared by default and with what parameters of
# their own (the library's classes from the registry, scikit-learn's for reference)
COMPARE_MODELS = {
    "svc": Entry("classification", _ours("svc"), True, "C-support vector classifier"),
    "nusvc": Entry("classification", _ours("nusvc"), False, "nu-support vector classifier (--nu)"),
    "klr-cv": Entry("classification", _ours("klr-cv"), True,
                    "kernel logistic regression, C by cross-validated log-loss"),
    "sklr-cv": Entry("classification", _ours("sklr-cv"), True,
                     "sparse kernel logistic regression, the smallest model within 5 % of the best log-loss"),
    "klr": Entry("classification", _ours("klr"), False, "kernel logistic regression (one C)"),
    "sklr": Entry("classification", _ours("sklr"), False, "sparse kernel logistic regression (one C)"),
    # the others' kernel (rbf unless --kernel), not NSSVC's linear default
    "nssvc": Entry("classification", _ours("nssvc"), True, "Newton sparse SVM", {"kernel": "rbf"}),
    "slmc": Entry("classification", _ours("slmc"), True, "sparse large margin classifier"),
    "skfd": Entry("classification", _ours("skfd"), False, "sparse kernel Fisher discriminant"),
    "sklearn-svc": Entry("classification", SklearnSVC, False, "scikit-learn's SVC (libsvm), for reference"),
    "svr": Entry("regression", _ours("svr"), True, "epsilon-support vector regression"),
    "nusvr": Entry("regression", _ours("nusvr"), False, "nu-support vector regression (--nu)"),
    "sklearn-svr": Entry("regression", SklearnSVR, True, "scikit-learn's SVR (libsvm), for reference"),
}


def _names(task, default_only=False):
    return [n for n, e in COMPARE_MODELS.items() if e.task == task and (e.default or not default_only)]


# per task: (the main score, a column per metric: (key, table heading, format))
_COLUMNS = {
    "classification": ("accuracy", [("accuracy", "accuracy", ".4f"), ("log_loss", "log-loss", ".4f"),
                                    ("ece", "ECE", ".4f"), ("n_expansion", "XVs", ".0f"),
                                    ("fit_seconds", "fit s", ".3f"), ("predict_seconds", "predict s", ".4f")]),
    "regression": ("r2", [("r2", "R^2", ".4f"), ("rmse", "RMSE", ".4g"), ("n_expansion", "XVs", ".0f"),
                          ("fit_seconds", "fit s", ".3f"), ("predict_seconds", "predict s", ".4f")]),
}


def _timed_predict(model, X):
    """(predictions, seconds): the fastest of up to three calls (one when a call takes 0.2 s or more)."""
    best, pred = np.inf, None
    for _ in range(3):
        t0 = time.perf_counter()
        pred = model.predict(X)
        best = min(best, time.perf_counter() - t0)
        if best >= 0.2:
            break
    return pred, best


def evaluate(model, Xtr, ytr, Xte, yte, task="classification"):
    """Fit on the training part and measure on the test part; returns a dict of the task's metrics."""
    t0 = time.perf_counter()
    model.fit(Xtr, ytr)
    fit_seconds = time.perf_counter() - t0
    pred, predict_seconds = _timed_predict(model, Xte)
    row = {"n_expansion": n_expansion_vectors(final_step(model)), "fit_seconds": fit_seconds,
           "predict_seconds": predict_seconds}
    if task == "regression":
        row.update(r2=float(r2_score(yte, pred)), rmse=float(np.sqrt(mean_squared_error(yte, pred))))
        return row
    row.update(accuracy=float(np.mean(pred == yte)), log_loss=np.nan, ece=np.nan)
    if hasattr(model, "predict_proba"):
        P = model.predict_proba(Xte)
        row["log_loss"] = float(log_loss(yte, P, labels=model.classes_))
        row["ece"] = expected_calibration_error(yte, P, classes=model.classes_, n_bins=10)
    return row


def _splits(X, y, test, cv, test_size, seed, classification):
    """The (train, test) pairs: the test file, K folds (stratified for classes), or one held-out split."""
    if test is not None:
        return [(X, y, *test)]
    if cv is not None:
        folds = (StratifiedKFold if classification else KFold)(cv, shuffle=True, random_state=seed)
        try:
            return [(X[tr], y[tr], X[te], y[te]) for tr, te in folds.split(np.zeros(len(y)), y)]
        except ValueError as e:
            raise CliError(f"--cv {cv}: {e}") from e
    Xtr, Xte, ytr, yte = split(X, y, test_size, seed, classification)
    return [(Xtr, ytr, Xte, yte)]


def _fmt(value, spec):
    return "-" if value is None or np.isnan(value) else format(value, spec)


def _table(results, title, caption, cv, task):
    main, columns = _COLUMNS[task]
    table = Table(title=title, caption=caption)
    table.add_column("model", justify="left")
    for _, heading, _ in columns:
        table.add_column(heading, justify="right")
    for name, r in results.items():
        cells = [_fmt(r[key], spec) + (f" ± {r[main + '_std']:.4f}" if cv and key == main else "")
                 for key, _, spec in columns]
        table.add_row(name, *cells)
    return table


def _write_csv(path, results, task):
    main, columns = _COLUMNS[task]
    keys = [main, main + "_std"] + [key for key, _, _ in columns if key != main]
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(["model", *keys])
        for name, r in results.items():
            writer.writerow([name] + [repr(float(r[k])) for k in keys])


def _matplotlib_figure():
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise CliError("--plot needs matplotlib (pip install matplotlib)") from None
    return Figure(figsize=(6, 4), layout="constrained")


def plot_frontier(results, path, title, score="accuracy"):
    """The score against the number of expansion vectors, one labelled point per model (the
    library's plotting.plot_frontier)."""
    fig = _matplotlib_figure()
    label = {"r2": "R^2"}.get(score, score)
    records = [{"model": name, "expansion vectors (kernel evaluations per prediction)": max(r["n_expansion"], 1),
                label: r[score]} for name, r in results.items()]
    ax = draw(records, ax=fig.subplots(), x="expansion vectors (kernel evaluations per prediction)", y=label,
              label_by="model", annotate="model", logx=True)
    ax.set_title(title)
    fig.savefig(path)


def _model_names(models, task, what, sure):
    """The --models list, checked: known names, all of the data's task."""
    if models is None:
        return _names(task, default_only=True)
    names = [m.strip() for m in models.split(",") if m.strip()]
    wrong = [n for n in names if COMPARE_MODELS[n].task != task]
    if wrong:
        kind = "regressor" if task == "classification" else "classifier"
        other = "classification" if task == "regression" else "regression"
        verb = "is a" if len(wrong) == 1 else "are"
        hint = "" if sure else f", or --task {other}"
        raise CliError(f"{what}: {', '.join(wrong)} {verb} {kind}{'s' if len(wrong) > 1 else ''} (compare "
                       f"{task} models: {', '.join(_names(task))}{hint})")
    return names


def _epilog():
    lines = [f"  {name:<12} {e.task}{', default' if e.default else ''}: {e.text}" for name, e in COMPARE_MODELS.items()]
    return "\b\nModels:\n" + "\n".join(lines)


def _models_help():
    return ("Comma-separated models of the data's task. Classification: " + ", ".join(_names("classification"))
            + " [default: " + ",".join(_names("classification", True)) + "]. Regression: "
            + ", ".join(_names("regression")) + " [default: " + ",".join(_names("regression", True)) + "].")


@click.command(epilog=_epilog())
@click.argument("data")
@click.option("--test", "test_data", help="Test data (else a held-out split of DATA, or --cv).")
@click.option("--cv", type=click.IntRange(2), help="K-fold cross-validation on DATA (stratified for classes).")
@click.option("--test-size", type=click.FloatRange(0.0, 1.0, min_open=True, max_open=True), default=0.25,
              show_default=True, help="Held-out fraction of DATA (without --test or --cv).")
@click.option("--models", help=_models_help())
@scale_option(True, f"Standardise the features (a StandardScaler fitted on each training part) before every model, "
                    f"{SCALE_RULE}.")
@task_option
@click.option("--plot", type=click.Path(dir_okay=False), help="Draw the score against model size to this image.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Also write the results to this CSV file.")
@click.option("--label-column", help="CSV: the label column, by header name or index (default: the last column).")
@model_options
def compare(data, test_data, cv, test_size, models, scale, task, plot, output, label_column, **options):
    """Compare models on DATA. Classification data: the classifiers' accuracy, log-loss, expected
    calibration error (ECE), expansion vectors (XVs), fit and predict time. Regression data (e.g.
    diabetes): the regressors' R^2, RMSE, XVs and times, sparsekernel's SVR against scikit-learn's.
    Model options apply to the models that have them; every model uses the same kernel (rbf unless
    --kernel)."""
    params, seed = split_model_params(options)
    if test_data is not None and cv is not None:
        raise click.UsageError("give --test or --cv, not both")
    if models is not None:  # unknown names fail before the data is read
        given = [m.strip() for m in models.split(",") if m.strip()]
        if not given:
            raise click.UsageError("--models is empty")
        for name in given:
            if name not in COMPARE_MODELS:
                raise CliError(f"unknown model {name!r} (choose from {', '.join(COMPARE_MODELS)})")
    if plot is not None:
        _matplotlib_figure()  # fail before the fits when matplotlib is missing
    X, y, name = read_data(data, label_column)
    task, what, sure = data_task(data, y, name, task)
    names = _model_names(models, task, what, sure)
    unused = [p for p in params if not any(p in COMPARE_MODELS[n].cls().get_params() for n in names)]
    if unused:
        raise CliError(f"{', '.join(map(flag_of, unused))} applies to none of the models {', '.join(names)}")
    X, features = for_scaling(X, scale)
    test = None
    if test_data is not None:
        Xte, yte, _ = read_data(test_data, label_column, n_features=X.shape[1])
        if sp.issparse(Xte) and not sp.issparse(X):
            Xte = Xte.toarray()  # the models are fitted on dense data (centred when scaled)
        test = (Xte, yte)
    classification = task == "classification"
    splits = _splits(X, y, test, cv, test_size, seed, classification)
    how = f"{cv}-fold CV" if cv else f"{splits[0][0].shape[0]} train / {splits[0][2].shape[0]} test"
    labels = f"{len(np.unique(y))} classes" if classification else "regression"
    title = f"{name}: {how}, {X.shape[1]} features, {labels}"
    caption = f"features {features}"
    results = {}
    main = _COLUMNS[task][0]
    for model_name in names:
        entry, rows = COMPARE_MODELS[model_name], []
        with progress(f"{model_name} on {name}"), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for Xtr, ytr, Xte, yte in splits:
                model = build_model(model_name, params, seed, strict=False, cls=entry.cls, defaults=entry.params)
                rows.append(evaluate(scaled(model, Xtr, scale), Xtr, ytr, Xte, yte, task))
        for text in dict.fromkeys(one_line(w.message, limit=1000) for w in caught):
            click.echo(f"sparsekernel: warning ({model_name}): {text}", err=True)
        results[model_name] = {k: float(np.mean([r[k] for r in rows])) for k in rows[0]}
        results[model_name][main + "_std"] = float(np.std([r[main] for r in rows]))
    out.print(_table(results, title, caption, cv, task))
    if output is not None:
        _write_csv(output, results, task)
    if plot is not None:
        plot_frontier(results, plot, title, score=main)
        click.echo(f"frontier plot written to {plot}", err=True)
