#include "kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "parallel.hpp"
#include "simd.hpp"

namespace sk {

Kernel::Kernel(const Matrix& A, const Matrix& B, KernelParams params, int nthreads) : A_(A), B_(B), p_(params) {
    switch (p_.type) {
        case KernelType::rbf: measure_ = Measure::sqdist; break;
        case KernelType::laplacian: measure_ = Measure::l1; break;
        default: measure_ = Measure::dot; break;
    }
    if (A_.sparse && B_.csc_indptr && p_.type != KernelType::precomputed) {
        // work of a CSC row for each point of A: the column counts of its features in B
        csc_work_.assign(A_.n, 0.0);
        const int64_t n = A_.n, nc = chunks_for(n, double(A_.indptr[n]) / double(std::max<int64_t>(1, n)) + 1.0, nthreads);
        for_chunks(nc, nthreads, [&](int64_t c) {
            for (int64_t i = n * c / nc; i < n * (c + 1) / nc; ++i)
                for (int64_t k = A_.indptr[i]; k < A_.indptr[i + 1]; ++k) {
                    const int64_t f = A_.indices[k];
                    if (f < B_.d) csc_work_[i] += double(B_.csc_indptr[f + 1] - B_.csc_indptr[f]);
                }
        });
    }
}

bool Kernel::use_csc(int64_t i, const int32_t* cols) const {
    // the CSC pass wins when x_i's features are rare enough (and columns are a contiguous range)
    return cols == nullptr && !csc_work_.empty() && csc_work_[i] < 0.7 * double(B_.indptr[B_.n]);
}

double Kernel::row_cost(int64_t i, const int32_t* cols) const {
    if (p_.type == KernelType::precomputed) return 1.0;
    if (use_csc(i, cols)) return csc_work_[i] / double(std::max<int64_t>(1, B_.n)) + 8.0;
    return (B_.sparse ? double(B_.indptr[B_.n]) / std::max<int64_t>(1, B_.n) : double(B_.d)) + 8.0;
}

// ---------------------------------------------------------------------------------------------
// measures

namespace {

SK_MULTIVERSION
void transform_exp(double* v, int64_t n, double gamma) {
    for (int64_t t = 0; t < n; ++t) v[t] = exp_nonpositive(-gamma * v[t]);
}

}  // namespace

const double* Kernel::dense_row_of_a(int64_t i, std::vector<double>& scratch) const {
    if (!A_.sparse) return A_.dense + i * A_.d;
    scratch.assign(A_.d, 0.0);
    for (int64_t k = A_.indptr[i]; k < A_.indptr[i + 1]; ++k) scratch[A_.indices[k]] = A_.values[k];
    return scratch.data();
}

void Kernel::transform(double* v, int64_t n) const {
    const double g = p_.gamma, c0 = p_.coef0;
    switch (p_.type) {
        case KernelType::linear:
        case KernelType::precomputed: return;
        case KernelType::rbf:
        case KernelType::laplacian: transform_exp(v, n, g); return;
        case KernelType::poly:
            for (int64_t t = 0; t < n; ++t) v[t] = integer_power(g * v[t] + c0, p_.degree);
            return;
        case KernelType::sigmoid:
            for (int64_t t = 0; t < n; ++t) v[t] = std::tanh(g * v[t] + c0);
            return;
    }
}

double Kernel::value(int64_t i, int64_t j) const {
    if (p_.type == KernelType::precomputed) return A_.dense[i * A_.d + j];
    std::vector<double> scratch;
    const int32_t col = int32_t(j);
    double v;
    measures(dense_row_of_a(i, scratch), i, &col, 0, 1, &v);
    transform(&v, 1);
    return v;
}

namespace {

// raw measures of one (densified) row a against the rows cols[begin..end) of B, written to out
template <int kMeasure>  // 0 dot, 1 sqdist, 2 l1
[[gnu::always_inline]] inline double measure_term(double a, double b) {
    if constexpr (kMeasure == 0) return a * b;
    if constexpr (kMeasure == 1) return (a - b) * (a - b);
    return std::fabs(a - b);
}

// float32 rows of B (a working copy, Matrix::dense32) against a, rounded to float32 too: 8-lane
// partial sums in four independent chains (one chain waits on its adds), summed in double at the end
template <int kMeasure>
SK_MULTIVERSION void dense32_measures(const double* arow, const Matrix& B, const int32_t* cols, int64_t begin,
                                      int64_t end, double* out) {
    typedef float v8 __attribute__((vector_size(32)));
    const int64_t d = B.d;
    thread_local std::vector<float> a32;
    a32.resize(d);
    for (int64_t k = 0; k < d; ++k) a32[k] = static_cast<float>(arow[k]);
    const float* a = a32.data();
    auto load = [](const float* p) {
        v8 v;
        std::memcpy(&v, p, sizeof(v));
        return v;
    };
    auto term = [](v8 x, v8 y) {
        if constexpr (kMeasure == 0) return x * y;
        v8 z = x - y;
        if constexpr (kMeasure == 1) return z * z;
        return z < 0 ? -z : z;
    };
    for (int64_t t = begin; t < end; ++t) {
        const float* b = B.dense32 + int64_t(cols ? cols[t] : t) * d;
        v8 s0 = {}, s1 = {}, s2 = {}, s3 = {};
        int64_t k = 0;
        for (; k + 32 <= d; k += 32) {
            s0 += term(load(a + k), load(b + k));
            s1 += term(load(a + k + 8), load(b + k + 8));
            s2 += term(load(a + k + 16), load(b + k + 16));
            s3 += term(load(a + k + 24), load(b + k + 24));
        }
        for (; k + 8 <= d; k += 8) s0 += term(load(a + k), load(b + k));
        const v8 sv = (s0 + s1) + (s2 + s3);
        double s = 0;
        for (int r = 0; r < 8; ++r) s += sv[r];
        for (; k < d; ++k) s += measure_term<kMeasure>(double(a[k]), double(b[k]));
        out[t - begin] = s;
    }
}

template <int kMeasure>
SK_MULTIVERSION void dense_measures(const double* arow, const Matrix& B, const int32_t* cols, int64_t begin,
                                    int64_t end, double* out) {
    if (B.dense32) {
        dense32_measures<kMeasure>(arow, B, cols, begin, end, out);
        return;
    }
    const int64_t d = B.d;
    if (B.feature_major) {
        // d contiguous passes over the points: out[t] += term(a_k, B[k][t])
        for (int64_t t = begin; t < end; ++t) out[t - begin] = 0.0;
        for (int64_t k = 0; k < d; ++k) {
            const double a = arow[k];
            const double* bk = B.dense + k * B.n;
            if (cols) {
                for (int64_t t = begin; t < end; ++t) out[t - begin] += measure_term<kMeasure>(a, bk[cols[t]]);
            } else {
                for (int64_t t = begin; t < end; ++t) out[t - begin] += measure_term<kMeasure>(a, bk[t]);
            }
        }
        return;
    }
    for (int64_t t = begin; t < end; ++t) {
        const double* b = B.dense + int64_t(cols ? cols[t] : t) * d;
        // eight partial sums: a vector register instead of one serial chain of additions
        double s8[8] = {};
        int64_t k = 0;
        for (; k + 8 <= d; k += 8)
            for (int r = 0; r < 8; ++r) s8[r] += measure_term<kMeasure>(arow[k + r], b[k + r]);
        double s = ((s8[0] + s8[1]) + (s8[2] + s8[3])) + ((s8[4] + s8[5]) + (s8[6] + s8[7]));
        for (; k < d; ++k) s += measure_term<kMeasure>(arow[k], b[k]);
        out[t - begin] = s;
    }
}

// one stored entry b of a sparse row against the densified a: x'z terms, or for L1
// ||x - z||_1 = ||x||_1 + ||z||_1 + sum over nnz(z) of (|x_k - z_k| - |x_k| - |z_k|)
template <int kMeasure>
[[gnu::always_inline]] inline double sparse_term(double a, double b) {
    if constexpr (kMeasure == 2) return std::fabs(a - b) - std::fabs(a) - std::fabs(b);
    return a * b;
}

template <int kMeasure>
[[gnu::always_inline]] inline double sparse_finish(double s, double anorm, const Matrix& B, int64_t j) {
    if constexpr (kMeasure == 1) return std::max(0.0, anorm + B.sqnorm[j] - 2.0 * s);
    if constexpr (kMeasure == 2) return std::max(0.0, anorm + B.l1norm[j] + s);
    return s;
}

template <int kMeasure>
SK_MULTIVERSION void sparse_measures(const double* arow, double anorm, const Matrix& B, const int32_t* cols,
                                     int64_t begin, int64_t end, double* out) {
    const int32_t* idx = B.indices;
    const double* val = B.values;
    const int64_t* ptr = B.indptr;
    int64_t t = begin;
    if (!cols) {
        // four rows of B at once: four independent accumulation chains instead of one
        for (; t + 4 <= end; t += 4) {
            const int64_t p0 = ptr[t], p1 = ptr[t + 1], p2 = ptr[t + 2], p3 = ptr[t + 3], p4 = ptr[t + 4];
            const int64_t n0 = p1 - p0, n1 = p2 - p1, n2 = p3 - p2, n3 = p4 - p3;
            const int64_t nmin = std::min(std::min(n0, n1), std::min(n2, n3));
            double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
            for (int64_t k = 0; k < nmin; ++k) {
                s0 += sparse_term<kMeasure>(arow[idx[p0 + k]], val[p0 + k]);
                s1 += sparse_term<kMeasure>(arow[idx[p1 + k]], val[p1 + k]);
                s2 += sparse_term<kMeasure>(arow[idx[p2 + k]], val[p2 + k]);
                s3 += sparse_term<kMeasure>(arow[idx[p3 + k]], val[p3 + k]);
            }
            for (int64_t k = p0 + nmin; k < p1; ++k) s0 += sparse_term<kMeasure>(arow[idx[k]], val[k]);
            for (int64_t k = p1 + nmin; k < p2; ++k) s1 += sparse_term<kMeasure>(arow[idx[k]], val[k]);
            for (int64_t k = p2 + nmin; k < p3; ++k) s2 += sparse_term<kMeasure>(arow[idx[k]], val[k]);
            for (int64_t k = p3 + nmin; k < p4; ++k) s3 += sparse_term<kMeasure>(arow[idx[k]], val[k]);
            out[t - begin] = sparse_finish<kMeasure>(s0, anorm, B, t);
            out[t + 1 - begin] = sparse_finish<kMeasure>(s1, anorm, B, t + 1);
            out[t + 2 - begin] = sparse_finish<kMeasure>(s2, anorm, B, t + 2);
            out[t + 3 - begin] = sparse_finish<kMeasure>(s3, anorm, B, t + 3);
        }
    }
    for (; t < end; ++t) {
        const int64_t j = cols ? cols[t] : t;
        double s = 0;
        for (int64_t k = ptr[j]; k < ptr[j + 1]; ++k) s += sparse_term<kMeasure>(arow[idx[k]], val[k]);
        out[t - begin] = sparse_finish<kMeasure>(s, anorm, B, j);
    }
}

// Measures of a sparse point x (its stored entries xi, xv) against the points [begin, end) of B
// through B's CSC copy: for each feature f of x, the points of B having f receive their term.
// Costs sum over x's features of their column counts instead of all of B's entries.
template <int kMeasure>
SK_MULTIVERSION void csc_measures(const int32_t* xi, const double* xv, int64_t xnnz, double anorm, const Matrix& B,
                                  int64_t begin, int64_t end, double* out) {
    for (int64_t t = begin; t < end; ++t) out[t - begin] = 0.0;
    for (int64_t k = 0; k < xnnz; ++k) {
        const int64_t f = xi[k];
        const double v = xv[k];
        const int32_t* rows = B.csc_rows;
        const int64_t lo = std::lower_bound(rows + B.csc_indptr[f], rows + B.csc_indptr[f + 1], int32_t(begin)) - rows;
        const int64_t hi = B.csc_indptr[f + 1];
        double* o = out - begin;
        for (int64_t p = lo; p < hi && rows[p] < end; ++p) o[rows[p]] += sparse_term<kMeasure>(v, B.csc_values[p]);
    }
    for (int64_t t = begin; t < end; ++t) out[t - begin] = sparse_finish<kMeasure>(out[t - begin], anorm, B, t);
}

}  // namespace

void Kernel::measures(const double* arow, int64_t i, const int32_t* cols, int64_t begin, int64_t end,
                      double* out) const {
    const int mm = static_cast<int>(measure_);
    if (!B_.sparse) {
        if (mm == 0) dense_measures<0>(arow, B_, cols, begin, end, out);
        else if (mm == 1) dense_measures<1>(arow, B_, cols, begin, end, out);
        else dense_measures<2>(arow, B_, cols, begin, end, out);
    } else {
        if (mm == 0) sparse_measures<0>(arow, 0.0, B_, cols, begin, end, out);
        else if (mm == 1) sparse_measures<1>(arow, A_.sqnorm[i], B_, cols, begin, end, out);
        else sparse_measures<2>(arow, A_.l1norm[i], B_, cols, begin, end, out);
    }
}

void Kernel::row(int64_t i, const int32_t* cols, int64_t begin, int64_t end, float* out, int nthreads,
                 const double* signs, double sign_i) const {
    const int64_t m = end - begin;
    if (m <= 0) return;
    // v (kernel values of [c0, c1)) to out, with the signs when given
    auto store = [&](const double* v, int64_t c0, int64_t c1) {
        if (signs) {
            for (int64_t t = c0; t < c1; ++t) out[t - begin] = static_cast<float>(v[t - c0] * (sign_i * signs[t]));
        } else {
            for (int64_t t = c0; t < c1; ++t) out[t - begin] = static_cast<float>(v[t - c0]);
        }
    };
    if (p_.type == KernelType::precomputed) {
        const double* arow = A_.dense + i * A_.d;
        for (int64_t t = begin; t < end; ++t)
            out[t - begin] = static_cast<float>(arow[cols ? cols[t] : t] * (signs ? sign_i * signs[t] : 1.0));
        return;
    }
    const int64_t n_chunks = chunks_for(m, row_cost(i, cols), nthreads);
    if (use_csc(i, cols)) {
        // one pass per feature of x_i over the points having it (see csc_measures)
        const int mm = static_cast<int>(measure_);
        const double anorm = mm == 2 ? A_.l1norm[i] : A_.sqnorm[i];
        const int32_t* xi = A_.indices + A_.indptr[i];
        const double* xv = A_.values + A_.indptr[i];
        const int64_t xnnz = A_.indptr[i + 1] - A_.indptr[i];
        for_chunks(n_chunks, nthreads, [&](int64_t c) {
            constexpr int64_t kPiece = 4096;
            thread_local std::vector<double> buf;  // no allocation per chunk
            buf.resize(kPiece);
            const int64_t lo = begin + m * c / n_chunks, hi = begin + m * (c + 1) / n_chunks;
            for (int64_t c0 = lo; c0 < hi; c0 += kPiece) {
                const int64_t c1 = std::min(hi, c0 + kPiece);
                if (mm == 0) csc_measures<0>(xi, xv, xnnz, anorm, B_, c0, c1, buf.data());
                else if (mm == 1) csc_measures<1>(xi, xv, xnnz, anorm, B_, c0, c1, buf.data());
                else csc_measures<2>(xi, xv, xnnz, anorm, B_, c0, c1, buf.data());
                transform(buf.data(), c1 - c0);
                store(buf.data(), c0, c1);
            }
        });
        return;
    }
    std::vector<double> scratch;
    const double* arow = dense_row_of_a(i, scratch);
    for_chunks(n_chunks, nthreads, [&](int64_t c) {
        constexpr int64_t kPiece = 512;
        double buf[kPiece];
        const int64_t lo = begin + m * c / n_chunks, hi = begin + m * (c + 1) / n_chunks;
        for (int64_t c0 = lo; c0 < hi; c0 += kPiece) {
            const int64_t c1 = std::min(hi, c0 + kPiece);
            measures(arow, i, cols, c0, c1, buf);
            transform(buf, c1 - c0);
            store(buf, c0, c1);
        }
    });
}

// ---------------------------------------------------------------------------------------------
// blocks: out[r][t] = K(a_{rows[r]}, b_{cols[t]})

namespace {

// Sparse B, one column of a block: acc[r] = measure(a_r, b) for the q densified rows a_r of the
// block (stored transposed, blk[k*q + r], so that the inner loop over r is contiguous) against one
// sparse row b of B given by its stored entries. The rows are taken in register tiles of W so that
// the accumulators stay in registers across the loop over b.
// (Templates called from a SK_MULTIVERSION function are forced inline so that they are compiled
// for the caller's instruction set.)
// No multiply-add contraction in the tiles (here and in the dense tiles below): with it, a value's
// rounding depended on the width of the register tile its row fell in, so K(a, b) depended on the
// batch it was computed in. Without it every value is a function of its pair alone: any row block
// of a distributed NSSVC fit computes the kernel columns of the in-memory fit bit for bit.
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
template <int64_t W, int kMeasure>
[[gnu::always_inline]] inline void block_tile(const double* __restrict blk, int64_t q, const int32_t* idx,
                                              const double* val, int64_t nnz, double* __restrict acc) {
    double s[W] = {};
#pragma GCC unroll 1
    for (int64_t k = 0; k < nnz; ++k) {
        const double v = val[k];
        const double* __restrict col = blk + int64_t(idx[k]) * q;
        if constexpr (kMeasure == 0) {
            for (int64_t r = 0; r < W; ++r) s[r] += v * col[r];
        } else {  // see sparse_measures: the L1 correction over nnz(b)
            const double av = std::fabs(v);
            for (int64_t r = 0; r < W; ++r) s[r] += std::fabs(col[r] - v) - std::fabs(col[r]) - av;
        }
    }
    for (int64_t r = 0; r < W; ++r) acc[r] = s[r];
}

template <int kMeasure>  // 0 dot, 2 l1 (sqdist uses dot)
SK_MULTIVERSION void block_column(const double* blk, int64_t q, const int32_t* idx, const double* val, int64_t nnz,
                                  double* acc) {
    int64_t r0 = 0;
    for (; r0 + 32 <= q; r0 += 32) block_tile<32, kMeasure>(blk + r0, q, idx, val, nnz, acc + r0);
    for (; r0 + 8 <= q; r0 += 8) block_tile<8, kMeasure>(blk + r0, q, idx, val, nnz, acc + r0);
    for (; r0 < q; ++r0) block_tile<1, kMeasure>(blk + r0, q, idx, val, nnz, acc + r0);
}

// Dense B: register tiles of kTileRows rows of the block by kTilePoints points of B. A tile of
// kCols points of B is first packed k-major (bp[k * kCols + t]: the points' k-th features side by
// side, zero-padded to whole vectors), the block's rows sit in panels of kTileRows rows, k-major
// (ap[k * kTileRows + r]); per feature k the tile loads kTilePoints / 4 vectors of points and
// broadcasts kTileRows values of rows, so each load serves several products (the column kernel
// above re-reads the block for every point and is bound by those loads). The result is row-major
// (a row's points contiguous), as the rows of Q are stored. Every entry is still s = 0;
// s += term(a_k, b_k) for k = 0..d-1 in order with no contraction: the same value, bit for bit, as
// the column kernel, whatever tile the pair falls in.
typedef double Vec4 __attribute__((vector_size(4 * sizeof(double))));
typedef int64_t Mask4 __attribute__((vector_size(4 * sizeof(int64_t))));
constexpr int64_t kTileRows = 6, kTilePoints = 8;

template <int kMeasure>
[[gnu::always_inline]] inline Vec4 vec_term(Vec4 a, Vec4 b) {
    if constexpr (kMeasure == 0) {
        return a * b;
    } else {
        const Mask4 no_sign = {0x7fffffffffffffffLL, 0x7fffffffffffffffLL, 0x7fffffffffffffffLL, 0x7fffffffffffffffLL};
        return reinterpret_cast<Vec4>(reinterpret_cast<Mask4>(a - b) & no_sign);
    }
}

// out[r * ldo + c] = measure(a_r, b_c) for r < kTileRows, c < kTilePoints
template <int kMeasure>
[[gnu::always_inline]] inline void dense_tile(const double* __restrict ap, const double* __restrict bp, int64_t ldb,
                                              int64_t d, double* __restrict out, int64_t ldo) {
    Vec4 lo[kTileRows], hi[kTileRows];
    for (int64_t r = 0; r < kTileRows; ++r) lo[r] = hi[r] = Vec4{0.0, 0.0, 0.0, 0.0};
#pragma GCC unroll 1
    for (int64_t k = 0; k < d; ++k) {
        Vec4 b0, b1;
        std::memcpy(&b0, bp + k * ldb, sizeof b0);
        std::memcpy(&b1, bp + k * ldb + 4, sizeof b1);
#pragma GCC unroll 8
        for (int64_t r = 0; r < kTileRows; ++r) {
            const double x = ap[k * kTileRows + r];
            const Vec4 a = {x, x, x, x};
            lo[r] += vec_term<kMeasure>(a, b0);
            hi[r] += vec_term<kMeasure>(a, b1);
        }
    }
    for (int64_t r = 0; r < kTileRows; ++r) {
        std::memcpy(out + r * ldo, &lo[r], sizeof lo[r]);
        std::memcpy(out + r * ldo + 4, &hi[r], sizeof hi[r]);
    }
}

// out[r * ldo + c] = measure(a_r, b_c) for the rows r < rows_padded of the packed block ap (panels
// of kTileRows rows) and the packed points c < cols_padded of bp (ldb = cols_padded, a multiple of
// kTilePoints)
template <int kMeasure>
SK_MULTIVERSION void dense_block_tiles(const double* ap, int64_t rows_padded, const double* bp, int64_t cols_padded,
                                       int64_t d, double* out, int64_t ldo) {
    for (int64_t r0 = 0; r0 < rows_padded; r0 += kTileRows)
        for (int64_t c0 = 0; c0 < cols_padded; c0 += kTilePoints)
            dense_tile<kMeasure>(ap + r0 * d, bp + c0, cols_padded, d, out + r0 * ldo + c0, ldo);
}
#pragma GCC pop_options

// acc[r] = ||a_r||^2 + ||b||^2 - 2 acc[r] (clamped at 0): dot products to squared distances
SK_MULTIVERSION void dots_to_sqdist(double* __restrict acc, const double* __restrict anorm, double bn, int64_t q) {
    for (int64_t r = 0; r < q; ++r) acc[r] = std::max(0.0, anorm[r] + bn - 2.0 * acc[r]);
}

// the sparse L1 correction (see sparse_measures): acc[r] += ||a_r||_1 + ||b||_1, clamped at 0
SK_MULTIVERSION void l1_correction(double* __restrict acc, const double* __restrict anorm, double bn, int64_t q) {
    for (int64_t r = 0; r < q; ++r) acc[r] = std::max(0.0, acc[r] + anorm[r] + bn);
}

// out[cc] += sum_{r < q} w[r] tile[r * rs + cc * cs] for cc < nw, the sum over r in order (the
// same order for either layout); kFloatValues: each kernel value rounded to float32 first, as the
// solver's cached rows hold it
template <bool kFloatValues>
[[gnu::always_inline]] inline double tile_value(double v) {
    if constexpr (kFloatValues) return double(static_cast<float>(v));
    return v;
}
template <bool kFloatValues>
[[gnu::always_inline]] inline void weighted_columns_body(const double* __restrict tile, int64_t q, int64_t rs, int64_t cs, int64_t nw,
                                      const double* __restrict w, double* __restrict out) {
    if (cs == 1) {  // row-major: each row adds to all nw sums at once (vectorised over cc)
        double s[64];
        for (int64_t c0 = 0; c0 < nw; c0 += 64) {
            const int64_t n = std::min<int64_t>(64, nw - c0);
            for (int64_t cc = 0; cc < n; ++cc) s[cc] = 0.0;
            for (int64_t r = 0; r < q; ++r) {
                const double wr = w[r];
                const double* row = tile + r * rs + c0;
                for (int64_t cc = 0; cc < n; ++cc) s[cc] += wr * tile_value<kFloatValues>(row[cc]);
            }
            for (int64_t cc = 0; cc < n; ++cc) out[c0 + cc] += s[cc];
        }
        return;
    }
    for (int64_t cc = 0; cc < nw; ++cc) {
        const double* col = tile + cc * cs;
        double s = 0;
        for (int64_t r = 0; r < q; ++r) s += w[r] * tile_value<kFloatValues>(col[r * rs]);
        out[cc] += s;
    }
}
SK_MULTIVERSION void weighted_columns(const double* __restrict tile, int64_t q, int64_t rs, int64_t cs, int64_t nw,
                                      const double* __restrict w, double* __restrict out, bool float_values) {
    if (float_values) weighted_columns_body<true>(tile, q, rs, cs, nw, w, out);
    else weighted_columns_body<false>(tile, q, rs, cs, nw, w, out);
}

// Fused kernel-vector products of the exp kernels on dense data, in float32: out[t] += sum_r w_r
// exp(-gamma m(a_r, b_t)), m the squared (kMeasure 1) or L1 (2) distance, without a tile of kernel
// values ever leaving the registers. The rows a_r sit in panels of kFusedRows, k-major
// (ap[k * kFusedRows + r]), the points in tiles of kFusedPoints, k-major (bp[k * kFusedPoints + c]);
// per feature, a panel against a tile takes kFusedRows x 2 vector differences and squares; the
// distances go through exp8_nonpositive, and w_r K_rc is summed over a panel in float32, over
// panels in double. The terms are differences of float32-rounded inputs (moved next to the origin
// first), as in the float32 working rows (dense32_measures).
// Beside each sum, in the same pass, E_t = sum_r |w_r| K_rt (1 + gamma m_rt): what the error bound
// of fused_weighted_sum is made of.
constexpr int64_t kFusedRows = 4, kFusedPoints = 16;

template <int kMeasure>
[[gnu::always_inline]] inline void fused_panel(const float* __restrict ap, const float* __restrict w,
                                               const float* __restrict aw, const float* __restrict bp, int64_t d,
                                               float neg_gamma, Vec8f& s0, Vec8f& s1, Vec8f& e0, Vec8f& e1) {
    Vec8f lo[kFusedRows], hi[kFusedRows];
    for (int64_t r = 0; r < kFusedRows; ++r) lo[r] = hi[r] = Vec8f{};
#pragma GCC unroll 1
    for (int64_t k = 0; k < d; ++k) {
        Vec8f b0, b1;
        std::memcpy(&b0, bp + k * kFusedPoints, sizeof b0);
        std::memcpy(&b1, bp + k * kFusedPoints + 8, sizeof b1);
#pragma GCC unroll 4
        for (int64_t r = 0; r < kFusedRows; ++r) {
            const float x = ap[k * kFusedRows + r];
            const Vec8f a = {x, x, x, x, x, x, x, x};
            const Vec8f z0 = a - b0, z1 = a - b1;
            if constexpr (kMeasure == 1) {
                lo[r] += z0 * z0;
                hi[r] += z1 * z1;
            } else {
                lo[r] += z0 < 0 ? -z0 : z0;
                hi[r] += z1 < 0 ? -z1 : z1;
            }
        }
    }
#pragma GCC unroll 4
    for (int64_t r = 0; r < kFusedRows; ++r) {
        const Vec8f x0 = neg_gamma * lo[r], x1 = neg_gamma * hi[r];  // -gamma m <= 0
        const Vec8f k0 = exp8_nonpositive(x0), k1 = exp8_nonpositive(x1);
        s0 += w[r] * k0;
        s1 += w[r] * k1;
        e0 += aw[r] * k0 * (1.0f - x0);
        e1 += aw[r] * k1 * (1.0f - x1);
    }
}

// out[c * kFusedPoints + cc] += the sums over every panel of the block, for the n_tiles packed tiles
// (and est[.] += their E_t). Each panel's float32 sums go to double at once: a float32 sum runs
// over the kFusedRows terms of one panel only (a longer one would loosen the bound).
template <int kMeasure>
SK_MULTIVERSION void fused_exp_sums(const float* ap, const float* w, const float* aw, int64_t panels, const float* bp,
                                    int64_t n_tiles, int64_t d, float neg_gamma, double* out, double* est) {
    for (int64_t c = 0; c < n_tiles; ++c) {
        const float* b = bp + c * d * kFusedPoints;
        double* o = out + c * kFusedPoints;
        double* e = est + c * kFusedPoints;
        for (int64_t p = 0; p < panels; ++p) {
            Vec8f s0{}, s1{}, e0{}, e1{};
            fused_panel<kMeasure>(ap + p * d * kFusedRows, w + p * kFusedRows, aw + p * kFusedRows, b, d, neg_gamma,
                                  s0, s1, e0, e1);
            for (int cc = 0; cc < 8; ++cc) {
                o[cc] += double(s0[cc]);
                o[cc + 8] += double(s1[cc]);
                e[cc] += double(e0[cc]);
                e[cc + 8] += double(e1[cc]);
            }
        }
    }
}

}  // namespace

// A tile of kernel values: entry (r, cc) at v[r * row_step + cc * col_step], r < q rows of the block,
// cc < w points. Dense B gives row-major tiles (points contiguous), sparse B column-major ones.
struct Tile {
    double* v;
    int64_t row_step, col_step;
};

// The q rows of A (densified) against the columns [0, m) of B (cols: optional index map), in tiles of
// kCols columns spread over the threads: consume(t0, w, tile) receives the kernel values of columns
// t0 .. t0 + w. Entries outside r < q, cc < w are padding.
template <class Consume>
void Kernel::for_block_tiles(const int32_t* rows, int64_t q, const int32_t* cols, int64_t m, int nthreads,
                             Consume consume) const {
    const int64_t d = A_.d;
    constexpr int64_t kCols = 32;  // a multiple of kTilePoints
    // dense B: rows in panels of kTileRows, each k-major; sparse B: transposed (k * ld + r)
    const bool dense = !B_.sparse;
    const int64_t ld = dense ? (q + kTileRows - 1) / kTileRows * kTileRows : q;
    const AlignedDoubles blk_store = aligned_zeros(d * ld);
    double* const blk = blk_store.get();
    auto at = [&](int64_t r, int64_t k) -> double& {
        return dense ? blk[(r / kTileRows) * kTileRows * d + k * kTileRows + r % kTileRows] : blk[k * ld + r];
    };
    std::vector<double> anorm(ld, 0.0);
    for (int64_t r = 0; r < q; ++r) {
        const int64_t i = rows[r];
        if (A_.sparse) {
            for (int64_t k = A_.indptr[i]; k < A_.indptr[i + 1]; ++k) at(r, A_.indices[k]) = A_.values[k];
        } else {
            const double* a = A_.dense + i * d;
            for (int64_t k = 0; k < d; ++k) at(r, k) = a[k];
        }
        anorm[r] = measure_ == Measure::l1 ? A_.l1norm[i] : A_.sqnorm[i];
    }
    const double cost = B_.sparse ? double(B_.indptr[B_.n]) / std::max<int64_t>(1, B_.n) : double(B_.d);
    const int64_t n_tiles = (m + kCols - 1) / kCols;
    const int64_t n_chunks = chunks_for(n_tiles, double(kCols) * q * (cost + 8.0), nthreads);
    for_chunks(n_chunks, nthreads, [&](int64_t c) {
        thread_local std::vector<double> tile, packed, bnorm;  // no allocation per chunk
        tile.resize(kCols * ld);
        for (int64_t tt = n_tiles * c / n_chunks; tt < n_tiles * (c + 1) / n_chunks; ++tt) {
            const int64_t t0 = tt * kCols, t1 = std::min(m, t0 + kCols), w = t1 - t0;
            if (dense) {
                // the tile's points packed k-major, zero-padded to whole register tiles
                const int64_t wp = (w + kTilePoints - 1) / kTilePoints * kTilePoints;
                packed.resize(d * wp);
                bnorm.assign(wp, 0.0);
                for (int64_t k = 0; k < d; ++k)  // the padding points: zeros
                    for (int64_t cc = w; cc < wp; ++cc) packed[k * wp + cc] = 0.0;
                for (int64_t cc = 0; cc < w; ++cc) {
                    const int64_t j = cols ? cols[t0 + cc] : t0 + cc;
                    if (B_.feature_major) {
                        for (int64_t k = 0; k < d; ++k) packed[k * wp + cc] = B_.dense[k * B_.n + j];
                    } else if (B_.dense32) {
                        const float* b = B_.dense32 + j * d;
                        for (int64_t k = 0; k < d; ++k) packed[k * wp + cc] = b[k];
                    } else {
                        const double* b = B_.dense + j * d;
                        for (int64_t k = 0; k < d; ++k) packed[k * wp + cc] = b[k];
                    }
                    bnorm[cc] = measure_ == Measure::l1 ? B_.l1norm[j] : B_.sqnorm[j];
                }
                if (measure_ == Measure::l1) dense_block_tiles<2>(blk, ld, packed.data(), wp, d, tile.data(), wp);
                else dense_block_tiles<0>(blk, ld, packed.data(), wp, d, tile.data(), wp);
                if (measure_ == Measure::sqdist)
                    for (int64_t r = 0; r < q; ++r) dots_to_sqdist(tile.data() + r * wp, bnorm.data(), anorm[r], w);
                for (int64_t r = 0; r < q; ++r) transform(tile.data() + r * wp, w);
                consume(t0, w, Tile{tile.data(), wp, 1});
            } else {
                for (int64_t t = t0; t < t1; ++t) {
                    const int64_t j = cols ? cols[t] : t;
                    double* acc = tile.data() + (t - t0) * ld;
                    const double* val = B_.values + B_.indptr[j];
                    const int32_t* idx = B_.indices + B_.indptr[j];
                    const int64_t nnz = B_.indptr[j + 1] - B_.indptr[j];
                    if (measure_ == Measure::l1) {
                        block_column<2>(blk, ld, idx, val, nnz, acc);
                        l1_correction(acc, anorm.data(), B_.l1norm[j], ld);
                    } else {
                        block_column<0>(blk, ld, idx, val, nnz, acc);
                        if (measure_ == Measure::sqdist) dots_to_sqdist(acc, anorm.data(), B_.sqnorm[j], ld);
                    }
                }
                transform(tile.data(), w * ld);
                consume(t0, w, Tile{tile.data(), 1, ld});
            }
        }
    });
}

// The densified block (d x q doubles) must stay small; very wide data goes in narrower blocks.
static int64_t max_block_rows(int64_t d) {
    constexpr int64_t kMaxBlockEntries = int64_t(1) << 22;
    return std::max<int64_t>(1, kMaxBlockEntries / std::max<int64_t>(1, d));
}

template <class T>
void Kernel::block(const int32_t* rows, int64_t q, const int32_t* cols, int64_t m, T* const* out,
                   int nthreads) const {
    if (q <= 0 || m <= 0) return;
    if (p_.type == KernelType::precomputed) {
        for (int64_t r = 0; r < q; ++r) {
            const double* arow = A_.dense + int64_t(rows[r]) * A_.d;
            for (int64_t t = 0; t < m; ++t) out[r][t] = static_cast<T>(arow[cols ? cols[t] : t]);
        }
        return;
    }
    const int64_t qh = max_block_rows(A_.d);
    if (q > qh) {
        for (int64_t r0 = 0; r0 < q; r0 += qh) block(rows + r0, std::min(qh, q - r0), cols, m, out + r0, nthreads);
        return;
    }
    // each output row receives a contiguous run of the tile
    for_block_tiles(rows, q, cols, m, nthreads, [&](int64_t t0, int64_t w, Tile tile) {
        for (int64_t r = 0; r < q; ++r) {
            T* o = out[r] + t0;
            const double* v = tile.v + r * tile.row_step;
            if (tile.col_step == 1) {
                for (int64_t cc = 0; cc < w; ++cc) o[cc] = static_cast<T>(v[cc]);
            } else {
                for (int64_t cc = 0; cc < w; ++cc) o[cc] = static_cast<T>(v[cc * tile.col_step]);
            }
        }
    });
}

bool Kernel::single_sums() const {
    return p_.type != KernelType::precomputed && !A_.sparse && !B_.sparse && measure_ != Measure::dot;
}

void Kernel::weighted_sum(const int32_t* rows, const double* w, int64_t q, const int32_t* cols, int64_t m,
                          double* out, int nthreads, double* err, bool float_values) const {
    if (q <= 0 || m <= 0) return;
    if (p_.type == KernelType::precomputed) {
        for (int64_t r = 0; r < q; ++r) {
            const double* arow = A_.dense + int64_t(rows[r]) * A_.d;
            for (int64_t t = 0; t < m; ++t) {
                const double v = arow[cols ? cols[t] : t];
                out[t] += w[r] * (float_values ? tile_value<true>(v) : v);
            }
        }
        return;
    }
    const int64_t qh = max_block_rows(A_.d);
    if (q > qh) {
        for (int64_t r0 = 0; r0 < q; r0 += qh)
            weighted_sum(rows + r0, w + r0, std::min(qh, q - r0), cols, m, out, nthreads, err, float_values);
        return;
    }
    if (err && single_sums()) {
        fused_weighted_sum(rows, w, q, cols, m, out, err, nthreads);
        return;
    }
    // the tile is consumed where it was computed: nothing of size q x m is ever written
    for_block_tiles(rows, q, cols, m, nthreads, [&](int64_t t0, int64_t nw, Tile tile) {
        weighted_columns(tile.v, q, tile.row_step, tile.col_step, nw, w, out + t0, float_values);
    });
}

// weighted_sum of the exp kernels on dense data: the rows packed in float32 panels once, the points
// in groups of tiles (a group's packed points stay in the core's cache while every panel passes
// over them), the groups spread over the threads (fused_exp_sums).
//
// The error bound added to err[t], with u = 2^-24 and m = the distance (squared for rbf, L1 for
// laplacian), for one term w_r K_rt (float32 rounding of each operation, worst case):
//   m summed over d features in float32:            |dm| <= d u m          -> |dK| <= d u K gamma m
//   the inputs rounded (after the shift):           rbf: |dm| <= 2u ||z|| (R_a + R_b), with
//     ||z|| = sqrt(m) and sqrt(gamma m) <= (1 + gamma m) / 2  -> |dK| <= u sqrt(gamma) (R_a + R_b) K (1 + gamma m)
//     laplacian: |dm| <= u (R_a + R_b) (L1 norms)   -> |dK| <= u gamma (R_a + R_b) K
//   the exponent's reduction and the degree-7 polynomial: |dK| <= (4 + gamma m) u K
//   w rounded, the product, the panel's float32 sum of kFusedRows terms: (2 + kFusedRows) u |w K|
// so |error_t| <= u (10 + kFusedRows + d + x) E_t with E_t = sum_r |w_r| K_rt (1 + gamma m_rt) and
// x the inputs' term (R_a, R_b: the largest norms of the shifted rows and points). The sums over
// panels are in double.
void Kernel::fused_weighted_sum(const int32_t* rows, const double* w, int64_t q, const int32_t* cols, int64_t m,
                                double* out, double* err, int nthreads) const {
    const int64_t d = A_.d, panels = (q + kFusedRows - 1) / kFusedRows;
    const bool l1 = measure_ == Measure::l1;
    auto at = [](const Matrix& M, int64_t i, int64_t k) -> double {
        if (M.feature_major) return M.dense[k * M.n + i];
        if (M.dense32) return M.dense32[i * M.d + k];
        return M.dense[i * M.d + k];
    };
    // the distances do not change when every point moves by -origin (a point of the block): data
    // far from 0 against their spread keep their digits when rounded to float32
    std::vector<double> origin(d);
    for (int64_t k = 0; k < d; ++k) origin[k] = at(A_, rows[0], k);
    auto value = [&](const Matrix& M, int64_t i, int64_t k) -> float {
        return static_cast<float>(at(M, i, k) - origin[k]);
    };
    // the norm of a shifted point (L2 for rbf, L1 for laplacian), for the bound
    auto shifted_norm = [&](const Matrix& M, int64_t i) {
        double s = 0;
        for (int64_t k = 0; k < d; ++k) {
            const double v = at(M, i, k) - origin[k];
            s += l1 ? std::fabs(v) : v * v;
        }
        return l1 ? s : std::sqrt(s);
    };
    std::vector<float> ap(panels * d * kFusedRows, 0.0f), wp(panels * kFusedRows, 0.0f),
        awp(panels * kFusedRows, 0.0f);  // padding: w = 0
    double Ra = 0;
    for (int64_t r = 0; r < q; ++r) {
        float* panel = ap.data() + (r / kFusedRows) * d * kFusedRows + r % kFusedRows;
        for (int64_t k = 0; k < d; ++k) panel[k * kFusedRows] = value(A_, rows[r], k);
        wp[r] = static_cast<float>(w[r]);
        awp[r] = std::fabs(wp[r]);
        Ra = std::max(Ra, shifted_norm(A_, rows[r]));
    }
    // tiles per group: about 64 KB of packed points
    const int64_t group = std::max<int64_t>(1, 1024 / std::max<int64_t>(1, d));
    const int64_t n_tiles = (m + kFusedPoints - 1) / kFusedPoints, n_groups = (n_tiles + group - 1) / group;
    const int64_t n_chunks = chunks_for(n_groups, double(group * kFusedPoints) * double(q) * (double(d) + 4.0),
                                        nthreads);
    const float neg_gamma = static_cast<float>(-p_.gamma);
    const double sqrt_gamma = std::sqrt(p_.gamma);
    const double coef = double(10 + kFusedRows + d);  // the bound's terms without the inputs' (above)
    for_chunks(n_chunks, nthreads, [&](int64_t ch) {
        thread_local std::vector<float> bp;
        thread_local std::vector<double> sums, est, norms;
        for (int64_t g = n_groups * ch / n_chunks; g < n_groups * (ch + 1) / n_chunks; ++g) {
            const int64_t t0 = g * group * kFusedPoints, t1 = std::min(m, t0 + group * kFusedPoints);
            const int64_t tiles = (t1 - t0 + kFusedPoints - 1) / kFusedPoints;
            bp.assign(tiles * d * kFusedPoints, 0.0f);  // padding points: zeros (their sums unused)
            norms.resize(t1 - t0);
            for (int64_t t = t0; t < t1; ++t) {
                const int64_t j = cols ? cols[t] : t, c = (t - t0) / kFusedPoints, cc = (t - t0) % kFusedPoints;
                float* tile = bp.data() + c * d * kFusedPoints + cc;
                for (int64_t k = 0; k < d; ++k) tile[k * kFusedPoints] = value(B_, j, k);
                norms[t - t0] = shifted_norm(B_, j);
            }
            sums.assign(tiles * kFusedPoints, 0.0);
            est.assign(tiles * kFusedPoints, 0.0);
            if (l1)
                fused_exp_sums<2>(ap.data(), wp.data(), awp.data(), panels, bp.data(), tiles, d, neg_gamma,
                                  sums.data(), est.data());
            else
                fused_exp_sums<1>(ap.data(), wp.data(), awp.data(), panels, bp.data(), tiles, d, neg_gamma,
                                  sums.data(), est.data());
            for (int64_t t = t0; t < t1; ++t) {
                out[t] += sums[t - t0];
                const double inputs = (l1 ? p_.gamma : sqrt_gamma) * (Ra + norms[t - t0]);
                err[t] += kFloat32Roundoff * (coef + inputs) * est[t - t0];
            }
        }
    });
}

template void Kernel::block<float>(const int32_t*, int64_t, const int32_t*, int64_t, float* const*, int) const;
template void Kernel::block<double>(const int32_t*, int64_t, const int32_t*, int64_t, double* const*, int) const;

}  // namespace sk
