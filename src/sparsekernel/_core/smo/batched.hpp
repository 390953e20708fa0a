// The two-level route of Solver (solver.hpp): Joachims' decomposition as ThunderSVM runs it.
//
// Each outer step selects q violating variables B (select_working_block), reads their q rows of Q
// as one kernel block and states the sub-problem in B with the other variables fixed
// (build_block: Q_BB, p_B = G_B - Q_BB a_B - h'(a_B), the same boxes, so that its gradient at a_B
// is G_B), solves it in cache by this same class on a DenseQ with ThunderSVM's local stopping rule
// (solve_block: no synchronisation, no kernel evaluation), then updates the gradient of every
// active variable from the block, the statuses and G_bar (apply_block). Included at the end of
// solver.hpp: these are Solver's own members.
#pragma once

namespace sk {

// the working set of one outer step and its sub-problem
template <class QM, class Term, bool kNu>
struct Solver<QM, Term, kNu>::Block {
    std::vector<int64_t> B;                       // the working set (active positions)
    std::vector<char> taken;                      // select_working_block's scratch (one per position)
    std::vector<const float*> rows;               // their rows of Q over the active set
    std::vector<float> Qsub;                      // Q_BB, row-major
    std::vector<double> y, p, C, lo, hi, a, g;    // the sub-problem; a = a_B, g = G_B before the step
    std::vector<double> a_new;                    // its solution
    int64_t iter = 0;                             // the sub-problem's pair steps
};

template <class QM, class Term, bool kNu>
void Solver<QM, Term, kNu>::solve_batched(SolverResult& res) {
    const int64_t q = choose_block_size();
    res.q = q;
    if (q < 4) {  // no room for a block: the pair route
        solve_pairs_into(res);
        return;
    }
    if (opt_.pair_start) {
        const int64_t budget = std::max<int64_t>(1, int64_t(kPairStartShare * double(l_)));
        const int64_t max_iter = opt_.max_iter;
        if (max_iter < 0 || budget < max_iter) {
            opt_.max_iter = budget;
            solve_pairs_into(res);
            opt_.max_iter = max_iter;
            if (res.status != kMaxIter) return;  // converged (or interrupted) on the pair route
            res.status = kConverged;
        } else {
            solve_pairs_into(res);
            return;
        }
    }
    Block blk;
    blk.taken.assign(l_, 0);
    blk.rows.resize(q);
    int64_t since_shrink = 0, idle_blocks = 0;
    constexpr int64_t kMaxIdleBlocks = 16;
    while (opt_.max_iter < 0 || res.iter < opt_.max_iter) {
        if (poll_interrupt(res)) return;
        if (opt_.shrinking && since_shrink >= std::min<int64_t>(l_, 1000)) {
            do_shrinking();
            since_shrink = 0;
            blk.B.clear();  // positions moved: no previous block to keep
        }
        const double gap = current_gap();
        last_gap_ = gap;
        if (!(gap >= stop_tol())) {
            if (active_size_ == l_) break;
            reconstruct_gradient();  // final unshrink check
            active_size_ = l_;
            since_shrink = 0;
            continue;
        }
        select_working_block(q, blk.B, blk.taken);
        build_block(blk);
        solve_block(blk);
        // a block that cannot move while the gap says it should (never seen; a safeguard against
        // looping forever): the solve stops, not converged
        idle_blocks = blk.iter == 0 ? idle_blocks + 1 : 0;
        if (idle_blocks > kMaxIdleBlocks) {
            res.status = kMaxIter;
            return;
        }
        res.iter += blk.iter;
        since_shrink += blk.iter;
        ++res.outer_iter;
        apply_block(blk);
    }
    if (opt_.max_iter >= 0 && res.iter >= opt_.max_iter) res.status = kMaxIter;
}

// Q_BB from the block's rows and the sub-problem in B: the same boxes, p_B = G_B - Q_BB a_B - h'(a_B)
// (its gradient at a_B is G_B)
template <class QM, class Term, bool kNu>
void Solver<QM, Term, kNu>::build_block(Block& blk) {
    const int64_t qb = int64_t(blk.B.size());
    Q_.get_Q_block(blk.B.data(), qb, active_size_, blk.rows.data());
    blk.Qsub.resize(qb * qb);
    for (auto* v : {&blk.y, &blk.p, &blk.C, &blk.lo, &blk.hi, &blk.a, &blk.g}) v->resize(qb);
    for (int64_t r = 0; r < qb; ++r) {
        const int64_t t = blk.B[r];
        for (int64_t s = 0; s < qb; ++s) blk.Qsub[r * qb + s] = blk.rows[r][blk.B[s]];
        blk.y[r] = y_[t]; blk.C[r] = C_[t]; blk.lo[r] = lo_[t]; blk.hi[r] = hi_[t]; blk.a[r] = a_[t];
        blk.g[r] = G_[t];
    }
    for (int64_t r = 0; r < qb; ++r) {
        double qa = 0;
        for (int64_t s = 0; s < qb; ++s) qa += double(blk.Qsub[r * qb + s]) * blk.a[s];
        blk.p[r] = blk.g[r] - qa - term_.dh(blk.a[r], blk.C[r]);
    }
}

// The sub-problem solved in cache (pair steps on a DenseQ, no shrinking) to ThunderSVM's local
// tolerance max(tol, 0.1 x the block's own KKT gap); its solution in blk.a_new
template <class QM, class Term, bool kNu>
void Solver<QM, Term, kNu>::solve_block(Block& blk) {
    const int64_t qb = int64_t(blk.B.size());
    double local_m[2], local_M[2];  // within each class for nu (else class 0 holds all)
    local_m[0] = local_m[1] = -std::numeric_limits<double>::infinity();
    local_M[0] = local_M[1] = std::numeric_limits<double>::infinity();
    for (int64_t r = 0; r < qb; ++r) {
        const int s = kNu ? cls(blk.B[r]) : 0;
        if (in_up(blk.B[r])) local_m[s] = std::max(local_m[s], F(blk.B[r]));
        if (in_low(blk.B[r])) local_M[s] = std::min(local_M[s], F(blk.B[r]));
    }
    double local_gap = 0.0;
    for (int s = 0; s < 2; ++s)
        if (std::isfinite(local_m[s]) && std::isfinite(local_M[s])) local_gap = std::max(local_gap, local_m[s] - local_M[s]);
    SolverOptions sub;
    sub.tol = std::max(stop_tol(), 0.1 * local_gap);  // ThunderSVM's local stopping rule
    sub.nu = kNu;  // the sub-problem's pairs within a class keep the class sums
    sub.max_iter = 100 * qb;
    sub.shrinking = false;
    sub.second_order = opt_.second_order;
    sub.tau = opt_.tau;
    DenseQ dq(blk.Qsub.data(), qb);
    Solver<DenseQ, Term, kNu> inner(dq, term_, qb, blk.y.data(), blk.p.data(), blk.C.data(), blk.lo.data(),
                                    blk.hi.data(), blk.a.data(), sub, blk.g.data());
    SolverResult sr;
    inner.solve_pairs_into(sr);
    blk.a_new.assign(inner.alpha_view(), inner.alpha_view() + qb);
    blk.iter = sr.iter;
}

// G += sum_r da_r Q_r over the active set, then the block's statuses and G_bar
template <class QM, class Term, bool kNu>
void Solver<QM, Term, kNu>::apply_block(Block& blk) {
    const int64_t qb = int64_t(blk.B.size());
    update_gradient_block(blk.rows.data(), qb, blk.a_new.data(), blk.a.data());
    for (int64_t r = 0; r < qb; ++r) {
        const int64_t t = blk.B[r];
        const double a_old = a_[t];
        const bool was_bounded = is_bounded(t);
        a_[t] = blk.a_new[r];
        if constexpr (!kQuadratic) {
            G_[t] += term_.dh(a_[t], C_[t]) - term_.dh(a_old, C_[t]);
            diag_[t] = Q_.QD(t) + term_.d2h(a_[t], C_[t]);
        }
        update_status(t);
        if (keep_gbar()) {
            const double d = (is_bounded(t) ? a_[t] : 0.0) - (was_bounded ? a_old : 0.0);
            if (d != 0.0) gbar_changes_.emplace_back(t, d);
        }
    }
    update_gbar_block();
}

}  // namespace sk
