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
// Stopping (besides the relative duality gap, see solve_linear_dual_cd): a round ends when its
// projected gradients, G_i = y_i (w'phi_i + b) - 1, lie within max(tol, rho |y'a|) of each other (the
// box problem's KKT gap, LIBSVM's meaning of tol at a fixed bias; no finer than the bias's error while
// that is larger: inexact rounds, as in inexact augmented Lagrangian methods); the solve ends when a
// round's box problem is solved to tol with rho |y'a| <= tol / 10 (b would move by less than that).
// rho <= 0 takes kRhoShare of the mean of |phi_i|^2 (the scale of Q's diagonal; for the rbf kernel
// K_z(x, x) <= 1), plus 1 / sum U_i: a larger rho couples every coordinate through rho (y'a)^2 and
// slows the passes, a smaller one needs more rounds (measured: 200 moons points x 4 features, tol 1e-6: 554 passes at
// 0.1, 1,582 at 1, 658 at 0.01; 15,000 x 604, tol 1e-3: 0.38 s at 0.1 and at 1, 0.51 s at 0.03).
#pragma once
#include <cstdint>
#include <functional>

namespace sk {

struct LinearDualResult {
    double b = 0.0;
    double gap = 0.0;          // the last epoch's projected-gradient spread (over the active set)
    double feasibility = 0.0;  // |y'a| at the end
    int64_t epochs = 0;        // passes over the active coordinates, all rounds
    int64_t rounds = 0;        // multiplier updates
    int status = 0;            // 0 converged, 1 max_epochs, 2 interrupted
    double duality_gap = -1.0;  // the last check's primal - dual at the current b (-1: none made)
    bool stopped_on_gap = false;
};

// a (size N) is the start and the result; b0 the start of the bias (the previous solve's b).
// stop() is polled once per epoch (Ctrl-C, a cancelled fit). gap_tol > 0: the solve also ends, every
// tenth pass, when the bias has settled (rho |y'a| <= tol / 10) and the primal-dual gap at the current b
// is at most gap_tol of the primal (the objective is then that close to optimal, however slowly the
// projected gradients' spread shrinks).
LinearDualResult solve_linear_dual_cd(const double* Phi, int64_t N, int64_t d, const double* y, const double* U,
                                      double* a, double b0, double tol, double rho, int64_t max_epochs,
                                      const std::function<bool()>& stop, double gap_tol = 0.0);

}  // namespace sk
