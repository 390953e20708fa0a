// The SMO engine for the generic dual of DESIGN.md:
//
//     min_a  f(a) = 1/2 a'Qa + sum_i psi_i(a_i)   s.t.  y'a = 0,  lo_i <= a_i <= hi_i,
//
// with G = Qa + psi'(a) and F_i = -y_i G_i. The KKT conditions read  m(a) <= M(a)  with
//     m = max_{i in I_up} F_i,   M = min_{j in I_low} F_j,
//     I_up  = {y_i = +1, a_i < hi_i} u {y_i = -1, a_i > lo_i}   (a_i can move along +y_i),
//     I_low = {y_i = +1, a_i > lo_i} u {y_i = -1, a_i < hi_i}   (a_i can move along -y_i),
// and `tol` bounds the KKT gap m - M (LIBSVM's stopping rule).
//
// One loop, two routes, two direction rules:
//   solve_pairs    LIBSVM's decomposition: a violating pair per iteration (first order = maximal
//                  violating pair, second order = Fan, Chen & Lin 2005), a closed-form (or term-
//                  specific) pair step, O(N) gradient update, shrinking with a final unshrink check;
//   solve_batched  two-level decomposition (Joachims / ThunderSVM; batched.hpp): q violating
//                  variables, their q rows of Q as one kernel block, the q-variable sub-problem
//                  solved by this same class on a DenseQ (solve_pairs again), then the gradient of
//                  all N variables updated from the block.
// Direction rule of the pair route: the plain pair d = y_i e_i - y_j e_j, or the conjugate direction
// of CSMO (Torres-Barran, Alaiz & Dorronsoro, Algorithm 2) p_k = d_k + gamma_k p_{k-1}, defined for
// the quadratic terms only (take_conjugate_step).
// Policies are template parameters: the Q-provider (KernelQ, SvrQ, DenseQ), the separable term
// (terms.hpp), the working-set order (kSecondOrder) and the direction rule (kConjugate).
#pragma once
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <limits>
#include <type_traits>
#include <vector>

#include "../parallel.hpp"
#include "qmatrix.hpp"
#include "scans.hpp"
#include "terms.hpp"

namespace sk {

// What a poll reports: steps so far, the maximal KKT violation m - M of the last working-set
// selection (tol is the target), and the active (unshrunk) set size.
struct SolverProgress {
    int64_t iter = 0;
    double gap = 0;
    int64_t active_size = 0;
};

enum PollResult : int { kPollContinue = 0, kPollInterrupt = 1, kPollTimeLimit = 2 };

struct SolverOptions {
    double tol = 1e-3;
    int64_t max_iter = -1;  // pair iterations; -1 = LIBSVM's cap, max(10^7, 100 N)
    bool shrinking = true;
    bool second_order = true;
    bool batched = false;
    // the batched route starts with pair steps and takes blocks only once a solve needs more than
    // kPairStartShare N of them (solve_batched)
    bool pair_start = false;
    bool conjugate = false;  // CSMO directions on the pair route (quadratic terms only)
    // the nu formulations' second equality (Chang & Lin 2001; LIBSVM's Solver_NU): the sum of a within
    // each label class stays that of a0, so pairs are chosen within one class (pair route only)
    bool nu = false;
    // restart the conjugate direction when p has more nonzeros than this (> 0), than
    // max(16, active size / -value) (< 0), or never (0: Algorithm 2 as printed)
    int64_t conjugate_max_support = -64;
    int64_t q = 0;  // working-set size of the batched route (0 = chosen from N and the cache)
    int nthreads = 1;
    double tau = 1e-12;
    // a bound on the error of a given G0 (and G_bar0) against the exact sums (DC-SVM's start
    // gradients assembled from float32 products): taken off tol as the engine's own (stop_tol)
    double g0_error = 0.0;  // curvature floor for non-PSD kernels (LIBSVM's TAU)
    // Polled every <= 1000 steps with the progress so far: the caller's progress report, Ctrl-C and
    // time limit. Returns kPollContinue, or the reason to stop (the current iterate is returned).
    std::function<int(const SolverProgress&)> poll;
    // Polled between row groups of the long kernel passes (the start-up gradient, its
    // reconstruction after shrinking: up to N^2 kernel values): true when Ctrl-C or a cancel asks
    // the fit to stop. Only that, no progress report (those passes are not steps).
    std::function<bool()> interrupted;
    // test-only trace of the pair route, one record of kTraceHead + 2N values per step: the
    // objective after it, ||a^{k+1} - a^k||^2, clipped (0/1), the unclipped gain of the direction
    // taken (CSMO eq. 21), the unclipped gain of the plain pair (eq. 10), then the direction p (N
    // values) and the gradient before the step (N values), in position order
    std::vector<double>* trace = nullptr;
};

enum SolverStatus : int { kConverged = 0, kMaxIter = 1, kInterrupted = 2, kTimeLimit = 3 };

constexpr int64_t kTraceHead = 5;

struct SolverResult {
    std::vector<double> alpha;  // in the original order
    std::vector<double> grad;   // final G = Qa + psi'(a), in the original order
    std::vector<double> grad_bar;  // final G_bar (with shrinking; else empty), in the original order
    double rho = 0;             // decision function f(x) = sum_i y_i a_i K(x_i, x) - rho
    double r = 0;               // nu: the multiplier of the class-sum equalities (Solver_NU's r)
    double obj = 0;
    double gap = 0;             // final m - M
    int64_t iter = 0;           // pair steps
    int64_t outer_iter = 0;     // blocks (batched route)
    int64_t q = 0;              // working-set size used by the batched route
    int status = kConverged;
    int64_t fallbacks = 0;      // conjugate steps replaced by the plain pair (safeguard)
    // a bound on |G - the G of exact (double) kernel sums| that float32 sums left in grad (0: none
    // used); the rounding of float32 kernel rows (LIBSVM's) is not counted
    double grad_error = 0;
    int threads = 1;             // the team's size (1: the problem was too small to pay for one)
    int64_t serial_periods = 0;  // times the team ran on its master alone (helpers kept it waiting)
    double solve_us = 0;         // the solve's wall time (the team's region)
    TeamStats team;              // its loops' costs (parallel.hpp; empty on one thread)
};

// kNu: the nu formulations (Chang & Lin 2001; LIBSVM's Solver_NU, a subclass there): a second
// equality keeps the sum of a within each label class, so pairs are chosen within one class, the
// shrinking and the gap are taken per class and rho, r come from both classes' free variables. A
// compile-time policy: the plain solver carries none of it (the nu parts below are `if constexpr`).
template <class QM, class Term, bool kNu = false>
class Solver {
public:
    // psi_i(a) = h(a; C_i) + p_i a (terms.hpp); C may be null for the linear term. a0 must be
    // feasible. G0, if given, is the gradient at a0 (saves the O(N * nnz(a0)) start-up), and with it
    // Gbar0, G_bar at a0 (saves the rest of it: the rows of the bounded variables). Arrays are in
    // the original order; the solver starts in the Q-provider's current order (Q.original).
    Solver(QM& Q, const Term& term, int64_t l, const double* y, const double* p, const double* C,
           const double* lo, const double* hi, const double* a0, const SolverOptions& opt,
           const double* G0 = nullptr, const double* Gbar0 = nullptr)
        : Q_(Q), term_(term), opt_(opt), l_(l), active_size_(l),
          y_(l), p_(l), C_(l, 0.0), lo_(l), hi_(l), a_(l, 0.0), G_(l), Gbar_(),
          at_lo_(l), at_hi_(l), can_up_(l), can_low_(l), active_set_(l) {
        // "no limit" is LIBSVM's: max(10^7, 100 l) steps, so that a tolerance below what float32
        // rows can resolve (found by fuzzing: tol = 1e-12 on unscaled data) ends with kMaxIter
        // instead of running forever
        if (opt_.max_iter < 0) opt_.max_iter = std::max<int64_t>(10000000, 100 * l);
        for (int64_t t = 0; t < l; ++t) {
            const int64_t o = Q_.original(t);
            active_set_[t] = o;
            y_[t] = y[o];
            p_[t] = p[o];
            lo_[t] = lo[o];
            hi_[t] = hi[o];
            if (C) C_[t] = C[o];
            if (a0) a_[t] = a0[o];
            update_status(t);
        }
        if (opt_.nu != kNu) throw std::invalid_argument("SolverOptions.nu and the Solver's kNu disagree");
        if constexpr (kNu) {
            if (opt_.conjugate || !kQuadratic)
                throw std::invalid_argument("nu problems take plain pairs and the linear term");
            for (auto* mask : {&low_cls_[0], &low_cls_[1]}) mask->assign(l, 0);
            for (int64_t t = 0; t < l; ++t) update_status(t);
        }
        if (opt_.conjugate) {
            if (!kQuadratic) throw std::invalid_argument("conjugate directions need a quadratic objective");
            dir_.assign(l, 0.0);
            in_dir_.assign(l, 0);
            q_.assign(l, 0.0);
        }
        if constexpr (!kQuadratic) {
            diag_.resize(l);
            for (int64_t t = 0; t < l; ++t) diag_[t] = Q_.QD(t) + term_.d2h(a_[t], C_[t]);
        }
        Q_.allow_float32_points(float32_points_allowed());
        if (!team_pays()) opt_.nthreads = 1;
        ScopedThreadCap cap(opt_.nthreads);
        initialize_gradient(G0, G0 ? Gbar0 : nullptr);
    }

