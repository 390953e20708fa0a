// Q-providers for the SMO engine, kept apart from the solver (as in LIBSVM):
//   KernelQ   Q_ij = y_i y_j K(x_i, x_j) computed by the kernel module, rows cached (RowCache),
//             addressed by active position (perm maps an active position to the original index);
//             or, inside a grid search, gathered from the search's SharedRows through an index map;
//   SvrQ      eps-SVR's 2N variables over N points (LIBSVM's SVR_Q): kernel rows cached once per
//             point, gathered with signs into the 2N positions;
//   DenseQ    a small dense q x q matrix already in memory: the sub-problem of the batched route.
// Every provider reports original(t), the variable at active position t. A solver starts in the
// provider's current order, so a KernelQ (and its cache) can serve a sequence of solves on the same
// data: a warm-started regularisation path.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "../cache.hpp"
#include "../kernels.hpp"
#include "../parallel.hpp"
#include "../shared_rows.hpp"

namespace sk {

class KernelQ {
public:
    static constexpr bool kKernelRows = true;  // rows come from the kernel module (not a dense block)
    // Rows are computed against a working copy of X kept in active order (PermutedCopy, rebuilt
    // after each shrinking pass), so that a row streams through memory instead of hopping through
    // the permutation. A precomputed kernel is read through the permutation instead.
    KernelQ(const Matrix& X, const KernelParams& params, const double* y, int64_t l, std::size_t cache_bytes,
            int nthreads)
        // the pair step needs two rows at once: a budget below two rows caches nothing
        : X_(X), params_(params), cache_(l, cache_bytes >= std::size_t(2 * l) * sizeof(float) ? cache_bytes : 0, nthreads),
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

    // The same Q with its kernel values read from `shared` (a grid search's rows over the whole data
    // set): point i of this problem is row global[i] there. The own cache (cache_bytes) keeps the
    // gathered rows, addressed by active position as above.
    KernelQ(const Matrix& X, const KernelParams& params, const double* y, int64_t l, std::size_t cache_bytes,
            int nthreads, SharedRows* shared, const int32_t* global)
        : X_(X), params_(params), cache_(l, cache_bytes >= std::size_t(2 * l) * sizeof(float) ? cache_bytes : 0, nthreads),
          y_(y, y + l), perm_(l), QD_(l), nthreads_(nthreads), shared_(shared), global_(global, global + l) {
        for (int64_t i = 0; i < l; ++i) {
            perm_[i] = int32_t(i);
            QD_[i] = shared_->diag(global_[i]);
        }
        scratch_[0].resize(l);
        scratch_[1].resize(l);
    }

    double QD(int64_t i) const { return QD_[i]; }
    const double* QD_data() const { return QD_.data(); }

    // Row i of Q over active positions [0, len).
    const float* get_Q(int64_t i, int64_t len) {
        int64_t valid = 0;
        float* row = row_slot(i, len, &valid);
        if (valid < len) fill_row(i, valid, len, row);
        return row;
    }

    // Rows by parts (Solver::row_by_parts): row i's storage over [0, len) and in *valid how many
    // leading entries it holds; the caller's parallel pass computes the rest, a range per chunk, with
    // fill_part (safe from several threads at once). Shared rows come whole (valid = len).
    static constexpr bool kRowsByParts = true;
    float* row_for_parts(int64_t i, int64_t len, int64_t* valid) {
        if (shared_) {
            *valid = len;
            return const_cast<float*>(get_Q(i, len));
        }
        float* row = row_slot(i, len, valid);
        kernel_evals += len - *valid;
        return row;
    }
    double part_cost(int64_t i) const { return kernel_->row_cost(perm_[i], cols()); }
    // operations per entry of a row a step computes (a cache miss); a gather from shared rows: 2
    double step_cost() const { return shared_ || perm_.empty() ? 2.0 : kernel_->row_cost(perm_[0], cols()); }
    void fill_part(int64_t i, int64_t begin, int64_t end, float* row) const {
        kernel_->row(perm_[i], cols(), begin, end, row + begin, 1, y_.data(), y_[i]);
    }

