// The O(N) scans of one SMO iteration for the quadratic-objective terms, as plain loops over raw
// arrays (compiled for several instruction sets, see simd.hpp). Each scans the positions [lo, hi);
// the engine splits the active set into chunks and combines the partial results in chunk order.
//
// Notation: F_t = -y_t G_t; t is in I_up (up[t] = 1) when it can move along +y_t
// (y_t > 0 ? a_t < hi_t : a_t > lo_t), in I_low (low[t] = 1) when it can move along -y_t.
// scans.cpp is compiled with -ffinite-math-only -fno-signed-zeros so that the min/max reductions
// vectorise: its sentinels are finite (kHuge) and no infinity or NaN reaches it.
#pragma once
#include <cstdint>

namespace sk {

struct UpScan {  // max / argmax of F over I_up (last index among ties)
    double m;
    int64_t i;
};

struct LowScan {  // the j side of the working-set selection
    double M;     // min F over I_low
    double gain;  // second order: b_j^2 / quad_j of the best j so far (b = m - F_j), -1 if none
    int64_t j;    // -1 when none
};

// G_t += Qi_t dai + Qj_t daj, then the I_up scan on the new gradient (the next iteration's i).
UpScan scan_update_gradient(double* G, const float* Qi, double dai, const float* Qj, double daj, const double* y,
                            const uint8_t* up, int64_t lo, int64_t hi);

// CSMO (25) and (28) in one pass: q_t = ci Qi_t + cj Qj_t + gamma q_t, G_t += rho q_t, then the I_up
// scan. gamma = 0 does not read the old q (it may be stale after a reset).
UpScan scan_update_conjugate(double* G, double* q, const float* Qi, double ci, const float* Qj, double cj,
                             double gamma, double rho, const double* y, const uint8_t* up, int64_t lo, int64_t hi);

UpScan scan_up(const double* G, const double* y, const uint8_t* up, int64_t lo, int64_t hi);

// Second order (Fan, Chen & Lin 2005, WSS 2): j minimising -b^2/quad over I_low with b = m - F_j > 0,
// quad = QD_i + QD_j - 2 y_i y_j Qi_j (tau when not positive).
LowScan scan_low_second_order(const double* G, const double* y, const uint8_t* low, const double* QD,
                              const float* Qi, double QDi, double yi, double m, double tau, int64_t lo, int64_t hi);

// First order: j = argmin F over I_low (last index among ties).
LowScan scan_low_first_order(const double* G, const double* y, const uint8_t* low, int64_t lo, int64_t hi);

// The nu formulations (label classes: 0 for y > 0, 1 for y < 0; both scans read the class from y):
// G_t += Qi_t dai + Qj_t daj, then the I_up scan within each class (r[0], r[1]); without Qi (null),
// the scan alone.
void scan_up_nu(double* G, const float* Qi, double dai, const float* Qj, double daj, const double* y,
                const uint8_t* up, int64_t lo, int64_t hi, UpScan r[2]);

// Every scan works in blocks of kScanBlock positions: a vectorisable pass computes the block's
// candidate values and their extremum, and only a block that improves on the best so far is
// searched (backwards) for its index. Ties go to the last index, as in one serial scan.
constexpr int64_t kScanBlock = 256;
constexpr double kHuge = 1e300;  // "none" (finite, see above)

}  // namespace sk