    SolverResult solve() {
        SolverResult res;
        if (stop_in_pass_) {  // interrupted while the start-up gradient was computed
            res.status = kInterrupted;
            return res;
        }
        ScopedThreadCap cap(opt_.nthreads);  // (the Q-provider's own loops too)
        res.threads = opt_.nthreads;
        const uint64_t start = detail::ticks();
        run_in_team(opt_.nthreads, [&] {
            // a given G0 whose error would leave little of tol: recomputed here in double
            if (sums_error() > 0.25 * opt_.tol) refresh_gradient();
            if (opt_.batched && l_ > 2) {
                solve_batched(res);
            } else {
                solve_pairs_into(res);
            }
            finish(res);
            if (detail::master_of) {
                res.serial_periods = detail::master_of->serial_periods();
                res.team = detail::master_of->stats();
            }
        });
        res.solve_us = double(detail::ticks() - start) / detail::ticks_per_us();
        return res;
    }

private:
    static constexpr bool kQuadratic = Term::kQuadraticObjective;

    // ------------------------------------------------------------------ bookkeeping
    double F(int64_t t) const { return -y_[t] * G_[t]; }
    double dpsi(int64_t t) const { return term_.dh(a_[t], C_[t]) + p_[t]; }  // psi_t'(a_t)
    // Q_tt + psi_t''(a_t): the diagonal the second-order selection uses (S-KLR eq. 35)
    double diag(int64_t t) const {
        if constexpr (kQuadratic) return Q_.QD(t); else return diag_[t];
    }
    const double* diag_data() const {
        if constexpr (kQuadratic) return Q_.QD_data(); else return diag_.data();
    }
    bool in_up(int64_t t) const { return can_up_[t] != 0; }
    bool in_low(int64_t t) const { return can_low_[t] != 0; }
    bool is_bounded(int64_t t) const { return at_lo_[t] || at_hi_[t]; }
    void update_status(int64_t t) {
        at_lo_[t] = a_[t] <= lo_[t];
        at_hi_[t] = a_[t] >= hi_[t];
        can_up_[t] = y_[t] > 0 ? !at_hi_[t] : !at_lo_[t];
        can_low_[t] = y_[t] > 0 ? !at_lo_[t] : !at_hi_[t];
        if (!low_cls_[0].empty()) {  // nu: I_low within each class (the mask its j scans take)
            const int s = cls(t);
            low_cls_[s][t] = can_low_[t];
            low_cls_[1 - s][t] = 0;
        }
    }
    int cls(int64_t t) const { return y_[t] > 0 ? 0 : 1; }  // nu: the label class of position t
    bool keep_gbar() const { return opt_.shrinking; }

    // G = Qa0 + psi'(a0) and G_bar. KLR starts with every a_i > 0, so Qa0 is a full pass over Q: it
    // runs as kernel-vector products (KernelQ::accumulate) instead of one cached row at a time.
    void initialize_gradient(const double* G0, const double* Gbar0 = nullptr, bool allow_single = true) {
        err_G_ = G0 ? opt_.g0_error : 0.0;
        err_Gbar_ = Gbar0 ? opt_.g0_error : 0.0;
        err_recon_ = 0.0;
        reconstructed_ = false;
        if (keep_gbar()) Gbar_.assign(l_, 0.0);
        if (keep_gbar() && Gbar0)
            for (int64_t t = 0; t < l_; ++t) Gbar_[t] = Gbar0[active_set_[t]];
        if (G0) {
            for (int64_t t = 0; t < l_; ++t) G_[t] = G0[active_set_[t]];
        } else {
            for (int64_t t = 0; t < l_; ++t) G_[t] = dpsi(t);
        }
        // the rows this start-up needs, each once: G_bar's (bounded a_i != 0) and, without G0, the
        // other nonzero a_i's; G = psi'(a) + (their sum) + G_bar
        std::vector<int64_t> rest, bounded;
        for (int64_t i = 0; i < l_; ++i) {
            if (a_[i] == 0.0) continue;
            if (keep_gbar() && is_bounded(i)) {
                if (!Gbar0) bounded.push_back(i);
            } else if (!G0) {
                rest.push_back(i);
            }
        }
        const bool add_gbar = !G0 && !bounded.empty();
        if constexpr (QM::kKernelRows) {
            if (rest.size() + bounded.size() >= 64) {
                if (Q_.capacity_rows(l_) >= l_) {
                    // the cache holds every row: compute them once, as kernel blocks, and keep them
                    // (the entropic solve revisits every row several times)
                    accumulate_cached_rows(rest, G_.data());
                    accumulate_cached_rows(bounded, Gbar_.data());
                } else {
                    const double e_rest = accumulate_rows(rest, 0, l_, G_.data(), allow_single);
                    err_Gbar_ = std::max(err_Gbar_, accumulate_rows(bounded, 0, l_, Gbar_.data(), allow_single));
                    if (!G0) err_G_ = e_rest + (add_gbar ? err_Gbar_ : 0.0);
                }
                if (add_gbar)
                    for (int64_t k = 0; k < l_; ++k) G_[k] += Gbar_[k];
                return;
            }
        }
        for (int64_t i : rest) {
            const float* Qi = Q_.get_Q(i, l_);
            for (int64_t k = 0; k < l_; ++k) G_[k] += a_[i] * Qi[k];
        }
        for (int64_t i : bounded) {
            const float* Qi = Q_.get_Q(i, l_);
            for (int64_t k = 0; k < l_; ++k) Gbar_[k] += a_[i] * Qi[k];
        }
        if (add_gbar)
            for (int64_t k = 0; k < l_; ++k) G_[k] += Gbar_[k];
    }

    void accumulate_cached_rows(const std::vector<int64_t>& vars, double* out) {
        constexpr int64_t kGroup = 128;
        std::vector<const float*> rows(kGroup);
        for (size_t g0 = 0; g0 < vars.size(); g0 += kGroup) {
            const int64_t q = std::min<int64_t>(kGroup, int64_t(vars.size() - g0));
            Q_.get_Q_block(vars.data() + g0, q, l_, rows.data());
            const int64_t nc = chunks_for(l_, 2.0 * q, opt_.nthreads);
            for_chunks(nc, opt_.nthreads, [&](int64_t c) {
                for (int64_t r = 0; r < q; ++r) {
                    const double ar = a_[vars[g0 + r]];
                    const float* row = rows[r];
                    for (int64_t k = l_ * c / nc; k < l_ * (c + 1) / nc; ++k) out[k] += ar * row[k];
                }
            });
            if (interrupted_in_pass()) return;
        }
    }

    // Ctrl-C between the row groups of a long pass: the pass stops there (its sums are incomplete;
    // the solve returns at its next poll, and the caller discards the result)
    bool interrupted_in_pass() {
        if (!stop_in_pass_ && opt_.interrupted) stop_in_pass_ = opt_.interrupted();
        return stop_in_pass_;
    }

