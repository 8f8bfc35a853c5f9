// Streaming reader of one TensorBoard event file: records (tfrecord_reader.h) -> events (event.h)
// -> scalar points, histogram summaries and purge markers, one at a time. Memory stays bounded by
// the largest record; plugin metadata (which may appear only on a tag's first value) is cached per
// tag so that values of non-scalar plugins (hparams, text, PR curves) are never read as scalars.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>

#include "mosaic/runs/event.h"
#include "mosaic/runs/tfrecord_reader.h"

namespace mosaic::runs {

enum class EventItemKind {
  kScalar,     // tag, step, wall time, value
  kHistogram,  // tag, step, wall time, histogram
  kPurge,      // SessionLog.START at `step`: a writer restarted with purge_step (used by `last`)
};

struct EventItem {
  EventItemKind kind = EventItemKind::kScalar;
  std::string_view tag;  // valid until the next call to Next()
  int64_t step = 0;
  double wall_time_seconds = 0;
  double value = 0;
  bool float32 = false;
  ScalarEncoding encoding = ScalarEncoding::kSimpleValue;
  HistogramSummary histogram;
};

// Counts of everything the file held, for reports.
struct EventFileStats {
  int64_t records = 0;
  int64_t scalars = 0;
  int64_t histograms = 0;
  int64_t images = 0;
  int64_t audio = 0;
  int64_t tensors = 0;         // non-scalar tensors (strings, PR curves, ...)
  int64_t metadata_only = 0;   // e.g. hparams
  int64_t graphs = 0;
  std::map<ScalarEncoding, int64_t> scalar_encodings;
  std::string file_version;    // from the first record, e.g. "brain.Event:2"
  double first_wall_time_seconds = 0;  // of the first record; 0 when the file has none
  double last_wall_time_seconds = 0;   // the largest of the records; 0 when the file has none
};

// True for a plugin whose rank-0 numeric values are not scalar series ("hparams", "text",
// "pr_curves", ...); empty and "scalars" are scalar plugins.
bool IsNonScalarPlugin(std::string_view plugin_name);

class EventFileReader {
 public:
  // Reads `path` (the records of `range` only); throws InputError when it cannot be opened.
  explicit EventFileReader(const std::string& path, bool verify_payload_crc = true,
                           RecordRange range = {});
  // Reads from any source; `path` labels issues.
  EventFileReader(std::unique_ptr<ByteSource> source, std::string path,
                  bool verify_payload_crc = true, size_t buffer_bytes = size_t{1} << 20);

  // The next scalar, histogram or purge marker; false at the end of the readable data.
  bool Next(EventItem* item) {
    // The fast lane, inline in the caller's loop: nothing is left of the record before, and the
    // next one is a single simple-value scalar of a scalar tag (nearly every record of a scalar
    // log). Anything else goes on in NextSlow, this record first.
    if (pending_purge_ || next_value_ < event_.values.size()) return NextSlow(item);
    std::string_view payload;
    int64_t offset = 0;
    if (!records_.Next(&payload, &offset)) return false;
    SimpleScalarEvent simple;
    if (!DecodeSimpleScalarEvent(payload, &simple)) {
      TakeEvent(payload, offset);
      return NextSlow(item);
    }
    CountRecord(simple.wall_time_seconds, {});
    if (!plugin_by_tag_.empty() && IsNonScalarPlugin(LookUpPlugin(simple.tag))) {
      ++stats_.tensors;
      return NextSlow(item);
    }
    TakeScalar(item, simple.tag, simple.step, simple.wall_time_seconds, simple.value, true,
               ScalarEncoding::kSimpleValue);
    return true;
  }

  const EventFileStats& stats() const;
  // The file offset of the next record to read (tfrecord_reader.h).
  int64_t next_offset_bytes() const { return records_.next_offset_bytes(); }
  // The tags some value declared a non-scalar plugin for (IsNonScalarPlugin), in any record read
  // so far: a reader of a later part of the file, not having seen the declaration, would take
  // their values for scalars.
  const std::set<std::string, std::less<>>& non_scalar_plugin_tags() const {
    return non_scalar_plugin_tags_;
  }
  // Damaged spots: those of the record layer plus payloads that are not Events.
  std::vector<RecordIssue> issues() const;

 private:
  // Next() past its fast lane: the purge marker and the values of the record before, then the
  // records that follow.
  bool NextSlow(EventItem* item);
  // Decodes the record `payload` (at `offset`) that is no single simple-value scalar as an Event,
  // whose values (and purge marker) Next() then returns; a payload that is no Event is an issue.
  void TakeEvent(std::string_view payload, int64_t offset);
  // Counts a record in stats_ (the first one's file version and wall time, the latest wall time).
  void CountRecord(double wall_time_seconds, std::string_view file_version) {
    if (stats_.records == 0) CountFirstRecord(wall_time_seconds, file_version);
    if (wall_time_seconds > stats_.last_wall_time_seconds) {
      stats_.last_wall_time_seconds = wall_time_seconds;
    }
    ++stats_.records;
  }
  // Fills `item` with a scalar point and counts it.
  void TakeScalar(EventItem* item, std::string_view tag, int64_t step, double wall_time_seconds,
                  double value, bool float32, ScalarEncoding encoding) {
    ++stats_.scalars;
    ++encoding_counts_[static_cast<size_t>(encoding)];
    item->kind = EventItemKind::kScalar;
    item->tag = tag;
    item->step = step;
    item->wall_time_seconds = wall_time_seconds;
    item->value = value;
    item->float32 = float32;
    item->encoding = encoding;
  }
  // The first record's file version and wall time, kept in stats_.
  void CountFirstRecord(double wall_time_seconds, std::string_view file_version);
  // The plugin last declared for `tag` by a value's metadata; empty when none was.
  std::string_view PluginOf(std::string_view tag) {
    return plugin_by_tag_.empty() ? std::string_view() : LookUpPlugin(tag);
  }
  // PluginOf when some tag declared a plugin: the map, with the last tag looked up cached.
  std::string_view LookUpPlugin(std::string_view tag);

  TfRecordReader records_;
  Event event_;
  size_t next_value_ = 0;
  bool pending_purge_ = false;
  // Hashes std::string and std::string_view alike, so that lookups by a view need no copy.
  struct TagHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::string, TagHash, std::equal_to<>> plugin_by_tag_;
  std::set<std::string, std::less<>> non_scalar_plugin_tags_;
  // The last tag looked up in plugin_by_tag_ and its plugin (a view of the map's value).
  std::string last_plugin_tag_;
  std::string_view last_plugin_;
  bool last_plugin_valid_ = false;
  // Counted per encoding here, copied into stats_.scalar_encodings by stats().
  std::array<int64_t, 5> encoding_counts_{};
  mutable EventFileStats stats_;
  std::vector<RecordIssue> payload_issues_;
};

}  // namespace mosaic::runs
