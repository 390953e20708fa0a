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
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <cstdlib>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include <x86intrin.h>
#define SK_CPU_RELAX() _mm_pause()
#else
#define SK_CPU_RELAX() ((void)0)
#endif

namespace sk {

namespace detail {
// A cheap clock for the team's own bookkeeping: the time-stamp counter where there is one (a few
// cycles), else steady_clock; ticks_per_us() converts.
inline uint64_t ticks() {
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#else
    return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now().time_since_epoch()).count());
#endif
}
inline double ticks_per_us() {
    static const double rate = [] {
        const auto t0 = std::chrono::steady_clock::now();
        const uint64_t c0 = ticks();
        while (std::chrono::steady_clock::now() - t0 < std::chrono::microseconds(200)) SK_CPU_RELAX();
        const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
        return std::max(1e-3, double(ticks() - c0) / us);
    }();
    return rate;
}
}  // namespace detail

// What a team's loops cost, for a model of the fit's time at other thread counts
// (benchmarks/bench_manycore.py --model): per loop, from its publication to its last chunk's end
// (wall), the master's own chunks (master_work), its wait for the helpers' chunks under way (wait),
// and every helper's time inside chunks (helper_work); loops run on the master alone while the team
// is serial (solo). A loop's work is also filed under its capacity, the chunks its work would make
// at any thread count (chunks_for's work bound): kCapacityBounds[b] <= capacity < the next bound.
// Two time-stamp reads per chunk and a few per loop: on always.
inline constexpr int kCapacityBuckets = 12;
inline constexpr int64_t kCapacityBounds[kCapacityBuckets] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64};
struct TeamStats {
    int64_t loops = 0, chunks = 0, solo_loops = 0;
    double wall_us = 0, master_work_us = 0, wait_us = 0, helper_work_us = 0, solo_us = 0;
    double work_by_capacity_us[kCapacityBuckets] = {};
};

namespace detail {
// the work bound of the loop the calling master publishes next (set by chunks_for, read by
// Team::run; 0: unknown, the loop's chunk count then)
inline thread_local int64_t next_capacity = 0;
inline int capacity_bucket(int64_t capacity) {
    int b = 0;
    while (b + 1 < kCapacityBuckets && capacity >= kCapacityBounds[b + 1]) ++b;
    return b;
}
}  // namespace detail

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
        const int64_t capacity = detail::next_capacity > 0 ? detail::next_capacity : n_chunks;
        detail::next_capacity = 0;
        if (serial()) {
            const uint64_t t0 = detail::ticks();
            for (int64_t c = 0; c < n_chunks; ++c) fn(c);
            const double us = double(detail::ticks() - t0) / detail::ticks_per_us();
            stats_.solo_loops += 1;
            stats_.solo_us += us;
            stats_.work_by_capacity_us[detail::capacity_bucket(capacity)] += us;
            return;
        }
        for (int64_t first = 0; first < n_chunks; first += kMaxChunks) {  // rounds of kMaxChunks
            const int64_t n = std::min<int64_t>(kMaxChunks, n_chunks - first);
            auto part = [&fn, first](int64_t c) { fn(first + c); };
            run_round(n, part, capacity);
        }
    }

    // the loops' costs so far (the helpers' work as of their last finished chunk)
    TeamStats stats() const {
        TeamStats out = stats_;
        out.helper_work_us = double(helper_ticks_.load(std::memory_order_acquire)) / detail::ticks_per_us();
        return out;
    }

    // A helper's loop (thread t): serve each newly published loop. In between it spins for a few
    // tens of microseconds (the next pass of an SMO step comes within microseconds), then sleeps
    // in growing naps (20 us .. 0.5 ms): a helper with nothing to do gives its core back to whatever
    // else runs on the machine. A loop published while it sleeps runs without it (the master takes
    // every chunk nobody claimed); it joins the loops after it wakes.
    void serve(int t) {
        int64_t idle = 0;
        int64_t nap_us = 0;
        uint64_t seen = 0;
        while (!closed_.load(std::memory_order_acquire)) {
            const uint64_t job = job_.load(std::memory_order_acquire);
            if (job == seen) {
                if (++idle < kSpins) {
                    SK_CPU_RELAX();
                } else {
                    nap_us = std::min<int64_t>(kMaxNapUs, std::max<int64_t>(kMinNapUs, 2 * nap_us));
                    std::unique_lock<std::mutex> lock(nap_mutex_);
                    if (!closed_.load(std::memory_order_acquire))
                        nap_cv_.wait_for(lock, std::chrono::microseconds(nap_us));
                }
                continue;
            }
            seen = job;
            idle = 0;
            nap_us = 0;
            work(job, t);
        }
    }

    void close() {
        {
            std::lock_guard<std::mutex> lock(nap_mutex_);
            closed_.store(true, std::memory_order_release);
        }
        nap_cv_.notify_all();
    }

    // The team runs its loops on the master alone (its helpers nap) for a while when they keep it
    // waiting: a helper that the OS took off its core in the middle of a chunk holds the loop up for a
    // whole time slice (a busy machine: another process on one of the cores). Counted in run_round:
    // a wait for the helpers' chunks longer than twice the master's own part of the loop plus
    // kStallUs is a stall; stalls above kStallShare of the time since the team (re)started switch
    // it to the master alone for a period that doubles each time (kSerialMs .. kMaxSerialMs), then
    // the team tries again.
    bool serial() {
        if (!serial_) return false;
        if (detail::ticks() < serial_until_) return true;
        serial_ = false;
        window_start_ = detail::ticks();
        stalled_ = 0;
        return false;
    }
    int64_t serial_periods() const { return serial_periods_; }

