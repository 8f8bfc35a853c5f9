#include "mosaic/runs/event.h"

#include <fmt/format.h>

#include <bit>
#include <cstring>

namespace mosaic::runs {
namespace {

enum WireType : int { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

// A bounds-checked cursor over protobuf wire format.
class WireReader {
 public:
  explicit WireReader(std::string_view bytes) : p_(bytes.data()), end_(bytes.data() + bytes.size()) {}

  bool done() const { return p_ >= end_; }
  const std::string& error() const { return error_; }

  bool ReadVarint(uint64_t* value) {
    // One-byte varints (field keys, small steps and lengths) are the common case.
    if (p_ < end_ && (static_cast<uint8_t>(*p_) & 0x80) == 0) {
      *value = static_cast<uint8_t>(*p_++);
      return true;
    }
    uint64_t result = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ >= end_) return Fail("varint runs past the end");
      const auto byte = static_cast<uint8_t>(*p_++);
      result |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) {
        *value = result;
        return true;
      }
    }
    return Fail("varint longer than 10 bytes");
  }

  // Reads a field key; false at a malformed key.
  bool ReadKey(uint32_t* field, int* wire_type) {
    uint64_t key;
    if (!ReadVarint(&key)) return false;
    *field = static_cast<uint32_t>(key >> 3);
    *wire_type = static_cast<int>(key & 7);
    if (*field == 0) return Fail("field number 0");
    return true;
  }

  bool ReadFixed32(uint32_t* value) {
    if (end_ - p_ < 4) return Fail("fixed32 runs past the end");
    std::memcpy(value, p_, 4);
    p_ += 4;
    return true;
  }

  bool ReadFixed64(uint64_t* value) {
    if (end_ - p_ < 8) return Fail("fixed64 runs past the end");
    std::memcpy(value, p_, 8);
    p_ += 8;
    return true;
  }

  bool ReadBytes(std::string_view* value) {
    uint64_t length;
    if (!ReadVarint(&length)) return false;
    if (length > static_cast<uint64_t>(end_ - p_)) {
      return Fail(fmt::format("length {} exceeds the {} bytes left", length, end_ - p_));
    }
    *value = std::string_view(p_, length);
    p_ += length;
    return true;
  }

  bool Skip(int wire_type) {
    uint64_t ignored64;
    uint32_t ignored32;
    std::string_view ignored_bytes;
    switch (wire_type) {
      case kVarint: return ReadVarint(&ignored64);
      case kFixed64: return ReadFixed64(&ignored64);
      case kLengthDelimited: return ReadBytes(&ignored_bytes);
      case kFixed32: return ReadFixed32(&ignored32);
      default: return Fail(fmt::format("unsupported wire type {}", wire_type));
    }
  }

  bool Fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
    p_ = end_;
    return false;
  }

 private:
  const char* p_;
  const char* end_;
  std::string error_;
};

double AsDouble(uint64_t bits) { return std::bit_cast<double>(bits); }
float AsFloat(uint32_t bits) { return std::bit_cast<float>(bits); }

constexpr int kDtFloat = 1;
constexpr int kDtDouble = 2;
constexpr int kDtInt32 = 3;
constexpr int kDtString = 7;
constexpr int kDtInt64 = 9;

struct TensorFields {
  int dtype = 0;
  int rank = 0;
  bool all_dims_one = true;
  std::string_view content;
  int values_seen = 0;  // number of entries in the typed *_val fields
  double first_value = 0;
  ScalarEncoding encoding = ScalarEncoding::kTensorContent;
};