    // Rows for the active positions idx[0..q) over [0, len), as kernel blocks for the missing parts:
    // rows not cached at all in one block over [0, len), rows cached over a shorter head (computed
    // while the active set was smaller) in one block over [shortest head, len) (a value is a function
    // of its pair, so recomputing part of a head rewrites the same value). The pointers stay valid
    // until the next call (the cache holds >= q rows; see solver).
    void get_Q_block(const int64_t* idx, int64_t q, int64_t len, const float** rows) {
        Misses fresh, tails;
        int64_t tail_begin = len;
        for (int64_t r = 0; r < q; ++r) {
            int64_t valid = 0;
            float* row = cache_.get(idx[r], len, &valid);
            rows[r] = row;
            if (valid >= len) continue;
            Misses& m = valid > 0 && !shared_ ? tails : fresh;
            m.orig.push_back(perm_[idx[r]]);
            m.pos.push_back(idx[r]);
            m.out.push_back(row);
            if (&m == &tails) tail_begin = std::min(tail_begin, valid);
        }
        if (shared_) {
            fill_rows_shared(fresh, len);
            return;
        }
        compute_block(fresh, 0, len);
        compute_block(tails, tail_begin, len);
    }

    // out[t - begin] += sum_r coef[r] Q(idx[r], t) for t in [begin, end): the kernel-vector product
    // y_t sum_r (coef_r y_r) K(x_r, x_t), without storing rows (Kernel::weighted_sum), each value
    // rounded to float32 as the rows hold it: the gradient the solver rebuilds from a (start, G_bar,
    // reconstruction, stall guard) is then the one its steps update through the rows, exact for the
    // float32-rounded kernel as LIBSVM's. With err (and single_sums()), in float32, err[t - begin]
    // += the bound on its error.
    void accumulate(const int64_t* idx, const double* coef, int64_t q, int64_t begin, int64_t end, double* out,
                    double* err = nullptr) {
        if (shared_) {
            accumulate_shared(idx, coef, q, begin, end, out);
            return;
        }
        std::vector<int32_t> rows(q), cols(end - begin);
        std::vector<double> w(q), sum(end - begin, 0.0);
        for (int64_t r = 0; r < q; ++r) {
            rows[r] = perm_[idx[r]];
            w[r] = coef[r] * y_[idx[r]];
        }
        for (int64_t t = begin; t < end; ++t) cols[t - begin] = precomputed() ? perm_[t] : int32_t(t);
        kernel_->weighted_sum(rows.data(), w.data(), q, cols.data(), end - begin, sum.data(), nthreads_,
                              single_sums() ? err : nullptr, /*float_values=*/true);
        kernel_evals += q * (end - begin);
        for (int64_t t = begin; t < end; ++t) out[t - begin] += y_[t] * sum[t - begin];
    }
    // whether accumulate can sum in float32 (Kernel::single_sums; never from shared rows)
    bool single_sums() const { return !shared_ && kernel_->single_sums(); }

    // A bound per unit of alpha on the error the working copy's float32 points put on a kernel value
    // (0 when it holds none): u (d / 32 + 8 + x), the float32 sums of dense32_measures (d / 32 deep,
    // then 8-lane and 4-chain reductions) and the rounding of the inputs, x = 2 sqrt(gamma) R (rbf,
    // R the largest norm), 2 gamma R_1 (laplacian, L1 norms); the dot-product kernels: the sums' bound
    // times d K / d(x'z) at its largest, gamma R^2 (and the polynomial's degree). Rounding to float32
    // rows (LIBSVM's own) is not counted.
    double float32_points_error() const {
        if (shared_ || precomputed() || X_.sparse || X_.d <= PermutedCopy::kFeatureMajorMaxD) return 0.0;
        double r2 = 0.0, r1 = 0.0;
        for (int64_t i = 0; i < X_.n; ++i) {
            r2 = std::max(r2, X_.sqnorm[i]);
            r1 = std::max(r1, X_.l1norm[i]);
        }
        const double sums = double(X_.d) / 32.0 + 8.0, g = params_.gamma;
        switch (params_.type) {
            case KernelType::rbf: return kFloat32Roundoff * (sums + 2.0 * std::sqrt(g * r2));
            case KernelType::laplacian: return kFloat32Roundoff * (sums + 2.0 * g * r1);
            case KernelType::linear: return kFloat32Roundoff * sums * r2;
            case KernelType::sigmoid: return kFloat32Roundoff * sums * g * r2;
            case KernelType::poly: {
                const int p = std::max(1, params_.degree);
                return kFloat32Roundoff * sums * g * r2 * p * integer_power(g * r2 + std::fabs(params_.coef0), p - 1);
            }
            default: return 0.0;
        }
    }

