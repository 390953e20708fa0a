"""Loaders for the binary classification sets used by the SVC benchmarks.

Every loader returns ``(X_train, y_train, X_test, y_test)`` with ``X`` a dense
``float64`` array or a ``scipy.sparse`` CSR matrix and ``y`` a ``float64``
array in {-1, +1}.  A loader returns ``None`` (never raises) when its data
files are missing, so a benchmark can simply skip that set.

The data directory defaults to ``/work/shared/data`` and can be changed with
the ``SPARSEKERNEL_DATA`` environment variable or :func:`set_data_dir`.  See
``README.md`` in the data directory for the file formats and origins.

Run ``python benchmarks/_datasets.py [name ...]`` to print the shapes.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import scipy.sparse as sp

Split = tuple[object, np.ndarray, object, np.ndarray]

_data_dir = Path(os.environ.get("SPARSEKERNEL_DATA", "/work/shared/data"))


def set_data_dir(path: str | os.PathLike) -> None:
    """Change the directory the loaders read from."""
    global _data_dir
    _data_dir = Path(path)


def _files(*relative: str) -> list[Path] | None:
    """Absolute paths of ``relative`` files, or ``None`` if any is missing."""
    paths = [_data_dir / r for r in relative]
    return paths if all(p.is_file() for p in paths) else None


def with_index_dtype(X, dtype):
    """Copy of CSR ``X`` whose ``indices``/``indptr`` have ``dtype``; dense X unchanged.

    The arrays are assigned after construction because scipy's constructor
    (and its fancy indexing) silently downcasts int64 indices to int32.
    """
    if not sp.issparse(X) or X.indices.dtype == dtype:
        return X
    out = X.copy()
    out.indices = out.indices.astype(dtype)
    out.indptr = out.indptr.astype(dtype)
    return out


def as_int32_indices(X):
    """Copy of a CSR matrix with int32 ``indices``/``indptr``; dense X unchanged.

    scikit-learn's ``SVC`` rejects CSR input with int64 indices, which is what
    ``load_svmlight_file`` returns, so the peer libraries get this copy.
    """
    return with_index_dtype(X, np.int32)


def _svmlight_pair(stem: str, n_features: int) -> Split | None:
    """libsvm-format ``<stem>.gz`` (train) and ``<stem>.t.gz`` (test), as CSR."""
    from sklearn.datasets import load_svmlight_file

    paths = _files(f"libsvm/binary/{stem}.gz", f"libsvm/binary/{stem}.t.gz")
    if paths is None:
        return None
    X_train, y_train = load_svmlight_file(str(paths[0]), n_features=n_features)
    X_test, y_test = load_svmlight_file(str(paths[1]), n_features=n_features)
    return X_train.tocsr(), y_train, X_test.tocsr(), y_test


def load_a9a() -> Split | None:
    """a9a (UCI Adult, 123 binary features): official train/test files, CSR."""
    return _svmlight_pair("a9a", n_features=123)


def load_w8a() -> Split | None:
    """w8a (300 sparse binary features): official train/test files, CSR."""
    return _svmlight_pair("w8a", n_features=300)


def load_magic() -> Split | None:
    """MAGIC gamma telescope: stratified 70/30 split (random_state=0), standardised.

    Label ``g`` (gamma) is +1, ``h`` (hadron) is -1.  The scaler is fitted on
    the training part only.
    """
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    paths = _files("uci/magic/magic04.data.gz")
    if paths is None:
        return None
    raw = np.loadtxt(paths[0], delimiter=",", dtype=str)
    X = raw[:, :-1].astype(np.float64)
    y = np.where(raw[:, -1] == "g", 1.0, -1.0)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.3, stratify=y, random_state=0
    )
    scaler = StandardScaler().fit(X_train)
    return scaler.transform(X_train), y_train, scaler.transform(X_test), y_test


def load_usps_digits() -> Split | None:
    """USPS digits (ESL zip.train / zip.test: 7291 / 2007 rows, 256 features in [-1, 1], the 16 x 16
    image row by row), labels 0-9."""
    paths = _files("usps/zip.train.gz", "usps/zip.test.gz")
    if paths is None:
        return None

    def read(path: Path) -> tuple[np.ndarray, np.ndarray]:
        data = np.loadtxt(path)
        return np.ascontiguousarray(data[:, 1:]), data[:, 0]

    return (*read(paths[0]), *read(paths[1]))


def load_usps() -> Split | None:
    """USPS digits (256 features in [-1, 1]), digit 0 (+1) versus the rest (-1)."""
    split = load_usps_digits()
    if split is None:
        return None
    X_train, y_train, X_test, y_test = split
    return X_train, np.where(y_train == 0, 1.0, -1.0), X_test, np.where(y_test == 0, 1.0, -1.0)


def load_skin() -> Split | None:
    """Skin segmentation: disjoint random samples of 100,000 (train) and 50,000 (test).

    Features (B, G, R) are divided by 255; class 1 (skin) is +1, 2 is -1.
    The samples come from one permutation with ``RandomState(0)``.
    """
    paths = _files("uci/skin/Skin_NonSkin.txt.gz")
    if paths is None:
        return None
    data = np.loadtxt(paths[0], delimiter="\t")
    X = data[:, :3] / 255.0
    y = np.where(data[:, 3] == 1, 1.0, -1.0)
    order = np.random.RandomState(0).permutation(len(y))
    train, test = order[:100_000], order[100_000:150_000]
    return X[train], y[train], X[test], y[test]


def load_ringnorm() -> Split | None:
    """Rätsch ringnorm: realisation 1 of the official splits (400/7000).

    Falls back to a stratified 70/30 split (random_state=0) when the split
    files are absent.
    """
    paths = _files("raetsch/ringnorm.csv.gz")
    if paths is None:
        return None
    data = np.loadtxt(paths[0], delimiter=",", skiprows=1)
    X, y = np.ascontiguousarray(data[:, :-1]), data[:, -1]
    splits = _files("raetsch/splits/ringnorm_train_idx.csv",
                    "raetsch/splits/ringnorm_test_idx.csv")
    if splits is None:
        from sklearn.model_selection import train_test_split

        X_train, X_test, y_train, y_test = train_test_split(
            X, y, test_size=0.3, stratify=y, random_state=0
        )
        return X_train, y_train, X_test, y_test
    train, test = (_first_line_indices(p) for p in splits)
    return X[train], y[train], X[test], y[test]


def load_nonlinear(n_train: int = 100_000, n_test: int = 20_000, n_features: int = 10,
                   seed: int = 0) -> Split:
    """Synthetic nonlinear problem, generated (needs no files, never ``None``).

    ``n_train + n_test`` rows of ``n_features`` standard normal features and a
    standard normal noise term, all from one ``RandomState(seed)``; the label is
    ``sign(x0 * x1 + sin(2 * x2) + 0.5 * x3**2 - 0.5 + 0.3 * noise)`` in {-1, +1}
    (the other features carry no signal).  The first ``n_train`` rows are the
    training split, the rest the test split; dense ``float64``.
    """
    if n_features < 4:
        raise ValueError(f"the label uses features 0-3: n_features must be >= 4, got {n_features}")
    rng = np.random.RandomState(seed)
    n = n_train + n_test
    X = rng.standard_normal((n, n_features))
    noise = rng.standard_normal(n)
    f = X[:, 0] * X[:, 1] + np.sin(2.0 * X[:, 2]) + 0.5 * X[:, 3] ** 2 - 0.5 + 0.3 * noise
    y = np.where(f > 0, 1.0, -1.0)
    return (np.ascontiguousarray(X[:n_train]), y[:n_train],
            np.ascontiguousarray(X[n_train:]), y[n_train:])


def _first_line_indices(path: Path) -> np.ndarray:
    """0-based row indices on the first line (realisation 1) of a split file."""
    with open(path) as f:
        return np.array(f.readline().split(","), dtype=np.int64)


LOADERS: dict[str, Callable[[], Split | None]] = {
    "a9a": load_a9a,
    "w8a": load_w8a,
    "magic": load_magic,
    "usps": load_usps,
    "skin": load_skin,
    "ringnorm": load_ringnorm,
    "nonlinear": load_nonlinear,
}

ALL = list(LOADERS)


def load(name: str) -> Split | None:
    """Load data set ``name`` (one of :data:`ALL`); ``None`` if its files are missing.

    Any error while reading is reported on stderr and also gives ``None``.
    """
    if name not in LOADERS:
        raise KeyError(f"unknown data set {name!r}; choose from {ALL}")
    try:
        return LOADERS[name]()
    except Exception as exc:  # a broken file must not stop a benchmark run
        print(f"warning: could not load {name}: {exc!r}", file=sys.stderr)
        return None


def describe(name: str, split: Split | None) -> str:
    """One-line summary of a loaded split (shapes, storage, class balance)."""
    if split is None:
        return f"{name}: missing"
    X_train, y_train, X_test, y_test = split
    kind = (f"CSR {X_train.indices.dtype} nnz={X_train.nnz}" if sp.issparse(X_train)
            else f"dense {X_train.dtype}")
    return (f"{name}: train {X_train.shape} test {X_test.shape} {kind} "
            f"+1 frac train {np.mean(y_train == 1):.3f} test {np.mean(y_test == 1):.3f}")


if __name__ == "__main__":
    for name in sys.argv[1:] or ALL:
        print(describe(name, load(name)), flush=True)
