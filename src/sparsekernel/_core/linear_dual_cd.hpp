// A linear SVM with a free bias on explicit features (rows phi_i of an N x d array, d << N), by dual
// coordinate descent: SLMC's inner problem (37)-(39) on the whitened map phi_z (41-43).
//
//     min_a  1/2 a'Qa - e'a   s.t.  y'a = 0,  0 <= a_i <= U_i,   Q_ij = y_i y_j phi_i'phi_j
//
// The pair SMO of the engine pays O(N d) per step for a row of Q (thousands of steps per solve);
// with w = sum_i a_i y_i phi_i kept explicitly a coordinate step costs O(d) (Hsieh, Chang, Lin,
// Keerthi & Sundararajan, "A dual coordinate descent method for large-scale linear SVM", ICML 2008,
// Algorithm 3 with its shrinking), an epoch over all N coordinates O(N d): one SMO step's row.
//
// Coordinate descent cannot keep y'a = 0 (one variable moves at a time), so the bias is handled by
// the method of multipliers (a proximal point method in b): round k solves the box-constrained
//
//     min_a  1/2 a'Qa + rho/2 (y'a)^2 + b_k y'a - e'a,   0 <= a_i <= U_i
//
// (the primal 1/2|w|^2 + (b - b_k)^2 / (2 rho) + sum_i U_i hinge_i, whose optimal bias is
// b = b_k + rho y'a), then sets b_{k+1} = b_k + rho y'a. At the fixed point y'a = 0 and the box
// problem's KKT conditions at bias b are those of the problem above: the SVM with a free bias, not a
// regularised one. Each round starts from the previous round's a (and an outer caller's previous
// solve: the feasible set does not depend on phi).
//
// Stopping: a round ends when its projected gradients, G_i = y_i (w'phi_i + b) - 1, lie within
// max(tol, rho |y'a|) of each other (the box problem's KKT gap, LIBSVM's meaning of tol at a fixed
// bias; no finer than the bias's error while that is larger: inexact rounds, as in inexact augmented
// Lagrangian methods); the solve ends when a round's box problem is solved to tol with
// rho |y'a| <= tol / 10 (b would move by less than that). rho <= 0 takes kRhoShare of the mean of |phi_i|^2 (the scale of Q's diagonal; for the rbf kernel
// K_z(x, x) <= 1): a larger rho couples every coordinate through rho (y'a)^2 and slows the passes, a
// smaller one needs more rounds (measured: 200 moons points x 4 features, tol 1e-6: 554 passes at
// 0.1, 1,582 at 1, 658 at 0.01; 15,000 x 604, tol 1e-3: 0.38 s at 0.1 and at 1, 0.51 s at 0.03).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

namespace sk {

struct LinearDualResult {
    double b = 0.0;
    double gap = 0.0;          // the last epoch's projected-gradient spread (over the active set)
    double feasibility = 0.0;  // |y'a| at the end
    int64_t epochs = 0;        // passes over the active coordinates, all rounds
    int64_t rounds = 0;        // multiplier updates
    int status = 0;            // 0 converged, 1 max_epochs, 2 interrupted
};

namespace linear_dual_detail {
inline double dot(const double* a, const double* b, int64_t d) {
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int64_t k = 0;
    for (; k + 4 <= d; k += 4) {
        s0 += a[k] * b[k];
        s1 += a[k + 1] * b[k + 1];
        s2 += a[k + 2] * b[k + 2];
        s3 += a[k + 3] * b[k + 3];
    }
    for (; k < d; ++k) s0 += a[k] * b[k];
    return (s0 + s1) + (s2 + s3);
}
inline void axpy(double t, const double* x, double* y, int64_t d) {
    for (int64_t k = 0; k < d; ++k) y[k] += t * x[k];
}
}  // namespace linear_dual_detail

// a (size N) is the start and the result; b0 the start of the bias (the previous solve's b).
// stop() is polled once per epoch (Ctrl-C, a cancelled fit).
inline LinearDualResult solve_linear_dual_cd(const double* Phi, int64_t N, int64_t d, const double* y, const double* U,
                                             double* a, double b0, double tol, double rho, int64_t max_epochs,
                                             const std::function<bool()>& stop) {
    using linear_dual_detail::axpy;
    using linear_dual_detail::dot;
    LinearDualResult res;
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<double> w(d, 0.0), QD(N);
    double s = 0.0, mean_sq = 0.0;  // y'a
    for (int64_t i = 0; i < N; ++i) {
        const double* phi = Phi + i * d;
        QD[i] = dot(phi, phi, d);
        mean_sq += QD[i] / double(std::max<int64_t>(N, 1));
    }
    constexpr double kRhoShare = 0.1;
    double total_U = 0.0;
    for (int64_t i = 0; i < N; ++i) total_U += U[i];
    // (the floor 1 / sum U_i: where the features vanish (expansion vectors far from the data) a
    // round's step rho y'a must still move b by O(1) for a y'a of order sum U_i)
    if (!(rho > 0.0)) rho = kRhoShare * mean_sq + (total_U > 0.0 ? 1.0 / total_U : 1.0);
    for (int64_t i = 0; i < N; ++i) {
        a[i] = std::min(std::max(a[i], 0.0), U[i]);
        const double* phi = Phi + i * d;
        QD[i] += rho;
        if (a[i] != 0.0) {
            axpy(a[i] * y[i], phi, w.data(), d);
            s += a[i] * y[i];
        }
    }
    double bk = b0;
    std::vector<int64_t> index(N);
    std::mt19937_64 rng(0x5eed);  // a fixed order: the same solve every time
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
        for (int64_t k = 0; k < active; ++k) std::swap(index[k], index[k + int64_t(rng() % uint64_t(active - k))]);
        double PGmax = -inf, PGmin = inf;
        for (int64_t k = 0; k < active; ++k) {
            const int64_t i = index[k];
            const double* phi = Phi + i * d;
            const double b = bk + rho * s;
            const double G = y[i] * (dot(w.data(), phi, d) + b) - 1.0;
            double PG = 0.0;
            if (a[i] <= 0.0) {
                if (G > PGmax_old) {  // at 0 and pushed further down: shrunk (Hsieh et al., Algorithm 3)
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
                    axpy(dy, phi, w.data(), d);
                    s += dy;
                }
            }
        }
        if (active == 0) {  // every coordinate shrunk: look at all of them again
            unshrink();
            continue;
        }
        res.gap = PGmax - PGmin;
        // a round ends when its box problem is solved to tol, or to the bias's own error (the
        // multiplier step rho |y'a|), whichever is larger: no finer than the bias it is solved at
        if (res.gap <= std::max(tol, std::fabs(rho * s))) {
            if (active < N) {  // the shrunk ones may violate: one more epoch over all
                unshrink();
                continue;
            }
            // the round's box problem is solved: the multiplier step, or the end
            const double step = rho * s;
            if (std::fabs(step) <= 0.1 * tol && res.gap <= tol) break;
            bk += step;  // b_{k+1} = b_k + rho y'a
            ++res.rounds;
            unshrink();
            continue;
        }
        PGmax_old = PGmax <= 0 ? inf : PGmax;
        PGmin_old = PGmin >= 0 ? -inf : PGmin;
    }
    res.b = bk + rho * s;
    res.feasibility = std::fabs(s);
    return res;
}

}  // namespace sk
