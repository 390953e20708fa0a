"""Model files: a compact, versioned ``.skm`` format for the fitted estimators.

A ``.skm`` file is a compressed npz archive (``numpy.savez_compressed``) read back with
``allow_pickle=False``: it holds plain numeric or string arrays and one JSON header, never a
pickle, so a file from an untrusted source can be loaded without running its code. The header
carries the format version, the library version, the estimator's class name, its parameters
(those that are JSON values; the others take their defaults on load), the kernel spec and a list
of the stored fitted attributes; the arrays are the estimator's fitted state (expansion vectors
dense or as CSR parts, coefficients, intercepts, classes, the gamma actually used, ...), so the
loaded estimator predicts bit for bit as the saved one.

The stored attributes are those of the estimator's pickled state (``__getstate__``) that are
arrays, sparse matrices, scalars, strings, tuples of scalars or lists of arrays; anything else
(e.g. the per-problem ``solver_stats_`` dicts) is left out and named in the header's ``skipped``.
The estimator is rebuilt by its constructor and ``__setstate__`` (its view for the C++ core is made
by its first prediction).

A Pipeline of StandardScaler steps and one of the estimators (the features standardised inside
the model) is stored as its last step plus the header's ``pipeline`` (step names, each scaler's
parameters and fitted attributes), in format version 2, so that a reader of format 1 refuses it
rather than predicting on unscaled features; a bare estimator's file stays format 1.
"""

from __future__ import annotations

import json
import keyword
import os
import tempfile
import warnings
import zipfile
import zlib

import numpy as np
import scipy.sparse as sp
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.validation import check_is_fitted

from ._base import fitted_expansion
from ._registry import entries
from ._version import __version__

__all__ = ["save_model", "load_model", "read_header", "ModelVersionWarning", "FORMAT_VERSION", "SUPPORTED_ESTIMATORS"]

FORMAT_NAME = "sparsekernel-model"
FORMAT_VERSION = 2  # the newest format this version reads; 2 added Pipelines (bare estimators are written as 1)
SUPPORTED_ESTIMATORS = {e.name: e.cls for e in entries(skm=True, chooses=False)}
_CHOOSERS = tuple(e.cls for e in entries(skm=True, chooses=True))  # saved as the model they chose

_HEADER_KEY = "__header__"
_JSON_SCALARS = (bool, int, float, str, type(None))


class ModelVersionWarning(UserWarning):
    """A model file written by another sparsekernel version (same format) was loaded."""


def _library_version():
    return __version__


