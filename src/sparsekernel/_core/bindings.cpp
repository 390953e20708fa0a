// Python bindings (nanobind). Validation happens in Python; these functions trust their inputs'
// dtypes and shapes, which the Python layer guarantees (see _base.py).
#include <omp.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <Python.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <vector>
#include <algorithm>

#include "kernels.hpp"
#include "matrix.hpp"
#include "predict.hpp"
#include "smo/qmatrix.hpp"
#include "linear_dual_cd.hpp"
#include "smo/solver.hpp"
#include "smo/terms.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using DArray = nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using DMatrix = nb::ndarray<const double, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using I64Array = nb::ndarray<const int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using I32Array = nb::ndarray<const int32_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

// Set from Python (any thread) to stop the solves that were given this token.
struct CancelToken {
    std::atomic<bool> flag{false};
};

// A Matrix that keeps its numpy arrays alive.
struct PyMatrix {
    sk::Matrix m;
    nb::object keep_alive[3];
};

PyMatrix* make_dense(DMatrix X) {
    auto* pm = new PyMatrix();
    pm->m.n = int64_t(X.shape(0));
    pm->m.d = int64_t(X.shape(1));
    pm->m.dense = X.data();
    pm->keep_alive[0] = nb::cast(X);
    pm->m.compute_norms();
    return pm;
}

PyMatrix* make_csr(I64Array indptr, I32Array indices, DArray values, int64_t n_cols) {
    auto* pm = new PyMatrix();
    pm->m.sparse = true;
    pm->m.n = int64_t(indptr.shape(0)) - 1;
    pm->m.d = n_cols;
    pm->m.indptr = indptr.data();
    pm->m.indices = indices.data();
    pm->m.values = values.data();
    pm->keep_alive[0] = nb::cast(indptr);
    pm->keep_alive[1] = nb::cast(indices);
    pm->keep_alive[2] = nb::cast(values);
    pm->m.compute_norms();
    return pm;
}

sk::KernelParams make_params(int kernel, double gamma, double coef0, int degree) {
    if (kernel < 0 || kernel > 5) throw std::invalid_argument("unknown kernel code");
    sk::KernelParams p;
    p.type = static_cast<sk::KernelType>(kernel);
    p.gamma = gamma;
    p.coef0 = coef0;
    p.degree = degree;
    return p;
}

// K(A, B) as a dense float64 matrix (prediction, tests). The kernel's blocks take a few rows as
// register tiles against many columns spread over the threads, so the side with fewer rows is made
// the rows: prediction (many test points A, few expansion vectors B) computes K(B, A) in column
// chunks and writes it transposed (every kernel but 'precomputed' is symmetric in its arguments;
// the sparse laplacian's values are symmetric only to rounding, so it keeps the order asked for:
// a value never depends on the shapes it was computed with).
nb::ndarray<nb::numpy, double, nb::ndim<2>> kernel_matrix(const PyMatrix& A, const PyMatrix& B, int kernel,
                                                           double gamma, double coef0, int degree, int nthreads) {
    nthreads = std::max(1, nthreads);  // resolved from n_jobs in Python (_base.n_threads)
    const auto params = make_params(kernel, gamma, coef0, degree);
    const int64_t na = A.m.n, nbr = B.m.n;
    auto* out = new double[std::max<int64_t>(1, na * nbr)];
    nb::capsule owner(out, [](void* p) noexcept { delete[] static_cast<double*>(p); });
    {
        nb::gil_scoped_release release;
        constexpr int64_t kRows = 256;
        std::vector<int32_t> rows(kRows);
        std::vector<double*> outs(kRows);
        const bool exact_symmetry = !(params.type == sk::KernelType::laplacian && (A.m.sparse || B.m.sparse));
        if (params.type != sk::KernelType::precomputed && exact_symmetry && nbr < na) {
            sk::Kernel K(B.m, A.m, params);
            constexpr int64_t kCols = 4096;  // columns of K(B, A) per transposed chunk
            std::vector<int32_t> cols(kCols);
            std::vector<double> tmp(kRows * kCols);
            for (int64_t c0 = 0; c0 < na; c0 += kCols) {
                const int64_t w = std::min(kCols, na - c0);
                for (int64_t t = 0; t < w; ++t) cols[t] = int32_t(c0 + t);
                for (int64_t r0 = 0; r0 < nbr; r0 += kRows) {
                    const int64_t q = std::min(kRows, nbr - r0);
                    for (int64_t r = 0; r < q; ++r) {
                        rows[r] = int32_t(r0 + r);
                        outs[r] = tmp.data() + r * w;
                    }
                    K.block<double>(rows.data(), q, cols.data(), w, outs.data(), nthreads);
                    for (int64_t t = 0; t < w; ++t)
                        for (int64_t r = 0; r < q; ++r) out[(c0 + t) * nbr + r0 + r] = tmp[r * w + t];
                }
            }
        } else {
            sk::Kernel K(A.m, B.m, params);
            for (int64_t r0 = 0; r0 < na; r0 += kRows) {
                const int64_t q = std::min(kRows, na - r0);
                for (int64_t r = 0; r < q; ++r) {
                    rows[r] = int32_t(r0 + r);
                    outs[r] = out + (r0 + r) * nbr;
                }
                K.block<double>(rows.data(), q, nullptr, nbr, outs.data(), nthreads);
            }
        }
    }
    return nb::ndarray<nb::numpy, double, nb::ndim<2>>(out, {size_t(na), size_t(nbr)}, owner);
}

