"""Probability metrics that scikit-learn does not have: the expected calibration error.

One helper for the library (``sklr_path``), the command line (``sparsekernel compare``) and the
benchmarks, so that every table reports the same quantity.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["expected_calibration_error"]


def expected_calibration_error(y_true, y_prob, *, classes=None, n_bins=15):
    """Top-label expected calibration error (ECE): the confidence of the predicted class in
    ``n_bins`` equal-width bins of [0, 1], sum over the bins of |bin| / n * |accuracy(bin) - mean
    confidence(bin)|.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels.
    y_prob : array-like of shape (n_samples, n_classes) or (n_samples,)
        ``predict_proba`` (columns in the order of ``classes``), or for two classes the probability
        of the positive class (the larger of the two labels unless ``classes`` says otherwise).
    classes : array-like of shape (n_classes,) or None
        The labels of the columns (default: the sorted labels of ``y_true``; pass the model's
        ``classes_`` when a class may be missing from ``y_true``).
    n_bins : int, default=15
        Number of equal-width confidence bins (15 as in Guo et al. 2017).

    Returns
    -------
    float
        The ECE, in [0, 1]; NaN for no samples.
    """
    if not isinstance(n_bins, numbers.Integral) or isinstance(n_bins, bool) or n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer, got {n_bins!r}")
    y_true = np.asarray(y_true)
    P = np.asarray(y_prob, dtype=np.float64)
    classes = np.unique(y_true) if classes is None else np.asarray(classes)
    if P.ndim == 1:
        if len(classes) > 2:
            raise ValueError("a 1-d y_prob is the positive-class probability of a binary problem; got "
                             f"{len(classes)} classes")
        P = np.column_stack([1.0 - P, P])
    if P.ndim != 2 or P.shape[0] != len(y_true):
        raise ValueError(f"y_prob must have shape (n_samples, n_classes) or (n_samples,); got {np.shape(y_prob)} "
                         f"for {len(y_true)} labels")
    if P.shape[1] != max(2, len(classes)):
        raise ValueError(f"y_prob has {P.shape[1]} columns but there are {len(classes)} classes")
    if len(y_true) == 0:
        return float("nan")
    confidence = P.max(axis=1)
    correct = (classes[np.argmax(P, axis=1)] == y_true).astype(np.float64)
    bins = np.minimum((confidence * n_bins).astype(np.intp), n_bins - 1)
    gap = np.bincount(bins, correct, n_bins) - np.bincount(bins, confidence, n_bins)  # per bin: sum(acc - conf)
    return float(np.abs(gap).sum() / len(y_true))
