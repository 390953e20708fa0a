"""Dask integration of sparsekernel: fitting NSSVC and DC-SVM where the data lives, predicting on dask arrays.

Everything here needs the ``dask`` extra (``pip install "sparsekernel[dask]"``: dask[array] and
distributed); ``import sparsekernel`` never imports dask: the fits and predictions that receive a
dask array import it when they do (``sparsekernel._dask_rows``, ``sparsekernel._dask_predict``).
This subpackage is the public face of that work: thin calls of the estimators' own methods.

- ``NSSVC().fit(X, y)`` with X a dask array (rows in chunks, dense or CSR) fits NSSVC (linear, or
  a kernel whose columns of the working set each block keeps) on the workers that hold the blocks (:class:`DaskBlocks`): one round trip per Newton iteration, the
  same iterates as the in-memory fit bit for bit (:func:`fit_nssvc`; a distributed Client must be
  running).
- ``SVC(solver='dc').fit(X, y)`` and ``SVR(solver='dc').fit(X, y)`` with X a dask array (rows in
  chunks, dense or CSR) fit DC-SVM where the blocks live (:func:`fit_dc`; a distributed Client must
  be running): the cluster tree is that of the in-memory fit (its sample, at most 4096 rows, is
  clustered in the client; every block routes its own rows on its worker), each cluster's problem
  of a level is one task on a worker that assembles that cluster's rows from the blocks, and the
  whole problem, last, is solved on one worker. The model equals the in-memory ``solver='dc'`` fit
  (bit for bit with a numeric gamma; gamma='scale' is a blocked reduction); the client holds y,
  the row labels and the solutions (O(n)), the sample and the support vectors, never X;
  ``dc_workers_`` names the workers that solved the levels' clusters. The other solvers of SVC and
  SVR need X in memory (a ValueError).
- :func:`nssvm_gaussians`: NSSVM's Example 4.1 as dask arrays generated chunk by chunk on the
  workers (any m: 1e9 rows never pass through the client).
- :func:`predict`, :func:`decision_function`, :func:`predict_proba`, :func:`predict_log_proba` run a
  fitted estimator on a dask array (dense or scipy.sparse CSR chunks, chunked along rows) block by
  block and return a dask array; :func:`score` reduces per-block sums to a float. The compact model
  enters the task graph once, as one key that every block's task reads, so a cluster ships it to
  each worker once rather than with every block. The estimators' own methods take dask arrays too
  and call these (``model.predict(dask_X)``).
"""

from __future__ import annotations

EXTRA_HINT = 'pip install "sparsekernel[dask]"'

try:
    import dask  # noqa: F401
    import dask.array  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(f"sparsekernel.dask needs dask[array] (the 'dask' extra): {EXTRA_HINT}") from exc

import contextlib

from .._base import is_dask_array
from .._dask_predict import decision_function, predict, predict_log_proba, predict_proba, score
from .._dask_rows import DaskBlocks
from ._data import nssvm_gaussians


def _on(client):
    """The context a fit runs in: ``client`` made the current one (None: the current one as is)."""
    return contextlib.nullcontext() if client is None else client.as_current()


def fit_dc(estimator, X, y, sample_weight=None, client=None):
    """Fit SVC or SVR with solver='dc' on a dask array X where its row blocks live: what
    ``estimator.fit(X, y, sample_weight)`` does for a dask X (see ``SVC.fit``), on ``client``.

    The model equals the in-memory ``solver='dc'`` fit on X.compute(): the same cluster tree, the
    same problems solved from the same starts, on the same rows in the same order. gamma='scale' is
    a blocked reduction, equal to the in-memory X.var() up to the order of its sums (a numeric
    gamma gives the in-memory model bit for bit).

    Parameters
    ----------
    estimator : SVC or SVR
        With solver='dc' (kernel neither 'precomputed' nor callable); fitted in place and returned.
    X : dask.array.Array of shape (n_samples, n_features)
        Training rows in row chunks (dense or scipy.sparse CSR chunks; column chunks are merged).
    y : dask.array.Array or array-like of shape (n_samples,)
        Labels (SVC) or targets (SVR), brought into the client (O(n)).
    sample_weight : dask.array.Array or array-like of shape (n_samples,), default=None
    client : distributed.Client or None, default=None
        None: the current default client (a ValueError if there is none).

    Returns
    -------
    estimator
        Fitted, with ``dc_workers_``: the addresses of the workers that solved the clusters of the
        levels (the whole problem's solve, last, is on one worker as well).
    """
    if getattr(estimator, "solver", None) != "dc":
        raise ValueError(f"fit_dc fits solver='dc' only, got solver={getattr(estimator, 'solver', None)!r}")
    if not is_dask_array(X):
        raise TypeError(f"X must be a dask array, got {type(X).__name__}")
    with _on(client):
        return estimator.fit(X, y, sample_weight=sample_weight)


def fit_nssvc(model, X, y, client=None):
    """Fit NSSVC on a dask array where its blocks live: what ``model.fit(X, y)`` does for a dask X
    (see ``NSSVC.fit``), on ``client``. The iterates are those of the in-memory fit bit for bit
    (gamma='scale' as a blocked reduction: up to the order of its sums).

    Parameters
    ----------
    model : NSSVC
        The estimator (any kernel but 'precomputed'); it is fitted in place and returned.
    X : dask.array.Array of shape (m, n)
        Training rows in row chunks (dense or CSR chunks; column chunks are merged).
    y : dask.array.Array or array-like of shape (m,)
        The labels (gathered in the client: one byte per sample as class codes).
    client : distributed.Client or None, default=None
        The client to run on (None: the current default client; a ValueError if there is none).

    Returns
    -------
    model : NSSVC
        The fitted model, with ``round_trips_`` (the passes that waited for the workers) and
        ``round_trip_seconds_`` (the time the client waited in them; the rest of ``fit_time_`` is
        the setup: validation, class codes, blocks, and the Newton steps).
    """
    if not is_dask_array(X):
        raise TypeError(f"X must be a dask array, got {type(X).__name__}")
    with _on(client):
        return model.fit(X, y)


__all__ = ["fit_nssvc", "fit_dc", "DaskBlocks", "nssvm_gaussians", "predict", "decision_function", "predict_proba",
           "predict_log_proba", "score"]
