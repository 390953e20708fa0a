"""Data sets of the conjugate-SMO benchmark (Torres-Barrán, Alaíz & Dorronsoro, section 4).

Every loader returns a :class:`CsmoSet`: the whole set the benchmark works on (the grid search
does its own 5-fold CV on it, Table 2 fits it whole), already preprocessed as described below,
with the numbers needed to map the paper's hyper-parameters onto it.

The paper's sets (its Table 1) and the stand-ins available in the data directory
---------------------------------------------------------------------------------------------------
name      paper n x d          here                                                 n x d
---------------------------------------------------------------------------------------------------
adult8    22,696 x 123         a9a training file (32,561 rows), a seeded random     22,696 x 123
                               subset of 22,696 rows (``RandomState(0)``) = a8a's    CSR {0,1}
                               size; a8a itself is not in the data directory
web8      49,749 x 300         w8a training file (the same file: LIBSVM web8=w8a)    49,749 x 300
                                                                                    CSR {0,1}
skin      245,057 x 3          uci/skin/Skin_NonSkin.txt.gz, all rows; skin = +1    245,057 x 3
mnist1    60,000 x 784         MNIST is not available: USPS training file            7,291 x 256
                               (usps/zip.train.gz), digit 1 = +1 vs the rest
abalone   4,177 x 8            libsvm/regression/abalone_scale                      4,177 x 8
cpusmall  6,143 x 12           libsvm/regression/cpusmall_scale_part70 + part30     8,192 x 12
                               (= the full LIBSVM cpusmall_scale); the paper's
                               6,143 rows are ~3/4 of it (it does not say which)
---------------------------------------------------------------------------------------------------

Preprocessing (the paper: "features were individually scaled to [-1, 1] range", svm-scale style)

* Dense sets (skin, mnist1, abalone, cpusmall): ``MinMaxScaler((-1, 1))`` fitted on the rows
  used (the whole set the benchmark works on; there is no held-out part).  abalone_scale and
  cpusmall_scale are already in [-1, 1] (the scaler is then almost the identity); skin's B, G, R
  go from 0..255 to [-1, 1]; USPS pixels are rescaled per pixel.
* Sparse binary sets (adult8, web8): every stored value is 1 (checked on load).  Mapping a
  {0, 1} feature to {-1, +1} (what svm-scale does) multiplies every squared distance by 4 and
  turns the matrices dense, so instead we keep the CSR {0, 1} data and multiply every RBF gamma
  by 4 (``gamma_factor``): exp(-g ||(2x-1) - (2z-1)||^2) = exp(-4g ||x - z||^2), i.e. the kernel
  matrix is *exactly* the one of the [-1, 1]-scaled data (features constant on the rows used
  contribute nothing either way).  The paper's gamma values (its grid, and 1/d in Table 2) are
  therefore passed to every estimator as ``gamma * gamma_factor``.
* Regression targets: abalone's rings are used raw (the paper's best MSE, 4.500, is the usual raw
  abalone MSE); cpusmall's target (0..99, variance ~339) is standardised (mean 0, variance 1 on
  the rows used): the paper's best MSE 0.028 is only possible on that scale (the usual raw
  cpusmall MSE is ~9, and 9 / 339 = 0.027), and the epsilon grid 2^-8..2^-1 is meant for it.

Subsampling (``n`` argument): a seeded random subset (``RandomState(seed)``), stratified by class
for classification (sklearn's ``train_test_split(train_size=n, stratify=y)``), rows kept in their
file order.  adult8's subsets are subsets of the 22,696-row adult8 set.  Scaling is fitted after
subsampling (on exactly the rows used).

Run ``python benchmarks/_csmo_data.py [name ...]`` for the check table.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
import _datasets  # noqa: E402
from _datasets import as_int32_indices, set_data_dir  # noqa: E402,F401  (re-exported)

CLASSIFICATION = ("adult8", "web8", "skin", "mnist1")
REGRESSION = ("abalone", "cpusmall")
ALL = CLASSIFICATION + REGRESSION

#: The paper's Table 1: (n, d) of the sets it used.
PAPER_SIZES = {
    "adult8": (22_696, 123), "web8": (49_749, 300), "skin": (245_057, 3),
    "mnist1": (60_000, 784), "abalone": (4_177, 8), "cpusmall": (6_143, 12),
}

ADULT8_ROWS = 22_696


@dataclass
class CsmoSet:
    """One preprocessed set (all rows the benchmark uses) and how it relates to the paper's."""

    name: str
    task: str                  # "classification" or "regression"
    X: object                  # dense float64 C-contiguous ndarray, or CSR float64 (int64 indices)
    y: np.ndarray              # float64; {-1, +1} for classification
    n_available: int           # rows of our full stand-in before subsampling
    gamma_factor: float        # pass gamma_paper * gamma_factor to the estimators (see module doc)
    source: str                # files and label rule
    preprocessing: str         # what was done to X (and y)
    notes: list[str] = field(default_factory=list)

    @property
    def n(self) -> int:
        return self.X.shape[0]

    @property
    def d(self) -> int:
        return self.X.shape[1]

    @property
    def sparse(self) -> bool:
        return sp.issparse(self.X)

    @property
    def X_peer(self):
        """The matrix for scikit-learn / sklearnex: CSR with int32 indices (dense X unchanged)."""
        return as_int32_indices(self.X)

    def gamma(self, gamma_paper: float) -> float:
        """The gamma to pass to an estimator for the paper's ``gamma_paper``."""
        return float(gamma_paper) * self.gamma_factor

    @property
    def paper_n(self) -> int:
        return PAPER_SIZES[self.name][0]

    def summary(self) -> dict:
        storage = (f"CSR nnz/row={self.X.nnz / max(self.n, 1):.1f}" if self.sparse
                   else "dense float64")
        counts = ""
        if self.task == "classification":
            counts = f"+1: {int(np.sum(self.y > 0))} / -1: {int(np.sum(self.y < 0))}"
        else:
            counts = f"y mean {self.y.mean():.3g} var {self.y.var():.3g}"
        return dict(name=self.name, task=self.task, n=self.n, d=self.d,
                    n_available=self.n_available, paper_n=self.paper_n,
                    paper_d=PAPER_SIZES[self.name][1], storage=storage, labels=counts,
                    gamma_factor=self.gamma_factor, source=self.source,
                    preprocessing=self.preprocessing)


