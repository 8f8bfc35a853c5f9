#include "wall_interval_buckets.h"

#include <algorithm>
#include <bit>

namespace mosaic::runs::detail {
namespace {

// Fibonacci hashing of a key into a table of 2^bits slots.
size_t SlotOf(uint64_t key, int bits) {
  return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> (64 - bits));
}

double FromBits(uint64_t bits) {
  double value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

}  // namespace

size_t WallIntervalBuckets::Insert(uint64_t key, uint64_t count) {
  if (2 * (used_ + 1) > table_.size()) Grow();
  const int bits = std::countr_zero(table_.size());
  const size_t mask = table_.size() - 1;
  const uint64_t tag = (key + 1) << kCountBits;
  for (size_t slot = SlotOf(key, bits);; slot = (slot + 1) & mask) {
    uint64_t& entry = table_[slot];
    if (entry == 0) {
      entry = tag | count;
      ++used_;
      return slot;
    }
    if ((entry & ~kCountMask) == tag) {
      entry += count;
      return slot;
    }
  }
}

void WallIntervalBuckets::Grow() {
  std::vector<uint64_t> old;
  old.swap(table_);
  table_.assign(std::max<size_t>(16, 2 * old.size()), 0);
  used_ = 0;
  for (const uint64_t entry : old) {
    if (entry != 0) Insert((entry >> kCountBits) - 1, entry & kCountMask);
  }
  // The slot of the last key moved.
  if (count_ > 0) last_slot_ = Insert(last_key_, 0);
}

void WallIntervalBuckets::Append(const WallIntervalBuckets& other) {
  for (const uint64_t entry : other.table_) {
    if (entry != 0) Insert((entry >> kCountBits) - 1, entry & kCountMask);
  }
  count_ += other.count_;
  // The slot of the last key may have moved.
  if (count_ > 0) last_slot_ = Insert(last_key_, 0);
}

double WallIntervalBuckets::UsualSeconds() const {
  std::vector<std::pair<uint64_t, uint64_t>> sorted;  // (key, count) by key
  sorted.reserve(used_);
  for (const uint64_t entry : table_) {
    if (entry != 0) sorted.emplace_back((entry >> kCountBits) - 1, entry & kCountMask);
  }
  // Keys not negative sort as their values do.
  std::sort(sorted.begin(), sorted.end());
  auto rank = static_cast<uint64_t>((count_ - 1) / 2);
  for (const auto& [key, count] : sorted) {
    if (rank < count) return FromBits(key << kDroppedBits);
    rank -= count;
  }
  return 0;  // not reached: the rank is below count_
}

double UsualWallInterval(std::vector<double>& intervals) {
  const auto lower_median =
      intervals.begin() + static_cast<std::ptrdiff_t>((intervals.size() - 1) / 2);
  std::nth_element(intervals.begin(), lower_median, intervals.end());
  return WallIntervalFloor(*lower_median);
}

}  // namespace mosaic::runs::detail