// (out, error): out[t] = sum_r w[r] K(x_{rows[r]}, x_{cols[t]}) over the rows of X, a kernel-vector
// product without the block (DC-SVM's start-up gradients between clusters). In float32 (the fused
// products) where their error bound (Kernel::weighted_sum) stays within max_error for every t, else
// in double; error is the largest bound of the sums returned (0 in double).
nb::tuple kernel_weighted_sum(const PyMatrix& X, int kernel, double gamma, double coef0, int degree, I32Array rows,
                              DArray w, I32Array cols, double max_error, int nthreads) {
    const auto params = make_params(kernel, gamma, coef0, degree);
    const int64_t q = int64_t(rows.shape(0)), m = int64_t(cols.shape(0));
    if (int64_t(w.shape(0)) != q) throw std::invalid_argument("kernel_weighted_sum: rows and w differ in length");
    for (int64_t r = 0; r < q; ++r)
        if (rows.data()[r] < 0 || rows.data()[r] >= X.m.n) throw std::invalid_argument("kernel_weighted_sum: bad row");
    for (int64_t t = 0; t < m; ++t)
        if (cols.data()[t] < 0 || cols.data()[t] >= X.m.n) throw std::invalid_argument("kernel_weighted_sum: bad col");
    auto* out = new double[std::max<int64_t>(1, m)]();
    nb::capsule owner(out, [](void* p) noexcept { delete[] static_cast<double*>(p); });
    double worst = 0.0;
    {
        nb::gil_scoped_release release;
        sk::Kernel K(X.m, X.m, params);
        nthreads = std::max(1, nthreads);
        if (max_error > 0 && K.single_sums()) {
            std::vector<double> err(m, 0.0);
            K.weighted_sum(rows.data(), w.data(), q, cols.data(), m, out, nthreads, err.data());
            for (double e : err) worst = std::max(worst, e);
            if (worst > max_error) {  // again in double
                std::fill(out, out + m, 0.0);
                worst = 0.0;
                K.weighted_sum(rows.data(), w.data(), q, cols.data(), m, out, nthreads);
            }
        } else {
            K.weighted_sum(rows.data(), w.data(), q, cols.data(), m, out, nthreads);
        }
    }
    return nb::make_tuple(nb::ndarray<nb::numpy, double, nb::ndim<1>>(out, {size_t(m)}, owner), worst);
}

// K(a_r, b) for the rows a_r of A against every row b of B, written as column slots[r] of the
// column-major block `out` (rows of B x capacity): NSSVM's resident kernel columns computed in
// place (no temporary of |A| x |B| values to allocate, fault in and copy). Values as kernel_matrix's.
void kernel_columns(const PyMatrix& A, const PyMatrix& B, int kernel, double gamma, double coef0, int degree,
                    nb::ndarray<double, nb::ndim<2>, nb::f_contig, nb::device::cpu> out,
                    nb::ndarray<const int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu> slots, int nthreads) {
    const auto params = make_params(kernel, gamma, coef0, degree);
    if (params.type == sk::KernelType::precomputed) throw std::invalid_argument("kernel_columns: not for 'precomputed'");
    const int64_t na = A.m.n, nbr = B.m.n, cap = int64_t(out.shape(1));
    if (int64_t(out.shape(0)) != nbr) throw std::invalid_argument("kernel_columns: out must have a row per row of B");
    if (int64_t(slots.shape(0)) != na) throw std::invalid_argument("kernel_columns: one slot per row of A");
    for (int64_t r = 0; r < na; ++r)
        if (slots.data()[r] < 0 || slots.data()[r] >= cap)
            throw std::invalid_argument("kernel_columns: a slot is outside out's columns");
    nthreads = std::max(1, nthreads);
    double* base = out.data();
    {
        nb::gil_scoped_release release;
        constexpr int64_t kRows = 256;
        std::vector<int32_t> rows(kRows);
        std::vector<double*> outs(kRows);
        sk::Kernel K(A.m, B.m, params);
        for (int64_t r0 = 0; r0 < na; r0 += kRows) {
            const int64_t q = std::min(kRows, na - r0);
            for (int64_t r = 0; r < q; ++r) {
                rows[r] = int32_t(r0 + r);
                outs[r] = base + slots.data()[r0 + r] * nbr;
            }
            K.block<double>(rows.data(), q, nullptr, nbr, outs.data(), nthreads);
        }
    }
}

template <class T>
nb::ndarray<nb::numpy, T, nb::ndim<1>> to_numpy(const std::vector<T>& v) {
    auto* out = new T[std::max<size_t>(1, v.size())];
    std::copy(v.begin(), v.end(), out);
    nb::capsule owner(out, [](void* p) noexcept { delete[] static_cast<T*>(p); });
    return nb::ndarray<nb::numpy, T, nb::ndim<1>>(out, {v.size()}, owner);
}

