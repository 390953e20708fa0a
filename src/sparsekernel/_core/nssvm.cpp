// Python binding of the NSSVM pass (nssvm.hpp): dispatch on the layout and dtypes of X without
// copying it (dense float32/float64; CSR with float32/float64 values and int32/int64 indices), or
// on given margins f (the kernel variant).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <stdexcept>

#include "nssvm.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using AnyArray = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;
using DArray = nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using I8Array = nb::ndarray<const int8_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using I64Array = nb::ndarray<const int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

template <class T>
bool is(const AnyArray& a) {
    return a.dtype() == nb::dtype<T>();
}

template <class T>
nb::ndarray<nb::numpy, T, nb::ndim<1>> vector_to_numpy(std::vector<T>&& v) {
    auto* out = new std::vector<T>(std::move(v));
    nb::capsule owner(out, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
    return nb::ndarray<nb::numpy, T, nb::ndim<1>>(out->data(), {out->size()}, owner);
}

// Calls fn(margin, cost_per_row) with the margin functor f_i of the data's layout and dtypes.
// kind: 0 dense X (data = X, m x n), 1 CSR X (data = values, with indptr and indices), 2 given
// margins (data = f, length m). w has n entries for kinds 0 and 1.
template <class Fn>
void with_margin(int kind, const AnyArray& data, nb::object indptr_obj, nb::object indices_obj, const DArray& w,
                 int64_t m, Fn&& fn) {
    if (kind == 0) {
        if (data.ndim() != 2 || int64_t(data.shape(0)) != m || int64_t(data.shape(1)) != int64_t(w.shape(0)))
            throw std::invalid_argument("nssvm: X must be m x n with n = len(w)");
        const int64_t n = int64_t(data.shape(1));
        auto dense = [&](auto* X) {
            using V = std::remove_const_t<std::remove_pointer_t<decltype(X)>>;
            if (n == 2)
                fn(sk::nssvm::DenseMargin<V, 2>{X, n, w.data()}, 2.0);
            else
                fn(sk::nssvm::DenseMargin<V>{X, n, w.data()}, double(n));
        };
        if (is<double>(data))
            dense(static_cast<const double*>(data.data()));
        else if (is<float>(data))
            dense(static_cast<const float*>(data.data()));
        else
            throw std::invalid_argument("nssvm: X must be float32 or float64");
    } else if (kind == 1) {
        auto indptr = nb::cast<nb::ndarray<const int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>>(indptr_obj);
        auto indices = nb::cast<AnyArray>(indices_obj);
        if (int64_t(indptr.shape(0)) != m + 1 || data.ndim() != 1 || indices.ndim() != 1 ||
            data.shape(0) != indices.shape(0))
            throw std::invalid_argument("nssvm: inconsistent CSR arrays");
        const double cost = m > 0 ? double(indptr.data()[m]) / double(m) : 0.0;
        auto with_indices = [&](auto* vals) {
            using V = std::remove_const_t<std::remove_pointer_t<decltype(vals)>>;
            if (is<int32_t>(indices))
                fn(sk::nssvm::CsrMargin<V, int32_t>{indptr.data(), static_cast<const int32_t*>(indices.data()), vals,
                                                    w.data()},
                   cost);
            else if (is<int64_t>(indices))
                fn(sk::nssvm::CsrMargin<V, int64_t>{indptr.data(), static_cast<const int64_t*>(indices.data()), vals,
                                                    w.data()},
                   cost);
            else
                throw std::invalid_argument("nssvm: CSR indices must be int32 or int64");
        };
        if (is<double>(data))
            with_indices(static_cast<const double*>(data.data()));
        else if (is<float>(data))
            with_indices(static_cast<const float*>(data.data()));
        else
            throw std::invalid_argument("nssvm: CSR values must be float32 or float64");
    } else if (kind == 2) {
        if (!is<double>(data) || data.ndim() != 1 || int64_t(data.shape(0)) != m)
            throw std::invalid_argument("nssvm: f must be float64 of length m");
        fn(sk::nssvm::GivenMargin{static_cast<const double*>(data.data())}, 1.0);
    } else {
        throw std::invalid_argument("nssvm: unknown kind");
    }
}

nb::dict nssvm_scan(int kind, AnyArray data, nb::object indptr_obj, nb::object indices_obj, DArray w, I8Array y,
                    I64Array support, DArray alpha_S, double b, double eta, double inv_C, double inv_c, int64_t k,
                    int nthreads) {
    const int64_t m = int64_t(y.shape(0)), nS = int64_t(support.shape(0));
    if (int64_t(alpha_S.shape(0)) != nS) throw std::invalid_argument("nssvm_scan: support and alpha_S differ in length");
    for (int64_t t = 0; t < nS; ++t)
        if (support.data()[t] < 0 || support.data()[t] >= m || (t > 0 && support.data()[t] <= support.data()[t - 1]))
            throw std::invalid_argument("nssvm_scan: support must be sorted, unique indices in [0, m)");
    sk::nssvm::Point z{y.data(), support.data(), alpha_S.data(), nS, b, eta, inv_C, inv_c};
    nthreads = std::max(1, nthreads);
    sk::nssvm::ScanResult res;
    with_margin(kind, data, indptr_obj, indices_obj, w, m, [&](const auto& margin, double cost) {
        nb::gil_scoped_release release;
        res = sk::nssvm::scan(z, margin, m, k, cost, nthreads);
    });
    std::vector<int64_t> idx(res.top.size());
    std::vector<double> g(res.top.size()), score(res.top.size());
    for (std::size_t t = 0; t < res.top.size(); ++t) {
        idx[t] = res.top[t].idx;
        g[t] = res.top[t].g;
        score[t] = res.top[t].score;
    }
    nb::dict d;
    d["T"] = vector_to_numpy(std::move(idx));
    d["g"] = vector_to_numpy(std::move(g));
    d["score"] = vector_to_numpy(std::move(score));
    d["correct"] = res.correct;
    return d;
}

// The samples with |f_i + b| <= r (their f_i and labels, in index order) and the number of
// samples classified correctly at b: what the intercept refit needs, without an m-long array.
nb::dict nssvm_window(int kind, AnyArray data, nb::object indptr_obj, nb::object indices_obj, DArray w, I8Array y,
                      double b, double r, int nthreads) {
    const int64_t m = int64_t(y.shape(0));
    sk::nssvm::WindowResult res;
    with_margin(kind, data, indptr_obj, indices_obj, w, m, [&](const auto& margin, double cost) {
        nb::gil_scoped_release release;
        res = sk::nssvm::margin_window(y.data(), margin, m, b, r, cost, std::max(1, nthreads));
    });
    nb::dict d;
    d["f"] = vector_to_numpy(std::move(res.f));
    d["y"] = vector_to_numpy(std::move(res.y));
    d["correct"] = res.correct;
    return d;
}

// The k best candidates of several scans (global indices, scores, gradients): merge_top.
nb::dict nssvm_merge_top(I64Array idx, DArray score, DArray g, int64_t k) {
    const std::size_t n = idx.shape(0);
    if (score.shape(0) != n || g.shape(0) != n) throw std::invalid_argument("nssvm_merge_top: arrays differ in length");
    if (k < 0) throw std::invalid_argument("nssvm_merge_top: k must be >= 0");
    std::vector<sk::nssvm::Candidate> top(n);
    for (std::size_t t = 0; t < n; ++t) top[t] = {score.data()[t], idx.data()[t], g.data()[t]};
    sk::nssvm::merge_top(top, k);
    std::vector<int64_t> out_idx(top.size());
    std::vector<double> out_g(top.size()), out_score(top.size());
    for (std::size_t t = 0; t < top.size(); ++t) {
        out_idx[t] = top[t].idx;
        out_g[t] = top[t].g;
        out_score[t] = top[t].score;
    }
    nb::dict d;
    d["T"] = vector_to_numpy(std::move(out_idx));
    d["g"] = vector_to_numpy(std::move(out_g));
    d["score"] = vector_to_numpy(std::move(out_score));
    return d;
}

// f = K[:, slots] coef for a column-major m x c block of kernel columns (kernel_margins).
nb::ndarray<nb::numpy, double, nb::ndim<1>> nssvm_kernel_margins(
    nb::ndarray<const double, nb::ndim<2>, nb::f_contig, nb::device::cpu> cols, I64Array slots, DArray coef,
    int nthreads) {
    const int64_t m = int64_t(cols.shape(0)), c = int64_t(cols.shape(1)), k = int64_t(slots.shape(0));
    if (int64_t(coef.shape(0)) != k) throw std::invalid_argument("nssvm_kernel_margins: slots and coef differ in length");
    for (int64_t t = 0; t < k; ++t)
        if (slots.data()[t] < 0 || slots.data()[t] >= c)
            throw std::invalid_argument("nssvm_kernel_margins: a slot is outside the block's columns");
    std::vector<double> f(std::size_t(std::max<int64_t>(m, 0)));
    {
        nb::gil_scoped_release release;
        sk::nssvm::kernel_margins(cols.data(), m, slots.data(), coef.data(), k, f.data(), std::max(1, nthreads));
    }
    return vector_to_numpy(std::move(f));
}

}  // namespace

