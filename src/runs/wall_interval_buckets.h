// The usual wall-time interval of a series, the stall test's yardstick (health.h), and the
// bucket counts that find it while streaming in a memory set by how spread the intervals are
// rather than by how many there are.
//
// The usual interval is the lower median of the finite, non-negative wall-time intervals (the
// one of rank (n - 1) / 2 in increasing order), rounded down to its bucket: a bucket is the set of
// doubles that share their top 22 bits (sign, exponent and the first 10 bits of the mantissa),
// 1 024 buckets a binade, each 2^-10 of its lower edge wide. The figure is thus at most 0.1 %
// below the median, and the same whether a series is tested on its points or streamed: the
// bucket of a rank follows from the counts alone. Internal to the library.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

namespace mosaic::runs::detail {

// The lower edge of the bucket of `seconds` (finite and not negative).
inline double WallIntervalFloor(double seconds) {
  uint64_t bits;
  std::memcpy(&bits, &seconds, sizeof bits);
  bits &= ~((uint64_t{1} << 42) - 1);
  double floor;
  std::memcpy(&floor, &bits, sizeof floor);
  return floor;
}

// The usual interval of `intervals` (finite and not negative, not empty), which it reorders.
double UsualWallInterval(std::vector<double>& intervals);

// The intervals of a series counted by bucket. Memory: 8 bytes an entry, at most twice the
// buckets met (open addressing); intervals with the spread of a jittered step time (±15 %) meet a
// few hundred, however many there are.
class WallIntervalBuckets {
 public:
  // Counts one interval of `seconds` (finite and not negative).
  void Add(double seconds) {
    const uint64_t key = KeyOf(seconds);
    if (count_ > 0 && key == last_key_) {
      ++table_[last_slot_];
    } else {
      last_key_ = key;
      last_slot_ = Insert(key, 1);
    }
    ++count_;
  }

  // Adds the counts of `other` (the intervals of another stretch of the series).
  void Append(const WallIntervalBuckets& other);

  // UsualWallInterval() of the intervals counted. Requires count() > 0.
  double UsualSeconds() const;

  int64_t count() const { return count_; }
  // The buckets met (distinct keys).
  size_t buckets() const { return used_; }

  // Frees the table.
  void Clear() {
    std::vector<uint64_t>().swap(table_);
    used_ = 0;
    count_ = 0;
  }

 private:
  // The bucket of `seconds`: its top 22 bits (below 2^21 for a value not negative).
  static uint64_t KeyOf(double seconds) {
    uint64_t bits;
    std::memcpy(&bits, &seconds, sizeof bits);
    return bits >> kDroppedBits;
  }
  // Adds `count` to the entry of `key`, creating it; returns its slot.
  size_t Insert(uint64_t key, uint64_t count);
  void Grow();

  // An entry packs key + 1 (0 marks an empty slot) above a count of kCountBits bits (a bucket
  // holds fewer than 2^42 intervals: a series of that many points would take 100 TB of logs).
  static constexpr int kDroppedBits = 42;
  static constexpr int kCountBits = 42;
  static constexpr uint64_t kCountMask = (uint64_t{1} << kCountBits) - 1;

  std::vector<uint64_t> table_;  // capacity a power of 2, empty or at most half full
  size_t used_ = 0;
  int64_t count_ = 0;
  uint64_t last_key_ = 0;  // the key of the last interval added, in slot last_slot_
  size_t last_slot_ = 0;
};

}  // namespace mosaic::runs::detail