    // out[k - begin] += sum_{s in vars} a_s Q_sk for k in [begin, end), in groups of rows. Returns a
    // bound on the error of the sums added (0 in double). allow_single: in float32 where the
    // Q-provider can (the fused products, 2.6x faster) and the bound it reports for every k stays
    // within kSingleSumsTolShare of tol; else (the bound is known only after the pass) the pass runs
    // again in double.
    double accumulate_rows(const std::vector<int64_t>& vars, int64_t begin, int64_t end, double* out,
                           bool allow_single = true) {
        constexpr int64_t kGroup = 256;
        std::vector<double> coef(kGroup);
        auto pass = [&](double* sums, double* err) {
            for (size_t g0 = 0; g0 < vars.size(); g0 += kGroup) {
                const int64_t q = std::min<int64_t>(kGroup, int64_t(vars.size() - g0));
                for (int64_t r = 0; r < q; ++r) coef[r] = a_[vars[g0 + r]];
                Q_.accumulate(vars.data() + g0, coef.data(), q, begin, end, sums, err);
                if (interrupted_in_pass()) return;
            }
        };
        if (allow_single && Q_.single_sums() && !vars.empty()) {
            std::vector<double> sums(end - begin, 0.0), err(end - begin, 0.0);
            pass(sums.data(), err.data());
            const double worst = err.empty() ? 0.0 : *std::max_element(err.begin(), err.end());
            if (worst <= kSingleSumsTolShare * opt_.tol) {
                for (int64_t k = 0; k < end - begin; ++k) out[k] += sums[k];
                return worst;
            }
        }
        pass(out, nullptr);
        return 0.0;
    }

    // what float32 sums may have left in G (a bound; see accumulate_rows): the start-up's (or a given
    // G0's) at the positions never reconstructed, G_bar's plus the largest reconstruction's at the
    // others
    double sums_error() const { return std::max(err_G_, reconstructed_ ? err_Gbar_ + err_recon_ : 0.0); }
    // Whether a team of threads pays for this problem: a step's passes over the l positions (4
    // operations each, plus a kernel value's cost where a row is computed by parts) must split into
    // a few chunks of kTeamChunkOps each (chunks_for); else every loop runs on one thread, and so
    // does the Q-provider's (measured on iris and breast_cancer: a team made fits 1.05-2.3x slower
    // than one thread idle, 2.4-3.5x with another process on one core).
    bool team_pays() const {
        return opt_.nthreads > 1 && double(l_) * (4.0 + Q_.step_cost()) >= kTeamMinChunks * kTeamChunkOps;
    }

    // the stopping test's tol: the gap the solver sees, plus twice what float32 sums may hide in it,
    // within tol (so that the gap of exact sums is)
    double stop_tol() const { return opt_.tol - 2.0 * sums_error(); }

    // The working copy's float32 points (PermutedCopy) put an error of at most about
    // Q_.float32_points_error() on each kernel value (a bound per unit of alpha); allowed while an
    // alpha at its largest times that stays within kSingleSumsTolShare of tol (large C: doubles).
    bool float32_points_allowed() const {
        if constexpr (QM::kKernelRows) {
            double amax = 0.0;
            for (int64_t t = 0; t < l_; ++t) amax = std::max({amax, std::fabs(lo_[t]), std::fabs(hi_[t])});
            return amax * Q_.float32_points_error() <= kSingleSumsTolShare * opt_.tol;
        }
        return true;
    }

    // the solver's own arrays; the Q-provider gets the whole list of a pass at once
    void swap_index(int64_t i, int64_t j) {
        std::swap(y_[i], y_[j]);
        std::swap(p_[i], p_[j]);
        std::swap(C_[i], C_[j]);
        if constexpr (!kQuadratic) std::swap(diag_[i], diag_[j]);
        std::swap(lo_[i], lo_[j]);
        std::swap(hi_[i], hi_[j]);
        std::swap(a_[i], a_[j]);
        std::swap(G_[i], G_[j]);
        if (keep_gbar()) std::swap(Gbar_[i], Gbar_[j]);
        if (opt_.conjugate) {
            std::swap(dir_[i], dir_[j]);
            std::swap(in_dir_[i], in_dir_[j]);
            std::swap(q_[i], q_[j]);
        }
        std::swap(at_lo_[i], at_lo_[j]);
        std::swap(at_hi_[i], at_hi_[j]);
        std::swap(can_up_[i], can_up_[j]);
        std::swap(can_low_[i], can_low_[j]);
        if constexpr (kNu) {
            for (int s = 0; s < 2; ++s) {
                std::swap(low_cls_[s][i], low_cls_[s][j]);
            }
        }
        std::swap(active_set_[i], active_set_[j]);
    }

    // m = max_{I_up} F, M = min_{I_low} F over the active set (chunks in parallel; max and min are
    // exact, so the result does not depend on the threads); within label class `s` when s >= 0 (nu)
    void violation_extremes(double& m, double& M, int s = -1) const {
        const int64_t n = active_size_;
        const int64_t nc = chunks_for(n, 2.0, opt_.nthreads);
        std::vector<std::pair<double, double>> part(nc);
        for_chunks(nc, opt_.nthreads, [&](int64_t c) {
            double mc = -std::numeric_limits<double>::infinity(), Mc = std::numeric_limits<double>::infinity();
            for (int64_t t = n * c / nc; t < n * (c + 1) / nc; ++t) {
                if (s >= 0 && cls(t) != s) continue;
                const double f = F(t);
                if (can_up_[t]) mc = std::max(mc, f);
                if (can_low_[t]) Mc = std::min(Mc, f);
            }
            part[c] = {mc, Mc};
        });
        m = -std::numeric_limits<double>::infinity();
        M = std::numeric_limits<double>::infinity();
        for (const auto& [mc, Mc] : part) {
            m = std::max(m, mc);
            M = std::min(M, Mc);
        }
    }

    // a poll at least every kPollSeconds, whatever the steps cost (Ctrl-C within about that)
    static constexpr double kPollSeconds = 0.1;
    using Clock = std::chrono::steady_clock;
    bool poll_due() const { return std::chrono::duration<double>(Clock::now() - last_poll_).count() >= kPollSeconds; }

    bool poll_interrupt(SolverResult& res) {
        last_poll_ = Clock::now();
        if (stop_in_pass_) {
            res.status = kInterrupted;
            return true;
        }
        if (!opt_.poll) return false;
        const int r = opt_.poll(SolverProgress{res.iter, last_gap_, active_size_});
        if (r == kPollContinue) return false;
        res.status = r == kPollTimeLimit ? kTimeLimit : kInterrupted;
        return true;
    }

    // ------------------------------------------------------------------ pair route
    // Row i over the active positions with its missing entries left to the pass that reads it: each
    // chunk [lo, hi) of that pass calls fill_row_part first, so computing the row costs no
    // synchronisation of its own (a pair step: two passes instead of four when both rows miss). The
    // pass must run all its chunks: the cache already counts the row as whole. Q-providers without
    // rows by parts return the whole row.
    struct RowParts {
        int64_t i = -1;  // the row still to complete, or -1
        float* row = nullptr;
        int64_t valid = 0;  // entries it already holds
        double cost = 0.0;  // operations per missing entry
    };

