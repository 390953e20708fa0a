"""Export of fitted sparsekernel models: ONNX (through skl2onnx's converter registry) and skops.

Everything here needs the ``export`` extra (``pip install "sparsekernel[export]"``: skl2onnx,
onnxruntime, skops); the rest of the library imports without it.

- :func:`to_onnx` converts a fitted SVC, NuSVC, SVR, NuSVR, OneClassSVM, KernelLogisticRegression,
  SparseKernelLogisticRegression, NSSVC, SLMC or SparseKFD (also the reduced-set baselines of
  :mod:`sparsekernel.slmc`) to an ONNX graph of plain ONNX operators, in float64 by default, whose
  onnxruntime outputs equal the library's predictions.
- Importing this package registers the converters with skl2onnx (when skl2onnx is installed;
  :func:`register_converters` does it too, idempotently), so that plain
  ``skl2onnx.to_onnx(pipe, X)`` converts a pipeline holding one of these models, with no options:
  in float64 (X float64) a classifier's ``probabilities`` come as one float64 tensor, as from
  :func:`to_onnx` (ONNX's ZipMap operator takes float32 only, so skl2onnx's default ZipMap is left
  out), equal to the library's to 1e-9; in float32 they come through skl2onnx's usual ZipMap (a
  list of dicts) unless ``options={'zipmap': False}``.
- :func:`trusted_types` lists the library's types for ``skops.io.load(..., trusted=...)``;
  :func:`save_skops` / :func:`load_skops` are the two calls with that list filled in.
"""

from __future__ import annotations

import numpy as np

from ._extra import EXTRA_HINT, require  # noqa: F401  (EXTRA_HINT: the extra, named for users)
from . import skops  # (imports skops itself only when called)


def to_onnx(model, X, dtype=np.float64, **kwargs):
    """Convert a fitted sparsekernel estimator to an ONNX ModelProto.

    Parameters
    ----------
    model : fitted sparsekernel estimator
    X : array-like of shape (n_samples, n_features) or int
        A sample of the input (or the number of features).
    dtype : {np.float64, np.float32}, default=np.float64
        The graph's arithmetic (float64 reproduces the library's predictions to 1e-9).
    **kwargs
        Options of :func:`sparsekernel.export.onnx.to_onnx` (raw_scores, zipmap, ...).

    Returns
    -------
    onnx.ModelProto
    """
    return _onnx_module().to_onnx(model, X, dtype=dtype, **kwargs)


def register_converters():
    """Register the library's converters with skl2onnx (idempotent; importing
    :mod:`sparsekernel.export` already did it when skl2onnx is installed).

    See :func:`sparsekernel.export.onnx.register_converters`.

    Raises
    ------
    ImportError
        Without skl2onnx (the ``export`` extra).
    """
    return _onnx_module().register_converters()


def trusted_types():
    """The library's types to pass to ``skops.io.load(..., trusted=...)``.

    See :func:`sparsekernel.export.skops.trusted_types`.
    """
    return skops.trusted_types()


def save_skops(model, file):
    """Write ``model`` to ``file`` with skops.

    Parameters
    ----------
    model : fitted sparsekernel estimator (or a pipeline holding one)
    file : str or path-like
    """
    return skops.save_skops(model, file)


def load_skops(file, trusted=None):
    """Load a skops file written by :func:`save_skops`.

    Parameters
    ----------
    file : str or path-like
    trusted : list of str or None, default=None
        Types to trust beyond :func:`trusted_types` (skops refuses every other type).

    Returns
    -------
    The estimator.
    """
    return skops.load_skops(file, trusted=trusted)


def _onnx_module():
    """``export.onnx`` (an ImportError naming the extra without skl2onnx / onnx)."""
    require("skl2onnx", "onnx")
    return _onnx


# the converters registered on import when skl2onnx and onnx are there (skops alone is enough for
# the rest of this package); export.onnx imports them at its top, so it is imported only if they are
try:
    from . import onnx as _onnx
except ImportError:
    _onnx = None
else:
    _onnx.register_converters()

__all__ = ["to_onnx", "register_converters", "trusted_types", "save_skops", "load_skops"]
