// Kernel functions K(a_i, b_j) between the rows of two matrices (dense or CSR), one row or a block
// of rows at a time, OpenMP-parallel over the columns.
//
// Every kernel is a transform of one "measure" of the pair of points:
//   dot products   x'z           linear, poly, sigmoid
//   squared dist.  ||x - z||^2   rbf     (from dot products and cached squared norms for CSR)
//   L1 distance    ||x - z||_1   laplacian
// so one loop computes the measures and one vectorised pass applies the transform.
#pragma once
#include <cstdint>
#include <vector>

#include "matrix.hpp"

namespace sk {

enum class KernelType : int { linear = 0, poly = 1, rbf = 2, sigmoid = 3, laplacian = 4, precomputed = 5 };

// base^degree by squaring (the poly kernel's integer power; degree 0 gives 1, as LIBSVM)
inline double integer_power(double base, int degree) {
    double r = 1.0;
    for (int e = degree; e > 0; e >>= 1) {
        if (e & 1) r *= base;
        base *= base;
    }
    return r;
}

// A float32 kernel-vector product (the fused products of weighted_sum) may feed the solver's
// gradient only where its error bound (Kernel::weighted_sum: err) stays within this share of tol;
// elsewhere the sums run in double. The solver's stopping test takes the bounds it let in off tol
// (Solver::stop_tol), so a reported convergence holds for the exact sums.
constexpr double kSingleSumsTolShare = 0.05;
// Unit roundoff of float32 (2^-24)
constexpr double kFloat32Roundoff = 5.9604644775390625e-08;

struct KernelParams {
    KernelType type = KernelType::rbf;
    double gamma = 1.0;
    double coef0 = 0.0;
    int degree = 3;
};

class Kernel {
public:
    // K(a_i, b_j) for rows a_i of A and b_j of B (A and B may be the same matrix). For
    // 'precomputed', A holds the kernel values themselves (A[i, j] = K(a_i, b_j)) and B is unused
    // except for its row count.
    Kernel(const Matrix& A, const Matrix& B, KernelParams params, int nthreads = 1);

    double value(int64_t i, int64_t j) const;

    // out[t - begin] = K(a_i, b_{cols[t]}) for t in [begin, end); cols == nullptr means cols[t] = t.
    // With signs (+-1, indexed by t), each value is multiplied by sign_i * signs[t] (Q_it = y_i y_t K,
    // exact), in the same parallel pass.
    void row(int64_t i, const int32_t* cols, int64_t begin, int64_t end, float* out, int nthreads,
             const double* signs = nullptr, double sign_i = 1.0) const;
    // Operations per value of row(i, cols, ...): what a pass that computes a row sizes its chunks by.
    double row_cost(int64_t i, const int32_t* cols) const;

    // out[r][t] = K(a_{rows[r]}, b_{cols[t]}) for r < q, t < m: the q rows as one product of a
    // densified block of A against B (sparse rows of B against the dense block for CSR input).
    template <class T>
    void block(const int32_t* rows, int64_t q, const int32_t* cols, int64_t m, T* const* out,
               int nthreads) const;

    // out[t] += sum_r w[r] K(a_{rows[r]}, b_{cols[t]}) for t < m: a kernel-vector product computed
    // tile by tile without storing the block (the O(N^2) start-up of kernel logistic regression, a
    // warm start's gradient), in double. With err (and single_sums()), the exp kernels on dense data
    // run fused in float32 (fused_weighted_sum, 2.6x faster) and err[t] += a bound on |the float32
    // sum - the exact one|: u (c0 + d + x) sum_r |w_r| K_rt (1 + gamma m_rt), see fused_weighted_sum.
    // float_values (the double route only): each kernel value rounded to float32 before it is
    // weighted, as the SMO solver's cached rows hold it, so that a gradient rebuilt from a agrees
    // with the one the steps update through those rows (mixing the two broke the cancellation of
    // duplicate points with opposite labels at large C: a9a at C = 1e5, float64 gap 0.04).
    void weighted_sum(const int32_t* rows, const double* w, int64_t q, const int32_t* cols, int64_t m,
                      double* out, int nthreads, double* err = nullptr, bool float_values = false) const;
    // whether weighted_sum can run in float32 (dense data, rbf or laplacian)
    bool single_sums() const;

private:
    enum class Measure { dot, sqdist, l1 };
    void fused_weighted_sum(const int32_t* rows, const double* w, int64_t q, const int32_t* cols, int64_t m,
                            double* out, double* err, int nthreads) const;
    template <class Consume>
    void for_block_tiles(const int32_t* rows, int64_t q, const int32_t* cols, int64_t m, int nthreads,
                         Consume consume) const;
    // raw measures of a_i (given densely as arow) against b_{cols[t]}, t in [begin, end)
    void measures(const double* arow, int64_t i, const int32_t* cols, int64_t begin, int64_t end,
                  double* out) const;
    void transform(double* v, int64_t n) const;  // measure -> kernel value, in place
    const double* dense_row_of_a(int64_t i, std::vector<double>& scratch) const;

    bool use_csc(int64_t i, const int32_t* cols) const;

    const Matrix& A_;
    const Matrix& B_;
    std::vector<double> csc_work_;  // per point of A: entries of B a CSC row would touch
    KernelParams p_;
    Measure measure_;
};

}  // namespace sk
