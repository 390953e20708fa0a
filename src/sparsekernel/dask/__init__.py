"""Dask integration of sparsekernel: fitting NSSVC and DC-SVM where the data lives, predicting on dask arrays.

Everything here needs the ``dask`` extra (``pip install "sparsekernel[dask]"``: dask[array] and
distributed); ``import sparsekernel`` never imports dask, and this subpackage is the only place that
does.

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

from ._data import nssvm_gaussians
from ._dc import fit_dc
from ._nssvc import DaskBlocks, fit_nssvc
from ._predict import decision_function, predict, predict_log_proba, predict_proba, score

__all__ = ["fit_nssvc", "fit_dc", "DaskBlocks", "nssvm_gaussians", "predict", "decision_function", "predict_proba", "predict_log_proba", "score"]
