// Separable terms psi_i(a_i) of the generic dual (DESIGN.md):
//     min_a 1/2 a'Qa + sum_i psi_i(a_i)   s.t.  y'a = 0,  lo_i <= a_i <= hi_i.
// The engine keeps G_i = (Qa)_i + psi_i'(a_i). A term supplies psi and its derivatives and the
// solution of the two-variable sub-problem along the feasible direction
//     a_i += y_i t,   a_j -= y_j t,   0 <= t <= t_max,
// on which the objective is  phi(t) = phi(0) - b t + 1/2 quad t^2 + (psi part, for non-quadratic terms)
// with b = F_i - F_j > 0 (F = -y G) and quad = K_ii + K_jj - 2 K_ij.
#pragma once
#include <algorithm>

namespace sk {

struct PairProblem {
    double b;      // F_i - F_j: the violation of the pair (> 0)
    double quad;   // K_ii + K_jj - 2 K_ij, already made positive (tau) by the engine
    double t_max;  // largest step that keeps both variables in their boxes
};

// psi_i(a) = p_i a: C-SVC (p = -1), eps-SVR (p = eps -/+ z), and every sub-problem of the batched
// route (p_B = G_B - Q_BB a_B). The pair sub-problem has the closed form t = min(b / quad, t_max).
struct LinearTerm {
    static constexpr bool kQuadraticObjective = true;
    double curvature(double /*a*/, double /*lo*/, double /*hi*/) const { return 0.0; }  // psi''
    double pair_step(const PairProblem& pp) const { return std::min(pp.b / pp.quad, pp.t_max); }
};

}  // namespace sk