// A Q-provider kept alive across solves on the same data, kernel and labels (a warm-started path
// over C or epsilon): its row cache, and the order shrinking left it in, carry over.
struct Session {
    nb::object X_owner;
    nb::object shared_owner;  // the SharedRows the provider reads from, or None
    int problem = 0;  // 0: one variable per point (KernelQ); 1: eps-SVR, two per point (SvrQ)
    int64_t l = 0;
    std::vector<double> y;
    std::unique_ptr<sk::KernelQ> kq;
    std::unique_ptr<sk::SvrQ> sq;
};

// A grid search's kernel rows over its whole training set (shared_rows.hpp), one per kernel setting.
struct PySharedRows {
    nb::object X_owner;
    std::unique_ptr<sk::SharedRows> rows;
};

Session* make_session(nb::object X_obj, const sk::KernelParams& params, DArray y, int problem, double cache_mb,
                      int nthreads, nb::object shared_obj, nb::object global_obj) {
    const PyMatrix& X = nb::cast<const PyMatrix&>(X_obj);
    auto s = std::make_unique<Session>();  // freed (with its references) if a check below throws
    s->X_owner = X_obj;
    sk::SharedRows* shared = nullptr;
    std::vector<int32_t> global;
    if (!shared_obj.is_none()) {
        // point t of this problem is row global[t] of the shared set (the search's whole training set)
        shared = nb::cast<PySharedRows&>(shared_obj).rows.get();
        I32Array g = nb::cast<I32Array>(global_obj);
        if (int64_t(g.shape(0)) != X.m.n) throw std::invalid_argument("session: global needs one index per point");
        global.assign(g.data(), g.data() + X.m.n);
        for (int32_t v : global)
            if (v < 0 || v >= shared->n()) throw std::invalid_argument("session: global index out of range");
        s->shared_owner = shared_obj;
    }
    s->problem = problem;
    s->l = int64_t(y.shape(0));
    s->y.assign(y.data(), y.data() + s->l);
    const std::size_t bytes = std::size_t(cache_mb * 1024.0 * 1024.0);
    nthreads = std::max(1, nthreads);
    if (problem == 1) {
        if (2 * X.m.n != s->l) throw std::invalid_argument("session: eps-SVR needs 2 n labels");
        s->sq = std::make_unique<sk::SvrQ>(X.m, params, X.m.n, bytes, nthreads, shared, global.data());
    } else {
        if (X.m.n != s->l) throw std::invalid_argument("session: inconsistent lengths");
        s->kq = shared ? std::make_unique<sk::KernelQ>(X.m, params, y.data(), s->l, bytes, nthreads, shared,
                                                       global.data())
                       : std::make_unique<sk::KernelQ>(X.m, params, y.data(), s->l, bytes, nthreads);
    }
    return s.release();
}

// The time limit and the progress report of a solve, polled by the engine with the GIL held: the
// report (a Python callable progress(iter, gap, active_size) -> stop) at most every kInterval
// seconds, so that it costs nothing measurable; an exception it raises stops the solve and is
// re-raised after it.
// bumped by a solve that sees Ctrl-C; every running solve compares it with its value at the start
std::atomic<uint64_t> g_sigint_epoch{0};
// stop_all_solves(): while set, every solve stops at its next poll (and one starting stops at once)
std::atomic<bool> g_stop_all{false};
std::atomic<int64_t> g_active_solves{0};  // solves running now, in any thread

struct ActiveSolve {
    ActiveSolve() { g_active_solves.fetch_add(1); }
    ~ActiveSolve() { g_active_solves.fetch_sub(1); }
};

// Ctrl-C or a cancel, polled by a solve with the GIL released: signals reach the main thread only,
// so a solve that sees one bumps the process-wide epoch and every solve running in other threads (a
// search's parallel fits) stops too, instead of running on after the main thread has given up (and,
// at interpreter exit, being torn down inside C++)
struct StopRequest {
    explicit StopRequest(CancelToken* cancel) : cancel(cancel), epoch(g_sigint_epoch.load()) {}
    bool operator()() {
        if ((cancel && cancel->flag.load()) || g_sigint_epoch.load() != epoch || g_stop_all.load()) interrupted = true;
        if (interrupted) return true;
        nb::gil_scoped_acquire acquire;
        if (PyErr_CheckSignals() != 0) {
            PyErr_Clear();
            g_sigint_epoch.fetch_add(1);
            interrupted = true;
        }
        return interrupted;
    }
    CancelToken* cancel;
    uint64_t epoch;
    bool interrupted = false;
};

class ProgressPoll {
public:
    static constexpr double kInterval = 0.1;

    ProgressPoll(double time_limit, nb::object progress)
        : start_(std::chrono::steady_clock::now()), time_limit_(time_limit), progress_(std::move(progress)) {}

    int operator()(int64_t iter, double gap, int64_t active_size) {
        const double t = elapsed();
        if (!progress_.is_none() && t - last_report_ >= kInterval) {
            last_report_ = t;
            try {
                if (nb::cast<bool>(progress_(iter, gap, active_size))) return sk::kPollInterrupt;
            } catch (nb::python_error& e) {
                error_ = std::make_unique<nb::python_error>(std::move(e));
                return sk::kPollInterrupt;
            }
        }
        return time_limit_ > 0 && t >= time_limit_ ? sk::kPollTimeLimit : sk::kPollContinue;
    }

