#include "scans.hpp"

#include <algorithm>

#include "../simd.hpp"

namespace sk {

namespace {

// last k in [0, w) with v[k] == target
[[gnu::always_inline]] inline int64_t last_equal(const double* v, int64_t w, double target) {
    for (int64_t k = w - 1; k >= 0; --k)
        if (v[k] == target) return k;
    return -1;
}

[[gnu::always_inline]] inline UpScan up_blocks(const double* __restrict G, const double* __restrict y,
                                               const uint8_t* __restrict up, int64_t lo, int64_t hi, UpScan r) {
    double v[kScanBlock];
    for (int64_t b0 = lo; b0 < hi; b0 += kScanBlock) {
        const int64_t w = std::min(kScanBlock, hi - b0);
        double bm = -kHuge;
        for (int64_t k = 0; k < w; ++k) {
            const int64_t t = b0 + k;
            v[k] = up[t] ? -y[t] * G[t] : -kHuge;
            bm = v[k] > bm ? v[k] : bm;
        }
        if (bm > -kHuge && bm >= r.m) {
            r.m = bm;
            r.i = b0 + last_equal(v, w, bm);
        }
    }
    return r;
}

}  // namespace

SK_MULTIVERSION
UpScan scan_update_gradient(double* __restrict G, const float* __restrict Qi, double dai, const float* __restrict Qj,
                            double daj, const double* __restrict y, const uint8_t* __restrict up, int64_t lo,
                            int64_t hi) {
    UpScan r{-kHuge, -1};
    for (int64_t b0 = lo; b0 < hi; b0 += kScanBlock) {  // update a block, then scan it while it is hot
        const int64_t b1 = std::min(hi, b0 + kScanBlock);
        for (int64_t t = b0; t < b1; ++t) G[t] += Qi[t] * dai + Qj[t] * daj;
        r = up_blocks(G, y, up, b0, b1, r);
    }
    return r;
}

SK_MULTIVERSION
UpScan scan_update_conjugate(double* __restrict G, double* __restrict q, const float* __restrict Qi, double ci,
                             const float* __restrict Qj, double cj, double gamma, double rho,
                             const double* __restrict y, const uint8_t* __restrict up, int64_t lo, int64_t hi) {
    UpScan r{-kHuge, -1};
    for (int64_t b0 = lo; b0 < hi; b0 += kScanBlock) {
        const int64_t b1 = std::min(hi, b0 + kScanBlock);
        if (gamma == 0.0) {
            for (int64_t t = b0; t < b1; ++t) {
                const double qt = Qi[t] * ci + Qj[t] * cj;
                q[t] = qt;
                G[t] += rho * qt;
            }
        } else {
            for (int64_t t = b0; t < b1; ++t) {
                const double qt = Qi[t] * ci + Qj[t] * cj + gamma * q[t];
                q[t] = qt;
                G[t] += rho * qt;
            }
        }
        r = up_blocks(G, y, up, b0, b1, r);
    }
    return r;
}

SK_MULTIVERSION
UpScan scan_up(const double* __restrict G, const double* __restrict y, const uint8_t* __restrict up, int64_t lo,
               int64_t hi) {
    return up_blocks(G, y, up, lo, hi, UpScan{-kHuge, -1});
}

SK_MULTIVERSION
LowScan scan_low_second_order(const double* __restrict G, const double* __restrict y, const uint8_t* __restrict low,
                              const double* __restrict QD, const float* __restrict Qi, double QDi, double yi, double m,
                              double tau, int64_t lo, int64_t hi) {
    LowScan r{kHuge, -1.0, -1};
    double v[kScanBlock];
    for (int64_t b0 = lo; b0 < hi; b0 += kScanBlock) {
        const int64_t w = std::min(kScanBlock, hi - b0);
        double bmax = -1.0, bM = kHuge;
        for (int64_t k = 0; k < w; ++k) {
            const int64_t t = b0 + k;
            const double f = -y[t] * G[t];
            const bool in = low[t] != 0;
            const double fl = in ? f : kHuge;
            bM = fl < bM ? fl : bM;
            const double b = m - f;
            double quad = QDi + QD[t] - 2.0 * yi * y[t] * double(Qi[t]);
            quad = quad > 0 ? quad : tau;
            const double gain = b * b / quad;
            v[k] = (in & (b > 0)) ? gain : -1.0;
            bmax = v[k] > bmax ? v[k] : bmax;
        }
        r.M = bM < r.M ? bM : r.M;
        if (bmax > 0 && bmax >= r.gain) {
            r.gain = bmax;
            r.j = b0 + last_equal(v, w, bmax);
        }
    }
    return r;
}

SK_MULTIVERSION
void scan_up_nu(double* __restrict G, const float* __restrict Qi, double dai, const float* __restrict Qj, double daj,
                const double* __restrict y, const uint8_t* __restrict up, int64_t lo, int64_t hi, UpScan r[2]) {
    r[0] = r[1] = UpScan{-kHuge, -1};
    double v0[kScanBlock], v1[kScanBlock];
    for (int64_t b0 = lo; b0 < hi; b0 += kScanBlock) {
        const int64_t w = std::min(kScanBlock, hi - b0);
        if (Qi)
            for (int64_t t = b0; t < b0 + w; ++t) G[t] += Qi[t] * dai + Qj[t] * daj;
        double bm0 = -kHuge, bm1 = -kHuge;
        for (int64_t k = 0; k < w; ++k) {
            const int64_t t = b0 + k;
            const double f = -y[t] * G[t];
            const bool u = up[t] != 0, pos = y[t] > 0;
            v0[k] = (u & pos) ? f : -kHuge;
            v1[k] = (u & !pos) ? f : -kHuge;
            bm0 = v0[k] > bm0 ? v0[k] : bm0;
            bm1 = v1[k] > bm1 ? v1[k] : bm1;
        }
        if (bm0 > -kHuge && bm0 >= r[0].m) r[0] = UpScan{bm0, b0 + last_equal(v0, w, bm0)};
        if (bm1 > -kHuge && bm1 >= r[1].m) r[1] = UpScan{bm1, b0 + last_equal(v1, w, bm1)};
    }
}

SK_MULTIVERSION
LowScan scan_low_first_order(const double* __restrict G, const double* __restrict y, const uint8_t* __restrict low,
                             int64_t lo, int64_t hi) {
    LowScan r{kHuge, -1.0, -1};
    double v[kScanBlock];
    for (int64_t b0 = lo; b0 < hi; b0 += kScanBlock) {
        const int64_t w = std::min(kScanBlock, hi - b0);
        double bM = kHuge;
        for (int64_t k = 0; k < w; ++k) {
            const int64_t t = b0 + k;
            v[k] = low[t] ? -y[t] * G[t] : kHuge;
            bM = v[k] < bM ? v[k] : bM;
        }
        if (bM < kHuge && bM <= r.M) {
            r.M = bM;
            r.j = b0 + last_equal(v, w, bM);
        }
    }
    return r;
}

}  // namespace sk