private:
    static constexpr int64_t kMaxChunks = 256;
    static constexpr int64_t kSpins = 1 << 11;  // pauses before a nap: ~30-60 us
    static constexpr int64_t kMinNapUs = 20, kMaxNapUs = 500;
    static constexpr double kStallUs = 50.0, kStallShare = 0.1, kSerialMs = 50.0, kMaxSerialMs = 2000.0;

    template <class Fn>
    static void invoke(void* ctx, int64_t c) { (*static_cast<Fn*>(ctx))(c); }

    template <class Fn>
    void run_round(int64_t n, Fn& fn, int64_t capacity) {
        call_.store(&invoke<Fn>, std::memory_order_relaxed);
        ctx_.store(&fn, std::memory_order_relaxed);
        done_.store(0, std::memory_order_relaxed);
        const uint64_t loop = (job_.load(std::memory_order_relaxed) >> 32) + 1;
        const uint64_t job = (loop << 32) | uint64_t(n);
        const uint64_t helpers_before = helper_ticks_.load(std::memory_order_acquire);
        const uint64_t t0 = detail::ticks();
        job_.store(job, std::memory_order_release);  // publishes the stores above
        work(job, 0);
        const uint64_t t1 = detail::ticks();
        uint64_t t2 = t1;
        // the chunks the helpers claimed: wait for them (they are under way, not waiting to start)
        if (done_.load(std::memory_order_acquire) < n) {
            while (done_.load(std::memory_order_acquire) < n) SK_CPU_RELAX();
            t2 = detail::ticks();
            if (double(t2 - t1) > 2.0 * double(t1 - t0) + kStallUs * detail::ticks_per_us()) note_stall(t2, t2 - t1);
        }
        const double per_us = 1.0 / detail::ticks_per_us();
        stats_.loops += 1;
        stats_.chunks += n;
        stats_.wall_us += double(t2 - t0) * per_us;
        stats_.master_work_us += double(t1 - t0) * per_us;
        stats_.wait_us += double(t2 - t1) * per_us;
        const uint64_t helpers = helper_ticks_.load(std::memory_order_acquire) - helpers_before;
        stats_.work_by_capacity_us[detail::capacity_bucket(capacity)] += double(t1 - t0 + helpers) * per_us;
    }

    void note_stall(uint64_t now, uint64_t wait) {
        if (window_start_ == 0) window_start_ = now - wait;
        stalled_ += wait;
        if (double(stalled_) <= kStallShare * double(now - window_start_)) return;
        serial_ = true;
        ++serial_periods_;
        const double ms = std::min(kMaxSerialMs, kSerialMs * double(int64_t(1) << std::min<int64_t>(serial_periods_ - 1, 10)));
        serial_until_ = now + uint64_t(ms * 1000.0 * detail::ticks_per_us());
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
            const uint64_t c0 = t ? detail::ticks() : 0;
            call_.load(std::memory_order_relaxed)(ctx_.load(std::memory_order_relaxed), c);
            if (t) helper_ticks_.fetch_add(detail::ticks() - c0, std::memory_order_acq_rel);  // (before done_)
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
    std::mutex nap_mutex_;
    std::condition_variable nap_cv_;
    alignas(64) std::atomic<uint64_t> helper_ticks_{0};  // the helpers' time inside chunks
    TeamStats stats_;  // the master's alone, as below
    // the master's alone: stall bookkeeping (ticks)
    uint64_t window_start_ = 0, stalled_ = 0, serial_until_ = 0;
    bool serial_ = false;
    int64_t serial_periods_ = 0;
};

