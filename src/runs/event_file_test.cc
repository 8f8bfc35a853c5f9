// Every real event file of tests/fixtures against tests/fixtures/tfevents_manifest.tsv, the
// known-value TF2 file, the scalar encodings, and damaged variants built in temporary files.
#include "mosaic/runs/event_file.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "mosaic/runs/crc32c.h"
#include "mosaic/runs/event_writer.h"
#include "mosaic/runs/tfrecord_reader.h"
#include "mosaic/util/atomic_file.h"

namespace mosaic::runs {
namespace {

const std::string kFixtures = std::string(MOSAIC_SOURCE_DIR) + "/tests/fixtures/";

struct ManifestRow {
  std::string path;
  int64_t bytes = 0;
  int64_t records = 0;
  int64_t scalar_tags = 0;
  std::string min_step;
  std::string max_step;
  int64_t scalar_points = 0;
  std::map<std::string, int64_t> value_kinds;
};

std::vector<ManifestRow> ReadManifest() {
  std::ifstream in(kFixtures + "tfevents_manifest.tsv");
  std::string line;
  std::getline(in, line);  // header
  std::vector<ManifestRow> rows;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, '\t')) cells.push_back(cell);
    while (cells.size() < 12) cells.emplace_back();
    ManifestRow row;
    row.path = cells[0];
    row.bytes = std::stoll(cells[1]);
    row.records = std::stoll(cells[3]);
    row.scalar_tags = std::stoll(cells[5]);
    row.min_step = cells[6];
    row.max_step = cells[7];
    row.scalar_points = std::stoll(cells[8]);
    std::stringstream kinds(cells[9]);
    std::string kind;
    while (std::getline(kinds, kind, ';')) {
      const size_t eq = kind.find('=');
      if (eq != std::string::npos) row.value_kinds[kind.substr(0, eq)] = std::stoll(kind.substr(eq + 1));
    }
    rows.push_back(row);
  }
  return rows;
}

struct FileContent {
  EventFileStats stats;
  std::vector<RecordIssue> issues;
  std::map<std::string, std::vector<EventItem>> scalars;  // tag views not kept
  std::map<std::string, std::vector<std::pair<int64_t, double>>> points;
  int64_t histograms = 0;
  int64_t purges = 0;
};

FileContent ReadAll(EventFileReader& reader) {
  FileContent content;
  EventItem item;
  while (reader.Next(&item)) {
    if (item.kind == EventItemKind::kScalar) {
      content.points[std::string(item.tag)].emplace_back(item.step, item.value);
    } else if (item.kind == EventItemKind::kHistogram) {
      ++content.histograms;
    } else {
      ++content.purges;
    }
  }
  content.stats = reader.stats();
  content.issues = reader.issues();
  return content;
}

FileContent ReadPath(const std::string& path) {
  EventFileReader reader(path);
  return ReadAll(reader);
}

FileContent ReadBytes(const std::string& bytes) {
  EventFileReader reader(MemorySource(bytes), "memory");
  return ReadAll(reader);
}

TEST(EventFile, EveryFixtureMatchesTheManifest) {
  const std::vector<ManifestRow> rows = ReadManifest();
  ASSERT_EQ(rows.size(), 35u);
  for (const ManifestRow& row : rows) {
    SCOPED_TRACE(row.path);
    const FileContent c = ReadPath(kFixtures + row.path);
    EXPECT_TRUE(c.issues.empty());
    EXPECT_EQ(c.stats.records, row.records);
    EXPECT_EQ(c.stats.file_version, "brain.Event:2");
    EXPECT_EQ(static_cast<int64_t>(c.points.size()), row.scalar_tags);
    int64_t points = 0;
    int64_t min_step = INT64_MAX;
    int64_t max_step = INT64_MIN;
    for (const auto& [tag, series] : c.points) {
      points += static_cast<int64_t>(series.size());
      for (const auto& [step, value] : series) {
        min_step = std::min(min_step, step);
        max_step = std::max(max_step, step);
      }
    }
    EXPECT_EQ(points, row.scalar_points);
    if (!row.min_step.empty()) {
      EXPECT_EQ(min_step, std::stoll(row.min_step));
      EXPECT_EQ(max_step, std::stoll(row.max_step));
    }
    // Value kinds: scalars by encoding ("tensor" covers scalar tensors and the non-scalar ones).
    std::map<std::string, int64_t> kinds;
    for (const auto& [encoding, n] : c.stats.scalar_encodings) {
      kinds[encoding == ScalarEncoding::kSimpleValue ? "simple_value" : "tensor"] += n;
    }
    if (c.stats.tensors > 0) kinds["tensor"] += c.stats.tensors;
    if (c.stats.histograms > 0) kinds["histo"] = c.stats.histograms;
    if (c.stats.images > 0) kinds["image"] = c.stats.images;
    if (c.stats.metadata_only > 0) kinds["none"] = c.stats.metadata_only;
    EXPECT_EQ(kinds, row.value_kinds);
    EXPECT_EQ(c.histograms, c.stats.histograms);
  }
}