    void rethrow() {
        if (error_) throw std::move(*error_);
    }

private:
    double elapsed() const {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    }
    std::chrono::steady_clock::time_point start_;
    double time_limit_;  // seconds; <= 0: none
    double last_report_ = -1.0;
    nb::object progress_;
    std::unique_ptr<nb::python_error> error_;
};

// The options of one solve (the Python side's SolverOptions, _engine.py).
struct SolveOptions {
    double tol = 1e-3;
    int64_t max_iter = -1;
    bool shrinking = true;
    bool second_order = true;
    bool batched = false;
    bool pair_start = false;  // the batched route's pair start (solver.hpp's SolverOptions)
    int64_t q = 0;  // the batched route's working-set size (0: chosen from N, the threads and the cache)
    double cache_mb = 200.0;
    int nthreads = 1;  // resolved from n_jobs in Python
    bool conjugate = false;
    bool nu = false;  // y'a = 0 and e'a fixed: pairs within one label class (the nu formulations)
    bool trace = false;
    double time_limit = 0.0;  // seconds (0: none)
    double g0_error = 0.0;  // a bound on the error of g0 (and gbar0): float32 sums (SolverOptions)
};

// The linear SVM with a free bias on explicit features Phi (N x d) by dual coordinate descent
// (linear_dual_cd.hpp): SLMC's inner problem. a0 (N) is the start, b0 the bias to start from.
nb::dict linear_dual_cd(DMatrix Phi, DArray y, DArray upper, DArray a0, double b0, double tol, double rho,
                        int64_t max_epochs, CancelToken* cancel, double gap_tol) {
    const int64_t N = int64_t(Phi.shape(0)), d = int64_t(Phi.shape(1));
    if (int64_t(y.shape(0)) != N || int64_t(upper.shape(0)) != N || int64_t(a0.shape(0)) != N)
        throw std::invalid_argument("linear_dual_cd: inconsistent lengths");
    std::vector<double> a(a0.data(), a0.data() + N);
    StopRequest stop_requested(cancel);
    sk::LinearDualResult res;
    {
        ActiveSolve active;
        nb::gil_scoped_release release;
        res = sk::solve_linear_dual_cd(Phi.data(), N, d, y.data(), upper.data(), a.data(), b0, tol, rho, max_epochs,
                                       [&stop_requested] { return stop_requested(); }, gap_tol);
    }
    if (stop_requested.interrupted) {
        PyErr_SetNone(PyExc_KeyboardInterrupt);
        throw nb::python_error();
    }
    nb::dict out;
    out["alpha"] = to_numpy(a);
    out["b"] = res.b;
    out["gap"] = res.gap;
    out["feasibility"] = res.feasibility;
    out["epochs"] = res.epochs;
    out["rounds"] = res.rounds;
    out["status"] = res.status;
    out["duality_gap"] = res.duality_gap;
    out["stopped_on_gap"] = res.stopped_on_gap;
    return out;
}

