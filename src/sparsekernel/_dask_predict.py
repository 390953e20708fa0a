"""Block-wise prediction of fitted estimators on dask arrays.

Every method runs the estimator's own in-memory method on each row block of X (a numpy array or a
scipy.sparse CSR matrix): a block's output is exactly the estimator's output on those rows, and no
output mixes rows. For dense X with a named kernel (the fused C++ pass, which sums every row alike
wherever it sits) that is also the whole array's result bit for bit; the routes that finish with a
BLAS product (sparse X, precomputed and callable kernels) can differ from it in the last bit or two
of a block's last rows, where OpenBLAS sums the rows left over from its groups of four in another
order, as they do in memory for X[:70] against X.

The model enters the graph once, as ``dask.delayed(model, pure=True)``: one key whose value every
block's task reads (passed as a plain argument, map_blocks would embed the model in each task, and
a cluster would serialise it with every block). Its token is the model's content, so predicting
twice with an unchanged model reuses the same key.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import is_regressor
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.utils.validation import check_is_fitted

# dask is the ``dask`` extra: imported inside the functions (``import sparsekernel`` never imports it)


def _check_input(model, X, method):
    """X as a dask array with one chunk along its columns, after the checks that need no compute:
    a fitted model that has ``method``, 2-D X with the model's number of features."""
    import dask.array as da

    check_is_fitted(model)
    getattr(model, method)  # AttributeError as the model's own (SVR.decision_function, probability=False)
    if not isinstance(X, da.Array):
        raise TypeError(f"X must be a dask array, got {type(X).__name__}")
    if X.ndim != 2:
        raise ValueError(f"Expected a 2-D dask array (n_samples, n_features), got {X.ndim} dimension(s)")
    if math.isnan(X.shape[1]):
        raise ValueError("X has an unknown number of columns; compute them first (X.compute_chunk_sizes())")
    n_features = getattr(model, "n_features_in_", None)  # (none for a callable kernel: anything it accepts)
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(f"X has {X.shape[1]} features, but {type(model).__name__} is expecting {n_features} "
                         "features as input.")
    return X.rechunk({1: -1}) if X.numblocks[1] > 1 else X


def _probe(model, method, X):
    """The method's output on one row of zeros like X's blocks (dense or CSR): the dtype and trailing
    shape of the result, straight from the estimator (decision_function is (n,) for two classes,
    (n, n_classes) or SVC's (n, n_pairs) otherwise; predict has the dtype of classes_)."""
    if sp.issparse(getattr(X, "_meta", None)):
        row = sp.csr_matrix((1, X.shape[1]), dtype=X.dtype)
    else:
        row = np.zeros((1, X.shape[1]), dtype=X.dtype)
    return np.asarray(getattr(model, method)(row))


def _apply(block, model, method, empty):
    """The task of one block: the estimator's method on it (``empty`` for a block without rows,
    which the estimators' validation rejects)."""
    if block.shape[0] == 0:
        return empty
    return getattr(model, method)(block)


def _blockwise(model, X, method):
    """``model.<method>`` over the row blocks of X, as a dask array with one block per row block."""
    import dask

    X = _check_input(model, X, method)
    empty = _probe(model, method, X)[:0]
    shipped = dask.delayed(model, pure=True)  # one graph key for the model, read by every block
    if empty.ndim == 1:
        return X.map_blocks(_apply, shipped, method, empty, drop_axis=1, meta=empty, token=method)
    return X.map_blocks(_apply, shipped, method, empty, chunks=(X.chunks[0],) + tuple((d,) for d in empty.shape[1:]),
                        meta=empty, token=method)


def predict(model, X):
    """Predictions of a fitted estimator on a dask array, block by block.

    Parameters
    ----------
    model : fitted sparsekernel estimator
        SVC, SVR, KernelLogisticRegression, SparseKernelLogisticRegression, NSSVC, SLMC, SparseKFD
        (or another estimator of the library).
    X : dask.array.Array of shape (n_samples, n_features)
        Chunks of numpy arrays or scipy.sparse CSR matrices; chunked along rows (column chunks are
        joined first).

    Returns
    -------
    dask.array.Array of shape (n_samples,)
        Labels (the dtype of ``classes_``) or, for SVR, float64 values; one chunk per row chunk of X.

    Raises
    ------
    NotFittedError
        For an unfitted model.
    ValueError
        When X is not 2-D or has another number of columns than the model was fitted on (checked
        before anything is computed).
    """
    return _blockwise(model, X, "predict")


