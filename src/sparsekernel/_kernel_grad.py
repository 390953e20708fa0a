"""Derivatives of the kernels with respect to their first argument, for learned expansion vectors.

    kernel_gradient(...)[u] = sum_j W[u, j] dK(z_u, b_j)/dz_u            (shape (n_z, d))

is the one quantity the SLMC gradient (eq. 46), the sparse KFD gradient (eq. 63) and the
reduced-set gradient (eq. 4) need: each is this sum for a weight matrix W over the training points
plus one over the expansion vectors themselves. Written as matrix products with the kernel block
K(Z, B) that the caller already has (BLAS, O(n_z n d)):

    linear     K = z'b                    dK/dz = b
    poly       K = (g z'b + c)^p          dK/dz = g p (g z'b + c)^(p-1) b
    sigmoid    K = tanh(g z'b + c)        dK/dz = g (1 - K^2) b
    rbf        K = exp(-g ||z - b||^2)    dK/dz = -2 g K (z - b)
    laplacian  K = exp(-g ||z - b||_1)    dK/dz = -g K sign(z - b)  (not differentiable where z_v = b_v)

'precomputed' has no derivative in z.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

DIFFERENTIABLE_KERNELS = ("linear", "poly", "rbf", "sigmoid", "laplacian")

# entries of the (n_z, rows, d) sign tensor the laplacian gradient builds at a time
_LAPLACIAN_CHUNK = 1 << 22


def _matmul(M, B):
    """M @ B for a dense (n_z, m) M and a dense or CSR (m, d) B, as a dense array."""
    if sp.issparse(B):
        return np.asarray((B.T @ M.T).T)
    return M @ B


def _dense_rows(B, sl):
    rows = B[sl]
    return rows.toarray() if sp.issparse(rows) else rows


def kernel_gradient(kernel, gamma, coef0, degree, Z, B, K_ZB, W):
    """G[u] = sum_j W[u, j] dK(z_u, b_j)/dz_u for the rows z_u of Z (dense) and b_j of B (dense or
    CSR), given K_ZB = K(Z, B)."""
    Z = np.asarray(Z, dtype=np.float64)
    if kernel == "linear":
        return _matmul(W, B)
    if kernel == "poly":
        if degree == 0:
            return np.zeros_like(Z)
        t = gamma * _dot_rows(Z, B) + coef0
        return gamma * degree * _matmul(W * t ** (degree - 1), B)
    if kernel == "sigmoid":
        return gamma * _matmul(W * (1.0 - K_ZB**2), B)
    if kernel == "rbf":
        WK = W * K_ZB
        return -2.0 * gamma * (WK.sum(axis=1)[:, None] * Z - _matmul(WK, B))
    if kernel == "laplacian":
        WK = W * K_ZB
        G = np.zeros_like(Z)
        step = max(1, _LAPLACIAN_CHUNK // max(1, Z.shape[0] * Z.shape[1]))
        for start in range(0, B.shape[0], step):
            sl = slice(start, min(B.shape[0], start + step))
            S = np.sign(Z[:, None, :] - _dense_rows(B, sl)[None, :, :])  # (n_z, rows, d)
            G += np.einsum("uj,ujv->uv", WK[:, sl], S)
        return -gamma * G
    raise ValueError(f"the kernel {kernel!r} has no gradient in the expansion vectors; use one of "
                     f"{DIFFERENTIABLE_KERNELS}")


def _dot_rows(Z, B):
    """Z @ B' for dense Z and dense or CSR B."""
    if sp.issparse(B):
        return np.asarray((B @ Z.T).T)
    return Z @ B.T