TEST(EventFile, Tf2KnownValueFileIsHalfTheStepExactly) {
  const FileContent c = ReadPath(
      kFixtures + "orktes__go-tensorboard/testdata/tfevents/events.out.tfevents.1585499054.hostB.11684.5.v2");
  ASSERT_EQ(c.points.size(), 1u);
  const auto& series = c.points.begin()->second;
  ASSERT_EQ(series.size(), 100u);
  for (size_t i = 0; i < series.size(); ++i) {
    EXPECT_EQ(series[i].first, static_cast<int64_t>(i));
    EXPECT_EQ(series[i].second, 0.5 * static_cast<double>(series[i].first));
  }
  EXPECT_EQ(c.stats.scalar_encodings.at(ScalarEncoding::kTensorContent), 100);
}

TEST(EventFile, RerunFirstFileStartsAtTheKnownLoss) {
  const FileContent c = ReadPath(kFixtures +
                                 "ZeroToMax-ZYZ__study_tensorboard/runs/my_first_experiment/"
                                 "events.out.tfevents.1771594466.hostC.21024.0");
  const auto& loss = c.points.at("Metrics/Loss");
  ASSERT_EQ(loss.size(), 100u);
  EXPECT_EQ(loss.front().first, 0);
  EXPECT_NEAR(loss.front().second, 4.93373, 5e-6);  // 4.9337287 as float32
  EXPECT_EQ(loss.back().first, 99);
}

TEST(EventFile, NonScalarsAreRecognisedAndSkipped) {
  const std::string dir = kFixtures + "ZeroToMax-ZYZ__study_tensorboard/runs/";
  const FileContent pr = ReadPath(dir + "pr_curve_experiment/events.out.tfevents.1771596445.hostC.30376.0");
  EXPECT_TRUE(pr.points.empty());
  EXPECT_EQ(pr.stats.tensors, 5);
  const FileContent images = ReadPath(dir + "image_experiment/events.out.tfevents.1771595107.hostC.11980.0");
  EXPECT_TRUE(images.points.empty());
  EXPECT_EQ(images.stats.images, 5);
  const FileContent graph = ReadPath(dir + "graph_experiment/events.out.tfevents.1771596179.hostC.9384.0");
  EXPECT_TRUE(graph.points.empty());
  EXPECT_GE(graph.stats.graphs, 1);
  const FileContent histo = ReadPath(dir + "histogram_experiment/events.out.tfevents.1771596220.hostC.19040.0");
  EXPECT_TRUE(histo.points.empty());
  EXPECT_EQ(histo.histograms, 10);
}

TEST(EventFile, AllScalarEncodingsGiveTheSameSeries) {
  std::string bytes = FrameRecord(EncodeFileVersionEvent(1.0e9));
  const ScalarEncoding encodings[] = {ScalarEncoding::kSimpleValue, ScalarEncoding::kTensorContent,
                                      ScalarEncoding::kFloatVal, ScalarEncoding::kDoubleVal};
  for (int step = 0; step < 20; ++step) {
    for (ScalarEncoding e : encodings) {
      bytes += FrameRecord(EncodeScalarEvent(1.0e9 + step, step, std::string(ToString(e)),
                                             0.25 * step - 1, e, step == 0 ? "scalars" : ""));
    }
    bytes += FrameRecord(EncodeScalarEvent(1.0e9 + step, step, "int", step * 3, ScalarEncoding::kIntVal));
  }
  const FileContent c = ReadBytes(bytes);
  EXPECT_TRUE(c.issues.empty());
  ASSERT_EQ(c.points.size(), 5u);
  const auto& reference = c.points.at("simple_value");
  for (ScalarEncoding e : encodings) EXPECT_EQ(c.points.at(std::string(ToString(e))), reference);
  EXPECT_EQ(c.points.at("int").back(), (std::pair<int64_t, double>{19, 57.0}));
}

