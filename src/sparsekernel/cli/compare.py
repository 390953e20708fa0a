"""``sparsekernel compare``: classifiers side by side on one data set (a held-out split, a test
file or K-fold cross-validation): accuracy, log-loss and calibration error where the model has
probabilities, model size, fit and predict time; optionally the accuracy / model-size picture."""

from __future__ import annotations

import csv
import time
import warnings

import click
import numpy as np
from rich.table import Table
from sklearn.metrics import log_loss
from sklearn.model_selection import StratifiedKFold

from ..metrics import expected_calibration_error
from ._common import (CLASSIFIERS, CliError, build_model, flag_of, model_class, model_options, n_expansion_vectors,
                      out, progress, read_data, split_model_params)
from .model import split

DEFAULT_MODELS = "svc,klr,sklr,nssvc,slmc"
_METRICS = ("accuracy", "log_loss", "ece", "n_expansion", "fit_seconds", "predict_seconds")


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


def evaluate(model, Xtr, ytr, Xte, yte):
    """Fit on the training part and measure on the test part; returns a dict of _METRICS."""
    t0 = time.perf_counter()
    model.fit(Xtr, ytr)
    fit_seconds = time.perf_counter() - t0
    pred, predict_seconds = _timed_predict(model, Xte)
    row = {"accuracy": float(np.mean(pred == yte)), "log_loss": np.nan, "ece": np.nan,
           "n_expansion": n_expansion_vectors(model), "fit_seconds": fit_seconds, "predict_seconds": predict_seconds}
    if hasattr(model, "predict_proba"):
        P = model.predict_proba(Xte)
        row["log_loss"] = float(log_loss(yte, P, labels=model.classes_))
        row["ece"] = expected_calibration_error(yte, P, classes=model.classes_, n_bins=10)
    return row


def _splits(X, y, test, cv, test_size, seed):
    """The (train, test) pairs: the test file, K stratified folds, or one held-out split."""
    if test is not None:
        return [(X, y, *test)]
    if cv is not None:
        folds = StratifiedKFold(cv, shuffle=True, random_state=seed)
        try:
            return [(X[tr], y[tr], X[te], y[te]) for tr, te in folds.split(np.zeros(len(y)), y)]
        except ValueError as e:
            raise CliError(f"--cv {cv}: {e}") from e
    Xtr, Xte, ytr, yte = split(X, y, test_size, seed, True)
    return [(Xtr, ytr, Xte, yte)]


def _fmt(value, spec):
    return "-" if value is None or np.isnan(value) else format(value, spec)


def _table(results, title, cv):
    table = Table(title=title)
    for name in ("model", "accuracy", "log-loss", "ECE", "XVs", "fit s", "predict s"):
        table.add_column(name, justify="left" if name == "model" else "right")
    for name, r in results.items():
        acc = _fmt(r["accuracy"], ".4f") + (f" ± {r['accuracy_std']:.4f}" if cv else "")
        table.add_row(name, acc, _fmt(r["log_loss"], ".4f"), _fmt(r["ece"], ".4f"), _fmt(r["n_expansion"], ".0f"),
                      _fmt(r["fit_seconds"], ".3f"), _fmt(r["predict_seconds"], ".4f"))
    return table


def _write_csv(path, results):
    columns = ["model", "accuracy", "accuracy_std", *_METRICS[1:]]
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(columns)
        for name, r in results.items():
            writer.writerow([name] + [repr(float(r[c])) for c in columns[1:]])


def _matplotlib_figure():
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise CliError("--plot needs matplotlib (pip install matplotlib)") from None
    return Figure(figsize=(6, 4), layout="constrained")


def plot_frontier(results, path, title):
    """Accuracy against the number of expansion vectors, one labelled point per model (the
    library's plotting.plot_frontier)."""
    from ..plotting import plot_frontier as draw

    fig = _matplotlib_figure()
    records = [{"model": name, "expansion vectors (kernel evaluations per prediction)": max(r["n_expansion"], 1),
                "accuracy": r["accuracy"]} for name, r in results.items()]
    ax = draw(records, ax=fig.subplots(), x="expansion vectors (kernel evaluations per prediction)", y="accuracy",
              label_by="model", annotate="model", logx=True)
    ax.set_title(title)
    fig.savefig(path)


@click.command()
@click.argument("data")
@click.option("--test", "test_data", help="Test data (else a held-out split of DATA, or --cv).")
@click.option("--cv", type=click.IntRange(2), help="K-fold stratified cross-validation on DATA.")
@click.option("--test-size", type=click.FloatRange(0.0, 1.0, min_open=True, max_open=True), default=0.25,
              show_default=True, help="Held-out fraction of DATA (without --test or --cv).")
@click.option("--models", default=DEFAULT_MODELS, show_default=True,
              help="Comma-separated classifiers: " + ", ".join(CLASSIFIERS) + ".")
@click.option("--plot", type=click.Path(dir_okay=False), help="Draw accuracy against model size to this image.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Also write the results to this CSV file.")
@click.option("--label-column", help="CSV: the label column, by header name or index (default: the last column).")
@model_options
def compare(data, test_data, cv, test_size, models, plot, output, label_column, **options):
    """Compare classifiers on DATA: accuracy, log-loss, expected calibration error (ECE), expansion
    vectors (XVs), fit and predict time. Model options apply to the models that have them."""
    params, seed = split_model_params(options)
    if test_data is not None and cv is not None:
        raise click.UsageError("give --test or --cv, not both")
    names = [m.strip() for m in models.split(",") if m.strip()]
    if not names:
        raise click.UsageError("--models is empty")
    for name in names:
        model_class(name)  # unknown names fail here
        if name not in CLASSIFIERS:
            raise CliError(f"compare ranks classifiers; {name} is a regressor (use fit and predict)")
    unused = [p for p in params if not any(p in model_class(n)().get_params() for n in names)]
    if unused:
        raise CliError(f"{', '.join(map(flag_of, unused))} applies to none of the models {', '.join(names)}")
    if plot is not None:
        _matplotlib_figure()  # fail before the fits when matplotlib is missing
    X, y, name = read_data(data, label_column)
    test = None
    if test_data is not None:
        Xte, yte, _ = read_data(test_data, label_column, n_features=X.shape[1])
        test = (Xte, yte)
    splits = _splits(X, y, test, cv, test_size, seed)
    how = f"{cv}-fold CV" if cv else f"{splits[0][0].shape[0]} train / {splits[0][2].shape[0]} test"
    title = f"{name}: {how}, {X.shape[1]} features, {len(np.unique(y))} classes"
    results = {}
    for model_name in names:
        rows = []
        with progress(f"{model_name} on {name}"), warnings.catch_warnings(record=True) as caught:
            for Xtr, ytr, Xte, yte in splits:
                rows.append(evaluate(build_model(model_name, params, seed, strict=False), Xtr, ytr, Xte, yte))
        for w in {str(w.message) for w in caught}:
            click.echo(f"sparsekernel: warning ({model_name}): {' '.join(w.split())}", err=True)
        results[model_name] = {k: float(np.mean([r[k] for r in rows])) for k in _METRICS}
        results[model_name]["accuracy_std"] = float(np.std([r["accuracy"] for r in rows]))
    out.print(_table(results, title, cv))
    if output is not None:
        _write_csv(output, results)
    if plot is not None:
        plot_frontier(results, plot, title)
        click.echo(f"frontier plot written to {plot}", err=True)
