"""Data sets and shared helpers for the kernel logistic regression benchmarks.

Two papers set the protocols (both in ``shared/papers``):

* S-KLR: Consolo, Manno & Amaldi, sparse KLR (section 5.1, Table 1).
* Keerthi, Duan, Shevade & Poo (2005), "A fast dual algorithm for kernel
  logistic regression" (section 6, Tables 1-4).

Every loader returns a named tuple that also unpacks like a plain tuple:
:class:`Dataset` ``(X, y, description)`` for a full set (S-KLR does its own
5-fold CV) or :class:`TrainTest` ``(X_train, y_train, X_test, y_test,
description)`` for a fixed split (Keerthi).  ``X`` is a C-contiguous
``float64`` ndarray (the a9a subsets are CSR unless ``dense=True``), ``y`` is
``float64`` in {-1, +1}.  Loaders never rescale: S-KLR scales every feature
to [0, 1] inside each CV fold (use :func:`scale_unit`); the Keerthi sets are
Rätsch's already standardised features, which is what his sigma^2 refer to.
A missing data file raises ``FileNotFoundError`` naming the file, so a
benchmark can catch it and skip that set.  The data directory is the one of
``_datasets`` (``SPARSEKERNEL_DATA`` or :func:`set_data_dir`).

S-KLR Table 1 (``TABLE1``; paper N x p in brackets)
---------------------------------------------------
--------------------------------------------------------------------------------------------------
name        source file(s) under the data directory          loaded       +1 class / notes
--------------------------------------------------------------------------------------------------
banknote    uci/banknote/data_banknote_authentication.txt   1372 x 4     class 1 (610)  [1372 x 4]
coil2000    uci/coil2000/ticdata2000.txt (5822, last col     9822 x 85    CARAVAN = 1 (586)
            = target) + ticeval2000.txt with                              [9822 x 85]
            tictgts2000.txt (4000 test targets)
diabetes    uci/pima/pima-indians-diabetes.data              768 x 8      class 1 = diabetic (268) [768 x 8]
ionosphere  uci/ionosphere/ionosphere.data                   351 x 34     g = good (225) [351 x 34];
                                                                          column 2 is constant 0
magic       uci/magic/magic04.data.gz                        19020 x 10   g = gamma (12332) [19020 x 10]
monk2       uci/monks2/monks-2.test (all 432 attribute       432 x 6      class 1 (142) [432 x 6];
            combinations; a1..a6 as integers, id dropped)                 features are the codes 1..4
ring        raetsch/ringnorm.csv.gz (full 7400 rows)         7400 x 20    file's +1 (3664) [7400 x 20]
sonar       uci/sonar/sonar.all-data                         208 x 60     M = mine (111) [208 x 60]
spambase    uci/spambase/spambase.data                       4601 x 57    spam (1813) [4597 x 57];
                                                                          see deviation 1
twonorm     uci/twonorm/twonorm.csv.gz                       7400 x 20    file's +1 (3703) [7400 x 20]
waveform    uci/waveform/waveform.data (3-class)             5000 x 21    class 1 (1647) vs 0+2,
                                                                          S-KLR footnote 3 [5000 x 21];
                                                                          see deviations 2, 3
wisconsin   uci/wdbc/wdbc.data (id column dropped)           569 x 30     M = malignant (212) [569 x 30]
--------------------------------------------------------------------------------------------------

Keerthi et al. (``KEERTHI_SETS``; their Table 1 gives d, train, test)
---------------------------------------------------------------------
Keerthi used Rätsch's IDA versions (his Table 1 sizes are exactly the IDA
train/test sizes) but does not say which realisation; we use realisation 1
where it exists.  Features are Rätsch's (standardised; splice is not) and are
used as they are.

--------------------------------------------------------------------------------------------------
name        source                 train/test   split
--------------------------------------------------------------------------------------------------
banana      raetsch/banana.csv     400 / 4900   official realisation 1 (raetsch/splits) [2, 400, 4900]
splice      raetsch/splice.csv.gz  1000 / 2175  no official split here: stratified random split of
                                                the same sizes, ``random_state=seed`` (default 0) [60, 1000, 2175]
waveform    raetsch/waveform.csv.gz 400 / 4600  same substitute [21, 400, 4600]
image       raetsch/image.csv.gz   1300 / 1010  same substitute [18, 1300, 1010]
tree        --                     (700/11692)  not available anywhere here (Bailey et al. 1993)
--------------------------------------------------------------------------------------------------

Kernel: Keerthi writes K(x, z) = exp(-||x - z||^2 / (2 sigma^2)), so
gamma = 1 / (2 sigma^2) in the ``exp(-gamma ||x - z||^2)`` convention
(S-KLR writes the same kernel with sigma = 1, i.e. gamma = 0.5).

Also here: :func:`keerthi_toy` (Table 3's 2-D Gaussian problem, with the exact
Bayes posterior in :func:`keerthi_toy_posterior`) and :func:`load_adult_subset`
(the a9a scaling-exponent experiment: Platt's Adult sizes 1605 ... 22696,
drawn as nested seeded subsets of the a9a training file because a1a..a8a are
not in the data directory).

Deviations from the papers (kept, not hacked away)
--------------------------------------------------
1. spambase: the UCI file has 4601 rows, S-KLR Table 1 says 4597.  The four
   rows cannot be identified (they are not simply duplicates: the file has
   391 duplicate rows); the paper probably used another copy (KEEL's
   spambase is listed with 4597 rows).  We keep all 4601.
2. uci/waveform/waveform.data line 43 holds ``0.6<TAB>8`` in the last feature
   column; it is read as 0.68 (the tab is dropped).  The Rätsch copy
   (raetsch/waveform.csv.gz, the same 5000 points standardised and reordered)
   confirms 0.68: after that fix its column x21 is an exact affine image of ours.
3. uci/waveform/waveform.data line 2 starts with ``0.69``; the Rätsch copy
   implies ``-0.69`` (every other value of all 5000 rows matches).  We keep
   the file's value; the effect on any benchmark is nil.
4. Keerthi's splice, waveform and image realisation files are not in the
   data directory (only banana's realisation 1 is); see the table above.
5. Keerthi's "tree" set is not available; Table 4 can be run on 4 of its 5 sets.

Run ``python benchmarks/_klr_data.py`` for the check table (loaded vs paper
shapes, class counts).
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
import _datasets  # noqa: E402
from _datasets import set_data_dir  # noqa: E402,F401  (re-exported)


class Dataset(NamedTuple):
    """A full data set; the benchmark does its own cross-validation."""

    X: np.ndarray
    y: np.ndarray
    description: str


class TrainTest(NamedTuple):
    """A fixed train/test split."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    description: str