    // Working-set selection. i = argmax_{I_up} F (the maximal violator). j over I_low: first order
    // takes argmin F; second order (Fan-Chen-Lin WSS 2) minimises -b^2/quad with b = F_i - F_j > 0,
    // quad = K_ii + K_jj - 2K_ij + psi''_i + psi''_j (tau when not positive); for the entropic term
    // this is S-KLR eqs. (33)-(35): b here is |v_ij| of (34) (its step 1 must read +lam y_i, as (34)),
    // and the curvature sits in diag(). Returns true when the active set is optimal (m - M < tol).
    template <bool kSecondOrder>
    bool select_working_pair(int64_t& i, int64_t& j, double& gap) {
        if constexpr (kNu) return select_working_pair_nu<kSecondOrder>(i, j, gap);
        // Both passes run over chunks (in parallel) and combine the chunks in order with the same
        // comparisons as one serial scan, so the choice does not depend on the number of threads.
        // The first pass (i) is usually done already, fused with the last gradient update.
        const int64_t n = active_size_;
        const int64_t nc = chunks_for(n, 4.0, opt_.nthreads);
        if (!maximal_violator_known_) {
            up_.assign(nc, UpScan{});
            for_chunks(nc, opt_.nthreads, [&](int64_t c) {
                up_[c] = scan_up(G_.data(), y_.data(), can_up_.data(), n * c / nc, n * (c + 1) / nc);
            });
            combine_up();
        }
        maximal_violator_known_ = false;
        const double m = m_up_;
        i = i_up_;
        if (i < 0) {  // nothing can move up: optimal (and no infinity may reach the scans)
            j = -1;
            gap = 0.0;
            return true;
        }
        // second order: row i, its missing entries computed by this scan's chunks (one pass, one wait)
        RowParts ri;
        const float* Qi = kSecondOrder ? row_by_parts(i, ri) : nullptr;
        const double QDi = diag(i), yi = y_[i];
        const int64_t ncl = ri.i >= 0 ? chunks_for(n, 4.0 + ri.cost, opt_.nthreads) : nc;
        low_.assign(ncl, LowScan{});
        for_chunks(ncl, opt_.nthreads, [&](int64_t c) {
            const int64_t lo = n * c / ncl, hi = n * (c + 1) / ncl;
            fill_row_part(ri, lo, hi);
            if constexpr (kSecondOrder) {
                low_[c] = scan_low_second_order(G_.data(), y_.data(), can_low_.data(), diag_data(), Qi, QDi, yi, m,
                                                opt_.tau, lo, hi);
            } else {
                low_[c] = scan_low_first_order(G_.data(), y_.data(), can_low_.data(), lo, hi);
            }
        });
        LowScan best{kHuge, -1.0, -1};
        double M = kHuge;
        for (const LowScan& p : low_) {
            M = std::min(M, p.M);
            if (p.j < 0) continue;
            const bool take = kSecondOrder ? p.gain >= best.gain : p.M <= best.M;
            if (take) best = p;
        }
        j = best.j;
        gap = (i >= 0 && M < kHuge) ? m - M : 0.0;
        return i < 0 || j < 0 || !(gap >= stop_tol());
    }

    // The nu formulations (Chang & Lin 2001, LIBSVM's Solver_NU): the rule above within each label
    // class s, i_s = argmax F over I_up(s), j over I_low(s) with row i_s; the pair is that of the
    // class whose j gains more (first order: whose violation m_s - M_s is larger). A pair within one
    // class keeps both y'a and the class sums. Optimal when max_s (m_s - M_s) < tol.
    template <bool kSecondOrder>
    bool select_working_pair_nu(int64_t& i, int64_t& j, double& gap) {
        const int64_t n = active_size_;
        const int64_t nc = chunks_for(n, 4.0, opt_.nthreads);
        // i_s: from the last gradient update (update_gradient_pair), else one scan for both classes
        if (!maximal_violator_known_) scan_up_by_class(nullptr, 0.0, nullptr, 0.0, n, nc);
        maximal_violator_known_ = false;
        double m[2], M[2];
        int64_t is[2];
        LowScan best[2];
        for (int s = 0; s < 2; ++s) {
            m[s] = m_nu_[s];
            is[s] = i_nu_[s];
            best[s] = LowScan{kHuge, -1.0, -1};
            M[s] = kHuge;
            if (is[s] < 0) continue;
            const float* Qi = kSecondOrder ? active_row(is[s]) : nullptr;
            const double QDi = diag(is[s]), yi = y_[is[s]], ms = m[s];
            low_.assign(nc, LowScan{});
            for_chunks(nc, opt_.nthreads, [&](int64_t c) {
                const int64_t lo = n * c / nc, hi = n * (c + 1) / nc;
                if constexpr (kSecondOrder) {
                    low_[c] = scan_low_second_order(G_.data(), y_.data(), low_cls_[s].data(), diag_data(), Qi, QDi, yi,
                                                    ms, opt_.tau, lo, hi);
                } else {
                    low_[c] = scan_low_first_order(G_.data(), y_.data(), low_cls_[s].data(), lo, hi);
                }
            });
            for (const LowScan& p : low_) {
                M[s] = std::min(M[s], p.M);
                if (p.j < 0) continue;
                const bool take = kSecondOrder ? p.gain >= best[s].gain : p.M <= best[s].M;
                if (take) best[s] = p;
            }
        }
        gap = 0.0;
        int pick = -1;
        for (int s = 0; s < 2; ++s) {
            if (is[s] < 0 || M[s] >= kHuge) continue;
            gap = std::max(gap, m[s] - M[s]);
            if (best[s].j < 0) continue;
            const bool better = pick < 0 || (kSecondOrder ? best[s].gain > best[pick].gain
                                                          : m[s] - M[s] > m[pick] - M[pick]);
            if (better) pick = s;
        }
        i = pick < 0 ? -1 : is[pick];
        j = pick < 0 ? -1 : best[pick].j;
        return pick < 0 || !(gap >= stop_tol());
    }

    // Minimise f along a_i += y_i t, a_j -= y_j t (keeps y'a), clip to the boxes, update G.
    void take_pair_step(int64_t i, int64_t j) {
        const float* Qi = active_row(i);
        // row j is read by the gradient update only: its missing entries are computed there
        RowParts rj;
        const float* Qj = kNu ? active_row(j) : row_by_parts(j, rj);
        const double ai = a_[i], aj = a_[j];
        const double ti = y_[i] > 0 ? hi_[i] - ai : ai - lo_[i];
        const double tj = y_[j] > 0 ? aj - lo_[j] : hi_[j] - aj;
        PairProblem pp;
        pp.b = F(i) - F(j);
        pp.kquad = Q_.QD(i) + Q_.QD(j) - 2.0 * y_[i] * y_[j] * Qi[j];
        pp.quad = diag(i) + diag(j) - 2.0 * y_[i] * y_[j] * Qi[j];
        if (pp.quad <= 0) pp.quad = opt_.tau;
        pp.t_max = std::min(ti, tj);
        pp.ai = ai; pp.yi = y_[i]; pp.Ci = C_[i];
        pp.aj = aj; pp.yj = y_[j]; pp.Cj = C_[j];
        pp.tol = opt_.tol;
        const double t = std::max(0.0, term_.pair_step(pp));
        if (opt_.trace) {
            const double gain = 0.5 * pp.b * pp.b / pp.quad;
            trace_before(t >= pp.t_max, gain, gain, [&](std::vector<double>& d) {
                d[i] += y_[i];
                d[j] -= y_[j];
            });
        }
        // land exactly on a bound when the step is clipped there
        a_[i] = t >= ti ? (y_[i] > 0 ? hi_[i] : lo_[i]) : ai + y_[i] * t;
        a_[j] = t >= tj ? (y_[j] > 0 ? lo_[j] : hi_[j]) : aj - y_[j] * t;
        const double dai = a_[i] - ai, daj = a_[j] - aj;
        const bool bi = is_bounded(i), bj = is_bounded(j);
        update_status(i);  // before the gradient update, which also finds the next maximal violator
        update_status(j);
        if constexpr (!kQuadratic) {  // psi' and psi'' move with a_i, a_j only: O(1)
            G_[i] += term_.dh(a_[i], C_[i]) - term_.dh(ai, C_[i]);
            G_[j] += term_.dh(a_[j], C_[j]) - term_.dh(aj, C_[j]);
            diag_[i] = Q_.QD(i) + term_.d2h(a_[i], C_[i]);
            diag_[j] = Q_.QD(j) + term_.d2h(a_[j], C_[j]);
        }
        update_gradient_pair(Qi, dai, Qj, daj, rj);
        update_gbar(i, ai, bi);
        update_gbar(j, aj, bj);
        if (opt_.trace) trace_after(dai * dai + daj * daj);
    }