# ---------------------------------------------------------------------- encoding
def _json_param(value):
    """A parameter as a JSON scalar, or None-with-False when it is not one (dropped on save)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, _JSON_SCALARS) and not (isinstance(value, float) and np.isnan(value)):
        return value, True
    return None, False


def _encode(name, value, arrays, prefix="attr"):
    """Put ``value`` into ``arrays`` (npz members) and return its header entry, or None to skip."""
    key = f"{prefix}/{name}"
    if sp.issparse(value):
        csr = value.tocsr()
        arrays[key + "/data"] = csr.data
        arrays[key + "/indices"] = csr.indices
        arrays[key + "/indptr"] = csr.indptr
        return {"kind": "sparse", "format": value.format, "array": isinstance(value, sp.sparray),
                "shape": list(csr.shape)}
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "O":
            if not all(isinstance(v, str) for v in value.ravel()):
                return None
            arrays[key] = value.astype(str)
            return {"kind": "str_object"}
        arrays[key] = value
        return {"kind": "array"}
    if isinstance(value, np.generic):
        arrays[key] = np.asarray(value)
        return {"kind": "scalar"}
    if isinstance(value, _JSON_SCALARS):
        return {"kind": "json", "value": value}
    if isinstance(value, (tuple, list)) and all(isinstance(v, _JSON_SCALARS) for v in value):
        return {"kind": "tuple" if isinstance(value, tuple) else "list", "value": list(value)}
    if isinstance(value, list) and all(isinstance(v, np.ndarray) and v.dtype.kind in "biuf" for v in value):
        for i, v in enumerate(value):
            arrays[f"{key}/{i}"] = v
        return {"kind": "array_list", "length": len(value)}
    return None


def _decode(name, entry, members, prefix="attr"):
    key = f"{prefix}/{name}"
    kind = entry["kind"]
    if kind == "json":
        return entry["value"]
    if kind in ("tuple", "list"):
        return tuple(entry["value"]) if kind == "tuple" else list(entry["value"])
    if kind == "array":
        return np.array(members[key], copy=True)
    if kind == "str_object":
        return np.array(members[key], copy=True).astype(object)
    if kind == "scalar":
        return members[key][()]
    if kind == "array_list":
        return [np.array(members[f"{key}/{i}"], copy=True) for i in range(int(entry["length"]))]
    if kind == "sparse":
        data, indices, indptr = (np.array(members[f"{key}/{part}"], copy=True)
                                 for part in ("data", "indices", "indptr"))
        csr = (sp.csr_array if entry.get("array") else sp.csr_matrix)((data, indices, indptr),
                                                                        shape=tuple(entry["shape"]))
        csr.indices, csr.indptr = indices, indptr  # the constructor may narrow int64 indices
        return csr if entry["format"] == "csr" else csr.asformat(entry["format"])
    raise ValueError(f"unknown kind {kind!r} of attribute {name!r}")


# ---------------------------------------------------------------------- save
def save_model(model, path):
    """Save a fitted estimator to a ``.skm`` model file.

    Parameters
    ----------
    model : estimator or Pipeline
        A fitted SVC, SVR, NuSVC, NuSVR, OneClassSVM, KernelLogisticRegression,
        SparseKernelLogisticRegression, NSSVC, SLMC or SparseKFD with a named kernel (not 'precomputed', not a callable);
        a KernelLogisticRegressionCV or SparseKernelLogisticRegressionCV, saved as its refitted
        ``estimator_`` (the model that predicts; loaded back as that estimator, the header's
        ``selected_by`` naming the search and its C_); or a fitted
        Pipeline of StandardScaler steps and one of those (e.g. ``make_pipeline(StandardScaler(),
        SVC())``), saved in format version 2 and loaded back as a Pipeline.
    path : str or path-like
        Where to write (replaced atomically; no extension is added). The file gets the mode of
        any new file of the process (0o666 less the umask).

    Returns
    -------
    header : dict
        The JSON header written to the file.

    Raises
    ------
    ValueError
        For an unsupported estimator or kernel; ``NotFittedError`` for an unfitted one.
    """
    scalers, step_names = [], None  # step_names: a Pipeline's (format version 2)
    if isinstance(model, Pipeline):
        model, scalers, step_names = _split_pipeline(model)
    selected_by = None
    if isinstance(model, _CHOOSERS):
        # the model it chose, refitted on all the data: what predicts (loaded back as that estimator)
        check_is_fitted(model, "cv_results_")
        if not model.refit:
            raise ValueError(f"cannot save a {type(model).__name__} fitted with refit=False: it holds the "
                             "cross-validation results only, no model")
        selected_by = {"estimator": type(model).__name__, "C_": float(model.C_), "Cs_": [float(c) for c in model.Cs_]}
        model = model.estimator_
    name = type(model).__name__
    if SUPPORTED_ESTIMATORS.get(name) is not type(model):
        raise ValueError(f"cannot save a {name}: .skm files hold {', '.join(SUPPORTED_ESTIMATORS)}, alone or "
                         "as the last step of a Pipeline after StandardScaler steps")
    kernel = model.kernel
    if callable(kernel) or kernel == "precomputed":
        raise ValueError(f"cannot save a {name} with kernel={kernel!r}: a .skm file holds named kernels only "
                         "(a precomputed or callable kernel cannot be rebuilt from the file)")
    check_is_fitted(model)
    try:
        fitted_expansion(model)
    except ValueError as exc:  # (a DC-SVM stopped at a level: a tree of clusters a .skm file does not hold)
        raise ValueError(f"cannot save it: {exc}; use pickle or joblib") from exc
    arrays = {}
    params, dropped, attributes, skipped = _state(model, arrays, "attr")
    header = {
        "format": FORMAT_NAME,
        "format_version": 1 if step_names is None else 2,  # a bare estimator's file stays readable by format 1
        "library_version": _library_version(),
        "estimator": name,
        "params": params,
        "dropped_params": dropped,
        "kernel": {"kernel": kernel, "gamma": float(getattr(model, "_gamma", 0.0)),
                   "coef0": float(model.coef0), "degree": int(model.degree)},
        "attributes": attributes,
        "skipped": skipped,
    }
    if selected_by is not None:
        header["selected_by"] = selected_by
    if step_names is not None:
        header["pipeline"] = {"steps": step_names, "preprocessing": []}
        for i, scaler in enumerate(scalers):
            check_is_fitted(scaler)
            s_params, s_dropped, s_attributes, s_skipped = _state(scaler, arrays, f"step{i}")
            header["pipeline"]["preprocessing"].append(
                {"estimator": "StandardScaler", "params": s_params, "dropped_params": s_dropped,
                 "attributes": s_attributes, "skipped": s_skipped})
    arrays[_HEADER_KEY] = np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8)
    path = os.fspath(path)
    fd, tmp = tempfile.mkstemp(prefix=".skm-", dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez_compressed(f, **arrays)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp's 0600 -> the mode any new file of the user gets
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return header


def _split_pipeline(pipeline):
    """(final estimator, its StandardScaler steps, the step names) of a Pipeline a .skm file holds."""
    steps = list(pipeline.steps)
    bad = [type(step).__name__ for _, step in steps[:-1] if type(step) is not StandardScaler]
    if not steps or bad:
        kinds = ", ".join(type(step).__name__ for _, step in steps) or "no steps"
        raise ValueError(f"cannot save a Pipeline of {kinds}: a .skm file holds StandardScaler steps and then "
                         f"one of {', '.join(SUPPORTED_ESTIMATORS)}")
    return steps[-1][1], [step for _, step in steps[:-1]], [name for name, _ in steps]


def _state(est, arrays, prefix):
    """An estimator's JSON parameters, dropped parameter names, stored attributes (their arrays
    put into ``arrays`` under ``prefix``) and skipped attribute names."""
    params, dropped = {}, []
    for key, value in est.get_params(deep=False).items():
        value, ok = _json_param(value)
        if ok:
            params[key] = value
        else:
            dropped.append(key)
    attributes, skipped = {}, []
    for key, value in est.__getstate__().items():
        if key in params or key in dropped or key == "_sklearn_version":
            continue
        entry = _encode(key, value, arrays, prefix)
        if entry is None:
            skipped.append(key)
        else:
            attributes[key] = entry
    return params, dropped, attributes, skipped


def _umask():
    """The process's umask: from /proc (Linux), else set and restored (not thread-safe, so the fallback)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# ---------------------------------------------------------------------- load