# ---------------------------------------------------------------------------------------- helpers
def data_dir() -> Path:
    """The directory the loaders read from (shared with ``_datasets``)."""
    return _datasets._data_dir


def _require(*relative: str) -> list[Path]:
    paths = [data_dir() / r for r in relative]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise FileNotFoundError("missing data file(s): " + ", ".join(missing)
                                + " (set SPARSEKERNEL_DATA or call set_data_dir())")
    return paths


def _rows(n_total: int, n: int | None, y: np.ndarray | None, seed: int) -> np.ndarray | None:
    """Sorted indices of a seeded (stratified if ``y`` is given) subset of ``n`` rows, or None."""
    if n is None or n >= n_total:
        return None
    if y is None:
        return np.sort(np.random.RandomState(seed).choice(n_total, n, replace=False))
    from sklearn.model_selection import train_test_split

    idx, _ = train_test_split(np.arange(n_total), train_size=n, stratify=y, random_state=seed)
    return np.sort(idx)


def _take(X, rows):
    if rows is None:
        return X
    out = X[rows]
    if sp.issparse(X):   # scipy's row indexing may downcast int64 indices
        out = _datasets.with_index_dtype(out.tocsr(), X.indices.dtype)
    return out


def _minmax_pm1(X: np.ndarray) -> np.ndarray:
    from sklearn.preprocessing import MinMaxScaler

    return np.ascontiguousarray(MinMaxScaler(feature_range=(-1, 1)).fit_transform(X),
                                dtype=np.float64)


def _binary_csr(path: Path, n_features: int):
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(str(path), n_features=n_features)
    X = X.tocsr()
    X.sort_indices()
    if X.nnz and not np.all(X.data == 1.0):
        raise ValueError(f"{path.name}: expected binary {{0,1}} features")
    return X, np.where(y > 0, 1.0, -1.0)


_SPARSE_NOTE = ("binary {0,1} features kept as CSR; every gamma x4 = the kernel of the "
                "{-1,+1} ([-1,1]-scaled) data exactly")


# ---------------------------------------------------------------------------------------- loaders
def load_adult8(n: int | None = None, seed: int = 0) -> CsmoSet:
    (path,) = _require("libsvm/binary/a9a.gz")
    X, y = _binary_csr(path, 123)
    base = np.sort(np.random.RandomState(0).choice(X.shape[0], ADULT8_ROWS, replace=False))
    X, y = _take(X, base), y[base]
    rows = _rows(X.shape[0], n, y, seed)
    return CsmoSet("adult8", "classification", _take(X, rows), y if rows is None else y[rows],
                   ADULT8_ROWS, 4.0,
                   "a9a training file; a8a stand-in = 22,696 random rows (RandomState(0)); +1 = >50K",
                   _SPARSE_NOTE)


def load_web8(n: int | None = None, seed: int = 0) -> CsmoSet:
    (path,) = _require("libsvm/binary/w8a.gz")
    X, y = _binary_csr(path, 300)
    rows = _rows(X.shape[0], n, y, seed)
    return CsmoSet("web8", "classification", _take(X, rows), y if rows is None else y[rows],
                   X.shape[0], 4.0, "w8a training file (= LIBSVM web8)", _SPARSE_NOTE)