    // ------------------------------------------------------------------ conjugate direction rule
    // CSMO (Algorithm 2). With L = i, U = j (the pair the working-set rule chose) and the SMO
    // direction d = y_i e_i - y_j e_j, the step goes along p_k = d + gamma_k p_{k-1} (17), which keeps
    // y'p = 0. q = Qp is a dense vector over the active set, p a sparse one (dir_ + dir_idx_):
    //   gamma_k = -d'q_{k-1} / delta_{k-1}                                 (24)
    //   q_k = y_i Q_i - y_j Q_j + gamma_k q_{k-1},  delta_k = d'q_k = p'Qp  (25), (26)
    //   rho_k = -g'd / delta_k = (F_i - F_j) / delta_k                      (27)
    //   a += rho_k p_k,  G += rho_k q_k                                       (28)
    // rho_k is clipped so that every coordinate of a + rho p stays in its box (the sets P+ / P-);
    // after a clipped step p and q are reset (delta = 1), so the next step is a plain pair.
    // Safeguard: when delta_k is not clearly positive (a non-PSD kernel, round-off when d is almost
    // parallel to p_{k-1}) or the old direction leaves no room to move, the step is the plain pair.
    // Shrinking: the direction is reset whenever the active set changes (do_shrinking,
    // reconstruct_gradient), so between two changes this is Algorithm 2 on the sub-problem of the
    // active variables, whose q need only be known on the active set.
    void take_conjugate_step(int64_t i, int64_t j) {
        const float* Qi = active_row(i);
        const float* Qj = active_row(j);
        const double yi = y_[i], yj = y_[j];
        const double b = F(i) - F(j);  // -g'd > 0
        double quad = Q_.QD(i) + Q_.QD(j) - 2.0 * yi * yj * Qi[j];  // d'Qd
        if (quad <= 0) quad = opt_.tau;
        double gamma = 0.0, delta = quad;
        if (dir_active_) {
            const double dq = yi * q_[i] - yj * q_[j];  // d'q_{k-1}
            gamma = -dq / delta_;                        // (24)
            delta = quad + gamma * dq;                   // (26): d'(Qd + gamma q_{k-1})
            if (!(delta > kDeltaFloor * quad)) {
                gamma = 0.0;
                delta = quad;
                ++res_fallbacks_;
            }
        }
        const double pair_gain = 0.5 * b * b / quad, dir_gain = 0.5 * b * b / delta;  // (10), (21)
        build_direction(i, j, gamma);
        double rho = b / delta;  // (27)
        double rho_max = max_step();
        if (!(rho_max > 0) && gamma != 0.0) {  // the old direction is blocked: plain pair
            gamma = 0.0;
            delta = quad;
            build_direction(i, j, 0.0);
            rho = b / delta;
            rho_max = max_step();
            ++res_fallbacks_;
        }
        const bool clipped = rho >= rho_max;
        if (clipped) rho = rho_max;
        if (opt_.trace) {
            trace_before(clipped, dir_gain, pair_gain, [&](std::vector<double>& d) {
                for (int64_t t : dir_idx_) d[t] = dir_scale_ * dir_[t];
            });
        }
        // a += rho p, each coordinate kept in its box; on a clipped step the coordinates that reach
        // their bound land on it exactly. Statuses follow; G_bar (rows of the variables at a bound)
        // changes only for the few that reach or leave a bound, after the gradient pass.
        const double step = rho * dir_scale_;
        double dsq = 0.0;
        status_changes_.clear();
        for (int64_t t : dir_idx_) {
            const double a_old = a_[t];
            const bool was_bounded = is_bounded(t);
            double a_new = a_old + step * dir_[t];
            if (clipped) {
                const double pt = dir_scale_ * dir_[t];
                const double room = pt > 0 ? (hi_[t] - a_old) / pt : (pt < 0 ? (lo_[t] - a_old) / pt : kHuge);
                if (room <= rho) a_new = pt > 0 ? hi_[t] : lo_[t];
            }
            a_new = std::min(hi_[t], std::max(lo_[t], a_new));
            a_[t] = a_new;
            dsq += (a_new - a_old) * (a_new - a_old);
            update_status(t);
            if (is_bounded(t) != was_bounded || (was_bounded && a_new != a_old))
                status_changes_.push_back({t, a_old, was_bounded});
        }
        update_gradient_conjugate(Qi, yi, Qj, -yj, gamma, rho);  // (25) and (28) in one pass
        for (const auto& c : status_changes_) update_gbar(c.t, c.a_old, c.was_bounded);
        if (opt_.trace) trace_after(dsq);
        const bool restart = int64_t(dir_idx_.size()) > max_support();
        if (clipped || restart) {
            reset_direction();
        } else {
            dir_active_ = true;
            delta_ = delta;
        }
    }

    // Restart (p = d) once p has more nonzeros than this: a step costs O(|p|) on top of the O(N)
    // passes, so an unbounded support (what Algorithm 2 does) makes long conjugate runs slower per
    // iteration than they save (benchmarks/results/csmo.md).
    int64_t max_support() const {
        const int64_t m = opt_.conjugate_max_support;
        if (m > 0) return m;
        if (m < 0) return std::max<int64_t>(16, active_size_ / (-m));
        return std::numeric_limits<int64_t>::max();
    }

    // p_k = d + gamma p_{k-1} (17), kept as dir_scale_ * dir_ on the support dir_idx_, so that the
    // product by gamma is O(1)
    void build_direction(int64_t i, int64_t j, double gamma) {
        if (gamma == 0.0) {
            clear_direction();
        } else {
            dir_scale_ *= gamma;
            if (!(std::fabs(dir_scale_) > 1e-150 && std::fabs(dir_scale_) < 1e150)) {  // renormalise
                for (int64_t t : dir_idx_) dir_[t] *= dir_scale_;
                dir_scale_ = 1.0;
            }
        }
        for (auto [t, v] : {std::pair<int64_t, double>{i, y_[i]}, std::pair<int64_t, double>{j, -y_[j]}}) {
            if (!in_dir_[t]) {
                in_dir_[t] = 1;
                dir_idx_.push_back(t);
            }
            dir_[t] += v / dir_scale_;
        }
    }

    // largest rho with lo <= a + rho p <= hi (min over P+ of (hi - a)/p and over P- of (lo - a)/p)
    double max_step() const {
        double r = std::numeric_limits<double>::infinity();
        for (int64_t t : dir_idx_) {
            const double pt = dir_scale_ * dir_[t];
            if (pt > 0) r = std::min(r, (hi_[t] - a_[t]) / pt);
            else if (pt < 0) r = std::min(r, (lo_[t] - a_[t]) / pt);
        }
        return r;
    }

    void clear_direction() {
        for (int64_t t : dir_idx_) {
            dir_[t] = 0.0;
            in_dir_[t] = 0;
        }
        dir_idx_.clear();
        dir_scale_ = 1.0;
    }

    // p = q = 0, delta = 1 (Algorithm 2, lines 12-13): the next step is a plain pair
    void reset_direction() {
        if (!opt_.conjugate) return;
        clear_direction();
        dir_active_ = false;
        delta_ = 1.0;
    }

    void update_gradient_conjugate(const float* Qi, double ci, const float* Qj, double cj, double gamma, double rho) {
        const int64_t n = active_size_;
        const int64_t nc = chunks_for(n, 6.0, opt_.nthreads);
        up_.assign(nc, UpScan{});
        for_chunks(nc, opt_.nthreads, [&](int64_t c) {
            up_[c] = scan_update_conjugate(G_.data(), q_.data(), Qi, ci, Qj, cj, gamma, rho, y_.data(),
                                           can_up_.data(), n * c / nc, n * (c + 1) / nc);
        });
        combine_up();
        maximal_violator_known_ = true;
    }

    // ------------------------------------------------------------------ test-only trace
    template <class FillDirection>
    void trace_before(bool clipped, double dir_gain, double pair_gain, FillDirection fill) {
        std::vector<double> d(l_, 0.0);
        fill(d);
        auto& tr = *opt_.trace;
        tr.push_back(0.0);  // objective after the step, set by trace_after
        tr.push_back(0.0);
        tr.push_back(clipped ? 1.0 : 0.0);
        tr.push_back(dir_gain);
        tr.push_back(pair_gain);
        tr.insert(tr.end(), d.begin(), d.end());
        tr.insert(tr.end(), G_.begin(), G_.end());
    }
    void trace_after(double dsq) {
        auto& tr = *opt_.trace;
        const size_t rec = tr.size() - (kTraceHead + 2 * l_);
        tr[rec] = objective();
        tr[rec + 1] = dsq;
    }

