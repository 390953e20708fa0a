// Decision values of a kernel expansion in one pass over dense test points:
//
//     out[i][c] = intercept[c] + sum_j coef[c][j] K(x_i, b_j)
//
// for the kernels of a dot product (linear, poly, sigmoid) or a squared distance (rbf, from the dot
// products and the squared norms). Prediction's block K(X, B) has many rows and few columns; as
// BLAS products it costs three passes over X (the finiteness check of validation, the product,
// which packs X, and the row norms) plus the transform of the whole block. Here each tile of rows is
// read once while it is in cache: register-tiled dot products against a tile of B, the rows' squared
// norms, the transform and the weighted sum, so X is read once from memory.
//
// The squared norms double as the finiteness check of X: ||x||^2 is NaN or inf exactly when x holds a
// NaN or an inf (or overflows, |x| > ~1e154), so prediction validates X without a pass of its own.
#pragma once
#include <cstdint>

#include "kernels.hpp"

namespace sk {

// B (m x d, row-major), coef (k x m), intercept (k), out (n x k). Returns false (out unspecified)
// when some row of X has a non-finite squared norm.
bool expansion_decision(const double* X, int64_t n, int64_t d, const double* B, int64_t m, const double* coef,
                        int64_t k, const double* intercept, const KernelParams& p, double* out, int nthreads);

}  // namespace sk