TEST(EventFile, NonScalarPluginMetadataIsCachedPerTag) {
  std::string bytes = FrameRecord(EncodeFileVersionEvent(1.0e9));
  bytes += FrameRecord(EncodeScalarEvent(1, 1, "hp", 3, ScalarEncoding::kFloatVal, "hparams"));
  bytes += FrameRecord(EncodeScalarEvent(1, 2, "hp", 4, ScalarEncoding::kFloatVal));
  bytes += FrameRecord(EncodeScalarEvent(1, 2, "loss", 4, ScalarEncoding::kFloatVal));
  const FileContent c = ReadBytes(bytes);
  EXPECT_EQ(c.points.count("hp"), 0u);
  EXPECT_EQ(c.points.at("loss").size(), 1u);
  EXPECT_EQ(c.stats.tensors, 2);
}

// Protobuf wire bytes built by hand: a key, a varint, fixed-width numbers, length-delimited bytes.
std::string Varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  return out + static_cast<char>(v);
}
std::string Field(int field, int wire) { return Varint(static_cast<uint64_t>(field) << 3 | wire); }
std::string Bytes(int field, const std::string& bytes) {
  return Field(field, 2) + Varint(bytes.size()) + bytes;
}
std::string Fixed32(float v) {
  std::string out(4, '\0');
  std::memcpy(out.data(), &v, 4);
  return out;
}
std::string Fixed64(double v) {
  std::string out(8, '\0');
  std::memcpy(out.data(), &v, 8);
  return out;
}

TEST(Event, SimpleValueRecordsFollowTheProtobufRules) {
  // The shapes of plain simple_value records, and variants of them: fields in any order, a field
  // given twice (the last wins), a tag longer than 127 bytes (two-byte length), a value without a
  // number, an empty summary, a value with metadata.
  const std::string long_tag(300, 'x');
  const std::string value_a = Bytes(1, "loss") + Field(2, 5) + Fixed32(2.5f);
  const std::string value_b = Field(2, 5) + Fixed32(-1.0f) + Bytes(1, long_tag);
  const std::string value_c = Bytes(1, "only_tag");
  const std::string payload = Field(2, 0) + Varint(7) + Field(1, 1) + Fixed64(1.5e9) +
                              Bytes(5, Bytes(1, value_a) + Bytes(1, value_b)) +
                              Bytes(5, Bytes(1, value_c)) + Field(2, 0) + Varint(300000);
  Event event;
  std::string error;
  ASSERT_TRUE(DecodeEvent(payload, &event, &error)) << error;
  EXPECT_EQ(event.step, 300000);
  EXPECT_EQ(event.wall_time_seconds, 1.5e9);
  EXPECT_FALSE(event.has_graph);
  EXPECT_EQ(event.session_log_status, 0);
  EXPECT_TRUE(event.file_version.empty());
  ASSERT_EQ(event.values.size(), 3u);
  EXPECT_EQ(event.values[0].tag, "loss");
  EXPECT_EQ(event.values[0].kind, ValueKind::kScalar);
  EXPECT_EQ(event.values[0].scalar, 2.5);
  EXPECT_TRUE(event.values[0].float32);
  EXPECT_EQ(event.values[0].encoding, ScalarEncoding::kSimpleValue);
  EXPECT_EQ(event.values[1].tag, long_tag);
  EXPECT_EQ(event.values[1].scalar, -1.0);
  EXPECT_EQ(event.values[2].tag, "only_tag");
  EXPECT_EQ(event.values[2].kind, ValueKind::kMetadataOnly);
  EXPECT_FALSE(event.values[2].float32);

  // The same event again after one of another shape: nothing of the first is left over.
  const std::string with_metadata =
      Field(1, 1) + Fixed64(2.0) +
      Bytes(5, Bytes(1, Bytes(1, "t") + Field(2, 5) + Fixed32(4.0f) +
                            Bytes(9, Bytes(1, Bytes(1, "text")))));
  const std::string first_record =
      Bytes(3, "brain.Event:2") + Field(7, 2) + Varint(2) + Field(1, 0) + Varint(1);
  ASSERT_TRUE(DecodeEvent(first_record, &event, &error));  // views into first_record
  EXPECT_EQ(event.file_version, "brain.Event:2");
  EXPECT_EQ(event.session_log_status, kSessionLogStart);
  ASSERT_TRUE(DecodeEvent(with_metadata, &event, &error)) << error;
  ASSERT_EQ(event.values.size(), 1u);
  EXPECT_EQ(event.values[0].plugin_name, "text");
  EXPECT_EQ(event.values[0].scalar, 4.0);
  EXPECT_TRUE(event.file_version.empty());
  EXPECT_EQ(event.session_log_status, 0);
  EXPECT_EQ(event.step, 0);
  ASSERT_TRUE(DecodeEvent(payload, &event, &error));
  EXPECT_EQ(event.values.size(), 3u);
  EXPECT_TRUE(event.values[0].plugin_name.empty());

  // Every truncation of the record is either a shorter valid event or an error naming the field.
  for (size_t n = 0; n < payload.size(); ++n) {
    SCOPED_TRACE(n);
    Event cut;
    std::string cut_error;
    if (!DecodeEvent(std::string_view(payload).substr(0, n), &cut, &cut_error)) {
      EXPECT_FALSE(cut_error.empty());
    }
  }
  EXPECT_FALSE(DecodeEvent(payload.substr(0, 3), &event, &error));
  EXPECT_NE(error.find("fixed64"), std::string::npos) << error;
}

