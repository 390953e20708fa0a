#include "kernels.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>

#include "simd.hpp"

namespace sk {

int threads_for(double work, int nthreads) {
    // A parallel region costs a few microseconds: only worth it for enough work.
    constexpr double kWorkPerThread = 20000.0;
    int t = static_cast<int>(work / kWorkPerThread);
    return std::max(1, std::min(t, nthreads));
}

Kernel::Kernel(const Matrix& A, const Matrix& B, KernelParams params) : A_(A), B_(B), p_(params) {
    switch (p_.type) {
        case KernelType::rbf: measure_ = Measure::sqdist; break;
        case KernelType::laplacian: measure_ = Measure::l1; break;
        default: measure_ = Measure::dot; break;
    }
}

// ---------------------------------------------------------------------------------------------
// measures

namespace {

SK_MULTIVERSION
double dense_measure_dot(const double* x, const double* z, int64_t d) {
    double s = 0;
    for (int64_t k = 0; k < d; ++k) s += x[k] * z[k];
    return s;
}
SK_MULTIVERSION
double dense_measure_sqdist(const double* x, const double* z, int64_t d) {
    double s = 0;
    for (int64_t k = 0; k < d; ++k) {
        double e = x[k] - z[k];
        s += e * e;
    }
    return s;
}
SK_MULTIVERSION
double dense_measure_l1(const double* x, const double* z, int64_t d) {
    double s = 0;
    for (int64_t k = 0; k < d; ++k) s += std::fabs(x[k] - z[k]);
    return s;
}

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

double Kernel::measure(const double* arow, int64_t i, int64_t j) const {
    if (!B_.sparse) {
        const double* brow = B_.dense + j * B_.d;
        switch (measure_) {
            case Measure::dot: return dense_measure_dot(arow, brow, B_.d);
            case Measure::sqdist: return dense_measure_sqdist(arow, brow, B_.d);
            case Measure::l1: return dense_measure_l1(arow, brow, B_.d);
        }
    }
    const int64_t lo = B_.indptr[j], hi = B_.indptr[j + 1];
    const int32_t* idx = B_.indices;
    const double* val = B_.values;
    if (measure_ == Measure::l1) {
        // ||x - z||_1 = ||x||_1 + ||z||_1 + sum over nnz(z) of (|x_k - z_k| - |x_k| - |z_k|)
        double s = 0;
        for (int64_t k = lo; k < hi; ++k) {
            double a = arow[idx[k]], b = val[k];
            s += std::fabs(a - b) - std::fabs(a) - std::fabs(b);
        }
        return std::max(0.0, A_.l1norm[i] + B_.l1norm[j] + s);
    }
    double s = 0;
    for (int64_t k = lo; k < hi; ++k) s += val[k] * arow[idx[k]];
    if (measure_ == Measure::sqdist) return std::max(0.0, A_.sqnorm[i] + B_.sqnorm[j] - 2.0 * s);
    return s;
}

void Kernel::transform(double* v, int64_t n) const {
    const double g = p_.gamma, c0 = p_.coef0;
    switch (p_.type) {
        case KernelType::linear:
        case KernelType::precomputed: return;
        case KernelType::rbf:
        case KernelType::laplacian: transform_exp(v, n, g); return;
        case KernelType::poly:
            for (int64_t t = 0; t < n; ++t) {
                double base = g * v[t] + c0, r = 1.0;
                for (int e = 0; e < p_.degree; ++e) r *= base;
                v[t] = r;
            }
            return;
        case KernelType::sigmoid:
            for (int64_t t = 0; t < n; ++t) v[t] = std::tanh(g * v[t] + c0);
            return;
    }
}

double Kernel::value(int64_t i, int64_t j) const {
    if (p_.type == KernelType::precomputed) return A_.dense[i * A_.d + j];
    std::vector<double> scratch;
    double v = measure(dense_row_of_a(i, scratch), i, j);
    transform(&v, 1);
    return v;
}

void Kernel::row(int64_t i, const int32_t* cols, int64_t begin, int64_t end, float* out,
                 int nthreads) const {
    const int64_t m = end - begin;
    if (m <= 0) return;
    if (p_.type == KernelType::precomputed) {
        const double* arow = A_.dense + i * A_.d;
        for (int64_t t = begin; t < end; ++t) out[t - begin] = static_cast<float>(arow[cols ? cols[t] : t]);
        return;
    }
    std::vector<double> scratch;
    const double* arow = dense_row_of_a(i, scratch);
    const double cost = B_.sparse ? double(B_.indptr[B_.n]) / std::max<int64_t>(1, B_.n) : double(B_.d);
    const int nt = threads_for(m * (cost + 8.0), nthreads);
#pragma omp parallel num_threads(nt)
    {
        constexpr int64_t kChunk = 256;
        double buf[kChunk];
#pragma omp for schedule(static)
        for (int64_t c0 = begin; c0 < end; c0 += kChunk) {
            const int64_t c1 = std::min(end, c0 + kChunk);
            for (int64_t t = c0; t < c1; ++t) buf[t - c0] = measure(arow, i, cols ? cols[t] : t);
            transform(buf, c1 - c0);
            for (int64_t t = c0; t < c1; ++t) out[t - begin] = static_cast<float>(buf[t - c0]);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// blocks: out[r][t] = K(a_{rows[r]}, b_{cols[t]})

namespace {

// acc[r] += v * blk[k*q + r] for every stored (k, v) of one row of B: the q-long inner loop runs
// over the densified block of A (transposed so that it is contiguous) and vectorises.
SK_MULTIVERSION
void accumulate_dot(const double* blk, int64_t q, const int32_t* idx, const double* val, int64_t nnz,
                    double* acc) {
    for (int64_t k = 0; k < nnz; ++k) {
        const double v = val[k];
        const double* col = blk + int64_t(idx ? idx[k] : k) * q;
        for (int64_t r = 0; r < q; ++r) acc[r] += v * col[r];
    }
}
SK_MULTIVERSION
void accumulate_l1_sparse(const double* blk, int64_t q, const int32_t* idx, const double* val, int64_t nnz,
                          double* acc) {
    for (int64_t k = 0; k < nnz; ++k) {
        const double v = val[k], av = std::fabs(v);
        const double* col = blk + int64_t(idx[k]) * q;
        for (int64_t r = 0; r < q; ++r) acc[r] += std::fabs(col[r] - v) - std::fabs(col[r]) - av;
    }
}
SK_MULTIVERSION
void accumulate_l1_dense(const double* blk, int64_t q, const double* val, int64_t d, double* acc) {
    for (int64_t k = 0; k < d; ++k) {
        const double v = val[k];
        const double* col = blk + k * q;
        for (int64_t r = 0; r < q; ++r) acc[r] += std::fabs(col[r] - v);
    }
}

}  // namespace

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
    const int64_t d = A_.d;
    // The densified block (d x q doubles) must stay small; very wide data goes row by row.
    constexpr int64_t kMaxBlockEntries = int64_t(1) << 22;
    if (d * q > kMaxBlockEntries) {
        const int64_t qh = std::max<int64_t>(1, kMaxBlockEntries / std::max<int64_t>(1, d));
        for (int64_t r0 = 0; r0 < q; r0 += qh) block(rows + r0, std::min(qh, q - r0), cols, m, out + r0, nthreads);
        return;
    }
    std::vector<double> blk(d * q, 0.0), anorm(q);
    for (int64_t r = 0; r < q; ++r) {
        const int64_t i = rows[r];
        if (A_.sparse) {
            for (int64_t k = A_.indptr[i]; k < A_.indptr[i + 1]; ++k) blk[int64_t(A_.indices[k]) * q + r] = A_.values[k];
        } else {
            const double* a = A_.dense + i * d;
            for (int64_t k = 0; k < d; ++k) blk[k * q + r] = a[k];
        }
        anorm[r] = measure_ == Measure::l1 ? A_.l1norm[i] : A_.sqnorm[i];
    }
    const double cost = B_.sparse ? double(B_.indptr[B_.n]) / std::max<int64_t>(1, B_.n) : double(B_.d);
    const int nt = threads_for(double(m) * q * (cost + 8.0), nthreads);
#pragma omp parallel num_threads(nt)
    {
        std::vector<double> acc(q);
#pragma omp for schedule(static)
        for (int64_t t = 0; t < m; ++t) {
            const int64_t j = cols ? cols[t] : t;
            std::fill(acc.begin(), acc.end(), 0.0);
            const int32_t* idx = nullptr;
            const double* val;
            int64_t nnz;
            if (B_.sparse) {
                idx = B_.indices + B_.indptr[j];
                val = B_.values + B_.indptr[j];
                nnz = B_.indptr[j + 1] - B_.indptr[j];
            } else {
                val = B_.dense + j * d;
                nnz = d;
            }
            double bnorm = 0;
            if (measure_ == Measure::l1) {
                bnorm = B_.l1norm[j];
                if (B_.sparse) {
                    accumulate_l1_sparse(blk.data(), q, idx, val, nnz, acc.data());
                    for (int64_t r = 0; r < q; ++r) acc[r] = std::max(0.0, acc[r] + anorm[r] + bnorm);
                } else {
                    accumulate_l1_dense(blk.data(), q, val, nnz, acc.data());
                }
            } else {
                accumulate_dot(blk.data(), q, idx, val, nnz, acc.data());
                if (measure_ == Measure::sqdist) {
                    bnorm = B_.sqnorm[j];
                    for (int64_t r = 0; r < q; ++r) acc[r] = std::max(0.0, anorm[r] + bnorm - 2.0 * acc[r]);
                }
            }
            transform(acc.data(), q);
            for (int64_t r = 0; r < q; ++r) out[r][t] = static_cast<T>(acc[r]);
        }
    }
}

template void Kernel::block<float>(const int32_t*, int64_t, const int32_t*, int64_t, float* const*, int) const;
template void Kernel::block<double>(const int32_t*, int64_t, const int32_t*, int64_t, double* const*, int) const;

}  // namespace sk
