"""``sparsekernel fit``, ``predict`` and ``info``: one model, its file, its predictions."""

from __future__ import annotations

import csv
import os
import sys

import click
import numpy as np
import scipy.sparse as sp
from sklearn.base import is_classifier, is_outlier_detector
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split

from .._base import fitted_expansion
from ..io import load_model, read_header, save_model
from ._common import (SCALE_RULE, CliError, build_model, data_task, describe_data, final_step, for_scaling,
                      model_options, n_expansion_vectors, on_dense_blocks, progress, read_data, scale_option, scaled,
                      split_model_params, task_option)

_LABEL_HELP = "CSV: the label column, by header name or index (default: the last column)."
_SCALE_HELP = ("Standardise the features inside the saved model (a StandardScaler fitted on the training data), "
               f"{SCALE_RULE}, so that predict applies it too. On by default, as kernel machines need features on "
               "comparable scales; --no-scale for features already scaled.")
_FORCE_HELP = "Replace the output file if it exists (else an error)."


def split(X, y, test_size, seed, classifier):
    """train_test_split, stratified for a classifier when every class has two samples; of X alone
    (X_train, X_test) when y is None."""
    stratify = None
    if classifier:
        _, counts = np.unique(y, return_counts=True)
        stratify = y if counts.min() >= 2 else None
    arrays = (X,) if y is None else (X, y)
    return train_test_split(*arrays, test_size=test_size, random_state=seed, stratify=stratify)


def check_output(path, force, what):
    """A CliError, before any work, unless ``path`` (-o, the ``what`` to write) can be written: not a
    directory, in an existing directory, not an existing file unless ``force``."""
    if os.path.isdir(path) or path.endswith(("/", os.sep)):
        raise CliError(f"{path} is a directory: -o names the {what}")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise CliError(f"cannot write {path}: no directory {parent}")
    if os.path.exists(path) and not force:
        raise CliError(f"{path} exists: give --force to replace it, or -o another file")


def _size(path):
    n = os.path.getsize(path)
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} kB" if n < 1024**2 else f"{n / 1024**2:.1f} MB"


def _print_key_values(rows):
    """Aligned 'key  value' lines on stdout (plain text: no padding, no wrapping)."""
    width = max(len(key) for key, _ in rows)
    for key, value in rows:
        click.echo(f"{key:<{width}}  {value}")


def _kernel_text(model):
    model = final_step(model)
    kernel = model.kernel
    if kernel in ("rbf", "poly", "sigmoid", "laplacian"):
        gamma = fitted_expansion(model).gamma  # (a cross-validated model: the one it chose)
        return f"{kernel}, gamma {gamma:.6g}" + ("" if isinstance(model.gamma, float) else f" ({model.gamma})")
    return kernel


def _check_task(model_name, classifier, data, y, name, task):
    """A CliError when DATA's labels are not what the model learns: regression targets for a
    classifier (also when only guessed from many distinct integer labels: --task classification
    overrides), classes for svr (when sure: a built-in classification set, non-numeric labels)."""
    found, what, sure = data_task(data, y, name, task)
    if classifier and found == "regression":
        hint = "" if sure else f", or --task classification to fit {model_name} anyway"
        raise CliError(f"{what}: use `fit svr`{hint}")
    if not classifier and found == "classification" and sure:
        raise CliError(f"{what}: use a classifier, e.g. `fit svc`")


def _outlier_rows(model, X, y, labelled, part):
    """The summary rows of an outlier detector (ocsvm) on the ``part`` ('training' or 'test') rows X:
    the fraction flagged as outliers and, when the data has class labels (``labelled``; the fit did
    not see them), the AUC of ``score_samples`` for telling the majority class (taken as the
    inliers) from the other classes."""
    flagged = model.predict(X) == -1
    rows = [(f"{part} outliers", f"{100.0 * flagged.mean():.1f} % of the {len(flagged)} {part} rows (predict = -1)")]
    if not labelled:
        return rows
    classes, counts = np.unique(y, return_counts=True)
    inlier = classes[np.argmax(counts)]
    is_inlier = y == inlier
    what = f"the majority class {inlier} ({is_inlier.sum()} rows) as inliers, the other {(~is_inlier).sum()} not"
    if is_inlier.all():
        return rows + [(f"{part} AUC", f"- (one class only: {what})")]
    auc = roc_auc_score(is_inlier, model.score_samples(X))
    rows.append((f"{part} AUC", f"{auc:.4f} of score_samples with {what}; flagged: "
                                f"{100.0 * flagged[is_inlier].mean():.1f} % of the inliers, "
                                f"{100.0 * flagged[~is_inlier].mean():.1f} % of the others"))
    return rows


