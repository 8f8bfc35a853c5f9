// Reading speed of event files: a generated file of scalars (kBenchBytes, 4 tags, simple_value)
// read (1) plainly from the page cache, (2) as TFRecords with CRC32C checks, (3) as scalar points,
// (4) as a whole run with the restart policy applied. Reports MB/s, the ratio of each to the plain
// read of the same file in the same run (x_plain_read), and peak resident memory.
//   ./build/runs_bench [--benchmark_filter=...]   (MOSAIC_BENCH_MB overrides the size)
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "mosaic/runs/crc32c.h"
#include "mosaic/runs/event_file.h"
#include "mosaic/runs/event_writer.h"
#include "mosaic/runs/run.h"
#include "mosaic/runs/tfrecord_reader.h"

namespace {

using namespace mosaic::runs;

struct BenchFile {
  std::string directory;
  std::string path;
  int64_t bytes = 0;
  int64_t points = 0;
};

const BenchFile& File() {
  static const BenchFile file = [] {
    BenchFile f;
    const char* mb = std::getenv("MOSAIC_BENCH_MB");
    const int64_t target = (mb != nullptr ? std::atoll(mb) : 256) << 20;
    f.directory = (std::filesystem::temp_directory_path() /
                   ("mosaic_runs_bench_" + std::to_string(getpid()))).string();
    std::filesystem::create_directories(f.directory);
    f.path = f.directory + "/events.out.tfevents.1700000000.bench.1.0";
    std::ofstream out(f.path, std::ios::binary);
    const char* tags[] = {"train/loss", "train/grad_norm", "train/lr", "eval/loss"};
    std::string chunk = FrameRecord(EncodeFileVersionEvent(1.7e9));
    for (int64_t step = 0; f.bytes < target; ++step) {
      for (const char* tag : tags) {
        chunk += FrameRecord(EncodeScalarEvent(1.7e9 + 0.1 * step, step, tag,
                                               3.0 / (1.0 + 1e-5 * step) + 1e-3 * (step % 7)));
        ++f.points;
      }
      if (chunk.size() > (4 << 20)) {
        out.write(chunk.data(), chunk.size());
        f.bytes += chunk.size();
        chunk.clear();
      }
    }
    out.write(chunk.data(), chunk.size());
    f.bytes += chunk.size();
    return f;
  }();
  return file;
}

double g_plain_seconds = 0;

double PeakResidentMb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::atof(line.c_str() + 6) / 1024.0;
  }
  return 0;
}

void Report(benchmark::State& state, double seconds_per_iteration) {
  state.SetBytesProcessed(state.iterations() * File().bytes);
  state.counters["MB"] = static_cast<double>(File().bytes) / (1 << 20);
  state.counters["MB_per_s"] = static_cast<double>(File().bytes) / 1e6 / seconds_per_iteration;
  if (g_plain_seconds > 0) state.counters["x_plain_read"] = seconds_per_iteration / g_plain_seconds;
  state.counters["peak_rss_MB"] = PeakResidentMb();
}

template <typename Body>
void Timed(benchmark::State& state, Body body) {
  double total = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    body();
    total += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  Report(state, total / static_cast<double>(state.iterations()));
}

void BM_PlainRead(benchmark::State& state) {
  const BenchFile& f = File();
  std::vector<char> buffer(1 << 20);
  double total = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    int fd = open(f.path.c_str(), O_RDONLY);
    uint64_t sum = 0;
    ssize_t n;
    while ((n = read(fd, buffer.data(), buffer.size())) > 0) sum += static_cast<uint8_t>(buffer[n - 1]);
    close(fd);
    benchmark::DoNotOptimize(sum);
    total += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  g_plain_seconds = total / static_cast<double>(state.iterations());
  Report(state, g_plain_seconds);
}

void BM_Crc32cOnly(benchmark::State& state) {
  const BenchFile& f = File();
  std::vector<char> buffer(1 << 20);
  Timed(state, [&] {
    int fd = open(f.path.c_str(), O_RDONLY);
    uint32_t crc = 0;
    ssize_t n;
    while ((n = read(fd, buffer.data(), buffer.size())) > 0) crc = Crc32cExtend(crc, buffer.data(), n);
    close(fd);
    benchmark::DoNotOptimize(crc);
  });
  state.counters["hardware_crc"] = Crc32cIsHardwareAccelerated() ? 1 : 0;
}

void BM_ReadRecords(benchmark::State& state) {
  Timed(state, [&] {
    TfRecordReader reader(OpenFileSource(File().path), File().path);
    std::string_view payload;
    int64_t offset;
    int64_t n = 0;
    while (reader.Next(&payload, &offset)) ++n;
    benchmark::DoNotOptimize(n);
  });
}

void BM_ReadScalars(benchmark::State& state) {
  int64_t points = 0;
  Timed(state, [&] {
    EventFileReader reader(File().path);
    EventItem item;
    points = 0;
    double sum = 0;
    while (reader.Next(&item)) {
      sum += item.value;
      ++points;
    }
    benchmark::DoNotOptimize(sum);
  });
  state.counters["points"] = static_cast<double>(points);
}

void BM_LoadRun(benchmark::State& state) {
  Timed(state, [&] {
    Run run = LoadRun(DiscoverRuns(File().directory).at(0), LoadOptions{});
    benchmark::DoNotOptimize(run.series.size());
  });
}

BENCHMARK(BM_PlainRead)->Iterations(5)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Crc32cOnly)->Iterations(3)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ReadRecords)->Iterations(3)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ReadScalars)->Iterations(3)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LoadRun)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

struct Cleanup {
  ~Cleanup() {
    std::error_code ec;
    if (!File().directory.empty()) std::filesystem::remove_all(File().directory, ec);
  }
} cleanup;

}  // namespace