    // G += Q_i da_i + Q_j da_j over the active set, fused with the next selection's first pass
    // (rj: Qj's missing entries, computed by this pass's chunks; not for nu, whose Qj is whole)
    void update_gradient_pair(const float* Qi, double dai, const float* Qj, double daj, const RowParts& rj = {}) {
        const int64_t n = active_size_;
        const int64_t nc = chunks_for(n, 4.0 + rj.cost, opt_.nthreads);
        if constexpr (kNu) {  // the next selection's first pass within each class
            scan_up_by_class(Qi, dai, Qj, daj, n, nc);
            return;
        }
        up_.assign(nc, UpScan{});
        for_chunks(nc, opt_.nthreads, [&](int64_t c) {
            fill_row_part(rj, n * c / nc, n * (c + 1) / nc);
            up_[c] = scan_update_gradient(G_.data(), Qi, dai, Qj, daj, y_.data(), can_up_.data(), n * c / nc,
                                          n * (c + 1) / nc);
        });
        combine_up();
        maximal_violator_known_ = true;
    }

    // nu: G += Qi dai + Qj daj (when Qi is given), then argmax F over I_up within each class, chunks
    // combined in order as one serial scan
    void scan_up_by_class(const float* Qi, double dai, const float* Qj, double daj, int64_t n, int64_t nc) {
        up_nu_.assign(nc, {UpScan{}, UpScan{}});
        for_chunks(nc, opt_.nthreads, [&](int64_t c) {
            scan_up_nu(G_.data(), Qi, dai, Qj, daj, y_.data(), can_up_.data(), n * c / nc, n * (c + 1) / nc,
                       up_nu_[c].data());
        });
        for (int s = 0; s < 2; ++s) {
            m_nu_[s] = -std::numeric_limits<double>::infinity();
            i_nu_[s] = -1;
            for (const auto& p : up_nu_)
                if (p[s].i >= 0 && p[s].m >= m_nu_[s]) {
                    m_nu_[s] = p[s].m;
                    i_nu_[s] = p[s].i;
                }
        }
        maximal_violator_known_ = true;
    }

    void combine_up() {
        m_up_ = -std::numeric_limits<double>::infinity();
        i_up_ = -1;
        for (const UpScan& p : up_)
            if (p.i >= 0 && p.m >= m_up_) {
                m_up_ = p.m;
                i_up_ = p.i;
            }
    }

    // G_bar = sum over bounded variables of a_t Q_t: lets reconstruct_gradient() rebuild the
    // gradient of shrunk variables from the free ones only.
    void update_gbar(int64_t t, double a_old, bool was_bounded) {
        if (!keep_gbar()) return;
        const double before = was_bounded ? a_old : 0.0;
        const double after = is_bounded(t) ? a_[t] : 0.0;
        if (before == after) return;
        const float* Qt = Q_.get_Q(t, l_);
        const double d = after - before;
        const int64_t nc = chunks_for(l_, 4.0, opt_.nthreads);
        for_chunks(nc, opt_.nthreads, [&](int64_t c) {
            for (int64_t k = l_ * c / nc; k < l_ * (c + 1) / nc; ++k) Gbar_[k] += d * Qt[k];
        });
    }

    const float* active_row(int64_t i) { return Q_.get_Q(i, active_size_); }

    // row i as a RowParts (see there)
    const float* row_by_parts(int64_t i, RowParts& rp) {
        if constexpr (QM::kRowsByParts) {
            rp.row = Q_.row_for_parts(i, active_size_, &rp.valid);
            if (rp.valid < active_size_) {
                rp.i = i;
                rp.cost = Q_.part_cost(i);
            }
            return rp.row;
        } else {
            return active_row(i);
        }
    }
    void fill_row_part(const RowParts& rp, int64_t lo, int64_t hi) {
        if constexpr (QM::kRowsByParts) {
            lo = std::max(lo, rp.valid);
            if (rp.i >= 0 && hi > lo) Q_.fill_part(rp.i, lo, hi, rp.row);
        }
    }

    template <bool kSecondOrder, bool kConjugate>
    void solve_pairs(SolverResult& res) {
        const int64_t period = std::min<int64_t>(l_, 1000);
        int64_t counter = period + 1;
        last_poll_ = Clock::now();
        // stall guard: the gap's running minimum, the steps since it last fell, the refreshes so far
        constexpr int kMaxRefreshes = 3;
        const int64_t stall_window = std::max<int64_t>(10 * l_, 10000);
        double best_gap = std::numeric_limits<double>::infinity();
        int64_t since_best = 0;
        int refreshes = 0;
        while (opt_.max_iter < 0 || res.iter < opt_.max_iter) {
            if (--counter == 0) {
                counter = period;
                if (opt_.shrinking) do_shrinking();
                if (poll_interrupt(res)) return;
            } else if ((counter & 15) == 0 && poll_due()) {  // steps whose rows are costly (many
                if (poll_interrupt(res)) return;              // features, cache misses): by time too
            }
            int64_t i, j;
            double gap = last_gap_;
            const bool optimal = select_working_pair<kSecondOrder>(i, j, gap);
            last_gap_ = gap;
            if (optimal) {
                if (active_size_ == l_) break;
                reconstruct_gradient();  // final unshrink check on all variables
                active_size_ = l_;
                if (select_working_pair<kSecondOrder>(i, j, gap)) break;
                counter = 1;
            }
            if constexpr (QM::kKernelRows) {
                if (gap < best_gap) {
                    best_gap = gap;
                    since_best = 0;
                } else if (++since_best > stall_window && refreshes < kMaxRefreshes) {
                    // The steps may chase the rounding of the incrementally updated gradient (float32
                    // rows; seen: nu-SVR at tol 1e-7, two pairs on the same two points undoing each
                    // other for 10^7 steps): recompute it from a. Slow progress (linear-kernel SVR
                    // has plateaus of 10^4 steps) loses nothing but the recomputation.
                    ++refreshes;
                    refresh_gradient();
                    if (stop_in_pass_) return;
                    best_gap = std::numeric_limits<double>::infinity();
                    since_best = 0;
                    counter = 1;
                    continue;
                }
            }
            if constexpr (kConjugate) take_conjugate_step(i, j); else take_pair_step(i, j);
            ++res.iter;
        }
        res.fallbacks = res_fallbacks_;
        if (opt_.max_iter >= 0 && res.iter >= opt_.max_iter) res.status = kMaxIter;
    }

    // ------------------------------------------------------------------ shrinking
    // A bounded variable that can move one way only and whose F lies on the wrong side of the other
    // extreme cannot enter a violating pair soon: set it aside (LIBSVM's be_shrunk).
    bool be_shrunk(int64_t t, double m, double M) const {
        const bool up = in_up(t), low = in_low(t);
        if (up && low) return false;
        if (!up && !low) return true;  // empty box: C_i = 0
        return up ? F(t) < M : F(t) > m;
    }

    void do_shrinking() {
        maximal_violator_known_ = false;
        reset_direction();  // the active set changes
        double m[2], M[2];  // per label class for nu (its be_shrunk compares within the class)
        violation_extremes(m[0], M[0], kNu ? 0 : -1);
        if (kNu) violation_extremes(m[1], M[1], 1); else m[1] = m[0], M[1] = M[0];
        const double worst = std::max(m[0] - M[0], m[1] - M[1]);
        if (!unshrunk_ && worst <= 10.0 * opt_.tol) {
            // close to the end: bring everything back once, so shrinking mistakes are undone early
            unshrunk_ = true;
            reconstruct_gradient();
            active_size_ = l_;
        }
        std::vector<std::pair<int64_t, int64_t>> swaps;
        auto shrink = [&](int64_t t) { return be_shrunk(t, m[cls(t)], M[cls(t)]); };
        for (int64_t t = 0; t < active_size_; ++t) {
            if (!shrink(t)) continue;
            --active_size_;
            while (active_size_ > t) {
                if (!shrink(active_size_)) {
                    swap_index(t, active_size_);
                    swaps.emplace_back(t, active_size_);
                    break;
                }
                --active_size_;
            }
        }
        Q_.swap_indices(swaps);
    }

