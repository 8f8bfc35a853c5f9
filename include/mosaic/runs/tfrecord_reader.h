// Streaming reader of TFRecord framing, the container of TensorBoard event files.
//
// Each record is: u64 little-endian payload length, u32 masked CRC32C of those 8 bytes, the
// payload, u32 masked CRC32C of the payload (tensorflow/core/lib/io/record_reader.cc; mask in
// crc32c.h). The reader holds one buffer (1 MiB, grown only for larger records), never the file.
//
// Damage policy (docs/logs.md):
//   - a last record cut short (live or crashed writer): every complete record is returned, then
//     the reader stops; noted as kTruncatedTail, which is not an error;
//   - a bad payload CRC spoils one record: it is skipped and reported with its byte offset;
//   - a bad length CRC means the framing is lost: reported, and the reader stops;
//   - a length (with a valid CRC) claiming more bytes than the file has left is rejected before
//     any buffer is sized for it: when an intact record (length and both CRCs right) follows in
//     the file, the length lied (kLengthBeyondEnd, an error) and reading goes on from that record;
//     otherwise it is a truncated tail. From a source of unknown size, the buffer only grows with
//     the bytes actually read.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mosaic/runs/crc32c.h"  // MOSAIC_CRC32C_X86

namespace mosaic::runs {

// Where the bytes come from: a file or memory (tests, fuzzing).
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Copies up to `size` bytes into `out`; returns how many (0 at the end).
  virtual size_t Read(char* out, size_t size) = 0;
  // The number of bytes the source holds in all, or -1 when unknown (a pipe).
  virtual int64_t SizeBytes() const { return -1; }
};

// Opens `path` for reading from byte `start_bytes` on (SizeBytes is still the whole file's).
// Throws InputError naming the path and the system error.
std::unique_ptr<ByteSource> OpenFileSource(const std::string& path, int64_t start_bytes = 0);

// Reads from `bytes` (from byte `start` on; SizeBytes is all of `bytes`), which must outlive the
// source.
std::unique_ptr<ByteSource> MemorySource(std::string_view bytes, size_t start = 0);

enum class RecordIssueKind {
  kTruncatedTail,    // the file ends inside a record; the complete records before it are kept
  kLengthBeyondEnd,  // a length claims more than the file holds, yet intact records follow: the
                     // bytes up to the next one skipped
  kBadLengthCrc,     // the length's CRC does not match: framing lost, the bytes up to the next
                     // intact record skipped (the rest of the file when there is none)
  kBadPayloadCrc,    // the payload's CRC does not match: that record skipped (reading resumes at
                     // the next intact record after its header, in case its length was wrong)
  kBadPayload,       // the payload is not a valid Event protobuf: that record skipped
};

std::string_view ToString(RecordIssueKind kind);

// One damaged spot of a file.
struct RecordIssue {
  std::string path;
  int64_t offset_bytes = 0;  // where the record starts in the file
  RecordIssueKind kind = RecordIssueKind::kTruncatedTail;
  std::string detail;        // e.g. "stored 0x12345678, computed 0x9abcdef0" (unmasked CRCs)
  // What reading did past it when not the kind's usual ("record skipped" for a bad payload CRC):
  // e.g. "42 bytes skipped to the next intact record, at byte offset 4242".
  std::string outcome;

  // True for the kinds that lose data (everything but kTruncatedTail).
  bool is_error() const { return kind != RecordIssueKind::kTruncatedTail; }
  // "path: byte offset N: <kind>: detail"
  std::string Message() const;
};

// The part of a file a reader reads: records starting at `begin_bytes` (where the source starts,
// a record's first byte) up to the first record starting at or after `stop_bytes` (read to the
// end when negative). Offsets in issues and Next() are the file's.
struct RecordRange {
  int64_t begin_bytes = 0;
  int64_t stop_bytes = -1;
};

// The offset of the first record of `source` (positioned at file offset `from_bytes`, the file
// being `size_bytes` long, or -1 when unknown) starting before `to_bytes` whose length fits in
// the file and whose two CRCs match; -1 when none does. A byte-by-byte search, for reading a file
// in parts from arbitrary offsets: a false match needs two 32-bit CRCs to agree by chance, and a
// caller checks that the parts join (each part's first record is where the part before it stopped).
int64_t FindIntactRecord(ByteSource& source, int64_t from_bytes, int64_t to_bytes,
                         int64_t size_bytes);

