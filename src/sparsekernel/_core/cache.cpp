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
    used_ -= std::size_t(e.cap);
    keep_spare(std::move(e.data), e.cap);
    e.len = e.cap = 0;
}

void RowCache::keep_spare(std::unique_ptr<float[]> data, int64_t cap) {
    if (!data) return;
    if (spares_.size() >= kMaxSpares) {  // the oldest spare goes back to the system
        used_ -= std::size_t(spares_.front().first);
        spares_.erase(spares_.begin());
    }
    used_ += std::size_t(cap);
    spares_.emplace_back(cap, std::move(data));
}

std::unique_ptr<float[]> RowCache::take_buffer(int64_t len, int64_t* cap) {
    for (std::size_t k = spares_.size(); k-- > 0;) {  // the most recent spare that fits
        if (spares_[k].first >= len && spares_[k].first <= 2 * len) {
            std::unique_ptr<float[]> data = std::move(spares_[k].second);
            *cap = spares_[k].first;
            used_ -= std::size_t(*cap);
            spares_.erase(spares_.begin() + std::ptrdiff_t(k));
            return data;
        }
    }
    *cap = len;
    return std::unique_ptr<float[]>(new float[len]);
}

void RowCache::make_room(std::size_t floats) {
    // room for a row of `floats`: a spare that fits turns into the row without new memory; else
    // the spares that do not fit are freed first, then the least recently used rows evicted (their
    // buffers become spares, which a row of about their length reuses)
    const int64_t len = int64_t(floats);
    auto fits = [len](const std::pair<int64_t, std::unique_ptr<float[]>>& sp) {
        return sp.first >= len && sp.first <= 2 * len;
    };
    for (;;) {
        const bool spare_fits = std::any_of(spares_.begin(), spares_.end(), fits);
        if (spare_fits ? used_ <= budget_ : used_ + floats <= budget_) return;
        auto waste = std::find_if(spares_.begin(), spares_.end(), [&](const auto& sp) { return !fits(sp); });
        if (waste != spares_.end()) {
            used_ -= std::size_t(waste->first);
            spares_.erase(waste);
        } else if (head_ >= 0) {
            evict(head_);
        } else if (!spares_.empty()) {
            used_ -= std::size_t(spares_.front().first);
            spares_.erase(spares_.begin());
        } else {
            return;
        }
    }
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
    const int64_t old_len = e.len, old_cap = e.cap;
    if (old_len > 0 && old_cap >= len) {  // a reused buffer with room for the tail
        unlink(i);
        e.len = len;
        push_back(i);
        *valid = old_len;
        return e.data.get();
    }
    std::unique_ptr<float[]> old = std::move(e.data);
    if (old_len > 0) unlink(i);
    used_ -= std::size_t(old_cap);
    e.len = e.cap = 0;
    make_room(std::size_t(len));
    int64_t cap = 0;
    e.data = take_buffer(len, &cap);
    if (old_len > 0) copy_head(e.data.get(), old.get(), old_len);
    e.len = len;
    e.cap = cap;
    e.version = version_;
    used_ += std::size_t(cap);
    peak_ = std::max(peak_, used_);
    push_back(i);
    *valid = old_len;
    return e.data.get();
}

// The valid head of a row that grew, into its new buffer: in chunks on the team. The new buffer's
// pages are first touched here (a fresh mapping: the kernel zeroes each page on its first write),
// so a serial copy put every page fault on the master: 23 % of a 2-thread fit of dense a9a at
// cache_size 2000 MB (perf), the rows growing to the whole set after the final unshrink.
void RowCache::copy_head(float* to, const float* from, int64_t len) const {
    const int64_t nc = chunks_for(len, 1.0, nthreads_);
    for_chunks(nc, nthreads_, [&](int64_t c) {
        const int64_t lo = len * c / nc, hi = len * (c + 1) / nc;
        std::memcpy(to + lo, from + lo, sizeof(float) * std::size_t(hi - lo));
    });
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
        std::swap(entries_[i].cap, entries_[j].cap);
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
