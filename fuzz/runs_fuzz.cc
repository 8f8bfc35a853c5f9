// libFuzzer target for the record and protobuf decoding: the input is read as an event file
// (TFRecord framing, CRC32C, Event/Summary/Tensor/Histogram decoding), as one Event payload, and
// as CSV and JSONL logs. Two fast paths are checked against the general ones they stand in for
// (a difference traps, like a crash): the record reader's, by reading through a buffer of 64
// bytes (most records arrive in pieces: the full path) and one that holds the whole input (every
// record whole: the fast lane); and the one-scalar decoder's, against DecodeEvent, on the input
// and on every record payload. Reading in parts is checked too: the input split at a point it
// chooses, the second part started at its first intact record (FindIntactRecord); whenever the
// parts join and report no damage, their records are exactly those of one reader. Build with the `fuzz` preset (clang-16); see .ci/run for the
// bounded run.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mosaic/runs/event.h"
#include "mosaic/runs/event_file.h"
#include "mosaic/runs/table_log.h"
#include "mosaic/runs/tfrecord_reader.h"
#include "mosaic/util/error.h"

namespace {

// DecodeSimpleScalarEvent declines `payload` or gives what DecodeEvent gives; traps otherwise.
void CheckSimpleScalarDecoder(std::string_view payload) {
  using namespace mosaic::runs;
  Event event;
  std::string error;
  const bool decoded = DecodeEvent(payload, &event, &error);
  SimpleScalarEvent simple;
  if (!DecodeSimpleScalarEvent(payload, &simple)) return;
  auto same_bits = [](double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; };
  if (!decoded || event.values.size() != 1 || event.values[0].kind != ValueKind::kScalar ||
      event.values[0].encoding != ScalarEncoding::kSimpleValue || !event.values[0].float32 ||
      !event.values[0].plugin_name.empty() || event.values[0].tag != simple.tag ||
      !same_bits(event.values[0].scalar, simple.value) || event.step != simple.step ||
      !same_bits(event.wall_time_seconds, simple.wall_time_seconds)) {
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mosaic::runs;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  {
    EventFileReader reader(MemorySource(bytes), "fuzz", /*verify_payload_crc=*/size % 2 == 0,
                           /*buffer_bytes=*/64);
    EventItem item;
    int64_t n = 0;
    while (reader.Next(&item)) ++n;
    (void)reader.issues();
  }
  {
    // (offset, payload size) of every record read, and the damage reported.
    auto records = [&](size_t buffer_bytes) {
      TfRecordReader reader(MemorySource(bytes), "fuzz", true, buffer_bytes);
      std::vector<std::pair<int64_t, size_t>> out;
      std::string_view payload;
      int64_t offset;
      while (reader.Next(&payload, &offset)) {
        out.emplace_back(offset, payload.size());
        CheckSimpleScalarDecoder(payload);
      }
      std::vector<std::pair<int64_t, RecordIssueKind>> issues;
      for (const RecordIssue& issue : reader.issues()) {
        issues.emplace_back(issue.offset_bytes, issue.kind);
      }
      return std::make_pair(out, issues);
    };
    const auto whole = records(64);
    if (whole != records(size + 16)) __builtin_trap();
    if (size >= 2) {
      // Parts [0, split) and [split, end): joined when the second starts where the first stopped.
      const size_t split = 1 + (data[0] * 257u + data[size - 1]) % (size - 1);
      TfRecordReader first(MemorySource(bytes), "fuzz", true, 64, {0, static_cast<int64_t>(split)});
      std::vector<std::pair<int64_t, size_t>> joined;
      std::string_view payload;
      int64_t offset;
      while (first.Next(&payload, &offset)) joined.emplace_back(offset, payload.size());
      const std::unique_ptr<ByteSource> probe = MemorySource(bytes, split);
      const int64_t start = FindIntactRecord(*probe, static_cast<int64_t>(split),
                                             static_cast<int64_t>(size), static_cast<int64_t>(size));
      bool clean = first.issues().empty();
      if (start >= 0) {
        clean = clean && start == first.next_offset_bytes();
        TfRecordReader second(MemorySource(bytes, static_cast<size_t>(start)), "fuzz", true, 64,
                              {start, -1});
        while (second.Next(&payload, &offset)) joined.emplace_back(offset, payload.size());
        clean = clean && second.issues().empty();
      } else {
        clean = clean && first.next_offset_bytes() >= static_cast<int64_t>(size);
      }
      if (clean && (!whole.second.empty() || joined != whole.first)) __builtin_trap();
    }
  }
  CheckSimpleScalarDecoder(bytes);
  if (size < 4096) {
    try {
      (void)ReadCsvLog(bytes, "fuzz.csv");
    } catch (const mosaic::InputError&) {
    }
    try {
      (void)ReadJsonlLog(bytes, "fuzz.jsonl");
    } catch (const mosaic::InputError&) {
    }
  }
  return 0;
}