    // The working copy of dense data of many features may hold float32 points (PermutedCopy): allowed
    // or not by the solver from the size of its alphas (Solver: float32_points_allowed).
    void allow_float32_points(bool allow) {
        if (allow == float32_points_) return;
        float32_points_ = allow;
        rebuild_working_copy();
    }

    // Position swaps of one shrinking pass, applied in order.
    void swap_indices(const std::vector<std::pair<int64_t, int64_t>>& swaps) {
        if (swaps.empty()) return;
        cache_.swap_indices(swaps);
        for (auto [i, j] : swaps) {
            std::swap(y_[i], y_[j]);
            std::swap(perm_[i], perm_[j]);
            std::swap(QD_[i], QD_[j]);
            if (shared_) std::swap(global_[i], global_[j]);
        }
        rebuild_working_copy();
    }

    int64_t capacity_rows(int64_t len) const { return cache_.capacity_rows(len); }
    int64_t original(int64_t t) const { return perm_[t]; }
    int64_t evals() const { return kernel_evals; }
    const RowCache& cache() const { return cache_; }
    int64_t kernel_evals = 0;

private:
    bool precomputed() const { return params_.type == KernelType::precomputed; }
    const int32_t* cols() const { return precomputed() ? perm_.data() : nullptr; }
    void rebuild_working_copy() {
        if (shared_) return;  // rows come from the shared set
        if (precomputed()) {
            kernel_ = std::make_unique<Kernel>(X_, X_, params_);
        } else {
            work_.build(X_, perm_, nthreads_, float32_points_);
            kernel_ = std::make_unique<Kernel>(X_, work_.m, params_, nthreads_);
        }
    }

    // Row i's storage over [0, len) and how many leading entries it holds: the cache's, or a scratch
    // row (nothing held) when the budget cannot hold one row.
    float* row_slot(int64_t i, int64_t len, int64_t* valid) {
        float* row = cache_.get(i, len, valid);
        if (row == nullptr) {
            row = scratch_[next_scratch_].data();
            next_scratch_ ^= 1;
            *valid = 0;
        }
        return row;
    }

    void fill_row(int64_t i, int64_t begin, int64_t end, float* row) {
        if (shared_) {
            SharedRows::Row full;
            kernel_evals += shared_->fetch(&global_[i], 1, &full, nthreads_);
            const float yi = float(y_[i]);
            const float* k = full.get();
            for (int64_t t = begin; t < end; ++t) row[t] = yi * float(y_[t]) * k[global_[t]];
            return;
        }
        kernel_->row(perm_[i], cols(), begin, end, row + begin, nthreads_, y_.data(), y_[i]);
        kernel_evals += end - begin;
    }