def _magic(path):
    """The first bytes of a file (a path or a seekable binary file object)."""
    if hasattr(path, "read"):
        start = path.tell()
        head = path.read(4)
        path.seek(start)
        return head
    with open(path, "rb") as f:
        return f.read(4)


def _open(path):
    """The npz members of a model file, with every failure as a ValueError naming the file."""
    where = getattr(path, "name", path)
    head = _magic(path)  # a missing file raises FileNotFoundError here
    if not head.startswith(b"PK"):
        what = "a pickle, which is never loaded" if head[:1] == b"\x80" else "not an npz archive"
        raise ValueError(f"{where} is not a sparsekernel model file ({what})")
    try:
        return np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as e:
        raise ValueError(f"{where} is not a sparsekernel model file ({e})") from e


def _read(members, key, where):
    try:
        return members[key]
    except KeyError:
        raise ValueError(f"{where} is not a complete sparsekernel model file: {key!r} is missing") from None
    except ValueError as e:
        if "allow_pickle" in str(e):  # an object array, i.e. a pickle
            raise ValueError(f"{where} holds a pickled object array ({key!r}); refusing to load it") from e
        raise ValueError(f"{where} is a corrupt sparsekernel model file ({key!r}: {e})") from e
    except (OSError, EOFError, zipfile.BadZipFile, zlib.error) as e:
        raise ValueError(f"{where} is a corrupt sparsekernel model file ({key!r}: {e})") from e


def _header(members, where):
    raw = _read(members, _HEADER_KEY, where)
    try:
        header = json.loads(bytes(np.asarray(raw, dtype=np.uint8)).decode("utf-8"))
    except (TypeError, ValueError) as e:
        raise ValueError(f"{where} has a corrupt header ({e})") from e
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        raise ValueError(f"{where} is not a sparsekernel model file (no {FORMAT_NAME!r} header)")
    version = header.get("format_version")
    if not isinstance(version, int) or version < 1:
        raise ValueError(f"{where} has an invalid format version {version!r}")
    if version > FORMAT_VERSION:
        raise ValueError(f"{where} was written by sparsekernel {header.get('library_version', '?')} in model format "
                         f"{version}; this sparsekernel {_library_version()} reads format {FORMAT_VERSION} or "
                         "older: upgrade sparsekernel")
    for key, kind in (("estimator", str), ("params", dict), ("attributes", dict)):
        if not isinstance(header.get(key), kind):
            raise ValueError(f"{where} has a corrupt header ({key!r} missing or of the wrong type)")
    return header