def decision_function(model, X):
    """Decision values of a fitted classifier on a dask array, block by block.

    Parameters
    ----------
    model : fitted sparsekernel classifier
    X : dask.array.Array of shape (n_samples, n_features)
        As :func:`predict`.

    Returns
    -------
    dask.array.Array
        The shape of ``model.decision_function``: (n_samples,) for two classes, (n_samples, k)
        otherwise (k = n_classes, or the number of pairs for SVC with decision_function_shape='ovo').
    """
    return _blockwise(model, X, "decision_function")


def predict_proba(model, X):
    """Class probabilities of a fitted classifier on a dask array, block by block.

    Parameters
    ----------
    model : fitted sparsekernel classifier with ``predict_proba``
    X : dask.array.Array of shape (n_samples, n_features)
        As :func:`predict`.

    Returns
    -------
    dask.array.Array of shape (n_samples, n_classes)
    """
    return _blockwise(model, X, "predict_proba")


def predict_log_proba(model, X):
    """Log class probabilities of a fitted classifier on a dask array, block by block.

    Parameters
    ----------
    model : fitted sparsekernel classifier with ``predict_log_proba``
    X : dask.array.Array of shape (n_samples, n_features)
        As :func:`predict`.

    Returns
    -------
    dask.array.Array of shape (n_samples, n_classes)
    """
    return _blockwise(model, X, "predict_log_proba")


def _along(v, pred, name):
    """y or sample_weight as a 1-D dask array with the row chunks of the predictions."""
    import dask.array as da

    if v is None:
        return None
    v = v if isinstance(v, da.Array) else np.asarray(v)
    if v.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {v.shape}")
    n, m = pred.shape[0], v.shape[0]
    if not (math.isnan(n) or math.isnan(m)) and n != m:
        raise ValueError(f"Found input variables with inconsistent numbers of samples: [{n}, {m}]")
    if not isinstance(v, da.Array):
        return da.from_array(v, chunks=pred.chunks)
    return v.rechunk(pred.chunks) if v.chunks != pred.chunks and not math.isnan(n) else v


def score(model, X, y, sample_weight=None):
    """The estimator's score on a dask array: accuracy for a classifier, R^2 for SVR.

    Computed from per-block sums (correct predictions, squared residuals) reduced on the cluster:
    neither X nor the predictions are gathered to the client.

    Parameters
    ----------
    model : fitted sparsekernel estimator
    X : dask.array.Array of shape (n_samples, n_features)
        As :func:`predict`.
    y : array-like or dask.array.Array of shape (n_samples,)
        True labels or targets.
    sample_weight : array-like or dask.array.Array of shape (n_samples,), default=None

    Returns
    -------
    float
        As ``model.score`` on the same data in memory (accuracy exactly when unweighted, as its count
        is an integer; sums of floats are added in another order, so R^2 and a weighted accuracy can
        differ in the last bits).
    """
    import dask
    import dask.array as da

    pred = predict(model, X)
    y, w = _along(y, pred, "y"), _along(sample_weight, pred, "sample_weight")
    if not is_regressor(model):
        correct = pred == y
        if w is None:  # an integer count over n, in float64: exactly scikit-learn's mean of booleans
            return float(correct.mean().compute())
        num, den = dask.compute((w * correct).sum(), w.sum())
        return float(num / den)
    # R^2 as scikit-learn's r2_score: 1 - sum w (y - f)^2 / sum w (y - mean_w y)^2, 1.0 or 0.0 when
    # y is constant (a perfect or an imperfect fit)
    if not math.isnan(pred.shape[0]) and pred.shape[0] < 2:
        warnings.warn("R^2 score is not well-defined with less than two samples.", UndefinedMetricWarning)
        return float("nan")
    y = y.astype(np.float64)
    w = da.ones_like(y) if w is None else w.astype(np.float64)
    y_mean = (w * y).sum() / w.sum()
    ss_res, ss_tot = dask.compute((w * (y - pred) ** 2).sum(), (w * (y - y_mean) ** 2).sum())
    if ss_res == 0:
        return 1.0
    return float(1.0 - ss_res / ss_tot) if ss_tot != 0 else 0.0