    // accumulate() from the shared rows: the rows this Q-provider has cached over [begin, end) read
    // in place; the others a gather of the shared row over [begin, end), fetched (and kept for the
    // other fits) a group at a time
    void accumulate_shared(const int64_t* idx, const double* coef, int64_t q, int64_t begin, int64_t end,
                           double* out) {
        constexpr int64_t kGroup = 64, kSpan = 1024;  // rows fetched at once; points per pass of four rows
        std::vector<int32_t> g;
        std::vector<SharedRows::Row> full(kGroup);
        std::vector<double> w, cw;
        std::vector<const float*> cached;
        for (int64_t r0 = 0; r0 < q; r0 += kGroup) {
            const int64_t m = std::min(kGroup, q - r0);
            g.clear();
            w.clear();
            cached.clear();
            cw.clear();
            for (int64_t r = 0; r < m; ++r) {
                const int64_t i = idx[r0 + r];
                if (const float* row = cache_.peek(i, end)) {  // Q_i: y_i y_t K(x_i, x_t)
                    cached.push_back(row);
                    cw.push_back(coef[r0 + r]);
                } else {
                    g.push_back(global_[i]);
                    w.push_back(coef[r0 + r] * y_[i]);
                }
            }
            const int64_t mg = int64_t(g.size()), mc = int64_t(cached.size());
            if (mg > 0) kernel_evals += shared_->fetch(g.data(), mg, full.data(), nthreads_);
            const int64_t nc = chunks_for(end - begin, 2.0 * double(m), nthreads_);
            for_chunks(nc, nthreads_, [&](int64_t c) {
                const int64_t b = begin + (end - begin) * c / nc, e = begin + (end - begin) * (c + 1) / nc;
                // four rows at a time, each read in the order of the points' global indices (a few
                // streams, not one per row of the group: the gathers stay in the prefetchers' reach)
                for (int64_t s = 0; s < e - b; s += kSpan) {
                    const int64_t t0 = b + s, t1 = std::min(e, t0 + kSpan);
                    int64_t r = 0;
                    for (; r + 4 <= mc; r += 4) {
                        const float *q0 = cached[r], *q1 = cached[r + 1], *q2 = cached[r + 2], *q3 = cached[r + 3];
                        const double w0 = cw[r], w1 = cw[r + 1], w2 = cw[r + 2], w3 = cw[r + 3];
                        for (int64_t t = t0; t < t1; ++t)
                            out[t - begin] += w0 * q0[t] + w1 * q1[t] + w2 * q2[t] + w3 * q3[t];
                    }
                    for (; r < mc; ++r)
                        for (int64_t t = t0; t < t1; ++t) out[t - begin] += cw[r] * cached[r][t];
                    r = 0;
                    for (; r + 4 <= mg; r += 4) {
                        const float *f0 = full[r].get(), *f1 = full[r + 1].get(), *f2 = full[r + 2].get(),
                                    *f3 = full[r + 3].get();
                        const double w0 = w[r], w1 = w[r + 1], w2 = w[r + 2], w3 = w[r + 3];
                        for (int64_t t = t0; t < t1; ++t) {
                            const int32_t gt = global_[t];
                            out[t - begin] += y_[t] * (w0 * f0[gt] + w1 * f1[gt] + w2 * f2[gt] + w3 * f3[gt]);
                        }
                    }
                    for (; r < mg; ++r) {
                        const float* f = full[r].get();
                        for (int64_t t = t0; t < t1; ++t) out[t - begin] += y_[t] * (w[r] * f[global_[t]]);
                    }
                }
            });
        }
    }
    struct Misses {  // rows of a block to compute: original index, active position, storage
        std::vector<int32_t> orig;
        std::vector<int64_t> pos;
        std::vector<float*> out;
    };

    // the rows m over the active positions [0, len) from the shared rows, fetched as one group (the
    // missing ones computed there as one kernel block), with the label signs
    void fill_rows_shared(Misses& m, int64_t len) {
        const int64_t nm = int64_t(m.pos.size());
        if (nm == 0) return;
        std::vector<int32_t> g(nm);
        std::vector<SharedRows::Row> full(nm);
        for (int64_t r = 0; r < nm; ++r) g[r] = global_[m.pos[r]];
        kernel_evals += shared_->fetch(g.data(), nm, full.data(), nthreads_);
        const int64_t nc = chunks_for(nm, double(len), nthreads_);
        for_chunks(nc, nthreads_, [&](int64_t ch) {
            for (int64_t r = nm * ch / nc; r < nm * (ch + 1) / nc; ++r) {
                const float yi = float(y_[m.pos[r]]);
                const float* k = full[r].get();
                float* row = m.out[r];
                for (int64_t t = 0; t < len; ++t) row[t] = yi * float(y_[t]) * k[global_[t]];
            }
        });
    }