def read_header(path):
    """The JSON header of a ``.skm`` file (format and library version, estimator, parameters,
    kernel, stored attributes) without rebuilding the estimator.

    Parameters
    ----------
    path : str, path-like or binary file object

    Returns
    -------
    header : dict

    Raises
    ------
    ValueError
        When the file is not a readable ``.skm`` file of this or an older format version.
    """
    with _open(path) as members:
        return _header(members, getattr(path, "name", path))


def _check_name(cls, name, where):
    """Attribute names from a file: plain identifiers that do not shadow anything of the class."""
    if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("__") or hasattr(cls, name):
        raise ValueError(f"{where} is corrupt: invalid attribute name {name!r}")


def load_model(path):
    """Load an estimator (or a Pipeline) saved by :func:`save_model`.

    Parameters
    ----------
    path : str, path-like or binary file object

    Returns
    -------
    model : estimator or Pipeline
        The fitted estimator (a Pipeline when a Pipeline was saved); ``predict``,
        ``decision_function``, ``predict_proba`` and ``score_samples`` give the same results, bit
        for bit, as the saved one's.

    Raises
    ------
    ValueError
        When the file is not a ``.skm`` file, is corrupt, holds a pickle, names an unknown
        estimator, or was written in a newer format. A file of this format written by another
        library version loads with a :class:`ModelVersionWarning`.
    """
    where = getattr(path, "name", path)
    with _open(path) as members:
        header = _header(members, where)
        name = header["estimator"]
        cls = SUPPORTED_ESTIMATORS.get(name)
        if cls is None:
            raise ValueError(f"{where} holds an unknown estimator {name!r} (this sparsekernel loads "
                             f"{', '.join(SUPPORTED_ESTIMATORS)})")
        kernel = header["params"].get("kernel")
        if not isinstance(kernel, str) or kernel == "precomputed":
            raise ValueError(f"{where} is corrupt: invalid kernel {kernel!r}")
        try:
            model = cls(**header["params"])
        except TypeError as e:
            raise ValueError(f"{where} has parameters this sparsekernel's {name} does not know ({e})") from e
        state = _load_state(cls, header["attributes"], members, where, "attr")
        scalers, step_names = _load_scalers(header, members, where)
    if header.get("library_version") != _library_version():
        warnings.warn(f"{where} was saved by sparsekernel {header.get('library_version')} and is loaded by "
                      f"{_library_version()}", ModelVersionWarning, stacklevel=2)
    model.__setstate__(state)
    if step_names is None:
        return model
    return Pipeline(list(zip(step_names, [*scalers, model])))


def _load_state(cls, attributes, members, where, prefix):
    """The stored attributes of an estimator of class ``cls`` (names checked, entries decoded)."""
    state = {}
    for attr, entry in attributes.items():
        _check_name(cls, attr, where)
        try:
            state[attr] = _decode(attr, entry, _Members(members, where), prefix)
        except (KeyError, TypeError, IndexError, AttributeError) as e:  # a malformed entry
            raise ValueError(f"{where} is corrupt: attribute {attr!r} ({e!r})") from e
    return state


def _load_scalers(header, members, where):
    """The fitted StandardScaler steps and the step names of a Pipeline's file; ([], None) for a bare
    estimator's."""
    pipeline = header.get("pipeline")
    if pipeline is None:
        return [], None
    try:
        names, pre = pipeline["steps"], pipeline["preprocessing"]
        if not (isinstance(names, list) and all(isinstance(n, str) for n in names) and isinstance(pre, list)
                and len(names) == len(pre) + 1 and len(set(names)) == len(names)
                and all(isinstance(p, dict) and p["estimator"] == "StandardScaler" for p in pre)):
            raise TypeError("invalid steps")
        scalers = []
        for i, step in enumerate(pre):
            scaler = StandardScaler(**step["params"])
            for attr, value in _load_state(StandardScaler, step["attributes"], members, where, f"step{i}").items():
                setattr(scaler, attr, value)
            scalers.append(scaler)
    except (KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"{where} is corrupt: invalid pipeline ({e!r})") from e
    return scalers, names


class _Members:
    """npz members whose read errors are ValueErrors naming the file."""

    def __init__(self, members, where):
        self._members, self._where = members, where

    def __getitem__(self, key):
        return _read(self._members, key, self._where)


