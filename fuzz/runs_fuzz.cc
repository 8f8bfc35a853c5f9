// libFuzzer target for the record and protobuf decoding: the input is read as an event file
// (TFRecord framing, CRC32C, Event/Summary/Tensor/Histogram decoding), as one Event payload, and
// as CSV and JSONL logs. Build with the `fuzz` preset (clang-16); see .ci/run for the bounded run.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "mosaic/runs/event.h"
#include "mosaic/runs/event_file.h"
#include "mosaic/runs/table_log.h"
#include "mosaic/runs/tfrecord_reader.h"
#include "mosaic/util/error.h"

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
    Event event;
    std::string error;
    (void)DecodeEvent(bytes, &event, &error);
  }
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
