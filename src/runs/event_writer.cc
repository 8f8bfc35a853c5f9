#include "mosaic/runs/event_writer.h"

#include <bit>
#include <cstring>

#include "mosaic/runs/crc32c.h"

namespace mosaic::runs {
namespace {

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

void PutKey(std::string* out, uint32_t field, int wire_type) {
  PutVarint(out, (uint64_t{field} << 3) | static_cast<uint64_t>(wire_type));
}

void PutFixed32(std::string* out, uint32_t v) {
  char bytes[4];
  std::memcpy(bytes, &v, 4);
  out->append(bytes, 4);
}

void PutFixed64(std::string* out, uint64_t v) {
  char bytes[8];
  std::memcpy(bytes, &v, 8);
  out->append(bytes, 8);
}

void PutBytes(std::string* out, uint32_t field, std::string_view bytes) {
  PutKey(out, field, 2);
  PutVarint(out, bytes.size());
  out->append(bytes);
}

void PutWallTimeAndStep(std::string* out, double wall_time_seconds, int64_t step) {
  PutKey(out, 1, 1);
  PutFixed64(out, std::bit_cast<uint64_t>(wall_time_seconds));
  if (step != 0) {
    PutKey(out, 2, 0);
    PutVarint(out, static_cast<uint64_t>(step));
  }
}

}  // namespace

std::string EncodeFileVersionEvent(double wall_time_seconds, std::string_view version) {
  std::string event;
  PutWallTimeAndStep(&event, wall_time_seconds, 0);
  PutBytes(&event, 3, version);
  return event;
}

std::string EncodeScalarEvent(double wall_time_seconds, int64_t step, std::string_view tag,
                              double value, ScalarEncoding encoding, std::string_view plugin_name) {
  std::string summary_value;
  PutBytes(&summary_value, 1, tag);
  if (!plugin_name.empty()) {
    std::string plugin_data;
    PutBytes(&plugin_data, 1, plugin_name);
    std::string metadata;
    PutBytes(&metadata, 1, plugin_data);
    PutBytes(&summary_value, 9, metadata);
  }
  std::string tensor;
  const auto as_float = static_cast<float>(value);
  switch (encoding) {
    case ScalarEncoding::kSimpleValue:
      PutKey(&summary_value, 2, 5);
      PutFixed32(&summary_value, std::bit_cast<uint32_t>(as_float));
      break;
    case ScalarEncoding::kTensorContent: {
      PutKey(&tensor, 1, 0);
      PutVarint(&tensor, 1);  // DT_FLOAT
      PutBytes(&tensor, 2, "");
      std::string content;
      PutFixed32(&content, std::bit_cast<uint32_t>(as_float));
      PutBytes(&tensor, 4, content);
      break;
    }
    case ScalarEncoding::kFloatVal: {
      PutKey(&tensor, 1, 0);
      PutVarint(&tensor, 1);  // DT_FLOAT
      PutBytes(&tensor, 2, "");
      std::string packed;
      PutFixed32(&packed, std::bit_cast<uint32_t>(as_float));
      PutBytes(&tensor, 5, packed);
      break;
    }
    case ScalarEncoding::kDoubleVal: {
      PutKey(&tensor, 1, 0);
      PutVarint(&tensor, 2);  // DT_DOUBLE
      PutBytes(&tensor, 2, "");
      std::string packed;
      PutFixed64(&packed, std::bit_cast<uint64_t>(value));
      PutBytes(&tensor, 6, packed);
      break;
    }
    case ScalarEncoding::kIntVal: {
      PutKey(&tensor, 1, 0);
      PutVarint(&tensor, 9);  // DT_INT64
      PutBytes(&tensor, 2, "");
      std::string packed;
      PutVarint(&packed, static_cast<uint64_t>(static_cast<int64_t>(value)));
      PutBytes(&tensor, 10, packed);
      break;
    }
  }
  if (!tensor.empty()) PutBytes(&summary_value, 8, tensor);
  std::string summary;
  PutBytes(&summary, 1, summary_value);
  std::string event;
  PutWallTimeAndStep(&event, wall_time_seconds, step);
  PutBytes(&event, 5, summary);
  return event;
}

std::string EncodeSessionStartEvent(double wall_time_seconds, int64_t step) {
  std::string session_log;
  PutKey(&session_log, 1, 0);
  PutVarint(&session_log, 1);
  std::string event;
  PutWallTimeAndStep(&event, wall_time_seconds, step);
  PutBytes(&event, 7, session_log);
  return event;
}

std::string FrameRecord(std::string_view payload) {
  std::string record;
  record.reserve(payload.size() + 16);
  const uint64_t length = payload.size();
  char length_bytes[8];
  std::memcpy(length_bytes, &length, 8);
  record.append(length_bytes, 8);
  PutFixed32(&record, MaskCrc32c(Crc32cExtend(0, length_bytes, 8)));
  record.append(payload);
  PutFixed32(&record, MaskCrc32c(Crc32cExtend(0, payload.data(), payload.size())));
  return record;
}

}  // namespace mosaic::runs