// Solve the generic dual  min 1/2 a'Qa + sum_i psi_i(a_i), y'a = 0, lo <= a <= hi  (solver.hpp) with
// psi_i(a) = p_i a (term 0: SVC, SVR) or C_i G(a / C_i) + p_i a (term 1: KLR / S-KLR with p = -lam).
// problem 1 is eps-SVR: y, p, lo, hi (and a0, g0) have 2n entries for the n rows of X. A session, when
// given, supplies the Q-provider (X and the kernel arguments are then those of the session).
nb::dict solve(const PyMatrix& X, const sk::KernelParams& kernel, const SolveOptions& options, int term, int problem,
               DArray y, DArray p, nb::object C, DArray lo, DArray hi, nb::object a0, nb::object g0, nb::object gbar0,
               Session* session, CancelToken* cancel, nb::object progress) {
    const double tol = options.tol, cache_mb = options.cache_mb, time_limit = options.time_limit;
    const bool trace = options.trace, conjugate = options.conjugate;
    const int64_t l = int64_t(y.shape(0));
    if (problem != 0 && problem != 1) throw std::invalid_argument("solve: unknown problem code");
    const int64_t n_points = problem == 1 ? l / 2 : l;
    if (int64_t(p.shape(0)) != l || int64_t(lo.shape(0)) != l || int64_t(hi.shape(0)) != l || X.m.n != n_points ||
        (problem == 1 && l % 2 != 0))
        throw std::invalid_argument("solve: inconsistent lengths");
    if (term != 0 && term != 1) throw std::invalid_argument("solve: unknown term code");
    if (term == 1 && (conjugate || problem == 1 || options.nu))
        throw std::invalid_argument("solve: conjugate directions, eps-SVR and nu need the linear term");
    if (options.nu && conjugate) throw std::invalid_argument("solve: no conjugate directions for nu problems");
    if (session) {
        if (session->problem != problem || session->l != l || !std::equal(session->y.begin(), session->y.end(), y.data()))
            throw std::invalid_argument("solve: the session was made for another problem or other labels");
    }
    auto take = [l](nb::object o, const char* what) {
        std::vector<double> v;
        if (o.is_none()) return v;
        DArray arr = nb::cast<DArray>(o);
        if (int64_t(arr.shape(0)) != l) throw std::invalid_argument(std::string("solve: wrong length of ") + what);
        v.assign(arr.data(), arr.data() + l);
        return v;
    };
    std::vector<double> alpha0 = take(a0, "a0"), scale = take(C, "C"), grad0 = take(g0, "g0"),
                        gradbar0 = take(gbar0, "gbar0");
    if (alpha0.empty()) alpha0.assign(l, 0.0);
    if (term == 1 && scale.empty()) throw std::invalid_argument("solve: the entropic term needs C");
    sk::SolverOptions opt;
    opt.tol = tol;
    opt.max_iter = options.max_iter;
    opt.shrinking = options.shrinking && !trace;  // the trace's objective needs every gradient current
    opt.second_order = options.second_order;
    opt.batched = options.batched && !trace;
    opt.pair_start = options.pair_start;
    opt.conjugate = conjugate;
    opt.nu = options.nu;
    opt.q = options.q;
    opt.nthreads = std::max(1, options.nthreads);
    opt.g0_error = std::max(0.0, options.g0_error);
    std::vector<double> trace_values;
    if (trace) opt.trace = &trace_values;
    ProgressPoll poll(time_limit, progress);
    StopRequest stop_requested(cancel);
    const bool& interrupted = stop_requested.interrupted;
    opt.poll = [&stop_requested, &poll](const sk::SolverProgress& pr) {
        if (stop_requested()) return int(sk::kPollInterrupt);
        nb::gil_scoped_acquire acquire;
        return poll(pr.iter, pr.gap, pr.active_size);
    };
    opt.interrupted = [&stop_requested] { return stop_requested(); };
    sk::SolverResult res;
    int64_t kernel_evals = 0, hits = 0, misses = 0, peak = 0;
    {
        ActiveSolve active;
        nb::gil_scoped_release release;
        const double* Cp = scale.empty() ? nullptr : scale.data();
        const double* Gp = grad0.empty() ? nullptr : grad0.data();
        const double* Gbp = gradbar0.empty() ? nullptr : gradbar0.data();
        auto run = [&](auto& Q) {
            using QM = std::decay_t<decltype(Q)>;
            const int64_t evals0 = Q.evals(), hits0 = Q.cache().hits, misses0 = Q.cache().misses;
            if (term == 0 && opt.nu) {  // the nu formulations: their own instantiation (solver.hpp's kNu)
                sk::Solver<QM, sk::LinearTerm, true> solver(Q, sk::LinearTerm{}, l, y.data(), p.data(), Cp,
                                                            lo.data(), hi.data(), alpha0.data(), opt, Gp, Gbp);
                res = solver.solve();
            } else if (term == 0) {
                sk::Solver<QM, sk::LinearTerm> solver(Q, sk::LinearTerm{}, l, y.data(), p.data(), Cp, lo.data(),
                                                      hi.data(), alpha0.data(), opt, Gp, Gbp);
                res = solver.solve();
            } else {
                if constexpr (std::is_same_v<QM, sk::KernelQ>) {
                    sk::Solver<QM, sk::EntropicTerm> solver(Q, sk::EntropicTerm{}, l, y.data(), p.data(), Cp,
                                                            lo.data(), hi.data(), alpha0.data(), opt, Gp, Gbp);
                    res = solver.solve();
                }
            }
            kernel_evals = Q.evals() - evals0;
            hits = Q.cache().hits - hits0;
            misses = Q.cache().misses - misses0;
            peak = int64_t(Q.cache().peak_bytes());
        };
        const std::size_t bytes = std::size_t(cache_mb * 1024.0 * 1024.0);
        if (session && session->sq) {
            run(*session->sq);
        } else if (session) {
            run(*session->kq);
        } else if (problem == 1) {
            sk::SvrQ Q(X.m, kernel, n_points, bytes, opt.nthreads);
            run(Q);
        } else {
            sk::KernelQ Q(X.m, kernel, y.data(), l, bytes, opt.nthreads);
            run(Q);
        }
    }
    if (interrupted) {
        PyErr_SetNone(PyExc_KeyboardInterrupt);
        throw nb::python_error();
    }
    poll.rethrow();
    nb::dict d;
    d["alpha"] = to_numpy(res.alpha);
    d["grad"] = to_numpy(res.grad);
    d["grad_bar"] = to_numpy(res.grad_bar);
    d["rho"] = res.rho;
    d["r"] = res.r;
    d["obj"] = res.obj;
    d["gap"] = res.gap;
    d["grad_error"] = res.grad_error;
    d["team_threads"] = res.threads;
    d["serial_periods"] = res.serial_periods;
    {  // the team's loops (parallel.hpp TeamStats): the parallel model's inputs
        nb::dict team;
        team["solve_us"] = res.solve_us;
        team["loops"] = res.team.loops;
        team["chunks"] = res.team.chunks;
        team["wall_us"] = res.team.wall_us;
        team["master_work_us"] = res.team.master_work_us;
        team["wait_us"] = res.team.wait_us;
        team["helper_work_us"] = res.team.helper_work_us;
        team["solo_loops"] = res.team.solo_loops;
        team["solo_us"] = res.team.solo_us;
        std::vector<double> by_cap(res.team.work_by_capacity_us, res.team.work_by_capacity_us + sk::kCapacityBuckets);
        team["work_by_capacity_us"] = to_numpy(by_cap);
        std::vector<double> bounds(sk::kCapacityBounds, sk::kCapacityBounds + sk::kCapacityBuckets);
        team["capacity_bounds"] = to_numpy(bounds);
        d["team"] = team;
    }
    d["n_iter"] = res.iter;
    d["n_outer_iter"] = res.outer_iter;
    d["q"] = res.q;
    d["status"] = res.status;
    d["conjugate_fallbacks"] = res.fallbacks;
    d["kernel_evals"] = kernel_evals;
    d["cache_hits"] = hits;
    d["cache_misses"] = misses;
    d["cache_peak_bytes"] = peak;
    if (trace) {
        d["trace"] = to_numpy(trace_values);
        d["trace_width"] = sk::kTraceHead + 2 * l;
    }
    return d;
}