# ---------------------------------------------------------------------------
# file access
# ---------------------------------------------------------------------------

def data_dir() -> Path:
    """The directory the loaders read from (shared with ``_datasets``)."""
    return _datasets._data_dir


def _require(*relative: str) -> list[Path]:
    """Absolute paths of ``relative`` files; ``FileNotFoundError`` if any is missing."""
    paths = [data_dir() / r for r in relative]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise FileNotFoundError(
            "missing data file(s): " + ", ".join(missing)
            + " (set SPARSEKERNEL_DATA or call set_data_dir())"
        )
    return paths


def _pm1(mask: np.ndarray) -> np.ndarray:
    """+1 where ``mask`` holds, -1 elsewhere, as float64."""
    return np.where(mask, 1.0, -1.0)


def _dense(X: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(X, dtype=np.float64)


def _csv_with_header(relative: str) -> tuple[np.ndarray, np.ndarray]:
    """Rätsch-style CSV ``x1,...,xd,y`` with a header row; y already in {-1, +1}."""
    (path,) = _require(relative)
    data = np.loadtxt(path, delimiter=",", skiprows=1)
    return _dense(data[:, :-1]), data[:, -1].astype(np.float64)


# ---------------------------------------------------------------------------
# S-KLR Table 1: full data sets (features NOT scaled here)
# ---------------------------------------------------------------------------

def load_banknote() -> Dataset:
    """Banknote authentication (UCI 267): 4 wavelet features, class 1 is +1."""
    (path,) = _require("uci/banknote/data_banknote_authentication.txt")
    data = np.loadtxt(path, delimiter=",")
    return Dataset(_dense(data[:, :-1]), _pm1(data[:, -1] == 1),
                   "banknote: UCI 267, class 1 = +1")


def load_coil2000() -> Dataset:
    """COIL 2000 insurance: ticdata2000 (5822) + ticeval2000 (4000, targets in tictgts2000).

    85 integer-coded features; CARAVAN = 1 (policy holder) is +1.
    """
    train, evl, tgts = _require("uci/coil2000/ticdata2000.txt",
                                "uci/coil2000/ticeval2000.txt",
                                "uci/coil2000/tictgts2000.txt")
    a = np.loadtxt(train)          # 86 columns, last = CARAVAN
    b = np.loadtxt(evl)            # 85 columns
    t = np.loadtxt(tgts)           # 4000 targets (CRLF lines)
    if a.shape[1] != 86 or b.shape[1] != 85 or len(t) != len(b):
        raise ValueError(f"coil2000: unexpected shapes {a.shape}, {b.shape}, {t.shape}")
    X = np.vstack([a[:, :85], b])
    y = np.concatenate([a[:, 85], t])
    return Dataset(_dense(X), _pm1(y == 1),
                   "coil2000: ticdata2000 + ticeval2000/tictgts2000, CARAVAN=1 is +1")


def load_diabetes() -> Dataset:
    """Pima Indians diabetes (S-KLR's "diabetes"): 8 features, class 1 (diabetic) is +1."""
    (path,) = _require("uci/pima/pima-indians-diabetes.data")
    data = np.loadtxt(path, delimiter=",")
    return Dataset(_dense(data[:, :-1]), _pm1(data[:, -1] == 1),
                   "diabetes: UCI Pima, class 1 = +1")


def load_ionosphere() -> Dataset:
    """Ionosphere (UCI 52): 34 features (the 2nd is constant 0), 'g' (good) is +1."""
    (path,) = _require("uci/ionosphere/ionosphere.data")
    raw = np.loadtxt(path, delimiter=",", dtype=str)
    return Dataset(_dense(raw[:, :-1].astype(np.float64)), _pm1(raw[:, -1] == "g"),
                   "ionosphere: UCI 52, g = +1 (feature 2 constant)")


def load_magic_full() -> Dataset:
    """MAGIC gamma telescope, all 19020 rows unscaled; 'g' (gamma) is +1.

    (``_datasets.load_magic`` is the SVC benchmark's standardised 70/30 split.)
    """
    (path,) = _require("uci/magic/magic04.data.gz")
    raw = np.loadtxt(path, delimiter=",", dtype=str)
    return Dataset(_dense(raw[:, :-1].astype(np.float64)), _pm1(raw[:, -1] == "g"),
                   "magic: UCI 159, g = +1")


def load_monk2() -> Dataset:
    """MONK-2, the 432-row ``monks-2.test`` file (all attribute combinations).

    Lines are ``class a1 a2 a3 a4 a5 a6 id``; the six categorical attributes
    are kept as their integer codes (1..4), class 1 is +1.
    """
    (path,) = _require("uci/monks2/monks-2.test")
    data = np.loadtxt(path, usecols=range(7))
    return Dataset(_dense(data[:, 1:7]), _pm1(data[:, 0] == 1),
                   "monk2: monks-2.test, a1..a6 integer codes, class 1 = +1")


def load_ring() -> Dataset:
    """Ringnorm (S-KLR's "ring"): the full 7400 rows of the Rätsch file."""
    X, y = _csv_with_header("raetsch/ringnorm.csv.gz")
    return Dataset(X, y, "ring: raetsch/ringnorm.csv.gz, all 7400 rows, file's labels")


def load_sonar() -> Dataset:
    """Sonar (UCI 151): 60 features, 'M' (mine) is +1, 'R' (rock) is -1."""
    (path,) = _require("uci/sonar/sonar.all-data")
    raw = np.loadtxt(path, delimiter=",", dtype=str)
    return Dataset(_dense(raw[:, :-1].astype(np.float64)), _pm1(raw[:, -1] == "M"),
                   "sonar: UCI 151, M = +1")


def load_spambase() -> Dataset:
    """Spambase (UCI 94): 4601 x 57 (S-KLR Table 1 says 4597, see module doc); spam is +1."""
    (path,) = _require("uci/spambase/spambase.data")
    data = np.loadtxt(path, delimiter=",")
    return Dataset(_dense(data[:, :-1]), _pm1(data[:, -1] == 1),
                   "spambase: UCI 94, 4601 rows (paper 4597), spam = +1")


def load_twonorm() -> Dataset:
    """Twonorm (DELVE, raw values): 7400 x 20, labels as in the file."""
    X, y = _csv_with_header("uci/twonorm/twonorm.csv.gz")
    return Dataset(X, y, "twonorm: uci/twonorm (DELVE), file's labels")


def _waveform_3class() -> tuple[np.ndarray, np.ndarray]:
    """UCI waveform (version 1), 21 features and class 0/1/2.

    Line 43 of the file carries a stray tab inside a number (``0.6<TAB>8``);
    dropping the tab gives 0.68, which the Rätsch copy confirms.
    """
    (path,) = _require("uci/waveform/waveform.data")
    text = path.read_text().replace("\t", "")
    data = np.loadtxt(io.StringIO(text), delimiter=",")
    return _dense(data[:, :-1]), data[:, -1]


def load_waveform_binary() -> Dataset:
    """Waveform, class 1 (+1) against classes 0 and 2 (-1), as in S-KLR's footnote 3."""
    X, c = _waveform_3class()
    return Dataset(X, _pm1(c == 1), "waveform: UCI 107, class 1 = +1 vs 0+2")


def load_wisconsin() -> Dataset:
    """Wisconsin diagnostic breast cancer (WDBC): 30 features, 'M' (malignant) is +1."""
    (path,) = _require("uci/wdbc/wdbc.data")
    raw = np.loadtxt(path, delimiter=",", dtype=str)
    return Dataset(_dense(raw[:, 2:].astype(np.float64)), _pm1(raw[:, 1] == "M"),
                   "wisconsin: UCI WDBC, M = +1 (id column dropped)")


#: S-KLR Table 1, in the paper's order: abbreviation -> loader.
TABLE1: dict[str, Callable[[], Dataset]] = {
    "banknote": load_banknote,          # paper N=1372,  p=4
    "coil2000": load_coil2000,          # paper N=9822,  p=85
    "diabetes": load_diabetes,          # paper N=768,   p=8
    "ionosphere": load_ionosphere,      # paper N=351,   p=34
    "magic": load_magic_full,           # paper N=19020, p=10
    "monk2": load_monk2,                # paper N=432,   p=6
    "ring": load_ring,                  # paper N=7400,  p=20
    "sonar": load_sonar,                # paper N=208,   p=60
    "spambase": load_spambase,          # paper N=4597,  p=57  (file: 4601 rows, kept)
    "twonorm": load_twonorm,            # paper N=7400,  p=20
    "waveform": load_waveform_binary,   # paper N=5000,  p=21
    "wisconsin": load_wisconsin,        # paper N=569,   p=30
}

#: S-KLR Table 1 (N, p) as printed.
TABLE1_PAPER_SHAPE: dict[str, tuple[int, int]] = {
    "banknote": (1372, 4),
    "coil2000": (9822, 85),
    "diabetes": (768, 8),
    "ionosphere": (351, 34),
    "magic": (19020, 10),
    "monk2": (432, 6),
    "ring": (7400, 20),
    "sonar": (208, 60),
    "spambase": (4597, 57),
    "twonorm": (7400, 20),
    "waveform": (5000, 21),
    "wisconsin": (569, 30),
}

#: S-KLR section 5.1 protocol (App. C for lambda-choice).
SKLR_PROTOCOL = {
    "scaling": "every feature min-max scaled to [0, 1]",
    "kernel": "exp(-||x-z||^2 / (2 sigma^2)), sigma = 1",
    "gamma": 0.5,
    "cv_folds": 5,
    "validation_fraction": 0.05,   # of each training fold, to pick C (and lambda); then refit
    "C_grid": [10.0 ** r for r in range(-4, 5)],
    "lambda_grid": "10 equally spaced values in [0, C], both ends included",
    "lambda_choice": "lambda = C / 10 (App. C)",
    "tol": 1e-5,                   # optimality conditions (27)
    "max_iter": 10_000,
    "bound_offset": 1e-5,          # gamma of the bounds 0bar = gamma, Cbar = C - gamma
    "zero_rule": "alpha_i at the lower bound 0bar counts as zero (not a kept point)",
    "init": "alpha_i = 1/m1 (class 1), 1/m2 (class 2)",
}


# ---------------------------------------------------------------------------
# Keerthi et al. Tables 1, 2 and 4: Rätsch IDA sets with a train/test split
# ---------------------------------------------------------------------------

#: Keerthi Table 1: (input variables, training examples, test examples).
KEERTHI_TABLE1: dict[str, tuple[int, int, int]] = {
    "banana": (2, 400, 4900),
    "splice": (60, 1000, 2175),
    "waveform": (21, 400, 4600),
    "tree": (18, 700, 11692),
    "image": (18, 1300, 1010),
}

#: sigma^2 fixed for the timing runs of Keerthi Table 2.
KEERTHI_SIGMA2: dict[str, float] = {
    "banana": 0.4297,
    "splice": 43.8856,
    "waveform": 15.2735,
    "tree": 2.00,
    "image": 1.3776,
}


def gamma_from_sigma2(sigma2: float) -> float:
    """gamma of exp(-gamma ||x-z||^2) for Keerthi's exp(-||x-z||^2 / (2 sigma^2))."""
    return 1.0 / (2.0 * sigma2)


def _raetsch_split(name: str, seed: int | None) -> TrainTest:
    """Rätsch ``name`` split to Keerthi's Table 1 sizes (see :func:`raetsch_split`)."""
    d, n_train, n_test = KEERTHI_TABLE1[name]
    return raetsch_split(name, n_train, n_test, seed, d=d)


def raetsch_split(name: str, n_train: int, n_test: int, seed: int | None, d: int | None = None) -> TrainTest:
    """Rätsch ``name`` (raetsch/<name>.csv[.gz]) split into n_train / n_test rows.

    ``seed=None``: official realisation 1 if its index files exist, else a
    stratified random split with ``random_state=0``.  An integer ``seed``
    always gives the stratified random split with that seed.
    """
    from sklearn.model_selection import train_test_split

    candidates = (f"raetsch/{name}.csv.gz", f"raetsch/{name}.csv")
    file = next((f for f in candidates if (data_dir() / f).is_file()), candidates[-1])
    X, y = _csv_with_header(file)
    if len(y) < n_train + n_test or (d is not None and X.shape[1] != d):
        raise ValueError(f"{name}: loaded {X.shape}, expected {n_train + n_test} rows and {d} columns")
    split_files = [data_dir() / f"raetsch/splits/{name}_{part}_idx.csv"
                   for part in ("train", "test")]
    if seed is None and all(p.is_file() for p in split_files):
        train, test = (_datasets._first_line_indices(p) for p in split_files)
        how = "official realisation 1"
    else:
        seed = 0 if seed is None else seed
        train, test = train_test_split(np.arange(len(y)), train_size=n_train,
                                       test_size=n_test, stratify=y, random_state=seed)
        how = f"stratified random split, random_state={seed}"
        if not all(p.is_file() for p in split_files):
            how += " (no official split here)"
    if len(train) != n_train or len(test) != n_test:
        raise ValueError(f"{name}: split sizes {len(train)}/{len(test)}, "
                         f"expected {n_train}/{n_test}")
    return TrainTest(X[train], y[train], X[test], y[test],
                     f"{name}: Rätsch IDA {n_train}/{n_test}, {how}")


def load_keerthi_banana(seed: int | None = None) -> TrainTest:
    """Rätsch banana, 400/4900: official realisation 1 (``seed`` forces a random split)."""
    return _raetsch_split("banana", seed)


def load_keerthi_splice(seed: int | None = None) -> TrainTest:
    """Rätsch splice, 1000/2175: seeded stratified split (realisations not available)."""
    return _raetsch_split("splice", seed)


def load_keerthi_waveform(seed: int | None = None) -> TrainTest:
    """Rätsch waveform (binary), 400/4600: seeded stratified split."""
    return _raetsch_split("waveform", seed)


def load_keerthi_image(seed: int | None = None) -> TrainTest:
    """Rätsch image, 1300/1010: seeded stratified split."""
    return _raetsch_split("image", seed)


#: Keerthi Tables 2 and 4 sets available here: name -> (loader, gamma = 1/(2 sigma^2)).
#: "tree" (Table 1/2/4) is not available.
KEERTHI_SETS: dict[str, tuple[Callable[..., TrainTest], float]] = {
    "banana": (load_keerthi_banana, gamma_from_sigma2(KEERTHI_SIGMA2["banana"])),
    "splice": (load_keerthi_splice, gamma_from_sigma2(KEERTHI_SIGMA2["splice"])),
    "waveform": (load_keerthi_waveform, gamma_from_sigma2(KEERTHI_SIGMA2["waveform"])),
    "image": (load_keerthi_image, gamma_from_sigma2(KEERTHI_SIGMA2["image"])),
}

#: Keerthi Table 4 sets (tuned by 5-fold CV on the training part): the four above.
KEERTHI_TABLE4 = ["banana", "image", "splice", "waveform"]
KEERTHI_MISSING = {"tree": "USGS land-use set of Bailey et al. (1993); not obtainable"}

#: Keerthi section 6 protocol.
KEERTHI_PROTOCOL = {
    "kernel": "exp(-||x-z||^2 / (2 sigma^2))",
    "tau": 1e-6,                      # stop when b_low >= b_up - 2 tau (3.11)
    "tol_libsvm_meaning": 2e-6,       # max KKT violation b_up - b_low = 2 tau (DESIGN.md)
    "C_grid_table2": [10.0 ** r for r in range(-4, 5)],
    "init": "alpha_i = C/m1 (class 1), C/m2 (class 2); same start for L-BFGS",
    "timed": "SMO training time to (3.11); L-BFGS time to reach the primal value "
             "E(w(alpha), b) of the SMO solution, b = (b_low + b_up)/2 (3.12)",
    "lbfgs": "Liu & Nocedal L-BFGS on the primal (1.5) in (alpha, b), 5 memory steps; "
             "runs over 50000 s abandoned ('-')",
    "newton_inner_tol": "phi'(t) < 0.1 tau",
    "near_bound_mu": "1e3 x machine epsilon (NBG group, two-loop SMO)",
    "hardware": "C code, Sun Blade 100, 500 MHz UltraSPARC-IIe, Solaris",
    "table4_tuning": "5-fold CV over (C, sigma): 10x10 coarse grid in (log C, log sigma), "
                     "then 20x20 fine grid in (C, sigma) around the best pair; "
                     "test NLL (sum over the test set) and test error rate",
}


# ---------------------------------------------------------------------------
# Keerthi Table 3: 2-D Gaussian toy problem
# ---------------------------------------------------------------------------

#: Class 1 (y = +1) and class 2 (y = -1): means and diagonal covariances (variances).
TOY_MEAN = {+1: np.array([-2.0, 0.0]), -1: np.array([2.0, 0.0])}
TOY_VAR = {+1: np.array([1.0, 2.0]), -1: np.array([2.0, 1.0])}


def keerthi_toy(n_train: int = 400, n_test: int = 20_000, seed: int = 0) -> TrainTest:
    """Keerthi Table 3 problem: two 2-D Gaussians with equal priors.

    Class 1 (+1): mean (-2, 0), covariance Diag{1, 2}; class 2 (-1): mean
    (2, 0), covariance Diag{2, 1}.  Labels are drawn from the prior (so class
    sizes vary around n/2).  Train and test come from independent streams
    spawned from ``seed``, so the test set does not depend on ``n_train``.
    The Bayes error is about 0.0464 (Monte Carlo, 4e6 points).
    """
    streams = np.random.SeedSequence(seed).spawn(2)

    def draw(n: int, ss: np.random.SeedSequence) -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.default_rng(ss)
        y = _pm1(rng.random(n) < 0.5)
        z = rng.standard_normal((n, 2))
        pos = y > 0
        X = np.where(pos[:, None],
                     TOY_MEAN[+1] + z * np.sqrt(TOY_VAR[+1]),
                     TOY_MEAN[-1] + z * np.sqrt(TOY_VAR[-1]))
        return _dense(X), y

    X_train, y_train = draw(n_train, streams[0])
    X_test, y_test = draw(n_test, streams[1])
    return TrainTest(X_train, y_train, X_test, y_test,
                     f"Keerthi toy: 2-D Gaussians, {n_train}/{n_test}, seed={seed}")


def keerthi_toy_posterior(X: np.ndarray) -> np.ndarray:
    """Exact P(y = +1 | x) of the toy problem (equal priors): the Bayes model."""
    X = np.asarray(X, dtype=np.float64)

    def log_density(c: int) -> np.ndarray:
        v = TOY_VAR[c]
        return -0.5 * np.sum((X - TOY_MEAN[c]) ** 2 / v + np.log(2 * np.pi * v), axis=1)

    return 1.0 / (1.0 + np.exp(log_density(-1) - log_density(+1)))


def bayes_reference(X: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(NLL summed over the set, error rate) of the Bayes classifier on (X, y)."""
    p = np.clip(keerthi_toy_posterior(X), 1e-300, 1 - 1e-16)
    nll = -np.sum(np.where(y > 0, np.log(p), np.log1p(-p)))
    err = np.mean(np.where(p > 0.5, 1.0, -1.0) != y)
    return float(nll), float(err)


# ---------------------------------------------------------------------------
# Keerthi scaling-exponent experiment on Adult
# ---------------------------------------------------------------------------

#: Platt's adult.zip training-set sizes (LIBSVM a1a..a8a).
ADULT_SIZES = (1605, 2265, 3185, 4781, 6414, 11220, 16100, 22696)
ADULT_SCALING = {
    "sizes": ADULT_SIZES,
    "linear_C": 0.05,
    "rbf_C": 1.0,
    "rbf_sigma2": 10.0,
    "rbf_gamma": gamma_from_sigma2(10.0),   # 0.05
    "paper_exponent": 2.2,                  # both kernels: time ~ m^2.2 (log-log slope)
}


def load_adult_subset(m: int, seed: int = 0, dense: bool = False) -> Dataset:
    """First ``m`` rows of a seeded permutation of the a9a training file.

    Subsets for different ``m`` with the same seed are nested.  a1a..a8a
    themselves are not in the data directory; they are subsets of the same
    32561 Adult training rows.  ``X`` is CSR (123 binary features) unless
    ``dense``.
    """
    from sklearn.datasets import load_svmlight_file

    (path,) = _require("libsvm/binary/a9a.gz")
    X, y = load_svmlight_file(str(path), n_features=123)
    if not 0 < m <= X.shape[0]:
        raise ValueError(f"m must be in 1..{X.shape[0]}, got {m}")
    rows = np.random.RandomState(seed).permutation(X.shape[0])[:m]
    X = X.tocsr()[rows]
    X = _dense(X.toarray()) if dense else _datasets.as_int32_indices(X)
    return Dataset(X, y[rows].astype(np.float64),
                   f"adult: a9a train subset m={m}, seed={seed}")


# ---------------------------------------------------------------------------
# shared preprocessing
# ---------------------------------------------------------------------------

def scale_unit(X_train: np.ndarray, X_test: np.ndarray | None = None):
    """Min-max scale to [0, 1], fitted on ``X_train`` (sklearn ``MinMaxScaler``).

    Features constant on the training set map to 0 in both sets.  Test
    values are not clipped (they may fall slightly outside [0, 1]).
    Returns ``X_train_scaled`` or ``(X_train_scaled, X_test_scaled)``.
    """
    from sklearn.preprocessing import MinMaxScaler

    scaler = MinMaxScaler().fit(X_train)
    constant = scaler.data_range_ == 0

    def apply(X: np.ndarray) -> np.ndarray:
        Z = _dense(scaler.transform(X))
        Z[:, constant] = 0.0
        return Z

    if X_test is None:
        return apply(X_train)
    return apply(X_train), apply(X_test)


def stratified_folds(y: np.ndarray, k: int = 5, seed: int = 0
                     ) -> list[tuple[np.ndarray, np.ndarray]]:
    """``k`` stratified shuffled folds as (train_idx, test_idx) (``StratifiedKFold``)."""
    from sklearn.model_selection import StratifiedKFold

    skf = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
    return list(skf.split(np.zeros((len(y), 1)), y))


def validation_split(y: np.ndarray, fraction: float = 0.05, seed: int = 0
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Stratified (fit_idx, val_idx) holding out ``fraction`` (S-KLR: 5% of a training fold)."""
    from sklearn.model_selection import train_test_split

    idx = np.arange(len(y))
    fit, val = train_test_split(idx, test_size=fraction, stratify=y, random_state=seed)
    return np.sort(fit), np.sort(val)


# ---------------------------------------------------------------------------
# self-check
# ---------------------------------------------------------------------------

def _counts(y: np.ndarray) -> str:
    return f"-1:{int(np.sum(y < 0))} +1:{int(np.sum(y > 0))}"


def check_table(file=sys.stdout) -> bool:
    """Load everything, print loaded vs paper shapes; True if every loader worked."""
    ok = True
    print(f"{'S-KLR set':<11} {'loaded':>11} {'paper':>11}  {'classes':<18} note", file=file)
    for name, loader in TABLE1.items():
        paper = TABLE1_PAPER_SHAPE[name]
        try:
            X, y, _ = loader()
        except (FileNotFoundError, ValueError) as exc:
            ok = False
            print(f"{name:<11} {'ERROR':>11} {str(paper):>11}  {exc}", file=file)
            continue
        same = X.shape == paper
        ok &= X.dtype == np.float64 and set(np.unique(y)) == {-1.0, 1.0}
        note = "ok" if same else "DIFFERS (see module doc)"
        print(f"{name:<11} {str(X.shape):>11} {str(paper):>11}  {_counts(y):<18} {note}",
              file=file)
    print(file=file)
    print(f"{'Keerthi set':<11} {'train':>11} {'test':>11}  {'paper d/tr/te':<15} "
          f"{'gamma':>8}  split", file=file)
    for name, (loader, gamma) in KEERTHI_SETS.items():
        try:
            s = loader()
        except (FileNotFoundError, ValueError) as exc:
            ok = False
            print(f"{name:<11} ERROR {exc}", file=file)
            continue
        ok &= (s.X_train.shape[1], len(s.y_train), len(s.y_test)) == KEERTHI_TABLE1[name]
        print(f"{name:<11} {str(s.X_train.shape):>11} {str(s.X_test.shape):>11}  "
              f"{str(KEERTHI_TABLE1[name]):<15} {gamma:8.5f}  "
              f"{s.description.split(', ', 1)[1]}; train {_counts(s.y_train)}", file=file)
    for name, why in KEERTHI_MISSING.items():
        print(f"{name:<11} missing: {why}", file=file)
    toy = keerthi_toy()
    nll, err = bayes_reference(toy.X_test, toy.y_test)
    print(f"\ntoy: train {toy.X_train.shape} {_counts(toy.y_train)}, test {toy.X_test.shape}; "
          f"Bayes on this test set: NLL {nll:.1f}, error {err:.4f}", file=file)
    a = load_adult_subset(ADULT_SIZES[0])
    print(f"adult subset: {a.X.shape} {type(a.X).__name__} {_counts(a.y)}", file=file)
    return ok


if __name__ == "__main__":
    sys.exit(0 if check_table() else 1)
