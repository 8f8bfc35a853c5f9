#include "mosaic/runs/tfrecord_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "mosaic/runs/crc32c.h"
#include "mosaic/util/error.h"

namespace mosaic::runs {
namespace {

constexpr size_t kHeaderBytes = 12;  // u64 length + u32 masked CRC
constexpr size_t kFooterBytes = 4;   // u32 masked CRC of the payload

// How far ahead of the reader a file is asked from the disk (posix_fadvise WILLNEED): the disk
// reads the next stretch while the reader decodes this one, so that a file not in the page cache
// is read at the disk's speed rather than at the alternation of reading and decoding.
constexpr int64_t kReadAheadBytes = int64_t{32} << 20;

class FileSource : public ByteSource {
 public:
  FileSource(int fd, int64_t size_bytes, int64_t start_bytes)
      : fd_(fd), size_bytes_(size_bytes), position_(start_bytes), advised_until_(start_bytes) {}
  ~FileSource() override { close(fd_); }
  size_t Read(char* out, size_t size) override {
    AdviseAhead();
    size_t total = 0;
    while (total < size) {
      ssize_t n = read(fd_, out + total, size - total);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      total += static_cast<size_t>(n);
    }
    position_ += static_cast<int64_t>(total);
    return total;
  }
  int64_t SizeBytes() const override { return size_bytes_; }

 private:
  // Keeps at least half of kReadAheadBytes asked for ahead of the position (regular files only;
  // the advice is a hint, and its failure changes nothing but speed).
  void AdviseAhead() {
#ifdef POSIX_FADV_WILLNEED
    if (size_bytes_ < 0 || advised_until_ >= size_bytes_) return;
    if (advised_until_ - position_ > kReadAheadBytes / 2) return;
    const int64_t from = std::max(advised_until_, position_);
    posix_fadvise(fd_, static_cast<off_t>(from), static_cast<off_t>(kReadAheadBytes),
                  POSIX_FADV_WILLNEED);
    advised_until_ = from + kReadAheadBytes;
#endif
  }

  int fd_;
  int64_t size_bytes_;
  int64_t position_;       // the file offset of the next byte read
  int64_t advised_until_;  // the end of the range asked from the disk so far
};

class MemoryByteSource : public ByteSource {
 public:
  MemoryByteSource(std::string_view bytes, size_t start)
      : bytes_(bytes), position_(std::min(start, bytes.size())) {}
  size_t Read(char* out, size_t size) override {
    const size_t n = std::min(size, bytes_.size() - position_);
    std::memcpy(out, bytes_.data() + position_, n);
    position_ += n;
    return n;
  }
  int64_t SizeBytes() const override { return static_cast<int64_t>(bytes_.size()); }

 private:
  std::string_view bytes_;
  size_t position_;
};

uint32_t LoadU32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

uint64_t LoadU64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

}  // namespace

std::unique_ptr<ByteSource> OpenFileSource(const std::string& path, int64_t start_bytes) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  if (start_bytes > 0 && lseek(fd, static_cast<off_t>(start_bytes), SEEK_SET) < 0) {
    const int error = errno;
    close(fd);
    throw InputError(fmt::format("cannot read {}: {}", path, std::strerror(error)));
  }
#ifdef POSIX_FADV_SEQUENTIAL
  posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
  struct stat info;
  const int64_t size = fstat(fd, &info) == 0 && S_ISREG(info.st_mode) ? info.st_size : -1;
  return std::make_unique<FileSource>(fd, size, std::max<int64_t>(start_bytes, 0));
}

std::unique_ptr<ByteSource> MemorySource(std::string_view bytes, size_t start) {
  return std::make_unique<MemoryByteSource>(bytes, start);
}

std::string_view ToString(RecordIssueKind kind) {
  switch (kind) {
    case RecordIssueKind::kTruncatedTail: return "truncated last record";
    case RecordIssueKind::kLengthBeyondEnd: return "record length beyond the end of the file";
    case RecordIssueKind::kBadLengthCrc: return "bad length CRC";
    case RecordIssueKind::kBadPayloadCrc: return "bad payload CRC";
    case RecordIssueKind::kBadPayload: return "bad event payload";
  }
  return "?";
}