    // G_t = psi'_t + G_bar_t + sum_{free s} a_s Q_st for the inactive t: the free variables' rows
    // over the inactive positions, a kernel block of them at a time
    void reconstruct_gradient() {
        maximal_violator_known_ = false;
        if (active_size_ == l_) return;
        reset_direction();  // the active set is about to grow: q is known on the old one only
        for (int64_t t = active_size_; t < l_; ++t) G_[t] = Gbar_[t] + dpsi(t);
        std::vector<int64_t> free_vars;
        for (int64_t u = 0; u < active_size_; ++u)
            if (!is_bounded(u) && a_[u] != 0.0) free_vars.push_back(u);
        err_recon_ = std::max(err_recon_, accumulate_rows(free_vars, active_size_, l_, G_.data() + active_size_));
        reconstructed_ = true;
    }

    // G = Qa + psi'(a) (and G_bar) recomputed from a over all positions, as at the start, with
    // double sums: drops the rounding the O(N) updates accumulated (the stall guard of solve_pairs)
    // and what float32 sums left (never a less accurate gradient than the one it replaces)
    void refresh_gradient() {
        maximal_violator_known_ = false;
        reset_direction();
        active_size_ = l_;
        initialize_gradient(nullptr, nullptr, false);
    }

    // ------------------------------------------------------------------ batched route
    // q: given, or 256 per 4 threads (an outer iteration's passes carry q x N work: more threads,
    // larger blocks), at most a quarter of the rows the cache holds (the rows of the kept half of a
    // block must survive the next block's misses, or the route recomputes them: measured on skin,
    // q = 512 with a 524-row cache computed 3.4x the kernel values of q = 256)
    int64_t choose_block_size() const {
        int64_t q = opt_.q > 0 ? opt_.q : 256 * std::max<int64_t>(1, opt_.nthreads / 4);
        q = std::min(q, l_);
        if constexpr (QM::kKernelRows) {
            // the q rows of a block must sit in the cache together
            const int64_t rows = Q_.capacity_rows(l_);
            q = std::min(q, opt_.q > 0 ? rows : std::max<int64_t>(std::min<int64_t>(rows, 16), rows / 4));
        }
        return q - (q % 2);
    }

    // q/2 most violating variables from each side: the top of I_up by F and the bottom of I_low by
    // F, taken alternately (a free variable is in both lists and is taken once). nu: ranked by their
    // violation within their class, F - M_s (up) and m_s - F (low), so both classes enter the block.
    // The candidates are ranked by (key, position), a total order: each chunk keeps its own q best
    // (in parallel), then the union's q best are taken, the same set whatever the chunks.
    void select_working_block(int64_t q, std::vector<int64_t>& B, std::vector<char>& taken) {
        using Candidate = std::pair<double, int64_t>;
        auto keep_best = [q](std::vector<Candidate>& v) {
            const size_t k = std::min<size_t>(v.size(), size_t(q));
            if (k < v.size()) std::nth_element(v.begin(), v.begin() + k, v.end());
            v.resize(k);
        };
        const int64_t n = active_size_;
        const int64_t nc = chunks_for(n, 8.0, opt_.nthreads);
        double m_s[2] = {0, 0}, M_s[2] = {0, 0};  // nu: the class extremes the keys are taken against
        if (kNu)
            for (int s = 0; s < 2; ++s) violation_extremes(m_s[s], M_s[s], s);
        std::vector<std::vector<Candidate>> ups(nc), lows(nc);
        for_chunks(nc, opt_.nthreads, [&](int64_t c) {
            auto& uc = ups[c];
            auto& lc = lows[c];
            for (int64_t t = n * c / nc; t < n * (c + 1) / nc; ++t) {
                const double up_ref = kNu ? M_s[cls(t)] : 0.0, low_ref = kNu ? m_s[cls(t)] : 0.0;
                if (in_up(t)) uc.emplace_back(-(F(t) - up_ref), t);
                if (in_low(t)) lc.emplace_back(F(t) - low_ref, t);
            }
            keep_best(uc);
            keep_best(lc);
        });
        std::vector<Candidate> up, low;
        for (int64_t c = 0; c < nc; ++c) {
            up.insert(up.end(), ups[c].begin(), ups[c].end());
            low.insert(low.end(), lows[c].begin(), lows[c].end());
        }
        keep_best(up);
        keep_best(low);
        std::sort(up.begin(), up.end());
        std::sort(low.begin(), low.end());
        // q/2 fresh violators, then the previous block's variables (newest first: ThunderSVM's
        // FIFO working set, which keeps a block from oscillating), then more violators
        const std::vector<int64_t> prev = B;
        B.clear();
        size_t iu = 0, il = 0;
        auto take_violators = [&](int64_t until) {
            while (int64_t(B.size()) < until && (iu < up.size() || il < low.size())) {
                for (auto* side : {&up, &low}) {
                    size_t& pos = side == &up ? iu : il;
                    while (pos < side->size() && taken[(*side)[pos].second]) ++pos;
                    if (pos < side->size() && int64_t(B.size()) < until) {
                        taken[(*side)[pos].second] = 1;
                        B.push_back((*side)[pos].second);
                        ++pos;
                    }
                }
            }
        };
        take_violators(prev.empty() ? q : q / 2);
        for (int64_t t : prev) {
            if (int64_t(B.size()) >= q) break;
            if (t < active_size_ && !taken[t]) {
                taken[t] = 1;
                B.push_back(t);
            }
        }
        take_violators(q);
        for (int64_t t : B) taken[t] = 0;
    }

    // the KKT gap m - M over the active set; nu: the larger of the two classes'
    double current_gap() const {
        if constexpr (!kNu) {
            double m, M;
            violation_extremes(m, M);
            return m - M;
        }
        double gap = -std::numeric_limits<double>::infinity();
        for (int s = 0; s < 2; ++s) {
            double m, M;
            violation_extremes(m, M, s);
            if (std::isfinite(m) && std::isfinite(M)) gap = std::max(gap, m - M);
        }
        return gap;
    }

    // The pair start of the batched route: an easy problem (few steps per variable) needs few kernel
    // rows, and the pair route reuses them from the cache, while every block computes q new rows
    // (usps, 5,000 rows: 986 pair steps and 348 rows against 1,263 steps and 1,290 rows in blocks).
    static constexpr double kPairStartShare = 0.25;

    // the two-level route (batched.hpp): blocks of q variables, each a sub-problem on a DenseQ
    struct Block;
    void solve_batched(SolverResult& res);
    void build_block(Block& blk);
    void solve_block(Block& blk);
    void apply_block(Block& blk);

    // G_bar += sum d_t Q_t over all l positions for the block's variables that reached or left a
    // bound (gbar_changes_): their full rows fetched as one kernel block (only the tails beyond the
    // active set are new: KernelQ::get_Q_block), then one parallel pass over the positions.
    void update_gbar_block() {
        if (gbar_changes_.empty()) return;
        const int64_t cap = std::max<int64_t>(1, QM::kKernelRows ? Q_.capacity_rows(l_) : 1);
        std::vector<int64_t> idx;
        std::vector<const float*> rows;
        for (size_t g0 = 0; g0 < gbar_changes_.size(); g0 += size_t(cap)) {
            const int64_t n = std::min<int64_t>(cap, int64_t(gbar_changes_.size() - g0));
            if constexpr (QM::kKernelRows) {
                if (cap < 2) {  // no room for a block: one row at a time
                    for (int64_t r = 0; r < n; ++r) {
                        const float* row = Q_.get_Q(gbar_changes_[g0 + r].first, l_);
                        add_to_gbar(&row, &gbar_changes_[g0 + r].second, 1);
                    }
                    continue;
                }
                idx.resize(n);
                rows.resize(n);
                std::vector<double> d(n);
                for (int64_t r = 0; r < n; ++r) {
                    idx[r] = gbar_changes_[g0 + r].first;
                    d[r] = gbar_changes_[g0 + r].second;
                }
                Q_.get_Q_block(idx.data(), n, l_, rows.data());
                add_to_gbar(rows.data(), d.data(), n);
            }
        }
        gbar_changes_.clear();
    }

    // G_bar_k += sum_r d[r] rows[r][k] for every position k
    void add_to_gbar(const float* const* rows, const double* d, int64_t n) { add_scaled_rows(Gbar_.data(), l_, rows, d, n); }

