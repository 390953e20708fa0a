"""Dask integration of sparsekernel.

Everything here needs the ``dask`` extra (``pip install "sparsekernel[dask]"``: dask[array] and
distributed); ``import sparsekernel`` never imports dask, and this subpackage is the only place that
does.

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

from ._predict import decision_function, predict, predict_log_proba, predict_proba, score

__all__ = ["predict", "decision_function", "predict_proba", "predict_log_proba", "score"]
