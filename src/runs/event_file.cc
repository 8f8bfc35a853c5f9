#include "mosaic/runs/event_file.h"

#include <algorithm>

namespace mosaic::runs {

bool IsNonScalarPlugin(std::string_view plugin_name) {
  return !plugin_name.empty() && plugin_name != "scalars" && plugin_name != "custom_scalar";
}

EventFileReader::EventFileReader(const std::string& path, bool verify_payload_crc,
                                 RecordRange range)
    : records_(OpenFileSource(path, range.begin_bytes), path, verify_payload_crc,
               size_t{1} << 20, range) {}

EventFileReader::EventFileReader(std::unique_ptr<ByteSource> source, std::string path,
                                 bool verify_payload_crc, size_t buffer_bytes)
    : records_(std::move(source), std::move(path), verify_payload_crc, buffer_bytes) {}

const EventFileStats& EventFileReader::stats() const {
  stats_.scalar_encodings.clear();
  for (size_t i = 0; i < encoding_counts_.size(); ++i) {
    if (encoding_counts_[i] > 0) stats_.scalar_encodings[static_cast<ScalarEncoding>(i)] = encoding_counts_[i];
  }
  return stats_;
}

std::vector<RecordIssue> EventFileReader::issues() const {
  std::vector<RecordIssue> all = records_.issues();
  all.insert(all.end(), payload_issues_.begin(), payload_issues_.end());
  std::stable_sort(all.begin(), all.end(), [](const RecordIssue& a, const RecordIssue& b) {
    return a.offset_bytes < b.offset_bytes;
  });
  return all;
}

void EventFileReader::CountFirstRecord(double wall_time_seconds, std::string_view file_version) {
  stats_.file_version = std::string(file_version);
  stats_.first_wall_time_seconds = wall_time_seconds;
}

std::string_view EventFileReader::LookUpPlugin(std::string_view tag) {
  if (!last_plugin_valid_ || last_plugin_tag_ != tag) {
    auto it = plugin_by_tag_.find(tag);
    last_plugin_tag_.assign(tag);
    last_plugin_ = it != plugin_by_tag_.end() ? std::string_view(it->second) : std::string_view();
    last_plugin_valid_ = true;
  }
  return last_plugin_;
}

void EventFileReader::TakeEvent(std::string_view payload, int64_t offset) {
  std::string error;
  next_value_ = 0;
  if (!DecodeEvent(payload, &event_, &error)) {
    event_.values.clear();  // what a partial decode left
    payload_issues_.push_back({records_.path(), offset, RecordIssueKind::kBadPayload, error, ""});
    return;
  }
  CountRecord(event_.wall_time_seconds, event_.file_version);
  if (event_.has_graph) ++stats_.graphs;
  pending_purge_ = event_.session_log_status == kSessionLogStart;
}

bool EventFileReader::NextSlow(EventItem* item) {
  for (;;) {
    if (pending_purge_) {
      pending_purge_ = false;
      item->kind = EventItemKind::kPurge;
      item->tag = {};
      item->step = event_.step;
      item->wall_time_seconds = event_.wall_time_seconds;
      return true;
    }
    while (next_value_ < event_.values.size()) {
      const SummaryValue& v = event_.values[next_value_++];
      std::string_view plugin = v.plugin_name;
      if (!plugin.empty()) {
        auto it = plugin_by_tag_.find(v.tag);
        if (it == plugin_by_tag_.end()) {
          plugin_by_tag_.emplace(std::string(v.tag), std::string(plugin));
        } else if (it->second != plugin) {
          it->second = std::string(plugin);
        }
        last_plugin_valid_ = false;  // the cached view may point at a replaced value
        if (IsNonScalarPlugin(plugin) && !non_scalar_plugin_tags_.contains(v.tag)) {
          non_scalar_plugin_tags_.emplace(v.tag);
        }
      } else {
        plugin = PluginOf(v.tag);
      }
      switch (v.kind) {
        case ValueKind::kScalar:
          if (IsNonScalarPlugin(plugin)) {
            ++stats_.tensors;
            continue;
          }
          TakeScalar(item, v.tag, event_.step, event_.wall_time_seconds, v.scalar, v.float32,
                     v.encoding);
          return true;
        case ValueKind::kHistogram:
          ++stats_.histograms;
          item->kind = EventItemKind::kHistogram;
          item->tag = v.tag;
          item->step = event_.step;
          item->wall_time_seconds = event_.wall_time_seconds;
          item->histogram = v.histogram;
          return true;
        case ValueKind::kImage: ++stats_.images; continue;
        case ValueKind::kAudio: ++stats_.audio; continue;
        case ValueKind::kTensor: ++stats_.tensors; continue;
        case ValueKind::kMetadataOnly: ++stats_.metadata_only; continue;
      }
    }
    std::string_view payload;
    int64_t offset = 0;
    if (!records_.Next(&payload, &offset)) return false;
    // The fast lane: a record of one simple-value scalar becomes the item without an Event.
    SimpleScalarEvent simple;
    if (DecodeSimpleScalarEvent(payload, &simple)) {
      CountRecord(simple.wall_time_seconds, {});
      if (!plugin_by_tag_.empty() && IsNonScalarPlugin(LookUpPlugin(simple.tag))) {
        ++stats_.tensors;
        continue;
      }
      TakeScalar(item, simple.tag, simple.step, simple.wall_time_seconds, simple.value, true,
                 ScalarEncoding::kSimpleValue);
      return true;
    }
    TakeEvent(payload, offset);
  }
}

}  // namespace mosaic::runs
