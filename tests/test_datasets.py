"""sparsekernel.datasets: NSSVM Example 4.1 (with the variance of the paper's Table VII)."""

import numpy as np
import pytest
from scipy.stats import norm

from sparsekernel.datasets import NSSVM_BAYES_ACCURACY, iter_nssvm_gaussians, make_nssvm_gaussians


def test_bayes_accuracy_is_table_vii():
    # with Sigma = diag(0.5, 3): Phi(sqrt(1/0.5 + 36/3) / 2); with the text's 0.2 it would be 0.975
    assert norm.cdf(np.sqrt(1 / 0.5 + 36 / 3) / 2) == pytest.approx(NSSVM_BAYES_ACCURACY, abs=5e-5)
    assert norm.cdf(np.sqrt(1 / 0.2 + 36 / 3) / 2) > 0.97


def test_distribution_and_bayes_classifier():
    m = 400_000
    X, y = make_nssvm_gaussians(m, random_state=0, block_size=1 << 16)
    assert X.shape == (m, 2) and y.shape == (m,) and X.dtype == np.float64
    assert set(np.unique(y)) == {-1.0, 1.0} and (y > 0).sum() == m // 2
    for label, mean in ((1.0, [0.5, -3.0]), (-1.0, [-0.5, 3.0])):
        Z = X[y == label]
        se = np.sqrt([0.5, 3.0] / np.float64(len(Z)))
        assert np.all(np.abs(Z.mean(axis=0) - mean) < 6 * se)
        np.testing.assert_allclose(Z.var(axis=0), [0.5, 3.0], rtol=0.02)
        assert abs(np.corrcoef(Z.T)[0, 1]) < 0.01
    acc = np.mean(np.sign(2 * X[:, 0] - 2 * X[:, 1]) == y)  # the Bayes rule w = Sigma^-1 (mu+ - mu-)
    assert acc == pytest.approx(NSSVM_BAYES_ACCURACY, abs=4 * np.sqrt(0.03 * 0.97 / m))


def test_blocks_reproducible_and_concatenate():
    m = 10_001
    X, y = make_nssvm_gaussians(m, random_state=7, block_size=1000)
    blocks = list(iter_nssvm_gaussians(m, random_state=7, block_size=1000))
    assert len(blocks) == 11 and len(blocks[-1][1]) == 1
    np.testing.assert_array_equal(np.concatenate([b[0] for b in blocks]), X)
    np.testing.assert_array_equal(np.concatenate([b[1] for b in blocks]), y)
    X2, y2 = make_nssvm_gaussians(m, random_state=7, block_size=1000)
    np.testing.assert_array_equal(X, X2)
    X3, _ = make_nssvm_gaussians(m, random_state=8, block_size=1000)
    assert not np.array_equal(X, X3)
    # every block balanced: the positives are ceil(n / 2) per block
    assert all((b[1] > 0).sum() == (len(b[1]) + 1) // 2 for b in blocks)


def test_float32_and_flip():
    X, y = make_nssvm_gaussians(200_000, random_state=1, dtype=np.float32)
    assert X.dtype == np.float32 and y.dtype == np.float32
    _, y0 = make_nssvm_gaussians(200_000, random_state=2)
    _, y1 = make_nssvm_gaussians(200_000, random_state=2, flip=0.1)
    assert np.mean(y0 != y1) == pytest.approx(0.1, abs=0.005)


@pytest.mark.parametrize("kwargs", [dict(m=1), dict(m=2.5), dict(m=10, flip=1.0), dict(m=10, flip=-0.1),
                                    dict(m=10, block_size=1), dict(m=10, dtype=np.int32)])
def test_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        make_nssvm_gaussians(**kwargs)
