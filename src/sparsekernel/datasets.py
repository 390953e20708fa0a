"""Data sets: the synthetic sets of the papers the library implements, the built-in sets of the
command-line tool, and one loader for data files (CSV, svmlight / libsvm, npz) and built-in names."""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import numbers
import os
import re
import zipfile

import numpy as np
from sklearn.preprocessing import StandardScaler

# NSSVM (Zhou), Example 4.1: class means and the diagonal covariance. The text prints 0.2 for the
# first variance; the paper's Table VII (accuracy 96.93 %, the Bayes accuracy) was made with 0.5:
# with Sigma = diag(0.5, 3) the Mahalanobis distance of the means is sqrt(1/0.5 + 36/3) = sqrt(14)
# and the Bayes accuracy Phi(sqrt(14) / 2) = 0.9693 (DESIGN.md, known misprints).
_NSSVM_MEAN_POS = np.array([0.5, -3.0])
_NSSVM_MEAN_NEG = np.array([-0.5, 3.0])
_NSSVM_STD = np.sqrt(np.array([0.5, 3.0]))
NSSVM_BAYES_ACCURACY = 0.9693  # Phi(sqrt(14) / 2), for flip = 0


def _check_args(m, flip, block_size, dtype):
    if not isinstance(m, numbers.Integral) or isinstance(m, bool) or m < 2:
        raise ValueError(f"m must be an integer >= 2, got {m!r}")
    if not isinstance(flip, numbers.Real) or not 0.0 <= flip < 1.0:
        raise ValueError(f"flip must be a fraction in [0, 1), got {flip!r}")
    if not isinstance(block_size, numbers.Integral) or isinstance(block_size, bool) or block_size < 2:
        raise ValueError(f"block_size must be an integer >= 2, got {block_size!r}")
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64, got {dtype}")
    return int(m), float(flip), int(block_size) - int(block_size) % 2, dtype