    // out[k] += sum_r d[r] rows[r][k] for k < len, in parallel over k; each sum runs over r in order,
    // so the result does not depend on the threads
    void add_scaled_rows(double* out, int64_t len, const float* const* rows, const double* d, int64_t nr) {
        const int64_t nc = chunks_for(len, double(nr), opt_.nthreads);
        for_chunks(nc, opt_.nthreads, [&](int64_t c) {
            const int64_t lo = len * c / nc, hi = len * (c + 1) / nc;
            for (int64_t r = 0; r < nr; ++r) {
                const float* Qr = rows[r];
                const double dr = d[r];
                for (int64_t k = lo; k < hi; ++k) out[k] += dr * Qr[k];
            }
        });
    }

    void update_gradient_block(const float* const* rows, int64_t qb, const double* a_new, const double* a_old) {
        std::vector<const float*> rr;
        std::vector<double> da;
        for (int64_t r = 0; r < qb; ++r)
            if (a_new[r] != a_old[r]) {
                rr.push_back(rows[r]);
                da.push_back(a_new[r] - a_old[r]);
            }
        if (!rr.empty()) add_scaled_rows(G_.data(), active_size_, rr.data(), da.data(), int64_t(rr.size()));
    }

public:
    // used by the batched route on its sub-problem (same loop, no finishing pass)
    void solve_pairs_into(SolverResult& res) {
        if constexpr (kQuadratic) {
            if (opt_.conjugate) {
                if (opt_.second_order) solve_pairs<true, true>(res); else solve_pairs<false, true>(res);
                return;
            }
        }
        if (opt_.second_order) solve_pairs<true, false>(res); else solve_pairs<false, false>(res);
    }
    const double* alpha_view() const { return a_.data(); }

private:
    // ------------------------------------------------------------------ result
    void finish(SolverResult& res) {
        reconstruct_gradient();
        active_size_ = l_;
        res.gap = 0.0;
        for (int s = kNu ? 0 : -1; s < (kNu ? 2 : 0); ++s) {
            double m, M;
            violation_extremes(m, M, s);
            if (std::isfinite(m) && std::isfinite(M)) res.gap = std::max(res.gap, m - M);
        }
        if constexpr (kNu) {
            calculate_rho_nu(res.rho, res.r);
        } else {
            res.rho = calculate_rho();
        }
        res.obj = objective();
        res.grad_error = sums_error();
        res.alpha.assign(l_, 0.0);
        res.grad.assign(l_, 0.0);
        for (int64_t t = 0; t < l_; ++t) {
            res.alpha[active_set_[t]] = a_[t];
            res.grad[active_set_[t]] = G_[t];
        }
        if (keep_gbar()) {
            res.grad_bar.assign(l_, 0.0);
            for (int64_t t = 0; t < l_; ++t) res.grad_bar[active_set_[t]] = Gbar_[t];
        }
    }

    // f(a) = sum_t 1/2 a_t (Qa)_t + h(a_t) + p_t a_t, with (Qa)_t = G_t - psi'_t (all positions current)
    double objective() const {
        double obj = 0;
        for (int64_t t = 0; t < active_size_; ++t)
            obj += 0.5 * a_[t] * (G_[t] - dpsi(t)) + term_.h(a_[t], C_[t]) + p_[t] * a_[t];
        return obj;
    }

    // rho = average of y_t G_t = -F_t over the free variables; without free ones, the midpoint of
    // the interval the KKT conditions leave for it.
    double calculate_rho() const {
        double ub = std::numeric_limits<double>::infinity(), lb = -ub, sum = 0;
        int64_t nr_free = 0;
        for (int64_t t = 0; t < l_; ++t) {
            const double yG = -F(t);
            const bool up = in_up(t), low = in_low(t);
            if (up && low) {
                ++nr_free;
                sum += yG;
            } else if (up) {
                ub = std::min(ub, yG);
            } else if (low) {
                lb = std::max(lb, yG);
            }
        }
        if (nr_free > 0) return sum / nr_free;
        if (std::isfinite(ub) && std::isfinite(lb)) return 0.5 * (ub + lb);
        return std::isfinite(ub) ? ub : (std::isfinite(lb) ? lb : 0.0);
    }

    // nu (LIBSVM's Solver_NU::calculate_rho): r_s = the mean of G over class s's free variables,
    // else the midpoint of the interval its bounded ones leave; rho = (r_+ - r_-) / 2 and
    // r = (r_+ + r_-) / 2 (the formulation divides by r).
    void calculate_rho_nu(double& rho, double& r) const {
        const double inf = std::numeric_limits<double>::infinity();
        double ub[2] = {inf, inf}, lb[2] = {-inf, -inf}, sum[2] = {0, 0}, rs[2];
        int64_t nr_free[2] = {0, 0};
        for (int64_t t = 0; t < l_; ++t) {
            const int s = cls(t);
            if (at_hi_[t]) {
                lb[s] = std::max(lb[s], G_[t]);
            } else if (at_lo_[t]) {
                ub[s] = std::min(ub[s], G_[t]);
            } else {
                ++nr_free[s];
                sum[s] += G_[t];
            }
        }
        for (int s = 0; s < 2; ++s) {
            if (nr_free[s] > 0) rs[s] = sum[s] / double(nr_free[s]);
            else if (std::isfinite(ub[s]) && std::isfinite(lb[s])) rs[s] = 0.5 * (ub[s] + lb[s]);
            else rs[s] = std::isfinite(ub[s]) ? ub[s] : (std::isfinite(lb[s]) ? lb[s] : 0.0);
        }
        rho = 0.5 * (rs[0] - rs[1]);
        r = 0.5 * (rs[0] + rs[1]);
    }

    QM& Q_;
    Term term_;
    SolverOptions opt_;
    int64_t l_, active_size_;
    double last_gap_ = std::numeric_limits<double>::infinity();  // of the last selection, for poll
    bool stop_in_pass_ = false;  // interrupted_in_pass() said stop
    double err_G_ = 0.0, err_Gbar_ = 0.0, err_recon_ = 0.0;  // float32 sums' error bounds (sums_error)
    bool reconstructed_ = false;
    std::chrono::steady_clock::time_point last_poll_ = std::chrono::steady_clock::now();
    std::vector<double> y_, p_, C_, lo_, hi_, a_, G_, Gbar_;
    std::vector<double> diag_;               // Q_tt + psi_t''(a_t), non-quadratic terms only
    std::vector<char> at_lo_, at_hi_;      // a_t at its lower / upper bound
    std::vector<uint8_t> can_up_, can_low_;  // t in I_up / I_low (derived from the above and y_t)
    std::vector<uint8_t> low_cls_[2];  // nu: I_low within class 0 (y > 0) and 1 (the j scans' masks)
    std::vector<int64_t> active_set_;
    bool unshrunk_ = false;
    std::vector<UpScan> up_;  // per-chunk partial results of the scans
    std::vector<LowScan> low_;
    std::vector<std::array<UpScan, 2>> up_nu_;  // nu: the same per class
    double m_nu_[2] = {0, 0};  // nu: max F over I_up of each class, its position (valid with maximal_violator_known_)
    int64_t i_nu_[2] = {-1, -1};
    bool maximal_violator_known_ = false;  // (m_up_, i_up_) valid for the current G and active set
    // conjugate direction rule: p (dense values + support list), q = Qp over the active set, delta
    static constexpr double kDeltaFloor = 1e-6;  // delta_k below this fraction of d'Qd: plain pair
    std::vector<double> dir_, q_;
    std::vector<char> in_dir_;
    std::vector<int64_t> dir_idx_;
    bool dir_active_ = false;  // p_{k-1} != 0 (the previous step was an unclipped one)
    double delta_ = 1.0;
    double dir_scale_ = 1.0;  // p = dir_scale_ * dir_
    struct StatusChange {
        int64_t t;
        double a_old;
        bool was_bounded;
    };
    std::vector<StatusChange> status_changes_;  // scratch of a conjugate step
    int64_t res_fallbacks_ = 0;
    std::vector<std::pair<int64_t, double>> gbar_changes_;  // batched route: (position, change of G_bar's coefficient)
    double m_up_ = 0;
    int64_t i_up_ = -1;
};

}  // namespace sk

#include "batched.hpp"
