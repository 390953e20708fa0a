// Read-only view of a set of points: dense row-major float64 or CSR (int64 indptr, int32 indices,
// float64 values). The arrays are owned by Python; the binding keeps them alive. A working copy
// (PermutedCopy) of a dense set may instead hold float32 rows (dense32).
#pragma once
#include "parallel.hpp"
#include <cmath>
#include <cstdint>
#include <algorithm>
#include <vector>

namespace sk {

struct Matrix {
    int64_t n = 0;  // rows (points)
    int64_t d = 0;  // columns (features)
    bool sparse = false;
    bool feature_major = false;       // dense stored d x n (column k of all points contiguous)
    const double* dense = nullptr;    // n x d, row-major (or d x n when feature_major)
    const float* dense32 = nullptr;   // or n x d float32, row-major (a working copy of many features)
    const int64_t* indptr = nullptr;  // n + 1
    const int32_t* indices = nullptr;
    const double* values = nullptr;
    // optional CSC copy of a CSR matrix (row indices sorted within each column): one kernel row
    // from a sparse point x then touches only the columns of x's features
    const int64_t* csc_indptr = nullptr;  // d + 1
    const int32_t* csc_rows = nullptr;
    const double* csc_values = nullptr;
    std::vector<double> sqnorm;  // ||x_i||^2, for rbf
    std::vector<double> l1norm;  // ||x_i||_1, for laplacian

    void compute_norms() {
        sqnorm.assign(n, 0.0);
        l1norm.assign(n, 0.0);
        for (int64_t i = 0; i < n; ++i) {
            double s2 = 0, s1 = 0;
            if (sparse) {
                for (int64_t k = indptr[i]; k < indptr[i + 1]; ++k) {
                    s2 += values[k] * values[k];
                    s1 += std::fabs(values[k]);
                }
            } else {
                for (int64_t k = 0; k < d; ++k) {
                    const double v = feature_major ? dense[k * n + i] : dense[i * d + k];
                    s2 += v * v;
                    s1 += std::fabs(v);
                }
            }
            sqnorm[i] = s2;
            l1norm[i] = s1;
        }
    }
};

// Rows perm[0..n) of X as a new matrix (the solver's working copy in active order): CSR stays CSR,
// dense becomes feature-major so that one kernel row is d contiguous passes over the points.
struct PermutedCopy {
    static constexpr int64_t kFeatureMajorMaxD = 32;
    Matrix m;
    std::vector<double> values, csc_values;
    std::vector<float> values32;
    std::vector<int64_t> indptr, csc_indptr;
    std::vector<int32_t> indices, csc_rows;

    // counting-sort transpose of the CSR working copy; rows come out sorted within each column.
    // Row chunks in parallel: each chunk counts its entries per column, and writes them after the
    // earlier chunks' (the same arrays as one serial pass).
    void build_csc(int nthreads) {
        const int64_t n = m.n, d = m.d, nnz = indptr[n];
        const int64_t nc = std::min<int64_t>(chunks_for(n, double(nnz) / double(std::max<int64_t>(1, n)) + 1.0, nthreads),
                                             std::max<int64_t>(1, (int64_t(1) << 22) / std::max<int64_t>(1, d)));
        std::vector<int64_t> count(nc * (d + 1), 0);  // count[c * (d + 1) + f]: then chunk c's start in column f
        for_chunks(nc, nthreads, [&](int64_t c) {
            int64_t* cnt = count.data() + c * (d + 1);
            for (int64_t k = indptr[n * c / nc]; k < indptr[n * (c + 1) / nc]; ++k) ++cnt[indices[k]];
        });
        csc_indptr.assign(d + 1, 0);
        int64_t pos = 0;
        for (int64_t f = 0; f < d; ++f) {
            csc_indptr[f] = pos;
            for (int64_t c = 0; c < nc; ++c) {
                const int64_t k = count[c * (d + 1) + f];
                count[c * (d + 1) + f] = pos;
                pos += k;
            }
        }
        csc_indptr[d] = pos;
        csc_rows.resize(nnz);
        csc_values.resize(nnz);
        for_chunks(nc, nthreads, [&](int64_t c) {
            int64_t* next = count.data() + c * (d + 1);
            for (int64_t t = n * c / nc; t < n * (c + 1) / nc; ++t)
                for (int64_t k = indptr[t]; k < indptr[t + 1]; ++k) {
                    const int64_t p = next[indices[k]]++;
                    csc_rows[p] = int32_t(t);
                    csc_values[p] = values[k];
                }
        });
        m.csc_indptr = csc_indptr.data();
        m.csc_rows = csc_rows.data();
        m.csc_values = csc_values.data();
    }