std::string RecordIssue::Message() const {
  std::string consequence = outcome;
  if (consequence.empty()) switch (kind) {
    case RecordIssueKind::kTruncatedTail:
      consequence = "the complete records before it were read";
      break;
    case RecordIssueKind::kBadLengthCrc:
      consequence = "framing lost";
      break;
    case RecordIssueKind::kLengthBeyondEnd:
      consequence = "the bytes up to the next intact record skipped";
      break;
    case RecordIssueKind::kBadPayloadCrc:
    case RecordIssueKind::kBadPayload:
      consequence = "record skipped";
      break;
  }
  return fmt::format("{}: byte offset {}: {} ({}); {}", path, offset_bytes, ToString(kind), detail,
                     consequence);
}

namespace {

// Whether the 12 header bytes at `header`, at file offset `offset` of a file of `size_bytes` (-1:
// unknown), could start a record: the length's CRC matches and the length fits in what is left of
// the file (below 2^40 bytes when its size is unknown). The search for an intact record.
bool PlausibleHeader(const char* header, int64_t offset, int64_t size_bytes) {
  if (UnmaskCrc32c(LoadU32(header + 8)) != Crc32cExtend(0, header, 8)) return false;
  const uint64_t length = LoadU64(header);
  if (size_bytes < 0) return length <= (uint64_t{1} << 40);
  const auto left = static_cast<uint64_t>(size_bytes - offset);
  return left >= kHeaderBytes + kFooterBytes && length <= left - kHeaderBytes - kFooterBytes;
}

// Whether the `length` payload bytes after the header at `header`, and the CRC after them, in
// memory, agree.
bool PayloadCrcMatches(const char* header, uint64_t length) {
  const char* data = header + kHeaderBytes;
  return UnmaskCrc32c(LoadU32(data + length)) == Crc32cExtend(0, data, length);
}

}  // namespace

int64_t FindIntactRecord(ByteSource& source, int64_t from_bytes, int64_t to_bytes,
                         int64_t size_bytes) {
  // buffer[0, end) holds the file from `base` on; candidates are tried in order, the buffer
  // sliding forward (and growing for a record larger than it) as they need more bytes.
  std::vector<char> buffer(size_t{1} << 16);
  size_t end = 0;
  int64_t base = from_bytes;
  bool source_done = false;
  // Makes buffer[at, at + n) available; false when the source ends first.
  auto fill = [&](size_t& at, size_t n) {
    if (at + n <= end) return true;
    if (at > 0) {
      std::memmove(buffer.data(), buffer.data() + at, end - at);
      end -= at;
      base += static_cast<int64_t>(at);
      at = 0;
    }
    if (buffer.size() < n) buffer.resize(n);
    while (end < n && !source_done) {
      const size_t got = source.Read(buffer.data() + end, buffer.size() - end);
      source_done = got == 0;
      end += got;
    }
    return end >= n;
  };
  size_t at = 0;
  for (int64_t offset = from_bytes; offset < to_bytes; ++offset, ++at) {
    if (!fill(at, kHeaderBytes + kFooterBytes)) return -1;
    if (!PlausibleHeader(buffer.data() + at, offset, size_bytes)) continue;
    const uint64_t length = LoadU64(buffer.data() + at);
    if (!fill(at, kHeaderBytes + length + kFooterBytes)) continue;
    if (PayloadCrcMatches(buffer.data() + at, length)) return offset;
  }
  return -1;
}

TfRecordReader::TfRecordReader(std::unique_ptr<ByteSource> source, std::string path,
                               bool verify_payload_crc, size_t buffer_bytes, RecordRange range)
    : source_(std::move(source)),
      size_bytes_(source_->SizeBytes()),
      path_(std::move(path)),
      verify_payload_crc_(verify_payload_crc),
#ifdef MOSAIC_CRC32C_X86
      hardware_crc_(Crc32cIsHardwareAccelerated()),