    // the rows m over the active positions [begin, len), with the label signs
    void compute_block(Misses& m, int64_t begin, int64_t len) {
        const int64_t nm = int64_t(m.pos.size()), w = len - begin;
        if (nm == 0 || w <= 0) return;
        std::vector<int32_t> span;  // the columns [begin, len) of the working copy (or of X, precomputed)
        const int32_t* c = cols();
        if (begin > 0 || c) {
            span.resize(w);
            for (int64_t t = 0; t < w; ++t) span[t] = c ? c[begin + t] : int32_t(begin + t);
        }
        for (auto& o : m.out) o += begin;
        kernel_->block<float>(m.orig.data(), nm, span.empty() ? nullptr : span.data(), w, m.out.data(), nthreads_);
        kernel_evals += nm * w;
        const int64_t nc = chunks_for(nm, double(w), nthreads_);
        for_chunks(nc, nthreads_, [&](int64_t ch) {
            for (int64_t r = nm * ch / nc; r < nm * (ch + 1) / nc; ++r) apply_labels(m.pos[r], begin, len, m.out[r]);
        });
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
    bool float32_points_ = true;
    SharedRows* shared_ = nullptr;  // a grid search's rows, or none
    std::vector<int32_t> global_;   // with shared_: the row there of the point at each active position
};

// eps-SVR (CSMO eq. 1-2 with Lin's 2002 formulation): variable t < N is a+_t (sign +1), variable
// t + N is a-_t (sign -1), both on point t, and Q_tu = s_t s_u K(x_pt(t), x_pt(u)). A kernel row is
// computed once per point (N entries, point order) by an inner KernelQ that never shrinks, and each
// request gathers it into the active positions with the signs. Solver arrays stay in position order.
class SvrQ {
public:
    static constexpr bool kKernelRows = true;
    static constexpr bool kRowsByParts = false;
    // shared, global: as KernelQ's second constructor (point t is row global[t] of the shared set)
    SvrQ(const Matrix& X, const KernelParams& params, int64_t n, std::size_t cache_bytes, int nthreads,
         SharedRows* shared = nullptr, const int32_t* global = nullptr)
        : ones_(n, 1.0),
          inner_(shared ? KernelQ(X, params, ones_.data(), n, cache_bytes, nthreads, shared, global)
                        : KernelQ(X, params, ones_.data(), n, cache_bytes, nthreads)),
          n_(n), nthreads_(nthreads), pos_(2 * n),
          point_(2 * n), sign_(2 * n), QD_(2 * n) {
        for (int64_t t = 0; t < 2 * n; ++t) {
            pos_[t] = t;
            point_[t] = int32_t(t % n);
            sign_[t] = t < n ? 1.0f : -1.0f;
            QD_[t] = inner_.QD(t % n);
        }
        for (auto& g : gathered_) g.row.resize(2 * n);
    }

    double QD(int64_t i) const { return QD_[i]; }
    const double* QD_data() const { return QD_.data(); }

    // The last kGathered rows gathered since the last swap pass are kept: a pair step asks for row i
    // again after its selection did (and nu's selection asks for one row per class). A row is valid
    // until kGathered other rows are asked for.
    const float* get_Q(int64_t i, int64_t len) {
        Gathered* slot = &gathered_[0];
        for (Gathered& g : gathered_) {
            if (g.i == i && g.pass == passes_ && g.len >= len) {
                g.used = ++clock_;
                return g.row.data();
            }
            if (g.used < slot->used) slot = &g;  // the least recently used
        }
        gather(i, len, slot->row.data());
        slot->i = i;
        slot->len = len;
        slot->pass = passes_;
        slot->used = ++clock_;
        return slot->row.data();
    }

    // Gathered into owned buffers (the batched route never runs on SvrQ: capacity_rows is 0).
    void get_Q_block(const int64_t* idx, int64_t q, int64_t len, const float** rows) {
        if (int64_t(block_.size()) < q) block_.resize(q);
        for (int64_t r = 0; r < q; ++r) {
            block_[r].resize(2 * n_);
            gather(idx[r], len, block_[r].data());
            rows[r] = block_[r].data();
        }
    }