namespace detail {
// the team whose master is this thread (set by run_in_team), and whether this thread is a helper
inline thread_local Team* master_of = nullptr;
inline thread_local bool in_helper = false;
inline thread_local bool in_loop = false;  // the master is running a loop's chunk: a nested loop runs serially
inline thread_local int thread_cap = INT_MAX;  // ScopedThreadCap
}  // namespace detail

// Within its scope, the loops this thread runs use at most `cap` threads (a solve whose steps are
// too small to pay for a team runs them all on its own thread: Solver::solve).
struct ScopedThreadCap {
    explicit ScopedThreadCap(int cap) : saved_(detail::thread_cap) { detail::thread_cap = std::max(1, cap); }
    ~ScopedThreadCap() { detail::thread_cap = saved_; }
    ScopedThreadCap(const ScopedThreadCap&) = delete;
    ScopedThreadCap& operator=(const ScopedThreadCap&) = delete;

private:
    int saved_;
};

// fn(c) for c in [0, n_chunks): on the team when called by its master, serially inside a chunk
// (nested), and as an OpenMP parallel for when nthreads > 1 outside any team (e.g. prediction).
template <class Fn>
void for_chunks(int64_t n_chunks, int nthreads, Fn&& fn) {
    nthreads = std::min(nthreads, detail::thread_cap);
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
// a solve starts a team of threads only when a step's passes make this many chunks (Solver::team_pays)
inline constexpr double kTeamMinChunks = 4.0;
inline int64_t chunks_for(int64_t n, double cost, int nthreads) {
    nthreads = std::min(nthreads, detail::thread_cap);
    if (nthreads <= 1 || n <= 0) return 1;
    const double total = double(n) * cost;
    // a hand-off to a team helper costs a fraction of a microsecond; a task or a parallel for
    // a microsecond or two
    const double min_chunk = detail::master_of ? kTeamChunkOps : 20000.0;
    const int64_t by_work = int64_t(total / min_chunk);
    const int64_t per_thread = by_work >= kLongPassChunks * nthreads ? 8 : 2;
    if (detail::master_of) detail::next_capacity = std::max<int64_t>(1, std::min<int64_t>(by_work, n));
    return std::max<int64_t>(1, std::min<int64_t>({by_work, per_thread * nthreads, n}));
}

// Runs body() on the calling thread (the master: Python's signal checks need it) within a team of
// nthreads whose other members serve the chunks of the loops body() runs through for_chunks.
template <class Body>
void run_in_team(int nthreads, Body&& body) {
    nthreads = std::min(nthreads, detail::thread_cap);
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