    // float32: a dense X of many features may be held in float32 (below)
    void build(const Matrix& X, const std::vector<int32_t>& perm, int nthreads = 1, bool float32 = true) {
        const int64_t n = int64_t(perm.size());
        m = Matrix();
        m.n = n;
        m.d = X.d;
        m.sparse = X.sparse;
        const int64_t nc = chunks_for(n, double(X.d) + 2.0, nthreads);
        if (X.sparse) {
            indptr.assign(n + 1, 0);
            for (int64_t t = 0; t < n; ++t) indptr[t + 1] = indptr[t] + (X.indptr[perm[t] + 1] - X.indptr[perm[t]]);
            indices.resize(indptr[n]);
            values.resize(indptr[n]);
            for_chunks(nc, nthreads, [&](int64_t c) {
                for (int64_t t = n * c / nc; t < n * (c + 1) / nc; ++t) {
                    const int64_t src = X.indptr[perm[t]], len = X.indptr[perm[t] + 1] - src;
                    std::copy(X.indices + src, X.indices + src + len, indices.begin() + indptr[t]);
                    std::copy(X.values + src, X.values + src + len, values.begin() + indptr[t]);
                }
            });
            m.indptr = indptr.data();
            m.indices = indices.data();
            m.values = values.data();
            build_csc(nthreads);
        } else if (X.d <= kFeatureMajorMaxD) {
            // few features: d contiguous passes over the points vectorise best
            m.feature_major = true;
            values.resize(n * X.d);
            for_chunks(nc, nthreads, [&](int64_t c) {
                for (int64_t t = n * c / nc; t < n * (c + 1) / nc; ++t) {
                    const double* row = X.dense + int64_t(perm[t]) * X.d;
                    for (int64_t k = 0; k < X.d; ++k) values[k * n + t] = row[k];
                }
            });
            m.dense = values.data();
        } else if (float32) {
            // many features: point by point, each a contiguous pass (d contiguous passes would leave
            // the cache), in float32: a kernel row's d-term sums then run 8 (AVX2) or 16 lanes wide
            // and read half the bytes. The rows of Q are float32 anyway; the terms are differences of
            // float32-rounded inputs, summed in float32 within a row of 8 x 4 partial sums
            // (kernels.cpp: dense_measures): usps one-class, 1,194 x 256, 11.5 -> 8.8 ms a fit.
            values32.resize(n * X.d);
            for_chunks(nc, nthreads, [&](int64_t c) {
                for (int64_t t = n * c / nc; t < n * (c + 1) / nc; ++t) {
                    const double* row = X.dense + int64_t(perm[t]) * X.d;
                    for (int64_t k = 0; k < X.d; ++k) values32[t * X.d + k] = static_cast<float>(row[k]);
                }
            });
            m.dense32 = values32.data();
        } else {
            // many features, in double (large alphas: Solver::float32_points_allowed)
            values.resize(n * X.d);
            for_chunks(nc, nthreads, [&](int64_t c) {
                for (int64_t t = n * c / nc; t < n * (c + 1) / nc; ++t) {
                    const double* row = X.dense + int64_t(perm[t]) * X.d;
                    std::copy(row, row + X.d, values.begin() + t * X.d);
                }
            });
            m.dense = values.data();
        }
        m.sqnorm.resize(n);
        m.l1norm.resize(n);
        for (int64_t t = 0; t < n; ++t) {
            m.sqnorm[t] = X.sqnorm[perm[t]];
            m.l1norm[t] = X.l1norm[perm[t]];
        }
    }
};

}  // namespace sk