    // out[t - begin] += sum_r coef_r Q(idx_r, t) = s_t sum_r (coef_r s_r) K(pt_r, pt_t): one kernel-
    // vector product over the N points, then gathered (err: as KernelQ's)
    void accumulate(const int64_t* idx, const double* coef, int64_t q, int64_t begin, int64_t end, double* out,
                    double* err = nullptr) {
        std::vector<int64_t> pts(q);
        std::vector<double> w(q), sum(n_, 0.0), bound(err ? n_ : 0, 0.0);
        for (int64_t r = 0; r < q; ++r) {
            pts[r] = point_[idx[r]];
            w[r] = coef[r] * sign_[idx[r]];
        }
        inner_.accumulate(pts.data(), w.data(), q, 0, n_, sum.data(), err ? bound.data() : nullptr);
        for (int64_t t = begin; t < end; ++t) out[t - begin] += sign_[t] * sum[point_[t]];
        if (err)
            for (int64_t t = begin; t < end; ++t) err[t - begin] += bound[point_[t]];
    }
    bool single_sums() const { return inner_.single_sums(); }
    double step_cost() const { return inner_.step_cost() + 3.0; }
    double float32_points_error() const { return inner_.float32_points_error(); }
    void allow_float32_points(bool allow) { inner_.allow_float32_points(allow); }

    void swap_indices(const std::vector<std::pair<int64_t, int64_t>>& swaps) {
        for (auto [i, j] : swaps) {
            std::swap(pos_[i], pos_[j]);
            std::swap(point_[i], point_[j]);
            std::swap(sign_[i], sign_[j]);
            std::swap(QD_[i], QD_[j]);
        }
        if (!swaps.empty()) ++passes_;  // the gathered rows are in the old positions
    }

    int64_t capacity_rows(int64_t) const { return 0; }  // gathered rows are not kept: no blocks
    int64_t original(int64_t t) const { return pos_[t]; }
    const RowCache& cache() const { return inner_.cache(); }
    int64_t evals() const { return inner_.kernel_evals; }

private:
    void gather(int64_t i, int64_t len, float* out) {
        const float* row = inner_.get_Q(point_[i], n_);
        const float si = sign_[i];
        const int64_t nc = chunks_for(len, 3.0, nthreads_);
        for_chunks(nc, nthreads_, [&](int64_t c) {
            for (int64_t t = len * c / nc; t < len * (c + 1) / nc; ++t) out[t] = si * sign_[t] * row[point_[t]];
        });
    }

    struct Gathered {
        std::vector<float> row;
        int64_t i = -1, len = 0, pass = -1;  // row i over [0, len) as the positions were after swap pass `pass`
        uint64_t used = 0;
    };
    static constexpr int kGathered = 4;

    std::vector<double> ones_;  // the inner provider's labels (declared before inner_)
    KernelQ inner_;
    int64_t n_;
    int nthreads_;
    std::vector<int64_t> pos_;   // variable (0..2N) at each position
    std::vector<int32_t> point_;  // its point
    std::vector<float> sign_;     // +1 for a+, -1 for a-
    std::vector<double> QD_;
    Gathered gathered_[kGathered];
    int64_t passes_ = 0;
    uint64_t clock_ = 0;
    std::vector<std::vector<float>> block_;
};

class DenseQ {
public:
    static constexpr bool kKernelRows = false;
    static constexpr bool kRowsByParts = false;
    // Q is q x q row-major (float), already multiplied by the labels.
    DenseQ(const float* Q, int64_t q) : Q_(Q), q_(q), QD_(q) {
        for (int64_t i = 0; i < q; ++i) QD_[i] = Q_[i * q + i];
    }
    double QD(int64_t i) const { return QD_[i]; }
    const double* QD_data() const { return QD_.data(); }
    const float* get_Q(int64_t i, int64_t /*len*/) { return Q_ + i * q_; }
    // the sub-problem never shrinks, so it never swaps or reconstructs
    void swap_indices(const std::vector<std::pair<int64_t, int64_t>>&) {}
    void accumulate(const int64_t*, const double*, int64_t, int64_t, int64_t, double*, double* = nullptr) {}
    bool single_sums() const { return false; }
    double step_cost() const { return 0.0; }
    double float32_points_error() const { return 0.0; }
    void allow_float32_points(bool) {}
    int64_t capacity_rows(int64_t) const { return q_; }
    int64_t original(int64_t t) const { return t; }
    int64_t kernel_evals = 0;

private:
    const float* Q_;
    int64_t q_;
    std::vector<double> QD_;
};

}  // namespace sk
