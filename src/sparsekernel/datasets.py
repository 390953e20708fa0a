"""Synthetic data sets of the papers the library implements."""

from __future__ import annotations

import numbers

import numpy as np

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
    """
    m, flip, block_size, dtype = _check_args(m, flip, block_size, dtype)
    seed = random_state if isinstance(random_state, np.random.SeedSequence) else np.random.SeedSequence(
        random_state if not isinstance(random_state, np.random.Generator) else random_state.integers(2**63))
    n_blocks = -(-m // block_size)
    for k, child in enumerate(seed.spawn(n_blocks)):
        n = min(block_size, m - k * block_size)
        rng = np.random.default_rng(child)
        y = np.full(n, -1.0, dtype=dtype)
        y[: (n + 1) // 2] = 1.0
        rng.shuffle(y)
        X = rng.standard_normal((n, 2), dtype=dtype)
        X *= _NSSVM_STD.astype(dtype)
        X += np.where(y[:, None] > 0, _NSSVM_MEAN_POS.astype(dtype), _NSSVM_MEAN_NEG.astype(dtype))
        if flip > 0.0:
            y[rng.random(n) < flip] *= -1.0
        yield X, y


def make_nssvm_gaussians(m, random_state=None, flip=0.0, *, block_size=1 << 20, dtype=np.float64):
    """Example 4.1 of the NSSVM paper (Zhou): m points in R^2 with labels in {-1, +1}.

    Returns ``(X, y)``, X of shape (m, 2). The paper generates 2m points and splits them evenly into
    training and test sets; two calls with different seeds give the same distribution. Generated in
    row blocks (:func:`iter_nssvm_gaussians`) straight into the output arrays, so m = 1e8 needs
    no Python loop over samples (1.6 GB of float64, 0.8 GB with ``dtype=np.float32``).
    The Bayes classifier sign(2 x1 - 2 x2) reaches NSSVM_BAYES_ACCURACY (96.93 %) without flips.
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