// intercept + K(X, B) @ coef' for dense X (see predict.hpp); None when a row of X is not finite
nb::object expansion_decision(DMatrix X, DMatrix B, DMatrix coef, DArray intercept, int kernel, double gamma,
                              double coef0, int degree, int nthreads) {
    const auto params = make_params(kernel, gamma, coef0, degree);
    if (params.type == sk::KernelType::laplacian || params.type == sk::KernelType::precomputed)
        throw std::invalid_argument("expansion_decision: kernels of dot products and squared distances only");
    const int64_t n = int64_t(X.shape(0)), d = int64_t(X.shape(1)), m = int64_t(B.shape(0));
    const int64_t k = int64_t(coef.shape(0));
    if (int64_t(B.shape(1)) != d || int64_t(coef.shape(1)) != m || int64_t(intercept.shape(0)) != k)
        throw std::invalid_argument("expansion_decision: inconsistent shapes");
    auto* out = new double[std::max<int64_t>(1, n * k)];
    nb::capsule owner(out, [](void* p) noexcept { delete[] static_cast<double*>(p); });
    bool finite;
    {
        nb::gil_scoped_release release;
        finite = sk::expansion_decision(X.data(), n, d, B.data(), m, coef.data(), k, intercept.data(), params, out,
                                        std::max(1, nthreads));
    }
    if (!finite) return nb::none();
    return nb::cast(nb::ndarray<nb::numpy, double, nb::ndim<2>>(out, {size_t(n), size_t(k)}, owner));
}

// The entries of dense X (n x d, float32 or float64) that differ from shift (one value per column,
// or none: zero) as a CSR triplet (indptr int64, indices int32, values float64 of x - shift), or
// None when they are more than max_density of the n d entries. Rows are counted, then written, in
// parallel blocks: the engine's storage for a dense X of mostly zeros (_base.engine_storage).
template <class T>
nb::object dense_as_csr(nb::ndarray<const T, nb::ndim<2>, nb::c_contig, nb::device::cpu> X, nb::object shift_obj,
                        double max_density, int nthreads) {
    const int64_t n = int64_t(X.shape(0)), d = int64_t(X.shape(1));
    std::vector<double> shift(size_t(d), 0.0);
    if (!shift_obj.is_none()) {
        const auto sh = nb::cast<DArray>(shift_obj);
        if (int64_t(sh.shape(0)) != d) throw std::invalid_argument("dense_as_csr: one shift per column");
        std::copy(sh.data(), sh.data() + d, shift.begin());
    }
    const T* x = X.data();
    auto* indptr = new int64_t[size_t(n) + 1];
    nb::capsule indptr_owner(indptr, [](void* p) noexcept { delete[] static_cast<int64_t*>(p); });
    int32_t* indices = nullptr;
    double* values = nullptr;
    int64_t nnz = 0;
    {
        nb::gil_scoped_release release;
        nthreads = std::max(1, nthreads);
        constexpr int64_t kRows = 256;
        const int64_t blocks = (n + kRows - 1) / kRows;
        indptr[0] = 0;
        // blocks in parallel only where the work pays for the threads (chunks_for; iris: none)
        const int64_t nc = sk::chunks_for(blocks, double(kRows * d), nthreads);
        sk::for_chunks(nc, nthreads, [&](int64_t ch) {
        for (int64_t b = blocks * ch / nc; b < blocks * (ch + 1) / nc; ++b)
            for (int64_t i = b * kRows; i < std::min(n, (b + 1) * kRows); ++i) {
                int64_t c = 0;
                for (int64_t k = 0; k < d; ++k) c += double(x[i * d + k]) != shift[k];
                indptr[i + 1] = c;
            }
        });
        for (int64_t i = 0; i < n; ++i) indptr[i + 1] += indptr[i];
        nnz = indptr[n];
        if (double(nnz) <= max_density * double(n) * double(d)) {
            indices = new int32_t[size_t(std::max<int64_t>(1, nnz))];
            values = new double[size_t(std::max<int64_t>(1, nnz))];
            sk::for_chunks(nc, nthreads, [&](int64_t ch) {
            for (int64_t b = blocks * ch / nc; b < blocks * (ch + 1) / nc; ++b)
                for (int64_t i = b * kRows; i < std::min(n, (b + 1) * kRows); ++i) {
                    int64_t at = indptr[i];
                    for (int64_t k = 0; k < d; ++k) {
                        const double v = double(x[i * d + k]) - shift[k];
                        if (double(x[i * d + k]) != shift[k]) {
                            indices[at] = int32_t(k);
                            values[at++] = v;
                        }
                    }
                }
            });
        }
    }
    if (indices == nullptr) return nb::none();
    nb::capsule indices_owner(indices, [](void* p) noexcept { delete[] static_cast<int32_t*>(p); });
    nb::capsule values_owner(values, [](void* p) noexcept { delete[] static_cast<double*>(p); });
    return nb::make_tuple(nb::ndarray<nb::numpy, int64_t, nb::ndim<1>>(indptr, {size_t(n) + 1}, indptr_owner),
                          nb::ndarray<nb::numpy, int32_t, nb::ndim<1>>(indices, {size_t(nnz)}, indices_owner),
                          nb::ndarray<nb::numpy, double, nb::ndim<1>>(values, {size_t(nnz)}, values_owner));
}

}  // namespace

