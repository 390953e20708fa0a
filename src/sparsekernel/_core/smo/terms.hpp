// Separable terms psi_i(a_i) of the generic dual (DESIGN.md):
//     min_a 1/2 a'Qa + sum_i psi_i(a_i)   s.t.  y'a = 0,  lo_i <= a_i <= hi_i.
// Every term has the form  psi_i(a) = h(a; C_i) + p_i a  with a per-variable linear coefficient p_i
// and a per-variable scale C_i; the engine keeps G_i = (Qa)_i + h'(a_i; C_i) + p_i. A term supplies
// h and its derivatives and the solution of the two-variable sub-problem along the feasible direction
//     a_i += y_i t,   a_j -= y_j t,   0 <= t <= t_max,
// on which phi(t) = f(a(t)) has phi'(0) = -b with b = F_i - F_j > 0 (F = -y G).
#pragma once
#include <algorithm>
#include <cmath>

namespace sk {

struct PairProblem {
    double b;       // F_i - F_j: the violation of the pair (> 0)
    double quad;    // K_ii + K_jj - 2 K_ij (+ h''_i + h''_j at t = 0), made positive (tau) by the engine
    double kquad;   // K_ii + K_jj - 2 K_ij alone (the entropic step adds h'' along t itself)
    double t_max;   // largest step that keeps both variables in their boxes
    double ai, yi, Ci;  // variable i: value, label, scale
    double aj, yj, Cj;  // variable j
    double tol;     // the solver's tolerance (the entropic Newton iteration stops at 0.1 tol)
};

// psi_i(a) = p_i a: C-SVC (p = -1), eps-SVR (p = eps -/+ z), and every sub-problem of the batched
// route (p_B = G_B - Q_BB a_B). The pair sub-problem has the closed form t = min(b / quad, t_max).
struct LinearTerm {
    static constexpr bool kQuadraticObjective = true;
    double h(double /*a*/, double /*C*/) const { return 0.0; }        // nonlinear part of psi
    double dh(double /*a*/, double /*C*/) const { return 0.0; }       // its derivative
    double d2h(double /*a*/, double /*C*/) const { return 0.0; }      // psi''
    double pair_step(const PairProblem& pp) const { return std::min(pp.b / pp.quad, pp.t_max); }
};

// Kernel logistic regression (Keerthi et al. 2005) and sparse KLR (Consolo, Manno & Amaldi):
//     psi_i(a) = C_i G(a / C_i) - lam a,   G(d) = d log d + (1 - d) log(1 - d),   p_i = -lam,
// so h(a) = a log(a/C) + (C - a) log((C - a)/C), h'(a) = log(a / (C - a)), h''(a) = C / (a (C - a)).
// The box [gamma_b, C_i - gamma_b] (S-KLR (22c)) keeps h' and h'' finite.
//
// Near-bound variables (Keerthi's NBG set, needed at large C where many a_i approach 0 or C):
// Keerthi et al. fix a variable once it comes within mu of 0 or C and optimise the others in an
// inner loop, then run an outer loop over all variables to release those that violate the KKT
// conditions again. Here the explicit box makes "near bound" exact: a clipped pair step lands the
// variable on gamma_b or C_i - gamma_b (solver.hpp), which takes it out of I_up or I_low (it can move
// one way only, as an NBG variable); shrinking sets it aside while its KKT condition holds (Keerthi's
// inner loop over the non-NBG set), and the final unshrink check re-examines every variable with an
// exact gradient before stopping (his outer loop). Both stop at the same KKT conditions (27) of the
// boxed problem, so they reach the same (unique, strictly convex) solution.
struct EntropicTerm {
    static constexpr bool kQuadraticObjective = false;
    double h(double a, double C) const {
        const double r = C - a;
        return (a > 0 ? a * std::log(a / C) : 0.0) + (r > 0 ? r * std::log(r / C) : 0.0);
    }
    double dh(double a, double C) const { return std::log(a / (C - a)); }
    double d2h(double a, double C) const { return C / (a * (C - a)); }

    // S-KLR eq. (30): minimise phi(t) on [0, t_max]. phi is strictly convex with phi'(0) = -b < 0, so
    // the minimiser is the root of
    //     phi'(t) = -b + kquad t + y_i [h'_i(a_i + y_i t) - h'_i(a_i)] - y_j [h'_j(a_j - y_j t) - h'_j(a_j)]
    // when phi'(t_max) > 0, else t_max. Safeguarded Newton (Keerthi et al. section 5): a Newton step
    // that leaves the bracket [t_lo, t_hi] (phi' < 0 at t_lo, > 0 at t_hi) is replaced by bisection.
    // Stops when |phi'(t)| < 0.1 tol, i.e. the pair's remaining violation is far below the gap the
    // solver is asked for.
    double pair_step(const PairProblem& pp) const {
        const double hi0 = dh(pp.ai, pp.Ci), hj0 = dh(pp.aj, pp.Cj);
        auto dphi = [&](double t) {
            return -pp.b + pp.kquad * t + pp.yi * (dh(pp.ai + pp.yi * t, pp.Ci) - hi0) -
                   pp.yj * (dh(pp.aj - pp.yj * t, pp.Cj) - hj0);
        };
        auto d2phi = [&](double t) {
            return std::max(pp.kquad, 0.0) + d2h(pp.ai + pp.yi * t, pp.Ci) + d2h(pp.aj - pp.yj * t, pp.Cj);
        };
        const double stop = 0.1 * pp.tol;
        if (!(pp.t_max > 0)) return 0.0;
        if (dphi(pp.t_max) <= stop) return pp.t_max;  // the minimiser lies at (or beyond) the box edge
        double t_lo = 0.0, t_hi = pp.t_max;
        double t = std::min(pp.b / pp.quad, pp.t_max);  // the quadratic model's step (the WSS's t*)
        for (int it = 0; it < 100; ++it) {
            const double g = dphi(t);
            if (std::fabs(g) < stop) break;
            if (g < 0) t_lo = t; else t_hi = t;
            double next = t - g / d2phi(t);
            if (!(next > t_lo && next < t_hi)) next = 0.5 * (t_lo + t_hi);  // bisection fallback
            if (next == t) break;
            t = next;
        }
        return t;
    }
};

}  // namespace sk
