"""Data sets generated where they are used: each chunk on the worker that computes it."""

from __future__ import annotations

import numpy as np

from ..datasets import nssvm_gaussians_block


def _block_part(m, k, random_state, flip, chunk_rows, dtype, part):
    X, y = nssvm_gaussians_block(m, k, random_state, flip, block_size=chunk_rows, dtype=dtype)
    return X if part == 0 else y.astype(np.int8)


def nssvm_gaussians(m, random_state=0, flip=0.0, *, chunk_rows=1 << 20, dtype=np.float32):
    """Example 4.1 of the NSSVM paper as dask arrays whose chunks are generated on the workers (never
    whole in the client): chunk k holds the rows of block k of
    :func:`sparsekernel.datasets.iter_nssvm_gaussians` with ``block_size=chunk_rows``, so
    ``make_nssvm_gaussians(m, random_state, block_size=chunk_rows)`` is the same data in memory.

    Parameters
    ----------
    m : int
        Number of samples.
    random_state : int, default=0
        Seed of the blocks' seeds.
    flip : float, default=0.0
        Expected fraction of flipped labels.
    chunk_rows : int, keyword-only, default=2**20
        Rows per chunk.
    dtype : {np.float32, np.float64}, keyword-only, default=np.float32

    Returns
    -------
    X : dask.array.Array of shape (m, 2)
    y : dask.array.Array of shape (m,), int8 labels in {-1, +1}
    """
    import dask
    import dask.array as da

    if not isinstance(random_state, (int, np.integer)):
        raise ValueError(f"random_state must be an int (every worker derives its block's seed from it), got "
                         f"{random_state!r}")
    n_blocks = -(-int(m) // int(chunk_rows))
    sizes = [min(chunk_rows, m - k * chunk_rows) for k in range(n_blocks)]
    part = dask.delayed(_block_part, pure=True)
    X = da.concatenate([da.from_delayed(part(m, k, int(random_state), flip, chunk_rows, dtype, 0), shape=(n, 2),
                                        dtype=dtype) for k, n in enumerate(sizes)])
    y = da.concatenate([da.from_delayed(part(m, k, int(random_state), flip, chunk_rows, dtype, 1), shape=(n,),
                                        dtype=np.int8) for k, n in enumerate(sizes)])
    return X, y