void bind_nssvm(nb::module_& m);  // nssvm.cpp

NB_MODULE(_core, m) {
    m.doc() = "sparsekernel C++ core: kernels, row cache, SMO engine, NSSVM pass";
    bind_nssvm(m);
    nb::class_<PyMatrix>(m, "Matrix")
        .def_static("dense", &make_dense, "X"_a, nb::rv_policy::take_ownership)
        .def_static("csr", &make_csr, "indptr"_a, "indices"_a, "values"_a, "n_cols"_a, nb::rv_policy::take_ownership)
        .def_prop_ro("shape", [](const PyMatrix& pm) { return nb::make_tuple(pm.m.n, pm.m.d); })
        .def_prop_ro("sparse", [](const PyMatrix& pm) { return pm.m.sparse; });
    m.def(
        "max_threads", [] { return omp_get_max_threads(); },
        "The OpenMP threads this core's runtime may start now (OMP_NUM_THREADS, threadpoolctl limits).");
    m.def("dense_as_csr", &dense_as_csr<double>, "X"_a, "shift"_a.none(), "max_density"_a, "nthreads"_a = 1);
    m.def("dense_as_csr", &dense_as_csr<float>, "X"_a, "shift"_a.none(), "max_density"_a, "nthreads"_a = 1);
    m.attr("SINGLE_SUMS_TOL_SHARE") = sk::kSingleSumsTolShare;
    m.attr("TEAM_MIN_OPS") = sk::kTeamMinChunks * sk::kTeamChunkOps;
    m.def("kernel_weighted_sum", &kernel_weighted_sum, "X"_a, "kernel"_a, "gamma"_a, "coef0"_a, "degree"_a, "rows"_a,
          "w"_a, "cols"_a, "max_error"_a, "nthreads"_a);
    m.def("kernel_matrix", &kernel_matrix, "A"_a, "B"_a, "kernel"_a, "gamma"_a, "coef0"_a, "degree"_a,
          "nthreads"_a = 1);
    m.def("kernel_columns", &kernel_columns, "A"_a, "B"_a, "kernel"_a, "gamma"_a, "coef0"_a, "degree"_a, "out"_a,
          "slots"_a, "nthreads"_a = 1);
    m.def("expansion_decision", &expansion_decision, "X"_a, "B"_a, "coef"_a, "intercept"_a, "kernel"_a, "gamma"_a,
          "coef0"_a, "degree"_a, "nthreads"_a = 1);
    nb::class_<sk::KernelParams>(m, "KernelParams")
        .def("__init__",
             [](sk::KernelParams* self, int kernel, double gamma, double coef0, int degree) {
                 new (self) sk::KernelParams(make_params(kernel, gamma, coef0, degree));
             },
             "kernel"_a, "gamma"_a, "coef0"_a, "degree"_a)
        .def_prop_ro("kernel", [](const sk::KernelParams& k) { return int(k.type); })
        .def_ro("gamma", &sk::KernelParams::gamma)
        .def_ro("coef0", &sk::KernelParams::coef0)
        .def_ro("degree", &sk::KernelParams::degree);
    nb::class_<SolveOptions>(m, "SolveOptions")
        .def(nb::init<>())
        .def_rw("tol", &SolveOptions::tol)
        .def_rw("max_iter", &SolveOptions::max_iter)
        .def_rw("shrinking", &SolveOptions::shrinking)
        .def_rw("second_order", &SolveOptions::second_order)
        .def_rw("batched", &SolveOptions::batched)
        .def_rw("pair_start", &SolveOptions::pair_start)
        .def_rw("q", &SolveOptions::q)
        .def_rw("cache_mb", &SolveOptions::cache_mb)
        .def_rw("nthreads", &SolveOptions::nthreads)
        .def_rw("conjugate", &SolveOptions::conjugate)
        .def_rw("nu", &SolveOptions::nu)
        .def_rw("trace", &SolveOptions::trace)
        .def_rw("time_limit", &SolveOptions::time_limit)
        .def_rw("g0_error", &SolveOptions::g0_error);
    // keyword-only: one caller (sparsekernel/_engine.py), every argument named
    m.def("linear_dual_cd", &linear_dual_cd, nb::kw_only(), "Phi"_a, "y"_a, "upper"_a, "a0"_a, "b0"_a, "tol"_a,
          "rho"_a, "max_epochs"_a, "cancel"_a.none(), "gap_tol"_a = 0.0,
          "The linear SVM with a free bias on the rows of Phi by dual coordinate descent and multiplier rounds "
          "(linear_dual_cd.hpp): alpha, b, gap, feasibility, epochs, rounds, status (0 converged, 1 max_epochs).");
    m.def("solve", &solve, nb::kw_only(), "X"_a, "kernel"_a, "options"_a, "term"_a, "problem"_a, "y"_a, "p"_a,
          "C"_a.none(), "lo"_a, "hi"_a, "a0"_a.none(), "g0"_a.none(), "gbar0"_a.none(), "session"_a.none(), "cancel"_a.none(),
          "progress"_a.none());
    nb::class_<Session>(m, "Session")
        .def("__init__", [](Session* self, nb::object X, const sk::KernelParams& kernel, DArray y, int problem,
                            double cache_mb, int nthreads, nb::object shared, nb::object global) {
                 Session* s = make_session(X, kernel, y, problem, cache_mb, nthreads, shared, global);
                 new (self) Session(std::move(*s));
                 delete s;
             },
             nb::kw_only(), "X"_a, "kernel"_a, "y"_a, "problem"_a, "cache_mb"_a, "nthreads"_a,
             "shared"_a.none() = nb::none(), "global_index"_a.none() = nb::none())
        .def_prop_ro("cache_peak_bytes", [](const Session& s) {
            return int64_t(s.sq ? s.sq->cache().peak_bytes() : s.kq->cache().peak_bytes());
        });
    nb::class_<PySharedRows>(m, "SharedRows")
        .def("__init__", [](PySharedRows* self, nb::object X_obj, const sk::KernelParams& params, double cache_mb) {
                 const PyMatrix& X = nb::cast<const PyMatrix&>(X_obj);
                 if (params.type == sk::KernelType::precomputed)
                     throw std::invalid_argument("SharedRows: a precomputed kernel is already a matrix");
                 new (self) PySharedRows();
                 self->X_owner = X_obj;
                 self->rows = std::make_unique<sk::SharedRows>(X.m, params,
                                                               std::size_t(cache_mb * 1024.0 * 1024.0));
             },
             "X"_a, "kernel"_a, "cache_mb"_a)
        .def(
            "expansion",
            [](PySharedRows& s, I32Array rows, I32Array cols, DMatrix coef, int nthreads) {
                // sum_r coef[:, r] K(x_rows[r], x_cols[c]) for every c: (m, k), from the kept rows
                const int64_t nr = int64_t(rows.shape(0)), m = int64_t(cols.shape(0)), k = int64_t(coef.shape(0));
                if (int64_t(coef.shape(1)) != nr) throw std::invalid_argument("expansion: coef needs one column per row");
                for (const I32Array* a : {&rows, &cols})
                    for (int64_t t = 0; t < int64_t(a->shape(0)); ++t)
                        if ((*a)(t) < 0 || (*a)(t) >= s.rows->n()) throw std::invalid_argument("expansion: index out of range");
                auto* out = new double[std::max<int64_t>(1, m * k)];
                nb::capsule owner(out, [](void* p) noexcept { delete[] static_cast<double*>(p); });
                {
                    nb::gil_scoped_release release;
                    s.rows->expansion(rows.data(), nr, cols.data(), m, coef.data(), k, out, std::max(1, nthreads));
                }
                return nb::ndarray<nb::numpy, double, nb::ndim<2>>(out, {size_t(m), size_t(k)}, owner);
            },
            "rows"_a, "cols"_a, "coef"_a, "nthreads"_a = 1)
        .def_prop_ro("kernel_evals", [](const PySharedRows& s) { return s.rows->kernel_evals(); })
        .def_prop_ro("peak_bytes", [](const PySharedRows& s) { return int64_t(s.rows->peak_bytes()); });
    m.def(
        "stop_all_solves",
        [](double timeout) {
            // Ctrl-C seen in Python while solves run in other threads (a search's workers): stop them all
            // (they raise KeyboardInterrupt in their threads) and wait until none runs, so that none is
            // left inside C++ when the interpreter exits
            g_stop_all.store(true);
            bool idle = false;
            {
                nb::gil_scoped_release release;
                const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
                while (!(idle = g_active_solves.load() == 0) && std::chrono::steady_clock::now() < end)
                    std::this_thread::sleep_for(std::chrono::milliseconds(5));
            }
            g_stop_all.store(false);
            return idle;
        },
        "timeout"_a,
        "Stop every solve running in the process and wait up to timeout seconds until none runs (True when none "
        "does).");
    nb::class_<CancelToken>(m, "CancelToken")
        .def(nb::init<>())
        .def("cancel", [](CancelToken& t) { t.flag.store(true); })
        .def_prop_ro("cancelled", [](const CancelToken& t) { return t.flag.load(); });
}