// Reads the first element of a repeated numeric field, packed or not.
bool ReadRepeatedNumber(WireReader& r, int wire_type, int element_wire, TensorFields* t,
                        ScalarEncoding encoding, bool is_signed32) {
  auto take = [&](double v) {
    if (t->values_seen == 0) {
      t->first_value = v;
      t->encoding = encoding;
    }
    ++t->values_seen;
  };
  auto read_one = [&](WireReader& in) -> bool {
    switch (element_wire) {
      case kFixed32: {
        uint32_t bits = 0;
        if (!in.ReadFixed32(&bits)) return false;
        take(AsFloat(bits));
        return true;
      }
      case kFixed64: {
        uint64_t bits = 0;
        if (!in.ReadFixed64(&bits)) return false;
        take(AsDouble(bits));
        return true;
      }
      default: {
        uint64_t v;
        if (!in.ReadVarint(&v)) return false;
        take(is_signed32 ? static_cast<double>(static_cast<int32_t>(v))
                         : static_cast<double>(static_cast<int64_t>(v)));
        return true;
      }
    }
  };
  if (wire_type == kLengthDelimited) {
    std::string_view packed;
    if (!r.ReadBytes(&packed)) return false;
    WireReader in(packed);
    while (!in.done()) {
      if (!read_one(in)) return r.Fail("packed field: " + in.error());
    }
    return true;
  }
  if (wire_type != element_wire) return r.Fail(fmt::format("wire type {} for a number", wire_type));
  return read_one(r);
}

// Reads every field of the nested message `bytes`: `on_field(r, field, wire)` consumes one field's
// value (r.Skip(wire) for fields it does not use) and returns false to stop. A wire-format error
// of the nested message is reported to `parent` prefixed with `what`.
template <typename OnField>
bool ForEachField(std::string_view bytes, std::string_view what, WireReader& parent,
                  OnField on_field) {
  WireReader r(bytes);
  while (!r.done()) {
    uint32_t field;
    int wire;
    if (!r.ReadKey(&field, &wire) || !on_field(r, field, wire)) break;
  }
  if (!r.error().empty()) return parent.Fail(std::string(what) + ": " + r.error());
  return true;
}

bool DecodeShape(std::string_view bytes, TensorFields* t, WireReader& parent) {
  return ForEachField(bytes, "tensor_shape", parent, [&](WireReader& r, uint32_t field, int wire) {
    if (field != 2 || wire != kLengthDelimited) return r.Skip(wire);
    std::string_view dim;
    if (!r.ReadBytes(&dim)) return false;
    ++t->rank;
    return ForEachField(dim, "tensor_shape.dim", r, [&](WireReader& d, uint32_t df, int dw) {
      if (df != 1 || dw != kVarint) return d.Skip(dw);
      uint64_t size;
      if (!d.ReadVarint(&size)) return false;
      if (size != 1) t->all_dims_one = false;
      return true;
    });
  });
}

bool DecodeTensor(std::string_view bytes, SummaryValue* value, WireReader& parent) {
  TensorFields t;
  const bool read = ForEachField(bytes, "tensor", parent, [&](WireReader& r, uint32_t field,
                                                              int wire) {
    bool ok = true;
    switch (field) {
      case 1: {
        uint64_t dtype;
        ok = wire == kVarint ? r.ReadVarint(&dtype) : r.Skip(wire);
        if (ok && wire == kVarint) t.dtype = static_cast<int>(dtype);
        break;
      }
      case 2: {
        std::string_view shape;
        ok = wire == kLengthDelimited ? r.ReadBytes(&shape) && DecodeShape(shape, &t, r)
                                      : r.Skip(wire);
        break;
      }
      case 4:
        ok = wire == kLengthDelimited ? r.ReadBytes(&t.content) : r.Skip(wire);
        break;
      case 5:
        ok = ReadRepeatedNumber(r, wire, kFixed32, &t, ScalarEncoding::kFloatVal, false);
        break;
      case 6:
        ok = ReadRepeatedNumber(r, wire, kFixed64, &t, ScalarEncoding::kDoubleVal, false);
        break;
      case 7:
        ok = ReadRepeatedNumber(r, wire, kVarint, &t, ScalarEncoding::kIntVal, true);
        break;
      case 10:
        ok = ReadRepeatedNumber(r, wire, kVarint, &t, ScalarEncoding::kIntVal, false);
        break;
      default:
        ok = r.Skip(wire);
        break;
    }
    return ok;
  });
  if (!read) return false;

  value->kind = ValueKind::kTensor;
  const bool single = t.rank == 0 || t.all_dims_one;
  if (!single || t.dtype == kDtString) return true;
  if (!t.content.empty()) {
    const std::string_view c = t.content;
    if (t.dtype == kDtFloat && c.size() == 4) {
      uint32_t bits = 0;
      std::memcpy(&bits, c.data(), 4);
      value->scalar = AsFloat(bits);
      value->float32 = true;
    } else if (t.dtype == kDtDouble && c.size() == 8) {
      uint64_t bits = 0;
      std::memcpy(&bits, c.data(), 8);
      value->scalar = AsDouble(bits);
    } else if (t.dtype == kDtInt32 && c.size() == 4) {
      int32_t v;
      std::memcpy(&v, c.data(), 4);
      value->scalar = v;
    } else if (t.dtype == kDtInt64 && c.size() == 8) {
      int64_t v;
      std::memcpy(&v, c.data(), 8);
      value->scalar = static_cast<double>(v);
    } else {
      return true;
    }
    value->kind = ValueKind::kScalar;
    value->encoding = ScalarEncoding::kTensorContent;
    return true;
  }
  if (t.values_seen != 1) return true;
  const bool dtype_matches =
      (t.encoding == ScalarEncoding::kFloatVal && t.dtype == kDtFloat) ||
      (t.encoding == ScalarEncoding::kDoubleVal && t.dtype == kDtDouble) ||
      (t.encoding == ScalarEncoding::kIntVal && (t.dtype == kDtInt32 || t.dtype == kDtInt64));
  if (!dtype_matches) return true;
  value->kind = ValueKind::kScalar;
  value->encoding = t.encoding;
  value->scalar = t.first_value;
  value->float32 = t.encoding == ScalarEncoding::kFloatVal;
  return true;
}