@click.command()
@click.argument("model_name", metavar="MODEL")
@click.argument("data")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="The model file to write [default: MODEL.skm].")
@click.option("-f", "--force", is_flag=True, help=_FORCE_HELP)
@click.option("--label-column", help=_LABEL_HELP)
@click.option("--test-size", type=click.FloatRange(0.0, 1.0, max_open=True), default=0.0, show_default=True,
              help="Hold out this fraction of DATA and report the score on it.")
@scale_option(True, _SCALE_HELP)
@task_option
@model_options
def fit(model_name, data, output, force, label_column, test_size, scale, task, **options):
    """Fit MODEL (svc, nusvc, svr, nusvr, ocsvm, klr, sklr, klr-cv, sklr-cv, nssvc, slmc, skfd) on DATA and save it
    to a .skm file (never over an existing file without --force). The features are standardised
    inside the model unless --no-scale, CSV and svmlight data alike. A classifier refuses regression
    data and a regressor (svr, nusvr) classification data. ocsvm (outlier detection) fits on the
    rows alone, labels or not; it reports the fraction of rows flagged as outliers and, when DATA
    has class labels, the AUC of its scores for telling the majority class (the inliers) from the
    others."""
    params, seed = split_model_params(options)
    estimator = build_model(model_name, params, seed)
    detector = is_outlier_detector(estimator)
    X, y, name = read_data(data, label_column, need_labels=not detector)
    classifier = is_classifier(estimator)
    labelled = False  # an outlier detector's data with class labels (the AUC rows)
    if detector:
        labelled = y is not None and data_task(data, y, name, task)[0] == "classification"
    else:
        _check_task(model_name, classifier, data, y, name, task)
    output = output or f"{model_name}.skm"
    check_output(output, force, "model file")
    X, features = for_scaling(X, scale, " inside the model")
    model = scaled(estimator, X, scale)
    Xtr, ytr, Xte, yte = X, y, None, None
    if test_size > 0:
        if y is None:
            Xtr, Xte = split(X, None, test_size, seed, False)
        else:
            Xtr, Xte, ytr, yte = split(X, y, test_size, seed, classifier or labelled)
    with progress(f"fitting {model_name} on {name} ({Xtr.shape[0]} samples)") as elapsed:
        model.fit(Xtr, None if detector else ytr)
        seconds = elapsed()
    save_model(model, output)
    n_xv = n_expansion_vectors(estimator)
    rows = [("model", f"{model_name} ({type(estimator).__name__}), kernel {_kernel_text(estimator)}"),
            ("features", features),
            ("data", describe_data(X, y if classifier or labelled else None, name)),
            ("n_train", Xtr.shape[0])]
    if detector:
        rows.append(("nu", f"{estimator.nu:g} (at most about this fraction of the training rows is flagged)"))
        rows += _outlier_rows(model, Xtr, ytr, labelled, "training")
        if Xte is not None:
            rows += _outlier_rows(model, Xte, yte, labelled, "test")
    else:
        score = "accuracy" if classifier else "R^2"
        rows.append((f"training {score}", f"{model.score(Xtr, ytr):.4f}"))
        if Xte is not None:
            rows.append((f"test {score}", f"{model.score(Xte, yte):.4f} on {Xte.shape[0]} held-out samples"))
    rows += [("model size", f"{n_xv} expansion vectors ({100.0 * n_xv / Xtr.shape[0]:.1f} % of n_train)"),
             ("model file", f"{output} ({_size(output)})"),
             ("fit time", f"{seconds:.3f} s")]
    _print_key_values(rows)


