#include "scans.hpp"

#include <limits>

#include "../simd.hpp"

namespace sk {

namespace {

[[gnu::always_inline]] inline bool in_up(double y, char at_lo, char at_hi) { return y > 0 ? !at_hi : !at_lo; }
[[gnu::always_inline]] inline bool in_low(double y, char at_lo, char at_hi) { return y > 0 ? !at_lo : !at_hi; }

}  // namespace

SK_MULTIVERSION
UpScan scan_update_gradient(double* __restrict G, const float* __restrict Qi, double dai, const float* __restrict Qj,
                            double daj, const double* __restrict y, const char* __restrict at_lo,
                            const char* __restrict at_hi, int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) G[t] += Qi[t] * dai + Qj[t] * daj;
    return scan_up(G, y, at_lo, at_hi, lo, hi);
}

SK_MULTIVERSION
UpScan scan_up(const double* __restrict G, const double* __restrict y, const char* __restrict at_lo,
               const char* __restrict at_hi, int64_t lo, int64_t hi) {
    UpScan r{-std::numeric_limits<double>::infinity(), -1};
    for (int64_t t = lo; t < hi; ++t) {
        const double f = -y[t] * G[t];
        if (in_up(y[t], at_lo[t], at_hi[t]) && f >= r.m) {
            r.m = f;
            r.i = t;
        }
    }
    return r;
}

SK_MULTIVERSION
LowScan scan_low_second_order(const double* __restrict G, const double* __restrict y, const char* __restrict at_lo,
                              const char* __restrict at_hi, const double* __restrict QD, const float* __restrict Qi,
                              double QDi, double yi, double m, double tau, int64_t lo, int64_t hi) {
    LowScan r{std::numeric_limits<double>::infinity(), 0.0, 1.0, -1};
    for (int64_t t = lo; t < hi; ++t) {
        if (!in_low(y[t], at_lo[t], at_hi[t])) continue;
        const double f = -y[t] * G[t];
        r.M = f < r.M ? f : r.M;
        const double b = m - f;
        if (b > 0) {
            double quad = QDi + QD[t] - 2.0 * yi * y[t] * double(Qi[t]);
            quad = quad > 0 ? quad : tau;
            const double bb = b * b;
            if (better_pair(bb, quad, r.bb, r.qq)) {
                r.bb = bb;
                r.qq = quad;
                r.j = t;
            }
        }
    }
    return r;
}

SK_MULTIVERSION
LowScan scan_low_first_order(const double* __restrict G, const double* __restrict y, const char* __restrict at_lo,
                             const char* __restrict at_hi, int64_t lo, int64_t hi) {
    LowScan r{std::numeric_limits<double>::infinity(), 0.0, 1.0, -1};
    for (int64_t t = lo; t < hi; ++t) {
        const double f = -y[t] * G[t];
        if (in_low(y[t], at_lo[t], at_hi[t]) && f <= r.M) {
            r.M = f;
            r.j = t;
        }
    }
    return r;
}

}  // namespace sk