// The fast decoder of one-scalar records either declines a payload or decodes exactly what the
// general decoder does; it takes every layout of that shape, and nothing else.
TEST(Event, SimpleScalarDecoderAgreesWithTheGeneralDecoder) {
  const std::string long_tag(300, 'x');
  auto value = [](const std::string& tag, float v) {
    return Bytes(1, tag) + Field(2, 5) + Fixed32(v);
  };
  auto canonical = [&](double wall, uint64_t step, const std::string& tag, float v) {
    return Field(1, 1) + Fixed64(wall) + Field(2, 0) + Varint(step) +
           Bytes(5, Bytes(1, value(tag, v)));
  };
  struct Case {
    std::string name;
    std::string payload;
    bool simple;  // the fast decoder takes it
  };
  const std::vector<Case> cases = {
      {"canonical", canonical(1.7e9, 12, "train/loss", 2.5f), true},
      {"step 0", canonical(1.0, 0, "a", 0.0f), true},
      {"step 2^14", canonical(1.0, 16384, "loss", -1.0f), true},
      {"negative step (10-byte varint)", canonical(1.0, static_cast<uint64_t>(-1), "l", 1.0f), true},
      {"step 2^56 - 1 (8-byte varint)", canonical(1.0, (uint64_t{1} << 56) - 1, "l", 1.0f), true},
      {"step 2^56 (9-byte varint)", canonical(1.0, uint64_t{1} << 56, "l", 1.0f), true},
      {"empty tag", canonical(1.0, 3, "", 1.0f), true},
      {"tag of 118 bytes (largest one-byte summary)", canonical(1.0, 3, std::string(118, 't'), 1.0f), true},
      {"tag of 300 bytes", canonical(1.0, 3, long_tag, 1.0f), true},
      {"step before wall time", Field(2, 0) + Varint(5) + Field(1, 1) + Fixed64(2.0) +
                                    Bytes(5, Bytes(1, value("loss", 1.0f))), true},
      {"value before tag", Field(1, 1) + Fixed64(2.0) + Field(2, 0) + Varint(5) +
                               Bytes(5, Bytes(1, Field(2, 5) + Fixed32(3.0f) + Bytes(1, "loss"))), true},
      {"no wall time", Field(2, 0) + Varint(5) + Bytes(5, Bytes(1, value("loss", 1.0f))), true},
      {"no step", Field(1, 1) + Fixed64(2.0) + Bytes(5, Bytes(1, value("loss", 1.0f))), true},
      {"two values", Field(1, 1) + Fixed64(2.0) +
                         Bytes(5, Bytes(1, value("a", 1.0f)) + Bytes(1, value("b", 2.0f))), false},
      {"two summaries", Field(1, 1) + Fixed64(2.0) + Bytes(5, Bytes(1, value("a", 1.0f))) +
                            Bytes(5, Bytes(1, value("b", 2.0f))), false},
      {"step twice", canonical(1.0, 3, "a", 1.0f) + Field(2, 0) + Varint(4), false},
      {"tag only", Field(1, 1) + Fixed64(2.0) + Bytes(5, Bytes(1, Bytes(1, "a"))), false},
      {"value only", Field(1, 1) + Fixed64(2.0) + Bytes(5, Bytes(1, Field(2, 5) + Fixed32(1.0f))), false},
      {"metadata", Field(1, 1) + Fixed64(2.0) +
                       Bytes(5, Bytes(1, value("t", 4.0f) + Bytes(9, Bytes(1, Bytes(1, "text"))))),
       false},
      {"file version", Bytes(3, "brain.Event:2") + Field(1, 1) + Fixed64(2.0), false},
      {"empty summary", Field(1, 1) + Fixed64(2.0) + Bytes(5, ""), false},
      {"empty", "", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    SimpleScalarEvent simple;
    EXPECT_EQ(DecodeSimpleScalarEvent(c.payload, &simple), c.simple);
    // Every prefix of the payload too: declined, or the general decoder's single scalar.
    for (size_t n = 0; n <= c.payload.size(); ++n) {
      const std::string_view bytes = std::string_view(c.payload).substr(0, n);
      SimpleScalarEvent fast;
      if (!DecodeSimpleScalarEvent(bytes, &fast)) continue;
      SCOPED_TRACE(n);
      Event event;
      std::string error;
      ASSERT_TRUE(DecodeEvent(bytes, &event, &error)) << error;
      ASSERT_EQ(event.values.size(), 1u);
      const SummaryValue& v = event.values[0];
      EXPECT_EQ(v.kind, ValueKind::kScalar);
      EXPECT_EQ(v.encoding, ScalarEncoding::kSimpleValue);
      EXPECT_TRUE(v.float32);
      EXPECT_TRUE(v.plugin_name.empty());
      EXPECT_EQ(fast.tag, v.tag);
      EXPECT_EQ(fast.value, v.scalar);
      EXPECT_EQ(fast.step, event.step);
      EXPECT_EQ(fast.wall_time_seconds, event.wall_time_seconds);
    }
  }
  // The canonical layout with a step of every varint length, at both ends of each.
  for (int bits = 1; bits <= 64; ++bits) {
    for (const uint64_t step : {uint64_t{1} << (bits - 1), ~uint64_t{0} >> (64 - bits),
                                (~uint64_t{0} >> (64 - bits)) ^ (uint64_t{0x5555555555555555} >> (64 - bits))}) {
      SCOPED_TRACE(step);
      SimpleScalarEvent fast;
      // The decoded tag is a view into the bytes: they outlive it.
      const std::string bytes = canonical(2.0, step, "loss", 1.0f);
      ASSERT_TRUE(DecodeSimpleScalarEvent(bytes, &fast));
      EXPECT_EQ(fast.step, static_cast<int64_t>(step));
      EXPECT_EQ(fast.tag, "loss");
      EXPECT_EQ(fast.value, 1.0);
      EXPECT_EQ(fast.wall_time_seconds, 2.0);
    }
  }
  SimpleScalarEvent decoded;
  const std::string bytes = canonical(1.7e9, 300000, "train/loss", 2.5f);
  ASSERT_TRUE(DecodeSimpleScalarEvent(bytes, &decoded));
  EXPECT_EQ(decoded.wall_time_seconds, 1.7e9);
  EXPECT_EQ(decoded.step, 300000);
  EXPECT_EQ(decoded.tag, "train/loss");
  EXPECT_EQ(decoded.value, 2.5);
}

TEST(EventFile, PurgeMarkerIsReported) {
  std::string bytes = FrameRecord(EncodeFileVersionEvent(1.0e9));
  bytes += FrameRecord(EncodeSessionStartEvent(1.0e9, 40));
  const FileContent c = ReadBytes(bytes);
  EXPECT_EQ(c.purges, 1);
}

// Damaged variants of a real file, built in memory.
class DamagedFile : public ::testing::Test {
 protected:
  void SetUp() override {
    original_ = ReadFile(kFixtures +
                         "janosh__tensorboard-reducer/tests/runs/strict/run_1/"
                         "events.out.tfevents.1622543341.hostA.86862.0");
    // Record offsets, to aim the damage.
    TfRecordReader reader(MemorySource(original_), "x");
    std::string_view payload;
    int64_t offset;
    while (reader.Next(&payload, &offset)) offsets_.push_back(offset);
    ASSERT_EQ(offsets_.size(), 101u);
  }
  int64_t TotalPoints(const FileContent& c) {
    int64_t n = 0;
    for (const auto& [tag, s] : c.points) n += static_cast<int64_t>(s.size());
    return n;
  }
  std::string original_;
  std::vector<int64_t> offsets_;
};

TEST_F(DamagedFile, TruncatedMidRecordKeepsEveryCompleteRecordWithoutError) {
  for (int64_t cut : {offsets_[50] + 5, offsets_[50] + 13, offsets_[100] + 20,
                      static_cast<int64_t>(original_.size()) - 1}) {
    const FileContent c = ReadBytes(original_.substr(0, cut));
    const int64_t complete_records =
        std::count_if(offsets_.begin(), offsets_.end(), [&](int64_t o) { return o < cut; }) - 1;
    EXPECT_EQ(c.stats.records, complete_records) << "cut at " << cut;
    EXPECT_EQ(TotalPoints(c), complete_records - 1);
    ASSERT_EQ(c.issues.size(), 1u);
    EXPECT_EQ(c.issues[0].kind, RecordIssueKind::kTruncatedTail);
    EXPECT_FALSE(c.issues[0].is_error());
  }
}

TEST_F(DamagedFile, BadPayloadCrcSkipsOneRecordAndNamesItsOffset) {
  std::string bytes = original_;
  bytes[offsets_[30] + 12 + 3] ^= 0x40;  // inside record 30's payload
  const FileContent c = ReadBytes(bytes);
  EXPECT_EQ(c.stats.records, 100);
  EXPECT_EQ(TotalPoints(c), 99);
  ASSERT_EQ(c.issues.size(), 1u);
  EXPECT_EQ(c.issues[0].kind, RecordIssueKind::kBadPayloadCrc);
  EXPECT_EQ(c.issues[0].offset_bytes, offsets_[30]);
  EXPECT_NE(c.issues[0].Message().find("memory: byte offset " + std::to_string(offsets_[30]) +
                                       ": bad payload CRC"),
            std::string::npos)
      << c.issues[0].Message();
}

// A bad length CRC loses the framing at that header: reading goes on from the next intact record
// (found byte by byte, both CRCs matching), so one flipped bit costs one record, not the file.
TEST_F(DamagedFile, BadLengthCrcSkipsToTheNextIntactRecord) {
  std::string bytes = original_;
  bytes[offsets_[60]] ^= 0x01;  // the length of record 60
  const FileContent c = ReadBytes(bytes);
  EXPECT_EQ(c.stats.records, 100);
  EXPECT_EQ(TotalPoints(c), 99);
  ASSERT_EQ(c.issues.size(), 1u);
  EXPECT_EQ(c.issues[0].kind, RecordIssueKind::kBadLengthCrc);
  EXPECT_EQ(c.issues[0].offset_bytes, offsets_[60]);
  EXPECT_NE(c.issues[0].Message().find(fmt::format(
                "; {} bytes skipped to the next intact record, at byte offset {}",
                offsets_[61] - offsets_[60], offsets_[61])),
            std::string::npos)
      << c.issues[0].Message();
  // Damage to the last record's length leaves nothing to resume from: the rest is unread.
  std::string last = original_;
  last[offsets_[100]] ^= 0x01;
  const FileContent end = ReadBytes(last);
  EXPECT_EQ(end.stats.records, 100);
  ASSERT_EQ(end.issues.size(), 1u);
  EXPECT_NE(end.issues[0].Message().find("no intact record after it: the rest of the file unread"),
            std::string::npos)
      << end.issues[0].Message();
}

// A length that lies yet carries a matching CRC (written so, or two errors agreeing) frames a
// payload whose CRC fails: the next record is searched for from the byte after that header, so
// only the record whose header lied is lost, and the report says where reading resumed.
TEST_F(DamagedFile, ALyingLengthWithAValidCrcCostsOnlyItsRecord) {
  std::string bytes = original_;
  const uint64_t length = 1000;
  std::memcpy(&bytes[offsets_[30]], &length, sizeof length);
  const uint32_t crc = MaskCrc32c(Crc32c(std::string_view(&bytes[offsets_[30]], 8)));
  std::memcpy(&bytes[offsets_[30] + 8], &crc, sizeof crc);
  const FileContent c = ReadBytes(bytes);
  EXPECT_EQ(c.stats.records, 100);
  ASSERT_EQ(c.issues.size(), 1u);
  EXPECT_EQ(c.issues[0].kind, RecordIssueKind::kBadPayloadCrc);
  EXPECT_EQ(c.issues[0].offset_bytes, offsets_[30]);
  EXPECT_NE(c.issues[0].Message().find(fmt::format(
                "; {} bytes skipped to the next intact record, at byte offset {}",
                offsets_[31] - offsets_[30], offsets_[31])),
            std::string::npos)
      << c.issues[0].Message();
  // A flipped payload bit (the length right) reads as before: that record skipped.
  std::string flipped = original_;
  flipped[offsets_[30] + 12 + 3] ^= 0x40;
  const FileContent f = ReadBytes(flipped);
  ASSERT_EQ(f.issues.size(), 1u);
  EXPECT_NE(f.issues[0].Message().find("; record skipped"), std::string::npos)
      << f.issues[0].Message();
}

// A source that hands out at most 7 bytes per read, so that records arrive in pieces.
class TrickleSource : public ByteSource {
 public:
  explicit TrickleSource(std::string_view bytes) : memory_(MemorySource(bytes)) {}
  size_t Read(char* out, size_t size) override {
    return memory_->Read(out, std::min(size, size_t{7}));
  }
  int64_t SizeBytes() const override { return memory_->SizeBytes(); }

 private:
  std::unique_ptr<ByteSource> memory_;
};

// Records whole in the buffer take the reader's fast lane, the others its full path: whatever the
// buffer size and however the bytes arrive, the same records, offsets and damage come out.
TEST_F(DamagedFile, EveryBufferSizeAndReadSizeGivesTheSameRecords) {
  std::string damaged = original_;
  damaged[offsets_[30] + 12 + 3] ^= 0x40;  // a bad payload CRC in record 30
  damaged[offsets_[70]] ^= 0x01;           // a bad length CRC in record 70: skipped to 71
  for (const std::string* bytes : {&original_, &damaged}) {
    struct Read {
      std::vector<std::pair<int64_t, std::string>> records;
      std::vector<std::pair<int64_t, RecordIssueKind>> issues;
      bool operator==(const Read&) const = default;
    };
    auto read = [&](std::unique_ptr<ByteSource> source, size_t buffer_bytes) {
      TfRecordReader reader(std::move(source), "x", true, buffer_bytes);
      Read r;
      std::string_view payload;
      int64_t offset;
      while (reader.Next(&payload, &offset)) r.records.emplace_back(offset, payload);
      for (const RecordIssue& issue : reader.issues()) {
        r.issues.emplace_back(issue.offset_bytes, issue.kind);
      }
      return r;
    };
    const Read reference = read(MemorySource(*bytes), size_t{1} << 20);
    EXPECT_EQ(reference.records.size(), bytes == &original_ ? 101u : 99u);
    for (size_t buffer_bytes : {16, 17, 31, 64, 100, 257, 4096}) {
      SCOPED_TRACE(buffer_bytes);
      EXPECT_TRUE(read(MemorySource(*bytes), buffer_bytes) == reference);
      EXPECT_TRUE(read(std::make_unique<TrickleSource>(*bytes), buffer_bytes) == reference);
    }
  }
}

TEST_F(DamagedFile, ValidFramingAroundAMalformedEventIsReported) {
  std::string bytes = original_.substr(0, offsets_[10]);
  bytes += FrameRecord(std::string("\x2a\xff\xff\xff\x0f", 5));  // field 5, absurd length
  bytes += original_.substr(offsets_[10]);
  const FileContent c = ReadBytes(bytes);
  EXPECT_EQ(c.stats.records, 101);
  ASSERT_EQ(c.issues.size(), 1u);
  EXPECT_EQ(c.issues[0].kind, RecordIssueKind::kBadPayload);
  EXPECT_EQ(c.issues[0].offset_bytes, offsets_[10]);
}

// A record header whose length (with a valid CRC) claims far more than the file holds: rejected
// before any buffer is sized for it, from a file and from a source of unknown size alike.
class UnknownSizeSource : public ByteSource {
 public:
  explicit UnknownSizeSource(std::string bytes) : bytes_(std::move(bytes)) {}
  size_t Read(char* out, size_t size) override {
    const size_t n = std::min(size, bytes_.size() - position_);
    std::memcpy(out, bytes_.data() + position_, n);
    position_ += n;
    return n;
  }

 private:
  std::string bytes_;
  size_t position_ = 0;
};

TEST(TfRecordReader, LyingRecordLengthIsRejectedBeforeAllocating) {
  const std::string first = FrameRecord(EncodeFileVersionEvent(1700000000));
  for (const uint64_t claimed : {uint64_t{4} << 30, uint64_t{30} << 30}) {
    std::string header(8, '\0');
    std::memcpy(header.data(), &claimed, 8);
    const uint32_t masked = MaskCrc32c(Crc32c(header));
    header.append(reinterpret_cast<const char*>(&masked), 4);
    const std::string bytes = first + header + std::string(100, 'x');
    const std::string path = ::testing::TempDir() + "/events.out.tfevents.1.lying";
    WriteFileAtomically(path, bytes);
    EventFileReader file(path);
    EventItem item;
    while (file.Next(&item)) {
    }
    EXPECT_EQ(file.stats().records, 1);
    ASSERT_EQ(file.issues().size(), 1u);
    EXPECT_EQ(file.issues()[0].kind, RecordIssueKind::kTruncatedTail);
    EXPECT_EQ(file.issues()[0].offset_bytes, static_cast<int64_t>(first.size()));
    EXPECT_EQ(file.issues()[0].detail,
              fmt::format("payload of {} bytes and its 4-byte CRC claimed, 100 bytes left in "
                          "the file after the header",
                          claimed));
    std::remove(path.c_str());

    TfRecordReader stream(std::make_unique<UnknownSizeSource>(bytes), "pipe");
    std::string_view payload;
    int64_t offset;
    EXPECT_TRUE(stream.Next(&payload, &offset));
    EXPECT_FALSE(stream.Next(&payload, &offset));
    ASSERT_EQ(stream.issues().size(), 1u);
    EXPECT_EQ(stream.issues()[0].kind, RecordIssueKind::kTruncatedTail);
  }
}

// A lying length in the middle of a file (intact records follow it) is damage, not a truncated
// tail: reported with the offset of the next intact record, from which reading goes on, also
// with a buffer smaller than what is skipped.
TEST(TfRecordReader, LyingLengthWithRecordsAfterItIsSkipped) {
  const std::string first = FrameRecord(EncodeFileVersionEvent(1700000000));
  const uint64_t claimed = uint64_t{4} << 30;
  std::string header(8, '\0');
  std::memcpy(header.data(), &claimed, 8);
  const uint32_t masked = MaskCrc32c(Crc32c(header));
  header.append(reinterpret_cast<const char*>(&masked), 4);
  std::string after;
  for (int step = 0; step < 3000; ++step) {
    after += FrameRecord(EncodeScalarEvent(1700000001 + step, step, "loss", 1.0f / (step + 1)));
  }
  const std::string junk(37, 'j');  // bytes of no record between the header and the next one
  const std::string bytes = first + header + junk + after;
  const std::string path = ::testing::TempDir() + "/events.out.tfevents.1.lying_middle";
  WriteFileAtomically(path, bytes);
  for (const size_t buffer : {size_t{64}, size_t{1} << 20}) {
    TfRecordReader reader(OpenFileSource(path), path, true, buffer);
    std::string_view payload;
    int64_t offset = 0;
    int64_t records = 0;
    while (reader.Next(&payload, &offset)) ++records;
    EXPECT_EQ(records, 3001) << buffer;
    ASSERT_EQ(reader.issues().size(), 1u) << buffer;
    const RecordIssue& issue = reader.issues()[0];
    EXPECT_EQ(issue.kind, RecordIssueKind::kLengthBeyondEnd);
    EXPECT_TRUE(issue.is_error());
    EXPECT_EQ(issue.offset_bytes, static_cast<int64_t>(first.size()));
    EXPECT_NE(issue.detail.find(fmt::format("the next intact record is at byte offset {}",
                                            first.size() + header.size() + junk.size())),
              std::string::npos)
        << issue.detail;
    EXPECT_EQ(reader.next_offset_bytes(), static_cast<int64_t>(bytes.size()));
  }
  EventFileReader file(path);
  EventItem item;
  int64_t points = 0;
  while (file.Next(&item)) points += item.kind == EventItemKind::kScalar ? 1 : 0;
  EXPECT_EQ(points, 3000);
  std::remove(path.c_str());
}

TEST(TfRecordReader, RecordLargerThanTheBufferIsRead) {
  const std::string big(3 << 20, 'x');
  const std::string bytes = FrameRecord("a") + FrameRecord(big) + FrameRecord("b");
  TfRecordReader reader(MemorySource(bytes), "memory");
  std::string_view payload;
  int64_t offset;
  ASSERT_TRUE(reader.Next(&payload, &offset));
  EXPECT_EQ(payload, "a");
  ASSERT_TRUE(reader.Next(&payload, &offset));
  EXPECT_EQ(payload.size(), big.size());
  ASSERT_TRUE(reader.Next(&payload, &offset));
  EXPECT_EQ(payload, "b");
  EXPECT_FALSE(reader.Next(&payload, &offset));
  EXPECT_TRUE(reader.issues().empty());
  EXPECT_EQ(reader.next_offset_bytes(), static_cast<int64_t>(bytes.size()));
}

}  // namespace
}  // namespace mosaic::runs