bool DecodeHistogram(std::string_view bytes, SummaryValue* value, WireReader& parent) {
  HistogramSummary h;
  const bool read = ForEachField(bytes, "histo", parent, [&](WireReader& r, uint32_t field,
                                                             int wire) {
    if (field < 1 || field > 4 || wire != kFixed64) return r.Skip(wire);
    uint64_t bits = 0;
    if (!r.ReadFixed64(&bits)) return false;
    const double v = AsDouble(bits);
    if (field == 1) h.min = v;
    if (field == 2) h.max = v;
    if (field == 3) h.count = v;
    if (field == 4) h.sum = v;
    return true;
  });
  if (!read) return false;
  value->kind = ValueKind::kHistogram;
  value->histogram = h;
  return true;
}

bool DecodeMetadata(std::string_view bytes, SummaryValue* value, WireReader& parent) {
  return ForEachField(bytes, "metadata", parent, [&](WireReader& r, uint32_t field, int wire) {
    if (field != 1 || wire != kLengthDelimited) return r.Skip(wire);
    std::string_view plugin_data;
    if (!r.ReadBytes(&plugin_data)) return false;
    return ForEachField(plugin_data, "metadata.plugin_data", r,
                        [&](WireReader& p, uint32_t pf, int pw) {
                          if (pf != 1 || pw != kLengthDelimited) return p.Skip(pw);
                          return p.ReadBytes(&value->plugin_name);
                        });
  });
}

bool DecodeValue(std::string_view bytes, SummaryValue* value, WireReader& parent) {
  return ForEachField(bytes, "summary.value", parent, [&](WireReader& r, uint32_t field,
                                                          int wire) {
    if (field == 2 && wire == kFixed32) {
      uint32_t bits = 0;
      const bool ok = r.ReadFixed32(&bits);
      value->kind = ValueKind::kScalar;
      value->encoding = ScalarEncoding::kSimpleValue;
      value->float32 = true;
      value->scalar = AsFloat(bits);
      return ok;
    }
    if (wire != kLengthDelimited) return r.Skip(wire);
    std::string_view sub;
    if (!r.ReadBytes(&sub)) return false;
    switch (field) {
      case 1: value->tag = sub; return true;
      case 4: value->kind = ValueKind::kImage; return true;
      case 5: return DecodeHistogram(sub, value, r);
      case 6: value->kind = ValueKind::kAudio; return true;
      case 8: return DecodeTensor(sub, value, r);
      case 9: return DecodeMetadata(sub, value, r);
      default: return true;
    }
  });
}

