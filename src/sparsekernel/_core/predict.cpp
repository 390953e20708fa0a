#include "predict.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

#include "parallel.hpp"
#include "simd.hpp"

namespace sk {

namespace {

// four doubles: one AVX2 register in the x86-64-v3/v4 clones, two SSE2 registers in the default one
typedef double v4d __attribute__((vector_size(32)));

[[gnu::always_inline]] inline v4d load4(const double* p) {
    v4d v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

[[gnu::always_inline]] inline double hsum(v4d v) { return (v[0] + v[1]) + (v[2] + v[3]); }

constexpr int64_t kRowTile = 72;    // rows of X per tile (12 micro-kernels): read from memory once
constexpr int64_t kPanel = 8;       // points of B per packed panel: two four-lane registers
constexpr int64_t kPanelGroup = 16; // panels per pass over a row tile (128 points of B in L2)
constexpr int kMicroRows = 6;       // rows per micro-kernel: 12 accumulators + 2 panel loads + 1 broadcast

// B packed in panels of kPanel points, panel-major then feature-major: P[panel][t][q] = b_{8 panel + q, t},
// zero rows past m (their dot products are computed and ignored).
std::vector<double> pack_panels(const double* B, int64_t m, int64_t d) {
    const int64_t n_panels = (m + kPanel - 1) / kPanel;
    std::vector<double> P(n_panels * d * kPanel, 0.0);
    for (int64_t j = 0; j < m; ++j)
        for (int64_t t = 0; t < d; ++t) P[(j / kPanel) * d * kPanel + t * kPanel + j % kPanel] = B[j * d + t];
    return P;
}

// dots[r * ld + q] = x_r' b_q for R rows and the pw <= 8 points of one panel: the GEMM micro-kernel
// (one broadcast of x_rt against the panel's two registers per row and feature; no horizontal sums)
template <int R>
[[gnu::always_inline]] inline void panel_dots(const double* x, int64_t d, const double* panel, int64_t pw,
                                              double* dots, int64_t ld) {
    v4d acc[R][2] = {};
    for (int64_t t = 0; t < d; ++t) {
        const v4d b0 = load4(panel + t * kPanel), b1 = load4(panel + t * kPanel + 4);
        for (int r = 0; r < R; ++r) {
            const double s = x[r * d + t];
            const v4d xr = {s, s, s, s};
            acc[r][0] += xr * b0;
            acc[r][1] += xr * b1;
        }
    }
    for (int r = 0; r < R; ++r) {
        double v[kPanel];
        std::memcpy(v, &acc[r][0], sizeof(v4d));
        std::memcpy(v + 4, &acc[r][1], sizeof(v4d));
        for (int64_t q = 0; q < pw; ++q) dots[r * ld + q] = v[q];
    }
}

template <int R>
[[gnu::always_inline]] inline void rows_against_panels(const double* X, int64_t d, const double* P, int64_t p_begin, int64_t p_end, int64_t m,
                         double* K) {
    for (int64_t pn = p_begin; pn < p_end; ++pn)
        panel_dots<R>(X, d, P + pn * d * kPanel, std::min(kPanel, m - pn * kPanel), K + pn * kPanel, m);
}

// K[r * m + j] = x_r' b_j for the rows of a tile and every point of B (packed in panels)
SK_MULTIVERSION
void tile_dots(const double* X, int64_t rows, int64_t d, const double* P, int64_t m, double* K) {
    const int64_t n_panels = (m + kPanel - 1) / kPanel;
    for (int64_t g = 0; g < n_panels; g += kPanelGroup) {
        const int64_t g_end = std::min(n_panels, g + kPanelGroup);
        int64_t r = 0;
        for (; r + kMicroRows <= rows; r += kMicroRows)
            rows_against_panels<kMicroRows>(X + r * d, d, P, g, g_end, m, K + r * m);
        switch (rows - r) {  // the last rows of X
            case 5: rows_against_panels<5>(X + r * d, d, P, g, g_end, m, K + r * m); break;
            case 4: rows_against_panels<4>(X + r * d, d, P, g, g_end, m, K + r * m); break;
            case 3: rows_against_panels<3>(X + r * d, d, P, g, g_end, m, K + r * m); break;
            case 2: rows_against_panels<2>(X + r * d, d, P, g, g_end, m, K + r * m); break;
            case 1: rows_against_panels<1>(X + r * d, d, P, g, g_end, m, K + r * m); break;
            default: break;
        }
    }
}

SK_MULTIVERSION
void squared_norms(const double* X, int64_t rows, int64_t d, double* out) {
    for (int64_t r = 0; r < rows; ++r) {
        const double* x = X + r * d;
        v4d acc = {};
        int64_t t = 0;
        for (; t + 4 <= d; t += 4) {
            const v4d v = load4(x + t);
            acc += v * v;
        }
        double s = hsum(acc);
        for (; t < d; ++t) s += x[t] * x[t];
        out[r] = s;
    }
}

// dot products -> kernel values, in place, for one row (xn = ||x||^2, bn[j] = ||b_j||^2)
SK_MULTIVERSION
void transform_row(double* v, int64_t m, double xn, const double* bn, const KernelParams& p) {
    const double g = p.gamma, c0 = p.coef0;
    switch (p.type) {
        case KernelType::rbf:
            for (int64_t j = 0; j < m; ++j) v[j] = exp_nonpositive<13>(-g * std::max(0.0, xn + bn[j] - 2.0 * v[j]));
            return;
        case KernelType::poly:
            for (int64_t j = 0; j < m; ++j) v[j] = integer_power(g * v[j] + c0, p.degree);
            return;
        case KernelType::sigmoid:
            for (int64_t j = 0; j < m; ++j) v[j] = std::tanh(g * v[j] + c0);
            return;
        default: return;  // linear
    }
}

// out[c] = intercept[c] + coef[c]' v for the k problems
SK_MULTIVERSION
void weigh_row(const double* v, int64_t m, const double* coef, int64_t k, const double* intercept, double* out) {
    for (int64_t c = 0; c < k; ++c) {
        const double* w = coef + c * m;
        v4d acc = {};
        int64_t j = 0;
        for (; j + 4 <= m; j += 4) acc += load4(w + j) * load4(v + j);
        double s = hsum(acc);
        for (; j < m; ++j) s += w[j] * v[j];
        out[c] = intercept[c] + s;
    }
}

}  // namespace

bool expansion_decision(const double* X, int64_t n, int64_t d, const double* B, int64_t m, const double* coef,
                        int64_t k, const double* intercept, const KernelParams& p, double* out, int nthreads) {
    std::vector<double> bn(p.type == KernelType::rbf ? m : 0);
    if (!bn.empty()) squared_norms(B, m, d, bn.data());
    const std::vector<double> panels = pack_panels(B, m, d);
    const int64_t n_tiles = (n + kRowTile - 1) / kRowTile;
    // tiles in contiguous runs, a few per thread (each run allocates its buffers once); one run
    // where the work does not pay for threads (chunks_for: a small prediction)
    const int64_t by_work = chunks_for(n, double(d) * double(m + 1), nthreads);
    const int64_t n_runs = by_work <= 1 ? 1 : std::min<int64_t>(n_tiles, by_work * 2);
    std::atomic<bool> finite{true};
    for_chunks(n_runs, nthreads, [&](int64_t run) {
        std::vector<double> K(kRowTile * std::max<int64_t>(m, 1)), xn(kRowTile);
        const int64_t t_begin = n_tiles * run / n_runs, t_end = n_tiles * (run + 1) / n_runs;
        for (int64_t tile = t_begin; tile < t_end; ++tile) {
            const int64_t r0 = tile * kRowTile, rows = std::min(kRowTile, n - r0);
            const double* Xt = X + r0 * d;
            squared_norms(Xt, rows, d, xn.data());
            for (int64_t r = 0; r < rows; ++r)
                if (!std::isfinite(xn[r])) finite.store(false, std::memory_order_relaxed);
            tile_dots(Xt, rows, d, panels.data(), m, K.data());
            for (int64_t r = 0; r < rows; ++r) {
                transform_row(K.data() + r * m, m, xn[r], bn.data(), p);
                weigh_row(K.data() + r * m, m, coef, k, intercept, out + (r0 + r) * k);
            }
        }
    });
    return finite.load();
}

}  // namespace sk