@click.command()
@click.argument("model_file", metavar="MODEL.skm")
@click.argument("data")
@click.option("--proba", is_flag=True, help="Class probabilities (a header row of class names) instead of labels.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="CSV file to write [default: stdout].")
@click.option("-f", "--force", is_flag=True, help=_FORCE_HELP)
@click.option("--label-column", help=_LABEL_HELP + " A CSV with exactly the model's number of features "
                                                   "has no label column.")
def predict(model_file, data, proba, output, force, label_column):
    """Predict DATA with a saved model: one label per line (an outlier detector's: 1 for an inlier,
    -1 for an outlier), or probabilities with --proba; -o writes them to a file (never over an
    existing file without --force)."""
    if output is not None:
        check_output(output, force, "output file")
    model = load_model(model_file)
    if proba and not hasattr(model, "predict_proba"):
        raise CliError(f"{type(final_step(model)).__name__} models have no probabilities (klr and sklr have; "
                       "svc and nusvc only when fitted with -p probability=true)")
    X, y, name = read_data(data, label_column, n_features=model.n_features_in_, need_labels=False)
    if proba:
        rows = [[str(c) for c in model.classes_.tolist()]] + _apply(model.predict_proba, model, X).tolist()
    else:
        labels = _apply(model.predict, model, X)
        rows = [[v] for v in labels.tolist()]
        if y is not None and is_classifier(model):
            click.echo(f"accuracy {np.mean(labels == y):.4f} on the {len(y)} labelled samples of {name}", err=True)
        if is_outlier_detector(model):
            click.echo(f"outliers: {np.sum(labels == -1)} of the {len(labels)} samples of {name}", err=True)
    if output is None:
        csv.writer(sys.stdout, lineterminator="\n").writerows(rows)
        return
    with open(output, "w", newline="", encoding="utf-8") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)


def _apply(method, model, X):
    """``method(X)`` of ``model``; sparse X made dense (in blocks of rows) for a model that centres
    the features, as one fitted on dense data does."""
    return on_dense_blocks(method, X) if sp.issparse(X) and _centres(model) else method(X)


def _centres(model):
    """Whether a model's pipeline centres the features (a StandardScaler with_mean)."""
    return any(getattr(step, "with_mean", False) for _, step in getattr(model, "steps", [])[:-1])


@click.command()
@click.argument("model_file", metavar="MODEL.skm")
def info(model_file):
    """Describe a saved model: estimator, parameters, kernel, sizes, library version."""
    header = read_header(model_file)
    model = load_model(model_file)
    rows = [("estimator", header["estimator"]),
            ("saved by", f"sparsekernel {header.get('library_version', '?')} (model format "
                         f"{header['format_version']})"),
            ("kernel", _kernel_text(model)),
            ("features", _features_text(header)),
            ("n_features_in_", model.n_features_in_)]
    classes = getattr(model, "classes_", None)
    if classes is not None:
        shown = ", ".join(map(str, classes[:10].tolist())) + (", ..." if len(classes) > 10 else "")
        rows.append(("classes_", f"{len(classes)}: {shown}"))
    rows += [("expansion vectors", n_expansion_vectors(final_step(model))),
             ("file", f"{model_file} ({_size(model_file)}, {len(header['attributes'])} fitted attributes)"),
             ("params", ", ".join(f"{k}={v!r}" for k, v in header["params"].items()))]
    if header.get("dropped_params"):
        rows.append(("not stored", ", ".join(header["dropped_params"]) + " (defaults on load)"))
    _print_key_values(rows)


def _features_text(header):
    """How a saved model treats the features: as given, or standardised by its StandardScaler steps."""
    pre = header.get("pipeline", {}).get("preprocessing", [])
    if not pre:
        return "as given (no scaling in the model)"
    steps = f"pipeline steps {', '.join(header['pipeline']['steps'])}"
    if all(step["params"].get("with_mean", True) for step in pre):
        return f"standardised inside the model (StandardScaler: centred, unit variance; {steps})"
    return f"scaled to unit variance inside the model, not centred (StandardScaler(with_mean=False); {steps})"
