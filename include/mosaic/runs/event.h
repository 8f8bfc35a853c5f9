// Decoding of TensorBoard `Event` protobufs (the TFRecord payloads of event files), without a
// protobuf library: only the fields mosaic needs are read, unknown fields are skipped by wire type.
//
// Field numbers (tensorboard/compat/proto/{event,summary,tensor,tensor_shape}.proto; docs/logs.md):
//   Event: wall_time 1 (double), step 2 (int64), file_version 3, graph_def 4, summary 5,
//          session_log 7 (status 1; START = 1), source_metadata 10.
//   Summary.value 1: tag 1, simple_value 2 (float), image 4, histo 5, audio 6, tensor 8, metadata 9
//          (plugin_data 1 -> plugin_name 1; data_class 4).
//   TensorProto: dtype 1, tensor_shape 2 (dim 2), tensor_content 4, float_val 5, double_val 6,
//          int_val 7, string_val 8, int64_val 10.
//   HistogramProto: min 1, max 2, num 3, sum 4, sum_squares 5 (doubles).
// A scalar comes in any of: simple_value; a rank-0 DT_FLOAT/DT_DOUBLE tensor in tensor_content;
// float_val / double_val; a rank-0 integer tensor (int_val, int64_val or tensor_content). Rank-0
// strings (graphs, model configs), higher-rank tensors (PR curves, TF2 histograms), images, audio
// and metadata-only values (hparams) are recognised and never read as scalars.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mosaic::runs {

enum class ValueKind {
  kScalar,        // `scalar` holds the value
  kHistogram,     // `histogram` holds the summary
  kImage,
  kAudio,
  kTensor,        // a tensor that is not a numeric scalar (string, rank >= 1, unsupported dtype)
  kMetadataOnly,  // no value, only metadata (e.g. hparams session info)
};

std::string_view ToString(ValueKind kind);

// How a scalar was stored; float32 encodings round-trip through float.
enum class ScalarEncoding {
  kSimpleValue,    // Summary.Value.simple_value (float32)
  kTensorContent,  // rank-0 tensor with raw little-endian tensor_content
  kFloatVal,       // TensorProto.float_val (float32)
  kDoubleVal,      // TensorProto.double_val
  kIntVal,         // TensorProto.int_val / int64_val
};

std::string_view ToString(ScalarEncoding encoding);

// count, min, max and mean of a HistogramProto.
struct HistogramSummary {
  double count = 0;
  double min = 0;
  double max = 0;
  double sum = 0;
  double mean() const { return count > 0 ? sum / count : 0; }
};

struct SummaryValue {
  std::string_view tag;          // views into the payload
  std::string_view plugin_name;  // empty when the value carries no metadata
  ValueKind kind = ValueKind::kMetadataOnly;
  ScalarEncoding encoding = ScalarEncoding::kSimpleValue;
  bool float32 = false;  // the scalar was stored as a float32 (or is exactly one)
  double scalar = 0;
  HistogramSummary histogram;
};

struct Event {
  double wall_time_seconds = 0;
  int64_t step = 0;
  std::string_view file_version;  // e.g. "brain.Event:2" on a file's first record
  bool has_graph = false;
  int session_log_status = 0;     // 1 = START (a purge point under the `last` policy)
  std::vector<SummaryValue> values;
};

constexpr int kSessionLogStart = 1;

// Decodes `payload` into `event` (cleared first; its views point into `payload`). Returns false
// and sets `*error` to what is wrong (e.g. "field 5: length 300 exceeds the 12 bytes left") when
// the bytes are not a well-formed Event.
bool DecodeEvent(std::string_view payload, Event* event, std::string* error);

// The record nearly every scalar log writes (PyTorch's SummaryWriter, tensorboardX, TF1's
// tf.summary.scalar, after the first record): wall_time, step and a summary of exactly one value
// holding a tag and a simple_value, each field at most once, every key in its one-byte form.
struct SimpleScalarEvent {
  double wall_time_seconds = 0;
  int64_t step = 0;
  std::string_view tag;  // a view into the payload
  double value = 0;      // the float32 simple_value, widened
};

// Decodes `payload` when it has exactly the shape of SimpleScalarEvent and returns true; returns
// false for anything else (another field, a second value, metadata, a malformed byte), which
// DecodeEvent then reads. For the bytes it accepts, DecodeEvent gives the same event: one
// kScalar value, kSimpleValue encoding, float32, no plugin.
bool DecodeSimpleScalarEvent(std::string_view payload, SimpleScalarEvent* event);

}  // namespace mosaic::runs