class TfRecordReader {
 public:
  // `path` labels issues. `verify_payload_crc` = false skips the payload check (benchmarks).
  // `buffer_bytes` is the initial buffer (grown for larger records). `range` is the part of the
  // file the source holds and the reader reads.
  TfRecordReader(std::unique_ptr<ByteSource> source, std::string path,
                 bool verify_payload_crc = true, size_t buffer_bytes = size_t{1} << 20,
                 RecordRange range = {});

  // Advances to the next intact record. Returns false at the end of the readable data. The
  // payload view stays valid until the next call; `*offset_bytes` receives the record's offset.
  bool Next(std::string_view* payload, int64_t* offset_bytes) {
    // Fast lane, taken by nearly every record (inline, so that a caller's loop pays one call per
    // record, for the CRCs): the whole record is already in the buffer and both CRCs match.
    // Anything else (more bytes to read, damage to report, the end of the range) takes the full
    // path, which checks the same record again from the start.
    const size_t available = end_ - begin_;
    if (offset_ < stop_bytes_ && !stopped_ && available >= kFramingBytes) {
      const char* header = buffer_.data() + begin_;
      uint64_t length;
      std::memcpy(&length, header, sizeof length);
      if (length <= available - kFramingBytes && Intact(header, length)) {
        const size_t record_bytes = kFramingBytes + length;
        *payload = std::string_view(header + kHeaderBytes, length);
        *offset_bytes = offset_;
        begin_ += record_bytes;
        offset_ += static_cast<int64_t>(record_bytes);
        ++records_read_;
        return true;
      }
    }
    return NextChecked(payload, offset_bytes);
  }

  const std::vector<RecordIssue>& issues() const { return issues_; }
  int64_t records_read() const { return records_read_; }
  // The file offset of the next record to read (the file size after a clean end of the whole
  // file; the stop of a range, or the record after it, after the range was read).
  int64_t next_offset_bytes() const { return offset_; }
  const std::string& path() const { return path_; }

 private:
  static constexpr size_t kHeaderBytes = 12;                // u64 length + u32 masked CRC
  static constexpr size_t kFramingBytes = kHeaderBytes + 4;  // and the payload's u32 masked CRC

  // Whether the record at `header`, its payload of `length` bytes following it in memory, has
  // both CRCs right (the payload's only when verify_payload_crc_).
  bool Intact(const char* header, uint64_t length) const {
#ifdef MOSAIC_CRC32C_X86
    if (hardware_crc_) return IntactSse42(header, length, verify_payload_crc_);
#endif
    return IntactPortable(header, length, verify_payload_crc_);
  }
  static bool IntactPortable(const char* header, uint64_t length, bool verify_payload);
#ifdef MOSAIC_CRC32C_X86
  // IntactPortable with the CRC instruction inlined, for CPUs that have it.
  __attribute__((target("sse4.2"))) static bool IntactSse42(const char* header, uint64_t length,
                                                            bool verify_payload);
#endif
  // Next() for a record not wholly in the buffer or damaged: reads more, checks and reports.
  bool NextChecked(std::string_view* payload, int64_t* offset_bytes);
  // Makes at least `n` bytes available from begin_; false when the source ends first.
  bool Fill(size_t n);
  // From the record at offset_ whose length lies, moves byte by byte to the next record whose
  // length fits in the file and whose two CRCs match (the buffer holds at most one record);
  // false when none starts before the file's end or stop_bytes_. Needs a known size.
  bool SkipToIntactRecord();
  // "N bytes skipped to the next intact record, at byte offset X", from `damaged_at` to offset_.
  std::string SkippedTo(int64_t damaged_at) const;

  std::unique_ptr<ByteSource> source_;
  int64_t size_bytes_;  // the source's size, -1 when unknown
  std::string path_;
  bool verify_payload_crc_;
#ifdef MOSAIC_CRC32C_X86
  bool hardware_crc_;  // Crc32cIsHardwareAccelerated(), read once
#endif
  std::vector<char> buffer_;
  size_t begin_ = 0;
  size_t end_ = 0;
  bool source_done_ = false;
  bool stopped_ = false;
  int64_t offset_ = 0;
  int64_t stop_bytes_;  // no record starting here or later is read
  int64_t records_read_ = 0;
  std::vector<RecordIssue> issues_;
};

}  // namespace mosaic::runs