#endif
      buffer_(std::max<size_t>(buffer_bytes, kHeaderBytes + kFooterBytes)),
      offset_(range.begin_bytes),
      stop_bytes_(range.stop_bytes < 0 ? INT64_MAX : range.stop_bytes) {}

bool TfRecordReader::Fill(size_t n) {
  if (end_ - begin_ >= n) return true;
  if (source_done_) return false;
  if (buffer_.size() - begin_ < n) {
    // Move the unread bytes to the front.
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  while (end_ - begin_ < n) {
    // A record larger than the buffer: grow it as its bytes arrive (doubling, at most to `n`), so
    // that a length the source cannot back never allocates more than twice what was read.
    if (end_ == buffer_.size()) buffer_.resize(std::min(n, buffer_.size() * 2));
    const size_t got = source_->Read(buffer_.data() + end_, buffer_.size() - end_);
    if (got == 0) {
      source_done_ = true;
      return false;
    }
    end_ += got;
  }
  return true;
}

bool TfRecordReader::IntactPortable(const char* header, uint64_t length, bool verify_payload) {
  const char* data = header + kHeaderBytes;
  return UnmaskCrc32c(LoadU32(header + 8)) == Crc32cExtendPortable(0, header, 8) &&
         (!verify_payload ||
          UnmaskCrc32c(LoadU32(data + length)) == Crc32cExtendPortable(0, data, length));
}

#ifdef MOSAIC_CRC32C_X86
__attribute__((target("sse4.2"))) bool TfRecordReader::IntactSse42(const char* header,
                                                                   uint64_t length,
                                                                   bool verify_payload) {
  const char* data = header + kHeaderBytes;
  return UnmaskCrc32c(LoadU32(header + 8)) == Crc32cExtendSse42(0, header, 8) &&
         (!verify_payload ||
          UnmaskCrc32c(LoadU32(data + length)) == Crc32cExtendSse42(0, data, length));
}
#endif

std::string TfRecordReader::SkippedTo(int64_t damaged_at) const {
  return fmt::format("{} bytes skipped to the next intact record, at byte offset {}",
                     offset_ - damaged_at, offset_);
}

bool TfRecordReader::SkipToIntactRecord() {
  while (offset_ + 1 < stop_bytes_) {
    ++begin_;
    ++offset_;
    if (!Fill(kHeaderBytes + kFooterBytes)) return false;
    if (!PlausibleHeader(buffer_.data() + begin_, offset_, size_bytes_)) continue;
    const uint64_t length = LoadU64(buffer_.data() + begin_);
    if (!Fill(kHeaderBytes + length + kFooterBytes)) return false;
    // Fill may have moved the bytes: the record is found again from begin_.
    if (PayloadCrcMatches(buffer_.data() + begin_, length)) return true;
  }
  return false;
}

bool TfRecordReader::NextChecked(std::string_view* payload, int64_t* offset_bytes) {
  while (!stopped_ && offset_ < stop_bytes_) {
    if (!Fill(kHeaderBytes)) {
      if (end_ > begin_) {
        issues_.push_back({path_, offset_, RecordIssueKind::kTruncatedTail,
                           fmt::format("{} of 12 header bytes", end_ - begin_), ""});
      }
      stopped_ = true;
      return false;
    }
    const char* header = buffer_.data() + begin_;
    const uint64_t length = LoadU64(header);
    const uint32_t stored_length_crc = UnmaskCrc32c(LoadU32(header + 8));
    const uint32_t length_crc = Crc32cExtend(0, header, 8);
    if (stored_length_crc != length_crc) {
      // Framing is lost at this header: reading goes on from the next intact record, if any (a
      // flipped bit, or a length that lied in the record before, costs only the bytes between).
      const std::string crcs =
          fmt::format("stored 0x{:08x}, computed 0x{:08x}", stored_length_crc, length_crc);
      const int64_t damaged_at = offset_;
      if (size_bytes_ >= 0 && SkipToIntactRecord()) {
        issues_.push_back({path_, damaged_at, RecordIssueKind::kBadLengthCrc, crcs,
                           SkippedTo(damaged_at)});
        continue;
      }
      issues_.push_back({path_, damaged_at, RecordIssueKind::kBadLengthCrc, crcs,
                         "no intact record after it: the rest of the file unread"});
      offset_ = damaged_at;  // where the readable records end
      stopped_ = true;
      return false;
    }
    // A length the CRC vouches for, but the file may still end before it (truncated tail), or the
    // length may lie: checked against the bytes the file has left before the buffer grows.
    constexpr uint64_t kMaxRecordBytes = uint64_t{1} << 40;
    const uint64_t left_bytes =
        size_bytes_ < 0 ? kMaxRecordBytes
                        : static_cast<uint64_t>(std::max<int64_t>(
                              0, size_bytes_ - offset_ - static_cast<int64_t>(kHeaderBytes)));
    if (length > kMaxRecordBytes || length + kFooterBytes > left_bytes) {
      const std::string claim = fmt::format(
          "payload of {} bytes and its 4-byte CRC claimed, {} bytes left in the file after the "
          "header",
          length, left_bytes);
      // A writer cut off inside its last record leaves no intact record after the header; one
      // found there means the length lied (a damaged header) and reading goes on from it.
      const int64_t claimed_at = offset_;
      if (size_bytes_ >= 0 && SkipToIntactRecord()) {
        issues_.push_back({path_, claimed_at, RecordIssueKind::kLengthBeyondEnd,
                           fmt::format("{}; the next intact record is at byte offset {}", claim,
                                       offset_),
                           ""});
        continue;
      }
      issues_.push_back({path_, claimed_at, RecordIssueKind::kTruncatedTail, claim, ""});
      offset_ = claimed_at;  // where the readable records end
      stopped_ = true;
      return false;
    }
    if (!Fill(kHeaderBytes + length + kFooterBytes)) {
      issues_.push_back({path_, offset_, RecordIssueKind::kTruncatedTail,
                         fmt::format("record of {} bytes, {} available", length,
                                     end_ - begin_ - std::min(end_ - begin_, kHeaderBytes)),
                         ""});
      stopped_ = true;
      return false;
    }
    const char* data = buffer_.data() + begin_ + kHeaderBytes;
    const int64_t record_offset = offset_;
    const size_t record_bytes = kHeaderBytes + length + kFooterBytes;
    begin_ += record_bytes;
    offset_ += static_cast<int64_t>(record_bytes);
    if (verify_payload_crc_) {
      const uint32_t stored = UnmaskCrc32c(LoadU32(data + length));
      const uint32_t computed = Crc32cExtend(0, data, length);
      if (stored != computed) {
        // The payload, or the length that framed it (a length CRC can match by chance or be
        // written so): the next record is searched for from the byte after this header, so a
        // wrong length costs no intact record after it.
        const std::string crcs = fmt::format("stored 0x{:08x}, computed 0x{:08x}", stored, computed);
        const int64_t framed_end = offset_;
        begin_ -= record_bytes;
        offset_ = record_offset;
        if (size_bytes_ >= 0 && SkipToIntactRecord()) {
          issues_.push_back({path_, record_offset, RecordIssueKind::kBadPayloadCrc, crcs,
                             offset_ == framed_end ? "" : SkippedTo(record_offset)});
          continue;
        }
        if (size_bytes_ < 0) {  // no search without the file's size: trust the length
          begin_ += record_bytes;
          offset_ = framed_end;
          issues_.push_back({path_, record_offset, RecordIssueKind::kBadPayloadCrc, crcs, ""});
          continue;
        }
        issues_.push_back({path_, record_offset, RecordIssueKind::kBadPayloadCrc, crcs,
                           "no intact record after it: the rest of the file unread"});
        offset_ = record_offset;
        stopped_ = true;
        return false;
      }
    }
    *payload = std::string_view(data, length);
    *offset_bytes = record_offset;
    ++records_read_;
    return true;
  }
  return false;
}

}  // namespace mosaic::runs