def iter_nssvm_gaussians(m, random_state=None, flip=0.0, *, block_size=1 << 20, dtype=np.float64):
    """Example 4.1 of the NSSVM paper in row blocks: yields ``(X_block, y_block)`` until m rows.

    Each block holds equally many samples of both classes (the last, odd-sized one has one more
    positive), in random order; positives are drawn from N((0.5, -3), diag(0.5, 3)) and negatives
    from N((-0.5, 3), diag(0.5, 3)). With ``flip`` > 0 that fraction of labels (in expectation) is
    flipped. Every block has its own seed derived from ``random_state``, so the blocks are the same
    whatever the consumer does with them, and :func:`make_nssvm_gaussians` returns their
    concatenation. Memory: one block at a time (m = 1e9 can be streamed).

    Parameters
    ----------
    m : int
        Number of samples (>= 1).
    random_state : int, numpy Generator, SeedSequence or None
    flip : float in [0, 1), default=0.0
        Expected fraction of flipped labels.
    block_size : int, keyword-only, default=2**20
        Rows generated at a time.
    dtype : {np.float64, np.float32}, keyword-only

    Yields
    ------
    X_block : ndarray of shape (n_block, 2)
    y_block : ndarray of shape (n_block,) in {-1, +1}
    """
    m, flip, block_size, dtype = _check_args(m, flip, block_size, dtype)
    seed = _seed_sequence(random_state)
    n_blocks = -(-m // block_size)
    for k, child in enumerate(seed.spawn(n_blocks)):
        yield _nssvm_block(child, min(block_size, m - k * block_size), flip, dtype)


def _seed_sequence(random_state):
    if isinstance(random_state, np.random.SeedSequence):
        return random_state
    return np.random.SeedSequence(
        random_state if not isinstance(random_state, np.random.Generator) else random_state.integers(2**63))


def _nssvm_block(seed, n, flip, dtype):
    """One block of n rows of Example 4.1 from its own seed."""
    rng = np.random.default_rng(seed)
    y = np.full(n, -1.0, dtype=dtype)
    y[: (n + 1) // 2] = 1.0
    rng.shuffle(y)
    X = rng.standard_normal((n, 2), dtype=dtype)
    X *= _NSSVM_STD.astype(dtype)
    X += np.where(y[:, None] > 0, _NSSVM_MEAN_POS.astype(dtype), _NSSVM_MEAN_NEG.astype(dtype))
    if flip > 0.0:
        y[rng.random(n) < flip] *= -1.0
    return X, y


def nssvm_gaussians_block(m, k, random_state=None, flip=0.0, *, block_size=1 << 20, dtype=np.float64):
    """Block k of :func:`iter_nssvm_gaussians` (the same rows), generated alone: what a worker of a
    distributed data set computes for its own chunk (``sparsekernel.dask.nssvm_gaussians``).

    Parameters
    ----------
    m, random_state, flip, block_size, dtype :
        As :func:`iter_nssvm_gaussians` (``random_state`` an int or a SeedSequence, the same in every
        call: the blocks' seeds are derived from it).
    k : int
        The block, 0 <= k < ceil(m / block_size).

    Returns
    -------
    X_block : ndarray of shape (n_block, 2)
    y_block : ndarray of shape (n_block,) in {-1, +1}
    """
    m, flip, block_size, dtype = _check_args(m, flip, block_size, dtype)
    n_blocks = -(-m // block_size)
    if not 0 <= k < n_blocks:
        raise ValueError(f"block k={k} out of range: m={m} rows in {n_blocks} blocks of {block_size}")
    seed = _seed_sequence(random_state)
    # the k-th child seed.spawn() would give (spawn keys count from the children spawned so far)
    child = np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key + (seed.n_children_spawned + k,),
                                   pool_size=seed.pool_size)
    return _nssvm_block(child, min(block_size, m - k * block_size), flip, dtype)


def make_nssvm_gaussians(m, random_state=None, flip=0.0, *, block_size=1 << 20, dtype=np.float64):
    """Example 4.1 of the NSSVM paper (Zhou): m points in R^2 with labels in {-1, +1}.

    Returns ``(X, y)``, X of shape (m, 2). The paper generates 2m points and splits them evenly into
    training and test sets; two calls with different seeds give the same distribution. Generated in
    row blocks (:func:`iter_nssvm_gaussians`) straight into the output arrays, so m = 1e8 needs
    no Python loop over samples (1.6 GB of float64, 0.8 GB with ``dtype=np.float32``).
    The Bayes classifier sign(2 x1 - 2 x2) reaches NSSVM_BAYES_ACCURACY (96.93 %) without flips.

    Parameters
    ----------
    m, random_state, flip, block_size, dtype :
        As :func:`iter_nssvm_gaussians`.

    Returns
    -------
    X : ndarray of shape (m, 2)
    y : ndarray of shape (m,) in {-1, +1}
    """
    m, flip, block_size, dtype = _check_args(m, flip, block_size, dtype)
    X = np.empty((m, 2), dtype=dtype)
    y = np.empty(m, dtype=dtype)
    start = 0
    for Xb, yb in iter_nssvm_gaussians(m, random_state, flip, block_size=block_size, dtype=dtype):
        X[start:start + len(yb)] = Xb
        y[start:start + len(yb)] = yb
        start += len(yb)
    return X, y


# ---------------------------------------------------------------------- built-in data sets
def _standardise(X):
    return StandardScaler().fit_transform(X)


def _bundled(loader, transform=None):
    """Loader of a data set bundled with scikit-learn (fixed size), its features transformed."""
    def load(n):
        import sklearn.datasets  # (heavy: 90 ms, imported when a data set is loaded)

        X, y = getattr(sklearn.datasets, loader)(return_X_y=True)
        return (X if transform is None else transform(X)), y
    return load


def _generated(maker, **kwargs):
    """Loader of n samples of a scikit-learn generator, with a fixed seed."""
    def load(n):
        import sklearn.datasets  # (heavy: 90 ms, imported when a data set is made)

        return getattr(sklearn.datasets, maker)(n, random_state=0, **kwargs)
    return load


def _nssvm(n):
    X, y = make_nssvm_gaussians(n, random_state=0)
    return X, y.astype(np.int64)


# name -> (task, default size for the synthetic sets or None, loader, description)
_BUILTIN = {
    "breast_cancer": ("classification", None, _bundled("load_breast_cancer", _standardise),
                      "Wisconsin breast cancer (scikit-learn), standardised"),
    "digits": ("classification", None, _bundled("load_digits", lambda X: X / 16.0),
               "8x8 handwritten digits (scikit-learn), pixels / 16"),
    "iris": ("classification", None, _bundled("load_iris", _standardise), "Fisher's iris (scikit-learn), standardised"),
    "wine": ("classification", None, _bundled("load_wine", _standardise),
             "wine recognition (scikit-learn), standardised"),
    "diabetes": ("regression", None, _bundled("load_diabetes"), "diabetes progression (scikit-learn), scaled features"),
    "nssvm": ("classification", 10000, _nssvm, "NSSVM paper Example 4.1: two 2-D Gaussians, labels -1/+1"),
    "moons": ("classification", 1000, _generated("make_moons", noise=0.2), "two interleaving half circles, noise 0.2"),
    "circles": ("classification", 1000, _generated("make_circles", noise=0.1, factor=0.5),
                "a circle inside a circle, noise 0.1"),
    "classification": ("classification", 5000,
                       _generated("make_classification", n_features=20, n_informative=10, flip_y=0.05),
                       "make_classification: 20 features (10 informative), 5 % flipped labels"),
    "friedman1": ("regression", 2000, _generated("make_friedman1", noise=1.0), "Friedman #1 regression problem, noise 1"),
}


def _builtin(spec):
    """(X, y, name) of a built-in name, ``name`` or ``name:n_samples`` for the synthetic sets; or None."""
    name, _, size = spec.partition(":")
    if name not in _BUILTIN:
        return None
    task, default, loader, _ = _BUILTIN[name]
    if size and default is None:
        raise ValueError(f"the built-in data set {name!r} has a fixed size (no ':n_samples')")
    try:
        n = int(size) if size else default
    except ValueError:
        raise ValueError(f"{spec!r}: the size after ':' must be an integer") from None
    if n is not None and n < 10:
        raise ValueError(f"{spec!r}: the size must be at least 10")
    X, y = loader(n)
    return np.ascontiguousarray(X, dtype=np.float64), y, spec


def list_datasets():
    """The built-in data sets (no download: shipped with scikit-learn or generated).

    Returns
    -------
    datasets : list of dict
        One dict per set with ``name``, ``task`` ('classification' or 'regression'),
        ``n_samples``, ``n_features``, ``n_classes`` (None for regression), ``resizable`` (True
        when ``name:n_samples`` picks another size) and ``description``.
    """
    out = []
    for name, (task, default, _, description) in _BUILTIN.items():
        X, y, _ = _builtin(name)
        out.append({"name": name, "task": task, "n_samples": X.shape[0], "n_features": X.shape[1],
                    "n_classes": len(np.unique(y)) if task == "classification" else None,
                    "resizable": default is not None, "description": description})
    return out


# ---------------------------------------------------------------------- data files
_COMPRESSED = {".gz": gzip.open, ".bz2": bz2.open}
_SVMLIGHT_EXT = (".svm", ".svmlight", ".libsvm")
_SVMLIGHT_LINE = re.compile(r"^\s*[-+]?[\w.,+-]+(\s+(qid:\S+|\d+:\S+))+\s*(#.*)?$")


def _open_text(path):
    opener = _COMPRESSED.get(os.path.splitext(path)[1].lower())
    return opener(path, "rt", encoding="utf-8", newline="") if opener else open(path, encoding="utf-8", newline="")


def _file_kind(path):
    """'npz', 'svmlight' or 'csv', from the extension (under .gz / .bz2) or else from the content."""
    base, ext = os.path.splitext(path.lower())
    if ext in _COMPRESSED:
        base, ext = os.path.splitext(base)
    if ext == ".npz":
        return "npz"
    if ext in _SVMLIGHT_EXT:
        return "svmlight"
    if ext in (".csv", ".tsv"):
        return "csv"
    with _open_text(path) as f:
        for line, _ in zip(f, range(50)):
            if line.strip() and not line.lstrip().startswith("#"):
                return "svmlight" if _SVMLIGHT_LINE.match(line) else "csv"
    return "csv"


def _is_number(cell):
    try:
        float(cell)
        return True
    except ValueError:
        return False


def _rows(text):
    """(line number, cells) of every non-blank row; the delimiter is the first line's most frequent
    of ',', ';' and tab, or runs of white space when it has none of them."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    counts = {d: first.count(d) for d in (",", ";", "\t")}
    delimiter = max(counts, key=counts.get)
    if counts[delimiter] == 0:
        return [(k, line.split()) for k, line in enumerate(text.splitlines(), 1) if line.strip()]
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    return [(reader.line_num, [c.strip() for c in row]) for row in reader if any(c.strip() for c in row)]


def _label_index(label_column, names, n_cols, where):
    if label_column is None:
        return n_cols - 1
    if isinstance(label_column, str) and names is not None and label_column in names:
        return names.index(label_column)
    try:
        index = int(label_column)
    except (TypeError, ValueError):
        columns = f"the columns are {', '.join(names)}" if names else "the file has no header row"
        raise ValueError(f"{where}: no label column {label_column!r} ({columns})") from None
    if not -n_cols <= index < n_cols:
        raise ValueError(f"{where}: label column {index} is out of range (the file has {n_cols} columns)")
    return index % n_cols


def _parse_labels(cells, lines, where):
    """Labels as int64 when every cell is an integer, float64 when every one is a number, else str."""
    for cell, line in zip(cells, lines):
        if not cell:
            raise ValueError(f"{where}: empty label at row {line}")
    for kind in (int, float):
        try:
            return _integral(np.array([kind(c) for c in cells]))
        except ValueError:
            pass
    return np.array(cells)


def _parse_features(rows, columns, names, where):
    """The feature cells as float64; a non-numeric cell is a ValueError naming its row and column."""
    cells = [[cells[j] for j in columns] for _, cells in rows]
    try:
        return np.array(cells, dtype=np.float64)
    except ValueError:
        pass
    for (line, row), values in zip(rows, cells):
        for j, cell in zip(columns, values):
            if not _is_number(cell):
                name = f" ({names[j]!r})" if names else ""
                what = "empty cell" if not cell else f"non-numeric cell {cell[:40]!r}"
                raise ValueError(f"{where}: {what} at row {line}, column {j + 1}{name}")
    raise ValueError(f"{where}: the feature cells could not be read as numbers")


def _load_csv(path, label_column, n_features):
    with _open_text(path) as f:
        rows = _rows(f.read())
    if not rows:
        raise ValueError(f"{path}: the file holds no data")
    n_cols = len(rows[0][1])
    for line, cells in rows:
        if len(cells) != n_cols:
            raise ValueError(f"{path}: row {line} has {len(cells)} cells, the first row {n_cols}")
    names = None
    if len(rows) > 1 and any(not _is_number(a) and _is_number(b) for a, b in zip(rows[0][1], rows[1][1])):
        names, rows = rows[0][1], rows[1:]
    elif len(rows) == 1 and not any(_is_number(c) for c in rows[0][1]):
        raise ValueError(f"{path}: the file has a header row but no data")
    if label_column is None and n_features is not None and n_cols == n_features:
        label = None  # features only (prediction input)
    else:
        label = _label_index(label_column, names, n_cols, path)
        if n_features is not None and n_cols - 1 != n_features:
            raise ValueError(f"{path} has {n_cols} columns; the model expects {n_features} features (plus an "
                             "optional label column)")
    columns = [j for j in range(n_cols) if j != label]
    if not columns:
        raise ValueError(f"{path}: no feature column left besides the label column")
    X = _parse_features(rows, columns, names, path)
    y = None if label is None else _parse_labels([cells[label] for _, cells in rows], [k for k, _ in rows], path)
    return X, y


def _integral(y):
    """Float labels that are all integers as int64 (svmlight's '+1' / '-1' print as 1 / -1)."""
    if y.dtype.kind == "f" and y.size and np.all(np.isfinite(y)) and np.all(y == np.round(y)) \
            and np.abs(y).max() < 2**53:
        return y.astype(np.int64)
    return y


def _load_svmlight(path, n_features):
    from sklearn.datasets import load_svmlight_file  # (heavy: 90 ms, imported when a file is read)

    try:
        X, y = load_svmlight_file(path, n_features=n_features, dtype=np.float64)
    except ValueError as e:
        raise ValueError(f"{path}: not a valid svmlight/libsvm file ({e})") from e
    return X, _integral(y)


def _load_npz(path):
    try:
        data = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as e:
        raise ValueError(f"{path}: not a readable .npz data file ({e})") from e
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise ValueError(f"{path}: an .npz data file needs arrays 'X' and 'y' (this is a single .npy array)")
    with data:
        if "X" not in data.files:
            raise ValueError(f"{path}: an .npz data file needs an array 'X' (and 'y'); it has "
                             f"{', '.join(data.files) or 'none'}")
        try:
            X = np.asarray(data["X"])
            y = np.asarray(data["y"]) if "y" in data.files else None
        except (ValueError, OSError, zipfile.BadZipFile) as e:  # an object array (a pickle), a bad member
            raise ValueError(f"{path}: not a readable .npz data file ({e})") from e
    if X.ndim != 2 or X.dtype.kind not in "biuf":
        raise ValueError(f"{path}: 'X' must be a 2-D numeric array, got {X.dtype} of shape {X.shape}")
    return X.astype(np.float64), y


def load_data(spec, label_column=None, *, n_features=None):
    """Load a data set from a file or a built-in name.

    Parameters
    ----------
    spec : str or path-like
        A CSV file (header row detected; ',', ';', tab or white space), an svmlight / libsvm file
        (``.svm``, ``.svmlight``, ``.libsvm`` or detected from the content; ``.gz`` and ``.bz2``
        too), an ``.npz`` file with arrays ``X`` and ``y``, or a built-in name (see
        :func:`list_datasets`; the synthetic ones as ``name:n_samples`` too).
    label_column : str, int or None, default=None
        CSV only: the label column by header name or index (negative from the end; a string of
        digits that is no header name is an index); None is the last column.
    n_features : int or None, default=None
        The number of features the data must have (a fitted model's ``n_features_in_``): an
        svmlight file is widened to it, and a CSV file with exactly that many columns (and no
        ``label_column``) is read as features without labels.

    Returns
    -------
    X : ndarray of float64 or CSR matrix (svmlight, int64 indices)
    y : ndarray or None
        Labels: int64 when all are integers, float64 when all are numbers, strings otherwise;
        None when the data has none.
    name : str
        The built-in name or the file's base name.

    Raises
    ------
    ValueError
        For a file that cannot be read as its format, a missing label column, a non-numeric
        feature cell (its row and column named), or an unknown name.
    FileNotFoundError
        When ``spec`` is neither a file nor a built-in name and looks like a path.
    """
    spec = os.fspath(spec)
    if not os.path.exists(spec):
        builtin = _builtin(spec)
        if builtin is None:
            if os.sep in spec or os.path.splitext(spec)[1]:
                raise FileNotFoundError(f"no such file: {spec}")
            raise ValueError(f"no file or built-in data set named {spec!r} (built-in: {', '.join(_BUILTIN)})")
        if label_column is not None:
            raise ValueError("label_column applies to CSV files only")
        return builtin
    if os.path.isdir(spec):
        raise ValueError(f"{spec} is a directory, not a data file")
    kind = "data"
    try:
        kind = _file_kind(spec)
        if kind != "csv" and label_column is not None:
            raise ValueError(f"label_column applies to CSV files only ({spec} is read as {kind})")
        if kind == "npz":
            X, y = _load_npz(spec)
        elif kind == "svmlight":
            X, y = _load_svmlight(spec, n_features)
        else:
            X, y = _load_csv(spec, label_column, n_features)
    except (UnicodeDecodeError, EOFError, OSError, csv.Error) as e:
        if isinstance(e, FileNotFoundError):
            raise
        raise ValueError(f"{spec}: cannot read the file as {kind} ({e})") from e
    return X, y, os.path.basename(spec)
