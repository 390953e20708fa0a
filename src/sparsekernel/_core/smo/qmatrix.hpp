// Q-providers for the SMO engine, kept apart from the solver (as in LIBSVM):
//   KernelQ   Q_ij = y_i y_j K(x_i, x_j) computed by the kernel module, rows cached (RowCache),
//             addressed by active position (perm maps an active position to the original index);
//   DenseQ    a small dense q x q matrix already in memory: the sub-problem of the batched route.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "../cache.hpp"
#include "../kernels.hpp"

namespace sk {

class KernelQ {
public:
    // Rows are computed against a working copy of X kept in active order (PermutedCopy, rebuilt
    // after each shrinking pass), so that a row streams through memory instead of hopping through
    // the permutation. A precomputed kernel is read through the permutation instead.
    KernelQ(const Matrix& X, const KernelParams& params, const double* y, int64_t l, std::size_t cache_bytes,
            int nthreads)
        // the pair step needs two rows at once: a budget below two rows caches nothing
        : X_(X), params_(params), cache_(l, cache_bytes >= std::size_t(2 * l) * sizeof(float) ? cache_bytes : 0),
          y_(y, y + l), perm_(l), QD_(l), nthreads_(nthreads) {
        const Kernel diag(X_, X_, params_);
        for (int64_t i = 0; i < l; ++i) {
            perm_[i] = int32_t(i);
            QD_[i] = diag.value(i, i);
        }
        kernel_evals += l;
        rebuild_working_copy();
        scratch_[0].resize(l);
        scratch_[1].resize(l);
    }

    double QD(int64_t i) const { return QD_[i]; }
    const double* QD_data() const { return QD_.data(); }

    // Row i of Q over active positions [0, len).
    const float* get_Q(int64_t i, int64_t len) {
        int64_t valid = 0;
        float* row = cache_.get(i, len, &valid);
        if (row == nullptr) {  // the budget cannot hold one row: compute into a scratch row
            row = scratch_[next_scratch_].data();
            next_scratch_ ^= 1;
            valid = 0;
        }
        if (valid < len) fill_row(i, valid, len, row);
        return row;
    }

    // Rows for the active positions idx[0..q) over [0, len), as one block for the missing rows.
    // The pointers stay valid until the next call (the cache holds >= q rows; see solver).
    void get_Q_block(const int64_t* idx, int64_t q, int64_t len, const float** rows) {
        std::vector<int32_t> miss_orig;
        std::vector<int64_t> miss_pos;
        std::vector<float*> miss_out;
        for (int64_t r = 0; r < q; ++r) {
            int64_t valid = 0;
            float* row = cache_.get(idx[r], len, &valid);
            rows[r] = row;
            if (valid < len) {
                miss_orig.push_back(perm_[idx[r]]);
                miss_pos.push_back(idx[r]);
                miss_out.push_back(row);
            }
        }
        if (miss_orig.empty()) return;
        kernel_->block<float>(miss_orig.data(), int64_t(miss_orig.size()), cols(), len, miss_out.data(),
                              nthreads_);
        kernel_evals += int64_t(miss_orig.size()) * len;
        for (size_t r = 0; r < miss_pos.size(); ++r) apply_labels(miss_pos[r], 0, len, miss_out[r]);
    }

    // out[t - begin] += sum_r coef[r] Q(idx[r], t) for t in [begin, end): the kernel-vector product
    // y_t sum_r (coef_r y_r) K(x_r, x_t), without storing rows (Kernel::weighted_sum).
    void accumulate(const int64_t* idx, const double* coef, int64_t q, int64_t begin, int64_t end, double* out) {
        std::vector<int32_t> rows(q), cols(end - begin);
        std::vector<double> w(q), sum(end - begin, 0.0);
        for (int64_t r = 0; r < q; ++r) {
            rows[r] = perm_[idx[r]];
            w[r] = coef[r] * y_[idx[r]];
        }
        for (int64_t t = begin; t < end; ++t) cols[t - begin] = precomputed() ? perm_[t] : int32_t(t);
        kernel_->weighted_sum(rows.data(), w.data(), q, cols.data(), end - begin, sum.data(), nthreads_);
        kernel_evals += q * (end - begin);
        for (int64_t t = begin; t < end; ++t) out[t - begin] += y_[t] * sum[t - begin];
    }

    // Position swaps of one shrinking pass, applied in order.
    void swap_indices(const std::vector<std::pair<int64_t, int64_t>>& swaps) {
        if (swaps.empty()) return;
        cache_.swap_indices(swaps);
        for (auto [i, j] : swaps) {
            std::swap(y_[i], y_[j]);
            std::swap(perm_[i], perm_[j]);
            std::swap(QD_[i], QD_[j]);
        }
        rebuild_working_copy();
    }

    int64_t capacity_rows(int64_t len) const { return cache_.capacity_rows(len); }
    const RowCache& cache() const { return cache_; }
    int64_t kernel_evals = 0;

private:
    bool precomputed() const { return params_.type == KernelType::precomputed; }
    const int32_t* cols() const { return precomputed() ? perm_.data() : nullptr; }
    void rebuild_working_copy() {
        if (precomputed()) {
            kernel_ = std::make_unique<Kernel>(X_, X_, params_);
        } else {
            work_.build(X_, perm_);
            kernel_ = std::make_unique<Kernel>(X_, work_.m, params_);
        }
    }

    void fill_row(int64_t i, int64_t begin, int64_t end, float* row) {
        kernel_->row(perm_[i], cols(), begin, end, row + begin, nthreads_);
        kernel_evals += end - begin;
        apply_labels(i, begin, end, row + begin);
    }
    void apply_labels(int64_t i, int64_t begin, int64_t end, float* out) {
        const float yi = float(y_[i]);
        for (int64_t t = begin; t < end; ++t) out[t - begin] *= yi * float(y_[t]);
    }

    const Matrix& X_;
    KernelParams params_;
    PermutedCopy work_;
    std::unique_ptr<Kernel> kernel_;
    RowCache cache_;
    std::vector<double> y_;
    std::vector<int32_t> perm_;
    std::vector<double> QD_;
    std::vector<float> scratch_[2];
    int next_scratch_ = 0;
    int nthreads_;
};

class DenseQ {
public:
    // Q is q x q row-major (float), already multiplied by the labels.
    DenseQ(const float* Q, int64_t q) : Q_(Q), q_(q), QD_(q) {
        for (int64_t i = 0; i < q; ++i) QD_[i] = Q_[i * q + i];
    }
    double QD(int64_t i) const { return QD_[i]; }
    const double* QD_data() const { return QD_.data(); }
    const float* get_Q(int64_t i, int64_t /*len*/) { return Q_ + i * q_; }
    // the sub-problem never shrinks, so it never swaps or reconstructs
    void swap_indices(const std::vector<std::pair<int64_t, int64_t>>&) {}
    void accumulate(const int64_t*, const double*, int64_t, int64_t, int64_t, double*) {}
    int64_t kernel_evals = 0;

private:
    const float* Q_;
    int64_t q_;
    std::vector<double> QD_;
};

}  // namespace sk
