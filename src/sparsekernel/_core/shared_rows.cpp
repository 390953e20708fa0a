#include "shared_rows.hpp"

#include <algorithm>
#include <numeric>
#include <utility>

#include "parallel.hpp"

namespace sk {

SharedRows::SharedRows(const Matrix& X, const KernelParams& params, std::size_t budget_bytes)
    : n_(X.n), budget_(budget_bytes / sizeof(float)), rows_(X.n), where_(X.n) {
    std::vector<int32_t> identity(n_);
    std::iota(identity.begin(), identity.end(), 0);
    work_.build(X, identity);
    kernel_ = std::make_unique<Kernel>(X, work_.m, params);
}

void SharedRows::insert(int32_t g, Row row) {
    if (rows_[g]) return;  // another thread computed it meanwhile
    if (capacity_rows() < 1) return;
    while (int64_t(resident_) >= capacity_rows()) {
        const int32_t old = lru_.front();
        lru_.pop_front();
        rows_[old].reset();
        --resident_;
    }
    rows_[g] = std::move(row);
    lru_.push_back(g);
    where_[g] = std::prev(lru_.end());
    ++resident_;
    if (resident_ > peak_rows_.load()) peak_rows_.store(resident_);
}

int64_t SharedRows::fetch(const int32_t* g, int64_t q, Row* out, int nthreads) {
    std::vector<int64_t> missing;
    {
        std::lock_guard<std::mutex> lock(mu_);
        for (int64_t r = 0; r < q; ++r) {
            out[r] = rows_[g[r]];
            if (out[r]) {
                lru_.splice(lru_.end(), lru_, where_[g[r]]);  // most recently used
            } else {
                missing.push_back(r);
            }
        }
    }
    if (missing.empty()) return 0;
    // one kernel block for the missing rows; a row asked for twice in one call is computed once
    std::vector<int32_t> src;
    std::vector<float*> dst;
    std::vector<std::shared_ptr<float[]>> fresh;
    for (int64_t r : missing) {
        auto it = std::find(src.begin(), src.end(), g[r]);
        if (it != src.end()) continue;
        src.push_back(g[r]);
        fresh.emplace_back(new float[std::max<int64_t>(1, n_)]);
        dst.push_back(fresh.back().get());
    }
    if (int64_t(src.size()) < kBlockMinRows) {  // a row or two: packing B for a block would cost as much
        for (size_t k = 0; k < src.size(); ++k) kernel_->row(src[k], nullptr, 0, n_, dst[k], nthreads);
    } else {
        kernel_->block<float>(src.data(), int64_t(src.size()), nullptr, n_, dst.data(), nthreads);
    }
    const int64_t computed = int64_t(src.size()) * n_;
    evals_ += computed;
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t k = 0; k < src.size(); ++k) insert(src[k], fresh[k]);
    for (int64_t r : missing) {
        const size_t k = size_t(std::find(src.begin(), src.end(), g[r]) - src.begin());
        out[r] = fresh[k];
    }
    return computed;
}

int64_t SharedRows::expansion(const int32_t* rows, int64_t nr, const int32_t* cols, int64_t m, const double* coef,
                              int64_t k, double* out, int nthreads) {
    std::fill(out, out + m * k, 0.0);
    constexpr int64_t kBlockRows = 256;
    std::vector<Row> got(kBlockRows);
    std::vector<std::vector<std::pair<int64_t, double>>> weights(kBlockRows);  // each row's nonzero coef
    const int64_t nc = std::max<int64_t>(1, std::min<int64_t>(4 * std::max(1, nthreads), m / 256));
    int64_t computed = 0;
    for (int64_t r0 = 0; r0 < nr; r0 += kBlockRows) {
        const int64_t q = std::min(kBlockRows, nr - r0);
        computed += fetch(rows + r0, q, got.data(), nthreads);
        for (int64_t r = 0; r < q; ++r) {
            weights[r].clear();
            for (int64_t j = 0; j < k; ++j)
                if (coef[j * nr + r0 + r] != 0.0) weights[r].emplace_back(j, coef[j * nr + r0 + r]);
        }
        // each chunk of points adds the block's rows to its own outputs
        for_chunks(nc, nthreads, [&](int64_t c) {
            const int64_t lo = m * c / nc, hi = m * (c + 1) / nc;
            for (int64_t r = 0; r < q; ++r) {
                const float* row = got[r].get();
                for (const auto& [j, w] : weights[r])
                    for (int64_t t = lo; t < hi; ++t) out[t * k + j] += w * double(row[cols[t]]);
            }
        });
    }
    return computed;
}

}  // namespace sk