bool DecodeSummary(std::string_view bytes, Event* event, WireReader& parent) {
  return ForEachField(bytes, "summary", parent, [&](WireReader& r, uint32_t field, int wire) {
    if (field != 1 || wire != kLengthDelimited) return r.Skip(wire);
    std::string_view sub;
    if (!r.ReadBytes(&sub)) return false;
    return DecodeValue(sub, &event->values.emplace_back(), r);
  });
}

bool DecodeSessionLog(std::string_view bytes, Event* event, WireReader& parent) {
  return ForEachField(bytes, "session_log", parent, [&](WireReader& r, uint32_t field, int wire) {
    if (field != 1 || wire != kVarint) return r.Skip(wire);
    uint64_t status;
    if (!r.ReadVarint(&status)) return false;
    event->session_log_status = static_cast<int>(status);
    return true;
  });
}

// The shape of nearly every record of a scalar log (PyTorch's SummaryWriter, tensorboardX,
// TF1's tf.summary.scalar): wall_time (1), step (2) and a summary (5) whose values hold only a tag
// (1) and a simple_value (2), every key in its one-byte form. Decoded in one pass without the
// general reader's bookkeeping; any other field, wire type or a malformed byte returns false
// before anything but `event->values` is touched, and the general decoder then starts over. For
// the bytes it accepts the result is the general decoder's, field for field.
const char* FastVarint(const char* p, const char* end, uint64_t* value) {
  uint64_t result = 0;
  for (int shift = 0; shift < 64 && p < end; shift += 7) {
    const auto byte = static_cast<uint8_t>(*p++);
    result |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *value = result;
      return p;
    }
  }
  return nullptr;
}

// Reads a length prefix at `p` and checks it against `end`; the field's bytes start at the result.
const char* FastLength(const char* p, const char* end, uint64_t* length) {
  if (p < end && (static_cast<uint8_t>(*p) & 0x80) == 0) {
    *length = static_cast<uint8_t>(*p);
    ++p;
  } else {
    p = FastVarint(p, end, length);
    if (p == nullptr) return nullptr;
  }
  return *length <= static_cast<uint64_t>(end - p) ? p : nullptr;
}

// A little-endian fixed64 (a double) or fixed32 (a float) at `p`; null when fewer bytes than that
// are left before `end`, else where the field ends.
const char* FastFixed64(const char* p, const char* end, double* value) {
  if (end - p < 8) return nullptr;
  uint64_t bits;
  std::memcpy(&bits, p, 8);
  *value = AsDouble(bits);
  return p + 8;
}
const char* FastFixed32(const char* p, const char* end, float* value) {
  if (end - p < 4) return nullptr;
  uint32_t bits;
  std::memcpy(&bits, p, 4);
  *value = AsFloat(bits);
  return p + 4;
}

constexpr uint8_t Key(int field, int wire) { return static_cast<uint8_t>(field << 3 | wire); }

bool DecodeSimpleValueFast(const char* p, const char* end, SummaryValue* value) {
  while (p < end) {
    const auto key = static_cast<uint8_t>(*p++);
    if (key == Key(1, kLengthDelimited)) {
      uint64_t length;
      p = FastLength(p, end, &length);
      if (p == nullptr) return false;
      value->tag = std::string_view(p, length);
      p += length;
    } else if (key == Key(2, kFixed32)) {
      float simple_value;
      p = FastFixed32(p, end, &simple_value);
      if (p == nullptr) return false;
      value->kind = ValueKind::kScalar;
      value->encoding = ScalarEncoding::kSimpleValue;
      value->float32 = true;
      value->scalar = simple_value;
    } else {
      return false;
    }
  }
  return true;
}

