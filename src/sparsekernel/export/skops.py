"""skops persistence of sparsekernel models.

skops stores an object as its ``__getstate__`` and rebuilds it with ``__setstate__``, so the
estimators go through the same hooks as pickle: the view of the support vectors for the C++ core
(``_sv_core``, kept by a model after its first prediction) is left out on save and made again by
the loaded model's first prediction. Loading runs no pickle code; it only constructs the types the
caller trusts, which :func:`trusted_types` lists.
"""

from __future__ import annotations

import scipy.sparse as sp

from .._registry import ESTIMATORS
from ._extra import require


def trusted_types():
    """The library's types that a saved sparsekernel model contains, as skops names them.

    Pass the list to ``skops.io.load(file, trusted=trusted_types())``. It holds the public
    estimators, the reduced-set baselines and scipy's CSR matrix (a model fitted on sparse X keeps
    its support vectors and dual coefficients in one; skops stores it as arrays, not pickle);
    everything else in a model (numpy arrays and scalars, dicts, lists) is trusted by skops itself.

    Returns
    -------
    list of str
        Fully qualified type names ("sparsekernel.svm.SVC", ...).
    """
    types = tuple(e.cls for e in ESTIMATORS) + (sp.csr_matrix, sp.csr_array)  # (a fit on sparse X keeps CSR)
    return [f"{t.__module__}.{t.__qualname__}" for t in types]


def save_skops(model, file):
    """Write ``model`` to ``file`` (a path or a binary file object) with ``skops.io.dump``.

    Parameters
    ----------
    model : estimator
        A sparsekernel model, or a scikit-learn pipeline or search holding one.
    file : str, os.PathLike or file object
    """
    require("skops")
    import skops.io as sio

    sio.dump(model, file)


def load_skops(file, trusted=None):
    """Load a model written by :func:`save_skops` (or ``skops.io.dump``).

    Parameters
    ----------
    file : str, os.PathLike or file object
    trusted : list of str or None, default=None
        Types to trust besides :func:`trusted_types` (a pipeline's other steps, for instance).

    Returns
    -------
    estimator

    Raises
    ------
    skops.io.exceptions.UntrustedTypesFoundException
        When the file holds a type that is neither the library's nor in ``trusted`` (see
        ``skops.io.get_untrusted_types``).
    """
    require("skops")
    import skops.io as sio

    return sio.load(file, trusted=trusted_types() + list(trusted or []))
