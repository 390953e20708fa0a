// Kernel rows over a whole data set, shared by every Q-provider of a grid search (one instance per
// kernel setting). K(x_g, x_h) depends on neither the CV fold nor C, so a row computed for one fit
// serves every other fit of the same kernel: each fit's KernelQ reads it through an index map (the
// fit's points -> rows of the whole set) instead of computing it.
//
// Rows are full length (every point of the set), float32, addressed by global row index, and kept
// under a hard budget (least recently used rows leave first). The class is thread-safe: fits of one
// kernel setting may run in parallel threads. A row is handed out as a shared pointer, so evicting
// it never frees memory a reader still uses; the resident rows stay within the budget, plus the rows
// being read at that moment (a few per fit).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <vector>

#include "kernels.hpp"
#include "matrix.hpp"

namespace sk {

class SharedRows {
public:
    using Row = std::shared_ptr<const float[]>;
    static constexpr int64_t kBlockMinRows = 4;

    SharedRows(const Matrix& X, const KernelParams& params, std::size_t budget_bytes);

    int64_t n() const { return n_; }
    double diag(int64_t g) const { return kernel_->value(g, g); }

    // out[r] = row g[r] for r < q; the missing rows are computed as one kernel block (without
    // holding the lock; fewer than kBlockMinRows one row at a time, the same values) and kept when
    // the budget allows. Returns the number of kernel values computed.
    int64_t fetch(const int32_t* g, int64_t q, Row* out, int nthreads);

    // out[c k + j] = sum_r coef[j nr + r] K(x_rows[r], x_cols[c]) (c < m, j < k): an expansion over
    // rows of the set evaluated at other points of it (a search's held-out fold), read from the kept
    // rows (the missing ones fetched, a block at a time). Returns the number of kernel values computed.
    int64_t expansion(const int32_t* rows, int64_t nr, const int32_t* cols, int64_t m, const double* coef, int64_t k,
                      double* out, int nthreads);

    int64_t capacity_rows() const { return n_ > 0 ? int64_t(budget_ / std::size_t(n_)) : 0; }
    std::size_t peak_bytes() const { return peak_rows_.load() * std::size_t(n_) * sizeof(float); }
    int64_t kernel_evals() const { return evals_.load(); }

private:
    void insert(int32_t g, Row row);  // under the lock

    int64_t n_;
    PermutedCopy work_;  // the whole set in the kernel module's preferred layout
    std::unique_ptr<Kernel> kernel_;
    std::size_t budget_;  // floats
    std::mutex mu_;
    std::vector<Row> rows_;
    std::list<int32_t> lru_;  // front: least recently used
    std::vector<std::list<int32_t>::iterator> where_;
    std::size_t resident_ = 0;
    std::atomic<std::size_t> peak_rows_{0};
    std::atomic<int64_t> evals_{0};
};

}  // namespace sk