bool DecodeSimpleEventFast(std::string_view payload, Event* event) {
  const char* p = payload.data();
  const char* end = p + payload.size();
  double wall_time_seconds = 0;
  int64_t step = 0;
  // Values are decoded into the vector's existing elements, each reset field by field (building a
  // fresh SummaryValue per value costs a block fill that dominated the decoding).
  std::vector<SummaryValue>& values = event->values;
  size_t used = 0;
  while (p < end) {
    const auto key = static_cast<uint8_t>(*p++);
    if (key == Key(1, kFixed64)) {
      p = FastFixed64(p, end, &wall_time_seconds);
      if (p == nullptr) return false;
    } else if (key == Key(2, kVarint)) {
      uint64_t v;
      p = FastVarint(p, end, &v);
      if (p == nullptr) return false;
      step = static_cast<int64_t>(v);
    } else if (key == Key(5, kLengthDelimited)) {
      uint64_t length;
      p = FastLength(p, end, &length);
      if (p == nullptr) return false;
      const char* summary_end = p + length;
      while (p < summary_end) {
        if (static_cast<uint8_t>(*p++) != Key(1, kLengthDelimited)) return false;
        uint64_t value_length;
        p = FastLength(p, summary_end, &value_length);
        if (p == nullptr) return false;
        if (used == values.size()) values.emplace_back();
        SummaryValue& value = values[used++];
        value.tag = {};
        value.plugin_name = {};
        value.kind = ValueKind::kMetadataOnly;
        value.encoding = ScalarEncoding::kSimpleValue;
        value.float32 = false;
        value.scalar = 0;
        value.histogram = HistogramSummary{};
        if (!DecodeSimpleValueFast(p, p + value_length, &value)) return false;
        p += value_length;
      }
    } else {
      return false;
    }
  }
  values.resize(used);
  event->wall_time_seconds = wall_time_seconds;
  event->step = step;
  event->file_version = {};
  event->has_graph = false;
  event->session_log_status = 0;
  return true;
}

// DecodeSimpleScalarEvent for the layout every known writer produces, in one straight line:
// 09 <wall_time> 10 <step varint> 2a L 0a L-2 0a T <tag> 15 <float>, each length one byte.
// Returns false, having set nothing, for any other layout.
bool DecodeCanonicalScalarEvent(std::string_view payload, SimpleScalarEvent* event) {
  const auto* u = reinterpret_cast<const uint8_t*>(payload.data());
  const size_t n = payload.size();
  if (n < 22 || u[0] != Key(1, kFixed64) || u[9] != Key(2, kVarint)) return false;
  uint64_t step = 0;
  const char* after_step = FastVarint(payload.data() + 10, payload.data() + n, &step);
  if (after_step == nullptr) return false;
  const auto i = static_cast<size_t>(after_step - payload.data());
  if (n - i < 7 || u[i] != Key(5, kLengthDelimited)) return false;
  const size_t summary_bytes = u[i + 1];
  const size_t value_bytes = u[i + 3];
  const size_t tag_bytes = u[i + 5];
  if (summary_bytes >= 128 || i + 2 + summary_bytes != n || summary_bytes < 9 ||
      u[i + 2] != Key(1, kLengthDelimited) || value_bytes != summary_bytes - 2 ||
      u[i + 4] != Key(1, kLengthDelimited) || tag_bytes != value_bytes - 7 ||
      u[i + 6 + tag_bytes] != Key(2, kFixed32)) {
    return false;
  }
  float value = 0;  // both fields are in bounds, as checked above
  FastFixed64(payload.data() + 1, payload.data() + n, &event->wall_time_seconds);
  FastFixed32(payload.data() + i + 7 + tag_bytes, payload.data() + n, &value);
  event->step = static_cast<int64_t>(step);
  event->tag = std::string_view(payload.data() + i + 6, tag_bytes);
  event->value = value;
  return true;
}

}  // namespace

