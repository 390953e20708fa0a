// Dual coordinate descent for the linear SVM with a free bias (linear_dual_cd.hpp).
#include "linear_dual_cd.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "simd.hpp"

namespace sk {
namespace {

struct Pass {
    double PGmax, PGmin;
};

// The state of a solve: w = sum_i a_i y_i phi_i, s = y'a, the bias of the round b_k and rho.
struct DualState {
    std::vector<double> w;
    double s = 0.0, bk = 0.0, rho = 0.0;
};

// One pass over the active coordinates index[0, active) in their order (Hsieh et al. 2008,
// Algorithm 3): the shrinking test against the previous pass's extremes, the projected gradient,
// the clipped Newton step and the O(d) updates of w, s. Coordinates shrunk here are swapped to the
// end of the active range. The rows are visited in random order: the next row is prefetched while
// this one is used (the pass is bound by memory latency at d ~ 100-600).
SK_MULTIVERSION
Pass cd_pass(const double* Phi, int64_t d, const double* y, const double* U, const double* QD, double* a,
             DualState& st, int64_t* index, int64_t& active, double PGmax_old, double PGmin_old) {
    const double inf = std::numeric_limits<double>::infinity();
    double PGmax = -inf, PGmin = inf;
    double* w = st.w.data();
    for (int64_t k = 0; k < active; ++k) {
        const int64_t i = index[k];
        if (k + 1 < active) {
            const char* next = reinterpret_cast<const char*>(Phi + index[k + 1] * d);
            const int64_t bytes = d * int64_t(sizeof(double));
            for (int64_t off = 0; off < bytes; off += 64) __builtin_prefetch(next + off);
        }
        const double* phi = Phi + i * d;
        double dot = 0.0;
#pragma omp simd reduction(+ : dot)
        for (int64_t j = 0; j < d; ++j) dot += w[j] * phi[j];
        const double G = y[i] * (dot + st.bk + st.rho * st.s) - 1.0;
        double PG = 0.0;
        if (a[i] <= 0.0) {
            if (G > PGmax_old) {  // at 0 and pushed further down: shrunk
                std::swap(index[k], index[--active]);
                --k;
                continue;
            }
            PG = std::min(G, 0.0);
        } else if (a[i] >= U[i]) {
            if (G < PGmin_old) {
                std::swap(index[k], index[--active]);
                --k;
                continue;
            }
            PG = std::max(G, 0.0);
        } else {
            PG = G;
        }
        PGmax = std::max(PGmax, PG);
        PGmin = std::min(PGmin, PG);
        if (std::fabs(PG) > 1e-12) {
            const double old = a[i];
            a[i] = std::min(std::max(old - G / QD[i], 0.0), U[i]);
            const double dy = (a[i] - old) * y[i];
            if (dy != 0.0) {
#pragma omp simd
                for (int64_t j = 0; j < d; ++j) w[j] += dy * phi[j];
                st.s += dy;
            }
        }
    }
    return {PGmax, PGmin};
}

// xorshift64*: the permutation's random numbers (a fixed seed: the same solve every time), with
// Lemire's multiply-shift for a number below n (no division per draw)
struct Xorshift {
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    uint64_t below(uint64_t n) {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        const uint64_t r = x * 0x2545F4914F6CDD1DULL;
        return uint64_t((static_cast<unsigned __int128>(r) * n) >> 64);
    }
};

// The primal 1/2 |w|^2 + sum_i U_i max(0, 1 - y_i (w'phi_i + b)) and the dual of the problem at this
// fixed b, sum_i a_i - 1/2 |w|^2 - b y'a (a lower bound of the primal's optimum at b): their
// difference bounds how far the objective is from optimal at b, in one O(N d) pass.
SK_MULTIVERSION
double duality_gap(const double* Phi, int64_t N, int64_t d, const double* y, const double* U, const double* a,
                   const DualState& st, double b, double* primal_out) {
    const double* w = st.w.data();
    double ww = 0.0, loss = 0.0, sum_a = 0.0;
    for (int64_t j = 0; j < d; ++j) ww += w[j] * w[j];
    for (int64_t i = 0; i < N; ++i) {
        const double* phi = Phi + i * d;
        double dot = 0.0;
#pragma omp simd reduction(+ : dot)
        for (int64_t j = 0; j < d; ++j) dot += w[j] * phi[j];
        loss += U[i] * std::max(0.0, 1.0 - y[i] * (dot + b));
        sum_a += a[i];
    }
    const double primal = 0.5 * ww + loss;
    *primal_out = primal;
    return primal - (sum_a - 0.5 * ww - b * st.s);
}

}  // namespace

LinearDualResult solve_linear_dual_cd(const double* Phi, int64_t N, int64_t d, const double* y, const double* U,
                                      double* a, double b0, double tol, double rho, int64_t max_epochs,
                                      const std::function<bool()>& stop, double gap_tol) {
    LinearDualResult res;
    const double inf = std::numeric_limits<double>::infinity();
    DualState st;
    st.w.assign(d, 0.0);
    std::vector<double> QD(N);
    double mean_sq = 0.0, total_U = 0.0;
    for (int64_t i = 0; i < N; ++i) {
        const double* phi = Phi + i * d;
        double q = 0.0;
        for (int64_t j = 0; j < d; ++j) q += phi[j] * phi[j];
        QD[i] = q;
        mean_sq += q / double(std::max<int64_t>(N, 1));
        total_U += U[i];
    }
    constexpr double kRhoShare = 0.1;
    constexpr int64_t kGapCheckEvery = 10;  // passes between duality-gap checks (each O(N d))
    // (the floor 1 / sum U_i: where the features vanish (expansion vectors far from the data) a
    // round's step rho y'a must still move b by O(1) for a y'a of order sum U_i)
    if (!(rho > 0.0)) rho = kRhoShare * mean_sq + (total_U > 0.0 ? 1.0 / total_U : 1.0);
    st.rho = rho;
    for (int64_t i = 0; i < N; ++i) {
        a[i] = std::min(std::max(a[i], 0.0), U[i]);
        QD[i] += rho;
        if (a[i] != 0.0) {
            const double* phi = Phi + i * d;
            const double t = a[i] * y[i];
            for (int64_t j = 0; j < d; ++j) st.w[j] += t * phi[j];
            st.s += t;
        }
    }
    st.bk = b0;
    std::vector<int64_t> index(N);
    Xorshift rng;
    int64_t active = N;
    double PGmax_old = inf, PGmin_old = -inf;
    auto unshrink = [&] {
        std::iota(index.begin(), index.end(), int64_t(0));
        active = N;
        PGmax_old = inf;
        PGmin_old = -inf;
    };
    unshrink();
    while (true) {
        if (res.epochs >= max_epochs) {
            res.status = 1;
            break;
        }
        if (stop && stop()) {
            res.status = 2;
            break;
        }
        ++res.epochs;
        for (int64_t k = 0; k + 1 < active; ++k) std::swap(index[k], index[k + int64_t(rng.below(uint64_t(active - k)))]);
        const Pass p = cd_pass(Phi, d, y, U, QD.data(), a, st, index.data(), active, PGmax_old, PGmin_old);
        if (active == 0) {  // every coordinate shrunk: look at all of them again
            unshrink();
            continue;
        }
        res.gap = p.PGmax - p.PGmin;
        // a round ends when its box problem is solved to tol, or to the bias's own error (the
        // multiplier step rho |y'a|), whichever is larger: no finer than the bias it is solved at
        if (res.gap <= std::max(tol, std::fabs(rho * st.s))) {
            if (active < N) {  // the shrunk ones may violate: one more epoch over all
                unshrink();
                continue;
            }
            // the round's box problem is solved: the multiplier step, or the end
            const double step = rho * st.s;
            if (std::fabs(step) <= 0.1 * tol && res.gap <= tol) break;
            st.bk += step;  // b_{k+1} = b_k + rho y'a
            ++res.rounds;
            unshrink();
            continue;
        }
        PGmax_old = p.PGmax <= 0 ? inf : p.PGmax;
        PGmin_old = p.PGmin >= 0 ? -inf : p.PGmin;
        // the objective close enough (gap_tol relative) while the spread of projected gradients is
        // still above tol: with more free variables than features (Q of rank d) the spread shrinks
        // far more slowly than the objective (w8a, 15,000 points x 123 features: relative gap 1e-6
        // after 1,000 passes, spread 1e-4 after 8,700)
        // (the gap at b = b_k + rho y'a is also the round's own primal-dual gap, of the problem with the
        // proximal term (b - b_k)^2 / (2 rho): a round whose gap is small is solved, and takes its
        // multiplier step, as one that met the spread)
        if (gap_tol > 0.0 && res.epochs % kGapCheckEvery == 0) {
            double primal = 0.0;
            const double gap = duality_gap(Phi, N, d, y, U, a, st, st.bk + rho * st.s, &primal);
            res.duality_gap = gap;
            if (gap <= gap_tol * std::max(std::fabs(primal), 1e-300)) {
                const double step = rho * st.s;
                if (std::fabs(step) <= 0.1 * tol) {  // b settled, as at the spread's stop
                    res.stopped_on_gap = true;
                    break;
                }
                st.bk += step;
                ++res.rounds;
                unshrink();
            }
        }
    }
    res.b = st.bk + rho * st.s;
    res.feasibility = std::fabs(st.s);
    return res;
}

}  // namespace sk
