// Parallel loops that stay fast on a busy machine and on short passes.
//
// A plain `omp parallel for` ends with a barrier: when another process holds a core, the thread
// descheduled there makes every kernel row wait a full scheduler time slice (measured: a 2-thread
// fit 15x slower than 1 thread while another process ran). The solver therefore runs inside one
// parallel region (`run_in_team`) whose master publishes each loop to the team (`Team`): every
// thread, the master included, claims chunks until none is left, so a loop never waits for a
// thread that has not started, only for chunks already under way.
//
// Why not OpenMP tasks (the previous scheme): a pair step of the SMO runs two or three passes of
// 5-50 microseconds each. With `taskloop` (and its 20k-operation floor per chunk) the helper came
// late or not at all, and a 2-thread a9a fit (C = 10) had the master run 3/4 of every scan (perf:
// scan_low_second_order 972 samples on the master, 287 on the helper); with the team, 676 and 647,
// and the fit went from 6.27 s to 5.90 s (10.2 s on one thread).
#pragma once
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <thread>
#include <cstdlib>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SK_CPU_RELAX() _mm_pause()
#else
#define SK_CPU_RELAX() ((void)0)
#endif

namespace sk {

// The chunks of one loop at a time. The master publishes a loop as `job_` = (loop number << 32) |
// chunk count; a thread claims chunk c by raising owner_[c] to the loop number. Each thread first
// claims the chunks of its own share (thread t of T: chunks [t n / T, (t + 1) n / T)), so a pass
// over the same positions runs on the same core step after step and finds its data in that core's
// cache, then takes whatever another thread has not started.
class Team {
public:
    explicit Team(int nthreads) : nthreads_(nthreads) {}

    template <class Fn>
    void run(int64_t n_chunks, Fn& fn) {
        for (int64_t first = 0; first < n_chunks; first += kMaxChunks) {  // rounds of kMaxChunks
            const int64_t n = std::min<int64_t>(kMaxChunks, n_chunks - first);
            auto part = [&fn, first](int64_t c) { fn(first + c); };
            run_round(n, part);
        }
    }

    // A helper's loop (thread t): serve each newly published loop; spin (then yield) in between.
    void serve(int t) {
        int64_t idle = 0;
        uint64_t seen = 0;
        while (!closed_.load(std::memory_order_acquire)) {
            const uint64_t job = job_.load(std::memory_order_acquire);
            if (job == seen) {
                if (++idle < kSpins) SK_CPU_RELAX(); else std::this_thread::yield();
                continue;
            }
            seen = job;
            idle = 0;
            work(job, t);
        }
    }

    void close() { closed_.store(true, std::memory_order_release); }

private:
    static constexpr int64_t kMaxChunks = 256;
    static constexpr int64_t kSpins = 1 << 16;  // ~ a few ms of pause before yielding the core

    template <class Fn>
    static void invoke(void* ctx, int64_t c) { (*static_cast<Fn*>(ctx))(c); }

    template <class Fn>
    void run_round(int64_t n, Fn& fn) {
        call_.store(&invoke<Fn>, std::memory_order_relaxed);
        ctx_.store(&fn, std::memory_order_relaxed);
        done_.store(0, std::memory_order_relaxed);
        const uint64_t loop = (job_.load(std::memory_order_relaxed) >> 32) + 1;
        const uint64_t job = (loop << 32) | uint64_t(n);
        job_.store(job, std::memory_order_release);  // publishes the stores above
        work(job, 0);
        // the chunks the helpers claimed: wait for them (they are under way, not waiting to start)
        while (done_.load(std::memory_order_acquire) < n) SK_CPU_RELAX();
    }

    // thread t's part of loop `job`: its own share, then the unclaimed rest. A helper that comes
    // late (the loop is over, or a later one published) finds every chunk of `job` claimed, since
    // a loop ends only when all its chunks are done, and so never runs a chunk with another
    // loop's function.
    void work(uint64_t job, int t) {
        const uint64_t loop = job >> 32;
        const int64_t n = int64_t(job & 0xffffffffu);
        const int64_t T = nthreads_;
        const int64_t own_begin = n * t / T;
        for (int64_t k = 0; k < n; ++k) {
            const int64_t c = (own_begin + k) % n;  // own share first, then the others in order
            uint64_t seen = owner_[c].load(std::memory_order_relaxed);
            if (seen >= loop) continue;
            if (!owner_[c].compare_exchange_strong(seen, loop, std::memory_order_acq_rel)) continue;
            call_.load(std::memory_order_relaxed)(ctx_.load(std::memory_order_relaxed), c);
            done_.fetch_add(1, std::memory_order_acq_rel);
        }
    }

