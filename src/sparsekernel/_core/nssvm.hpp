// The O(m) pass of NSSVM (Zhou, "Sparse SVM for sufficient data reduction"): everything Algorithm 1
// needs from the m samples at a new point z = (alpha; b), in one read of the data.
//
// For every sample i, with f_i = <w, x_i> (linear; w = Q alpha) or f_i = sum_j alpha_j y_j K(x_i, x_j)
// (kernel columns given as f):
//   g_i     = y_i (f_i + b) - 1 + E_ii(alpha) alpha_i          the gradient (21), E of (12)
//   score_i = |alpha_i - eta g_i|                              the hard-thresholding argument (41)
//   correct = [sgn(f_i + b) = y_i], sgn(0) = -1                 ACC of (68) (with X w, DESIGN.md)
// and T = the k largest scores, ties to the smaller index (a strict order: the same T whatever the
// thread count), found by per-chunk bounded heaps (O(m) comparisons against the heap's worst, no sort
// of m values) merged at the end.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "parallel.hpp"

namespace sk::nssvm {

struct Point {
    const int8_t* y = nullptr;        // labels +1 / -1, m
    const int64_t* support = nullptr;  // S = supp(alpha), sorted (at most s entries: alpha is never
    const double* alpha_S = nullptr;   // stored as an m-vector), and alpha on S
    int64_t n_support = 0;
    double b = 0.0;
    double eta = 0.0;
    double inv_C = 0.0;  // E_ii for alpha_i >= 0
    double inv_c = 0.0;  // E_ii for alpha_i < 0
};

struct Candidate {
    double score;
    int64_t idx;
    double g;
};

// a ranks before b: larger score, then smaller index
inline bool ranks_before(const Candidate& a, const Candidate& b) {
    return a.score > b.score || (a.score == b.score && a.idx < b.idx);
}

// The k best of a union of candidate sets (the top-k of each chunk, or of each row block of a
// distributed fit: the k best overall are among them), in index order. The one place the top-s rule
// is applied, so chunked, blocked and distributed passes select the same T.
inline void merge_top(std::vector<Candidate>& top, int64_t k) {
    if (int64_t(top.size()) > k) {
        std::nth_element(top.begin(), top.begin() + k, top.end(), ranks_before);
        top.resize(std::size_t(k));
    }
    std::sort(top.begin(), top.end(), [](const Candidate& a, const Candidate& b) { return a.idx < b.idx; });
}

struct ScanResult {
    std::vector<Candidate> top;  // the k best, in index order
    int64_t correct = 0;
};

// The k best candidates of samples [begin, end) into `heap` (a heap whose front is its worst), in
// blocks: first g, the score and ACC's count for a block in a branch-free loop (vectorised), with
// alpha = 0; then the support entries of the block corrected; then only scores that reach the
// heap's worst are compared in full (rarely, once the heap is full).
template <class Margin>
int64_t scan_range(const Point& z, const Margin& margin, int64_t begin, int64_t end, int64_t k,
                   std::vector<Candidate>& heap) {
    constexpr int64_t kBlock = 1024;
    double f[kBlock], g[kBlock], score[kBlock];
    int64_t correct = 0;
    heap.clear();
    heap.reserve(std::size_t(std::min<int64_t>(k, end - begin)));
    int64_t p = std::lower_bound(z.support, z.support + z.n_support, begin) - z.support;  // next support index
    for (int64_t b0 = begin; b0 < end; b0 += kBlock) {
        const int64_t nb = std::min(kBlock, end - b0);
        for (int64_t t = 0; t < nb; ++t) f[t] = margin(b0 + t) + z.b;
        for (int64_t t = 0; t < nb; ++t) {
            const double yi = double(z.y[b0 + t]);
            g[t] = yi * f[t] - 1.0;  // (21) with alpha_i = 0
            score[t] = std::fabs(z.eta * g[t]);
            correct += ((f[t] > 0.0 ? 1.0 : -1.0) == yi);
        }
        for (; p < z.n_support && z.support[p] < b0 + nb; ++p) {  // alpha_i != 0: E_ii alpha_i enters g
            const int64_t t = z.support[p] - b0;
            const double a = z.alpha_S[p];
            g[t] += a * (a >= 0.0 ? z.inv_C : z.inv_c);
            score[t] = std::fabs(a - z.eta * g[t]);
        }
        if (k == 0) continue;
        for (int64_t t = 0; t < nb; ++t) {
            if (int64_t(heap.size()) == k && score[t] < heap.front().score) continue;  // cannot rank before
            const Candidate c{score[t], b0 + t, g[t]};
            if (int64_t(heap.size()) < k) {
                heap.push_back(c);
                std::push_heap(heap.begin(), heap.end(), ranks_before);
            } else if (ranks_before(c, heap.front())) {
                std::pop_heap(heap.begin(), heap.end(), ranks_before);
                heap.back() = c;
                std::push_heap(heap.begin(), heap.end(), ranks_before);
            }
        }
    }
    return correct;
}

// One pass over the m samples: ACC's count and the top-k set T (k <= m).
template <class Margin>
ScanResult scan(const Point& z, const Margin& margin, int64_t m, int64_t k, double cost_per_row, int nthreads) {
    k = std::max<int64_t>(0, std::min(k, m));
    const int64_t n_chunks = chunks_for(m, cost_per_row + 4.0, nthreads);
    std::vector<std::vector<Candidate>> heaps(static_cast<std::size_t>(n_chunks));
    std::vector<int64_t> correct(static_cast<std::size_t>(n_chunks), 0);
    for_chunks(n_chunks, nthreads, [&](int64_t c) {
        const int64_t begin = m * c / n_chunks, end = m * (c + 1) / n_chunks;
        correct[c] = scan_range(z, margin, begin, end, k, heaps[c]);
    });
    ScanResult out;
    for (int64_t c = 0; c < n_chunks; ++c) {
        out.correct += correct[c];
        out.top.insert(out.top.end(), heaps[c].begin(), heaps[c].end());
    }
    merge_top(out.top, k);
    return out;
}

struct WindowResult {
    std::vector<double> f;  // f_i of the samples with |f_i + b| <= r, in index order
    std::vector<int8_t> y;
    int64_t correct = 0;    // samples with sgn(f_i + b) = y_i, all m
};

// One pass: the samples near the boundary, for the intercept refit (nssvm.py).
template <class Margin>
WindowResult margin_window(const int8_t* y, const Margin& margin, int64_t m, double b, double r,
                           double cost_per_row, int nthreads) {
    const int64_t n_chunks = chunks_for(m, cost_per_row + 2.0, nthreads);
    std::vector<WindowResult> part(static_cast<std::size_t>(n_chunks));
    for_chunks(n_chunks, nthreads, [&](int64_t c) {
        WindowResult& out = part[c];
        for (int64_t i = m * c / n_chunks, end = m * (c + 1) / n_chunks; i < end; ++i) {
            const double f = margin(i), t = f + b;
            out.correct += ((t > 0.0 ? 1 : -1) == y[i]);
            if (std::fabs(t) <= r) {
                out.f.push_back(f);
                out.y.push_back(y[i]);
            }
        }
    });
    WindowResult all;
    for (auto& p : part) {
        all.correct += p.correct;
        all.f.insert(all.f.end(), p.f.begin(), p.f.end());
        all.y.insert(all.y.end(), p.y.begin(), p.y.end());
    }
    return all;
}

// f_i = <w, x_i> for dense row-major X; N > 0 fixes the number of features at compile time (the
// few-feature data NSSVM scales to: the loop then has no inner branch), N = 0 reads it from n
template <class V, int N = 0>
struct DenseMargin {
    const V* X;
    int64_t n;
    const double* w;
    double operator()(int64_t i) const {
        const int64_t d = N > 0 ? N : n;
        const V* row = X + i * d;
        double s = 0.0;
        for (int64_t j = 0; j < d; ++j) s += double(row[j]) * w[j];
        return s;
    }
};

// f_i = <w, x_i> for CSR X
template <class V, class I>
struct CsrMargin {
    const int64_t* indptr;
    const I* indices;
    const V* values;
    const double* w;
    double operator()(int64_t i) const {
        double s = 0.0;
        for (int64_t p = indptr[i]; p < indptr[i + 1]; ++p) s += double(values[p]) * w[indices[p]];
        return s;
    }
};

// f_i given (kernel expansions computed elsewhere)
struct GivenMargin {
    const double* f;
    double operator()(int64_t i) const { return f[i]; }
};

// The margins of the kernel variant from resident kernel columns: f_i = sum_t coef_t K_{i, slot_t}
// for the m rows of a column-major block (column j at cols + j * m). Every row adds its terms in
// the order of the support, whatever rows a block holds and however the rows are shared among
// threads (no multiply-add contraction either): a row block on a Dask worker computes the bits of
// the in-memory fit.
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
inline void kernel_margins(const double* cols, int64_t m, const int64_t* slots, const double* coef, int64_t k,
                           double* f, int nthreads) {
    constexpr int64_t kRows = 4096;  // f's chunk stays in L1 while the k columns stream past
    const int64_t n_rows = (m + kRows - 1) / kRows;
    const int64_t n_chunks = chunks_for(n_rows, double(kRows) * double(k), nthreads);
    for_chunks(n_chunks, nthreads, [&](int64_t c) {
        const int64_t lo = std::min(m, kRows * (n_rows * c / n_chunks));
        const int64_t hi = std::min(m, kRows * (n_rows * (c + 1) / n_chunks));
        for (int64_t i = lo; i < hi; ++i) f[i] = 0.0;
        for (int64_t t = 0; t < k; ++t) {
            const double a = coef[t];
            const double* col = cols + slots[t] * m;
            for (int64_t i = lo; i < hi; ++i) f[i] += a * col[i];
        }
    });
}
#pragma GCC pop_options

}  // namespace sk::nssvm