bool DecodeSimpleScalarEvent(std::string_view payload, SimpleScalarEvent* event) {
  if (DecodeCanonicalScalarEvent(payload, event)) return true;
  const char* p = payload.data();
  const char* end = p + payload.size();
  bool have_wall_time = false;
  bool have_step = false;
  bool have_value = false;
  while (p < end) {
    const auto key = static_cast<uint8_t>(*p++);
    if (key == Key(1, kFixed64) && !have_wall_time) {
      p = FastFixed64(p, end, &event->wall_time_seconds);
      if (p == nullptr) return false;
      have_wall_time = true;
    } else if (key == Key(2, kVarint) && !have_step) {
      uint64_t v;
      p = FastVarint(p, end, &v);
      if (p == nullptr) return false;
      event->step = static_cast<int64_t>(v);
      have_step = true;
    } else if (key == Key(5, kLengthDelimited) && !have_value) {
      // The summary: one value (key 1), which is the whole summary and holds one tag (1) and
      // one simple_value (2).
      uint64_t length;
      p = FastLength(p, end, &length);
      if (p == nullptr || length == 0 || static_cast<uint8_t>(*p) != Key(1, kLengthDelimited)) {
        return false;
      }
      const char* summary_end = p + length;
      uint64_t value_length;
      p = FastLength(p + 1, summary_end, &value_length);
      if (p == nullptr || p + value_length != summary_end) return false;
      bool have_tag = false;
      bool have_simple_value = false;
      while (p < summary_end) {
        const auto value_key = static_cast<uint8_t>(*p++);
        if (value_key == Key(1, kLengthDelimited) && !have_tag) {
          uint64_t tag_length;
          p = FastLength(p, summary_end, &tag_length);
          if (p == nullptr) return false;
          event->tag = std::string_view(p, tag_length);
          p += tag_length;
          have_tag = true;
        } else if (value_key == Key(2, kFixed32) && !have_simple_value) {
          float value;
          p = FastFixed32(p, summary_end, &value);
          if (p == nullptr) return false;
          event->value = value;
          have_simple_value = true;
        } else {
          return false;
        }
      }
      if (!have_tag || !have_simple_value) return false;
      have_value = true;
    } else {
      return false;
    }
  }
  if (!have_value) return false;
  if (!have_wall_time) event->wall_time_seconds = 0;
  if (!have_step) event->step = 0;
  return true;
}

std::string_view ToString(ValueKind kind) {
  switch (kind) {
    case ValueKind::kScalar: return "scalar";
    case ValueKind::kHistogram: return "histogram";
    case ValueKind::kImage: return "image";
    case ValueKind::kAudio: return "audio";
    case ValueKind::kTensor: return "tensor";
    case ValueKind::kMetadataOnly: return "metadata";
  }
  return "?";
}

std::string_view ToString(ScalarEncoding encoding) {
  switch (encoding) {
    case ScalarEncoding::kSimpleValue: return "simple_value";
    case ScalarEncoding::kTensorContent: return "tensor_content";
    case ScalarEncoding::kFloatVal: return "float_val";
    case ScalarEncoding::kDoubleVal: return "double_val";
    case ScalarEncoding::kIntVal: return "int_val";
  }
  return "?";
}

bool DecodeEvent(std::string_view payload, Event* event, std::string* error) {
  if (DecodeSimpleEventFast(payload, event)) return true;
  event->wall_time_seconds = 0;
  event->step = 0;
  event->file_version = {};
  event->has_graph = false;
  event->session_log_status = 0;
  event->values.clear();
  WireReader r(payload);
  while (!r.done()) {
    uint32_t field;
    int wire;
    if (!r.ReadKey(&field, &wire)) break;
    bool ok = true;
    if (field == 1 && wire == kFixed64) {
      uint64_t bits = 0;
      ok = r.ReadFixed64(&bits);
      event->wall_time_seconds = AsDouble(bits);
    } else if (field == 2 && wire == kVarint) {
      uint64_t step = 0;
      ok = r.ReadVarint(&step);
      event->step = static_cast<int64_t>(step);
    } else if (wire == kLengthDelimited && (field == 3 || field == 4 || field == 5 || field == 7)) {
      std::string_view sub;
      ok = r.ReadBytes(&sub);
      if (ok && field == 3) event->file_version = sub;
      if (ok && field == 4) event->has_graph = true;
      if (ok && field == 5) ok = DecodeSummary(sub, event, r);
      if (ok && field == 7) ok = DecodeSessionLog(sub, event, r);
    } else {
      ok = r.Skip(wire);
    }
    if (!ok) break;
  }
  if (!r.error().empty()) {
    *error = r.error();
    return false;
  }
  return true;
}

}  // namespace mosaic::runs
