// A map from live allocation addresses to what their owner keeps of them
// (the framework entry points' and the PyTorch extension's records), as
// one flat array: open addressing with linear probing and backward-shift
// deletion, so that an insert or an erase moves records inside the array
// and never allocates (std::unordered_map allocates a node per insert and
// frees it per erase). The array grows by doubling when half full and
// never shrinks. Not synchronised: the caller locks (one lock per shard).
//
// The interface is the part of std::unordered_map the callers use: find,
// end, emplace, erase of a found entry, and iteration over (first, second)
// pairs. Any insert or erase invalidates iterators.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace cumem {

template <class V>
class PointerMap {
 public:
  struct Entry {
    void* first = nullptr;  // nullptr: an empty slot
    V second{};
  };

  class iterator {
   public:
    iterator(Entry* at, Entry* end) : at_(at), end_(end) { skip(); }
    Entry& operator*() const { return *at_; }
    Entry* operator->() const { return at_; }
    iterator& operator++() {
      ++at_;
      skip();
      return *this;
    }
    bool operator==(const iterator& o) const { return at_ == o.at_; }
    bool operator!=(const iterator& o) const { return at_ != o.at_; }

   private:
    friend class PointerMap;
    void skip() {
      while (at_ != end_ && at_->first == nullptr) ++at_;
    }
    Entry* at_;
    Entry* end_;
  };

  iterator begin() { return {slots_.data(), slots_.data() + slots_.size()}; }
  iterator end() { return {slots_.data() + slots_.size(), slots_.data() + slots_.size()}; }
  size_t size() const { return count_; }

  iterator find(void* key) {
    if (slots_.empty() || key == nullptr) return end();
    for (size_t i = home(key);; i = (i + 1) & mask()) {
      Entry& e = slots_[i];
      if (e.first == key) return {&e, slots_.data() + slots_.size()};
      if (e.first == nullptr) return end();
    }
  }

  // Inserts (key, value) unless the key is present; the bool says whether
  // it was inserted. `key` must not be null.
  std::pair<iterator, bool> emplace(void* key, V value) {
    if ((count_ + 1) * 2 > slots_.size()) grow();
    size_t i = home(key);
    for (; slots_[i].first != nullptr; i = (i + 1) & mask())
      if (slots_[i].first == key) return {iterator(&slots_[i], slots_.data() + slots_.size()), false};
    slots_[i].first = key;
    slots_[i].second = std::move(value);
    ++count_;
    return {iterator(&slots_[i], slots_.data() + slots_.size()), true};
  }

  // Erases a found entry: the entries after it in its probe run move back
  // so that every entry stays reachable from its home slot.
  void erase(iterator it) {
    size_t hole = static_cast<size_t>(it.at_ - slots_.data());
    size_t j = hole;
    for (;;) {
      j = (j + 1) & mask();
      Entry& next = slots_[j];
      if (next.first == nullptr) break;
      const size_t k = home(next.first);
      // `next` may fill the hole unless its home lies cyclically in (hole, j].
      const bool stays = hole <= j ? (hole < k && k <= j) : (hole < k || k <= j);
      if (stays) continue;
      slots_[hole] = std::move(next);
      hole = j;
    }
    slots_[hole].first = nullptr;
    slots_[hole].second = V{};
    --count_;
  }

 private:
  size_t mask() const { return slots_.size() - 1; }
  size_t home(void* key) const {
    // Allocations are at least 256-byte aligned: mix the bits above that.
    const uint64_t p = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(key)) >> 8;
    return static_cast<size_t>((p * 0x9E3779B97F4A7C15ull) >> 32) & mask();
  }
  void grow() {
    std::vector<Entry> old(slots_.empty() ? 64 : slots_.size() * 2);
    old.swap(slots_);
    count_ = 0;
    for (Entry& e : old)
      if (e.first != nullptr) emplace(e.first, std::move(e.second));
  }

  std::vector<Entry> slots_;
  size_t count_ = 0;
};

}  // namespace cumem