    const int nthreads_;
    // one cache line each for what the helpers spin on, what they count, and the loop's description
    alignas(64) std::atomic<uint64_t> job_{0};
    alignas(64) std::atomic<int64_t> done_{0};
    alignas(64) std::atomic<void (*)(void*, int64_t)> call_{nullptr};
    std::atomic<void*> ctx_{nullptr};
    alignas(64) std::atomic<bool> closed_{false};
    alignas(64) std::atomic<uint64_t> owner_[kMaxChunks] = {};
};

namespace detail {
// the team whose master is this thread (set by run_in_team), and whether this thread is a helper
inline thread_local Team* master_of = nullptr;
inline thread_local bool in_helper = false;
inline thread_local bool in_loop = false;  // the master is running a loop's chunk: a nested loop runs serially
}  // namespace detail

// fn(c) for c in [0, n_chunks): on the team when called by its master, serially inside a chunk
// (nested), and as an OpenMP parallel for when nthreads > 1 outside any team (e.g. prediction).
template <class Fn>
void for_chunks(int64_t n_chunks, int nthreads, Fn&& fn) {
    if (n_chunks <= 1 || nthreads <= 1 || detail::in_helper || detail::in_loop) {
        for (int64_t c = 0; c < n_chunks; ++c) fn(c);
    } else if (detail::master_of) {
        struct InLoop {  // (a published loop must not be replaced while its chunks run)
            InLoop() { detail::in_loop = true; }
            ~InLoop() { detail::in_loop = false; }
        } guard;
        detail::master_of->run(n_chunks, fn);
    } else if (omp_in_parallel()) {
        for (int64_t c = 0; c < n_chunks; ++c) fn(c);
    } else {
#pragma omp parallel for num_threads(nthreads) schedule(dynamic, 1)
        for (int64_t c = 0; c < n_chunks; ++c) fn(c);
    }
}

// Chunk count for n items of `cost` operations each: two chunks per thread (some balance when a
// core is busy elsewhere, few hand-offs otherwise), none below ~8k operations; a long pass (at
// least kLongPassChunks minimal chunks per thread) up to eight per thread, as its chunks' costs
// differ (sparse rows, masked scans) and the last one decides when the pass ends.
// measured on a9a / w8a, 2 threads: 20000 (the task threshold) 6.41 s, 8000 5.90 s, 4000 5.93 s;
// eight chunks per thread on long passes: w8a-dense (C = 10) T(1)/T(2) 1.73 -> 1.78 (median of
// three interleaved A/B runs), a9a-dense unchanged; sixteen on every pass: 1.71
inline constexpr double kTeamChunkOps = 8000.0;
inline constexpr int64_t kLongPassChunks = 64;
inline int64_t chunks_for(int64_t n, double cost, int nthreads) {
    if (nthreads <= 1 || n <= 0) return 1;
    const double total = double(n) * cost;
    // a hand-off to a team helper costs a fraction of a microsecond; a task or a parallel for
    // a microsecond or two
    const double min_chunk = detail::master_of ? kTeamChunkOps : 20000.0;
    const int64_t by_work = int64_t(total / min_chunk);
    const int64_t per_thread = by_work >= kLongPassChunks * nthreads ? 8 : 2;
    return std::max<int64_t>(1, std::min<int64_t>({by_work, per_thread * nthreads, n}));
}

// Runs body() on the calling thread (the master: Python's signal checks need it) within a team of
// nthreads whose other members serve the chunks of the loops body() runs through for_chunks.
template <class Body>
void run_in_team(int nthreads, Body&& body) {
    if (nthreads <= 1 || detail::master_of || detail::in_helper) {
        body();
        return;
    }
    Team team(nthreads);
    std::exception_ptr error;  // body's exception, rethrown outside the region
#pragma omp parallel num_threads(nthreads)
    {
        if (omp_get_thread_num() == 0) {
            detail::master_of = &team;
            try {
                body();
            } catch (...) {
                error = std::current_exception();
            }
            detail::master_of = nullptr;
            team.close();
        } else {
            detail::in_helper = true;
            team.serve(omp_get_thread_num());
            detail::in_helper = false;
        }
    }
    if (error) std::rethrow_exception(error);
}

}  // namespace sk