def load_skin(n: int | None = None, seed: int = 0) -> CsmoSet:
    (path,) = _require("uci/skin/Skin_NonSkin.txt.gz")
    data = np.loadtxt(path, delimiter="\t")
    X, y = data[:, :3], np.where(data[:, 3] == 1, 1.0, -1.0)
    rows = _rows(len(y), n, y, seed)
    if rows is not None:
        X, y = X[rows], y[rows]
    return CsmoSet("skin", "classification", _minmax_pm1(X), y, len(data), 1.0,
                   "UCI skin segmentation (= LIBSVM skin_nonskin), all rows; class 1 (skin) = +1",
                   "B, G, R: MinMaxScaler((-1, 1)) on the rows used")


def load_mnist1(n: int | None = None, seed: int = 0) -> CsmoSet:
    (path,) = _require("usps/zip.train.gz")
    data = np.loadtxt(path)
    X, y = data[:, 1:], np.where(data[:, 0] == 1, 1.0, -1.0)
    rows = _rows(len(y), n, y, seed)
    if rows is not None:
        X, y = X[rows], y[rows]
    return CsmoSet("mnist1", "classification", _minmax_pm1(X), y, len(data), 1.0,
                   "MNIST stand-in: USPS training file (7,291 x 256), digit 1 = +1 vs the rest",
                   "pixels: MinMaxScaler((-1, 1)) on the rows used")


def _libsvm_regression(n_features: int, *relative: str):
    from sklearn.datasets import load_svmlight_file

    parts = [load_svmlight_file(str(p), n_features=n_features) for p in _require(*relative)]
    X = np.vstack([Xp.toarray() for Xp, _ in parts]).astype(np.float64)
    y = np.concatenate([t for _, t in parts]).astype(np.float64)
    return X, y


def load_abalone(n: int | None = None, seed: int = 0) -> CsmoSet:
    X, y = _libsvm_regression(8, "libsvm/regression/abalone_scale")
    n_all = len(y)
    rows = _rows(n_all, n, None, seed)
    if rows is not None:
        X, y = X[rows], y[rows]
    return CsmoSet("abalone", "regression", _minmax_pm1(X), y, n_all, 1.0,
                   "LIBSVM abalone_scale (UCI abalone), target = rings (raw)",
                   "features: MinMaxScaler((-1, 1)) on the rows used (already [-1,1]); target raw")


def load_cpusmall(n: int | None = None, seed: int = 0) -> CsmoSet:
    X, y = _libsvm_regression(12, "libsvm/regression/cpusmall_scale_part70",
                              "libsvm/regression/cpusmall_scale_part30")
    n_all = len(y)
    rows = _rows(n_all, n, None, seed)
    if rows is not None:
        X, y = X[rows], y[rows]
    y = (y - y.mean()) / y.std()
    return CsmoSet("cpusmall", "regression", _minmax_pm1(X), y, n_all, 1.0,
                   "LIBSVM cpusmall_scale = part70 + part30 (8,192 rows); paper: 6,143 rows",
                   "features: MinMaxScaler((-1, 1)) on the rows used; target standardised "
                   "(paper's MSE 0.028 implies it)")


LOADERS = {"adult8": load_adult8, "web8": load_web8, "skin": load_skin, "mnist1": load_mnist1,
           "abalone": load_abalone, "cpusmall": load_cpusmall}


def load(name: str, n: int | None = None, seed: int = 0) -> CsmoSet:
    """Set ``name`` (one of :data:`ALL`), subsampled to ``n`` rows if ``n`` is given."""
    if name not in LOADERS:
        raise KeyError(f"unknown data set {name!r}; choose from {ALL}")
    return LOADERS[name](n, seed)


def cv_splitter(task: str, n_splits: int = 5, seed: int = 0):
    """The 5-fold splitter every method of a grid search shares (shuffled, ``random_state=seed``)."""
    from sklearn.model_selection import KFold, StratifiedKFold

    if task == "classification":
        return StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=seed)
    return KFold(n_splits=n_splits, shuffle=True, random_state=seed)


def check_table(names=ALL, file=sys.stdout) -> None:
    for name in names:
        try:
            s = load(name).summary()
        except FileNotFoundError as exc:
            print(f"{name}: {exc}", file=file)
            continue
        print(f"{name}: {s['n']} x {s['d']} (paper {s['paper_n']} x {s['paper_d']}), {s['storage']}, "
              f"{s['labels']}, gamma x{s['gamma_factor']:g}", file=file)


if __name__ == "__main__":
    check_table(sys.argv[1:] or ALL)
