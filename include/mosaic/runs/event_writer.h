// Writing TensorBoard event files: Event protobufs for scalars in each of the encodings that
// event.h reads, and TFRecord framing (tfrecord_reader.h). Used to generate test inputs, fuzzing
// corpora and benchmark files; field numbers as in event.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "mosaic/runs/event.h"

namespace mosaic::runs {

// An Event with wall_time and file_version (the first record of every event file).
std::string EncodeFileVersionEvent(double wall_time_seconds,
                                   std::string_view version = "brain.Event:2");

// An Event holding one scalar `value` for `tag` at `step`, stored with `encoding`
// (kTensorContent as a rank-0 DT_FLOAT, kIntVal as a rank-0 DT_INT64). `plugin_name`, when not
// empty, is written as the value's metadata.
std::string EncodeScalarEvent(double wall_time_seconds, int64_t step, std::string_view tag,
                              double value, ScalarEncoding encoding = ScalarEncoding::kSimpleValue,
                              std::string_view plugin_name = "");

// An Event with a SessionLog of status START at `step` (PyTorch's purge_step marker).
std::string EncodeSessionStartEvent(double wall_time_seconds, int64_t step);

// `payload` framed as one TFRecord: length, masked CRC of the length, payload, masked CRC.
std::string FrameRecord(std::string_view payload);

}  // namespace mosaic::runs