void bind_nssvm(nb::module_& m) {
    m.def("nssvm_merge_top", &nssvm_merge_top, "idx"_a, "score"_a, "g"_a, "k"_a,
          "The k best of a union of scan candidates (larger score, ties to the smaller index), in index order.");
    m.def("nssvm_window", &nssvm_window, "kind"_a, "data"_a, "indptr"_a.none(), "indices"_a.none(), "w"_a, "y"_a,
          "b"_a, "r"_a, "nthreads"_a,
          "The samples with |f_i + b| <= r (f_i and y_i, in index order) and the count of correct signs at b.");
    m.def("nssvm_kernel_margins", &nssvm_kernel_margins, "cols"_a, "slots"_a, "coef"_a, "nthreads"_a,
          "f = cols[:, slots] @ coef for column-major kernel columns, each row summed in the order of slots (the same "
          "bits for any row block).");
    m.def("nssvm_scan", &nssvm_scan, "kind"_a, "data"_a, "indptr"_a.none(), "indices"_a.none(), "w"_a, "y"_a,
          "support"_a, "alpha_S"_a, "b"_a, "eta"_a, "inv_C"_a, "inv_c"_a, "k"_a, "nthreads"_a,
          "One O(m) pass of NSSVM at z = (alpha; b), alpha given on its sorted support: the k largest |alpha_i - eta g_i| (ties to the smaller "
          "index) with their gradients, and the number of correctly classified samples.");
}
