#include "cache.hpp"

#include "parallel.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <utility>

namespace sk {

RowCache::RowCache(int64_t n_rows, std::size_t budget_bytes, int nthreads)
    : entries_(n_rows), budget_(budget_bytes / sizeof(float)), nthreads_(nthreads) {}

void RowCache::unlink(int64_t i) {
    Entry& e = entries_[i];
    if (e.prev >= 0) entries_[e.prev].next = e.next; else if (head_ == i) head_ = e.next;
    if (e.next >= 0) entries_[e.next].prev = e.prev; else if (tail_ == i) tail_ = e.prev;
    e.prev = e.next = -1;
}

void RowCache::push_back(int64_t i) {
    Entry& e = entries_[i];
    e.prev = tail_;
    e.next = -1;
    if (tail_ >= 0) entries_[tail_].next = i;
    tail_ = i;
    if (head_ < 0) head_ = i;
}

void RowCache::evict(int64_t i) {
    Entry& e = entries_[i];
    unlink(i);
    used_ -= std::size_t(e.len);
    e.data.reset();
    e.len = 0;
}

bool RowCache::catch_up(int64_t i) {
    Entry& e = entries_[i];
    if (!e.data || e.version == version_) return true;
    if (e.version < log_base_) {
        evict(i);
        return false;
    }
    // The swaps of one pass move distinct positions (do_shrinking pairs an increasing position with
    // a decreasing one), so they commute and a long pass is applied in parallel chunks; the passes
    // follow each other in order.
    float* row = e.data.get();
    const int64_t len = e.len;
    for (int64_t p = e.version; p < version_; ++p) {
        const auto& swaps = log_[size_t(p - log_base_)];
        const int64_t n = int64_t(swaps.size());
        const int64_t nc = chunks_for(n, 8.0, nthreads_);
        std::atomic<bool> lacking{false};
        for_chunks(nc, nthreads_, [&](int64_t c) {
            for (int64_t s = n * c / nc; s < n * (c + 1) / nc; ++s) {
                const int64_t a = std::min(swaps[s].first, swaps[s].second);
                const int64_t b = std::max(swaps[s].first, swaps[s].second);
                if (a == b || len <= a) continue;
                if (len <= b) {  // position a would take a value the row does not hold
                    lacking.store(true, std::memory_order_relaxed);
                    continue;
                }
                std::swap(row[a], row[b]);
            }
        });
        if (lacking.load()) {
            evict(i);
            return false;
        }
    }
    e.version = version_;
    return true;
}

float* RowCache::get(int64_t i, int64_t len, int64_t* valid) {
    catch_up(i);
    Entry& e = entries_[i];
    if (e.len >= len && e.data) {
        ++hits;
        unlink(i);
        push_back(i);
        *valid = len;
        return e.data.get();
    }
    ++misses;
    if (std::size_t(len) > budget_) {
        *valid = 0;
        return nullptr;
    }
    // grow (or create) the row: keep its valid head, make room by evicting least recently used rows
    const int64_t old_len = e.len;
    std::unique_ptr<float[]> old = std::move(e.data);
    if (old_len > 0) unlink(i);
    used_ -= std::size_t(old_len);
    while (used_ + std::size_t(len) > budget_ && head_ >= 0) evict(head_);
    e.data.reset(new float[len]);
    if (old_len > 0) std::memcpy(e.data.get(), old.get(), sizeof(float) * old_len);
    e.len = len;
    e.version = version_;
    used_ += std::size_t(len);
    peak_ = std::max(peak_, used_);
    push_back(i);
    *valid = old_len;
    return e.data.get();
}

void RowCache::swap_indices(const std::vector<std::pair<int64_t, int64_t>>& swaps) {
    if (swaps.empty()) return;
    // swap the entries themselves (a row goes with its variable), keeping the LRU list consistent
    for (auto [i, j] : swaps) {
        if (i == j) continue;
        const bool in_i = entries_[i].len > 0, in_j = entries_[j].len > 0;
        if (in_i) unlink(i);
        if (in_j) unlink(j);
        std::swap(entries_[i].data, entries_[j].data);
        std::swap(entries_[i].len, entries_[j].len);
        std::swap(entries_[i].version, entries_[j].version);
        if (in_j) push_back(i);
        if (in_i) push_back(j);
    }
    // the positions inside the rows: logged, applied to a row when it is next read
    log_.push_back(swaps);
    logged_ += swaps.size();
    ++version_;
    while (logged_ > kMaxLoggedSwaps && log_.size() > 1) drop_oldest_pass();  // rows behind it: evicted when read
    // passes every cached row has caught up with need not be kept
    int64_t oldest = version_;
    for (int64_t h = head_; h >= 0; h = entries_[h].next) oldest = std::min(oldest, entries_[h].version);
    while (log_base_ < oldest && !log_.empty()) drop_oldest_pass();
}

void RowCache::drop_oldest_pass() {
    logged_ -= log_.front().size();
    log_.pop_front();
    ++log_base_;
}

}  // namespace sk
