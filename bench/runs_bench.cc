// Reading speed of event files: a generated file of scalars (MOSAIC_BENCH_MB, default 256 MiB,
// 4 tags, simple_value) read from the page cache
//   (1) by `cat` (a child process, stdout to /dev/null) and by a plain read() loop: the references;
//   (2) as CRC32C only, as TFRecords with both CRCs checked, as scalar points (the streaming reader);
//   (3) as a whole run (every point kept, the restart policy applied), and as the summary pass
//       (the run loaded and its health checked, what `mosaic runs DIR` computes), also over the
//       same file with checkpoint pauses (stalls found while reading);
//   (4) by the command line itself: `mosaic runs DIR` and `mosaic runs DIR --export csv`, timed
//       like `cat` (child process, output to /dev/null);
//   (5) a directory of 16 runs of 1/16 of the size, loaded on 1 thread and on every core;
//   (6) that directory from the disk: its files evicted from the page cache before each
//       iteration (fsync, then posix_fadvise DONTNEED, checked with mincore), read by `cat` and
//       by `mosaic runs DIR`: whether the summary is limited by the disk or by the CPU.
// Every figure is the best of its iterations; x_cat and x_plain_read divide it by the best `cat`
// and plain read of the same run. peak_rss_MB is the process's high-water mark so far (the child
// processes' own in child_peak_rss_MB).
//   ./build/runs_bench [--benchmark_filter=...]
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "mosaic/runs/crc32c.h"
#include "mosaic/runs/event_file.h"
#include "mosaic/runs/event_writer.h"
#include "mosaic/runs/health.h"
#include "mosaic/runs/run.h"
#include "mosaic/runs/run_digest.h"
#include "mosaic/runs/tfrecord_reader.h"

namespace {

using namespace mosaic::runs;

struct BenchFile {
  std::string directory;
  std::string path;
  int64_t bytes = 0;
  int64_t points = 0;
  std::string many_directory;  // 16 runs of bytes / 16 each
  std::string paused_directory;  // the same file with a 10-minute checkpoint pause every 20 000 steps
};

// Writes an event file of about `target` bytes of 4 scalar tags to `path`, one step every 0.1 s
// and, when `pause_every` > 0, a pause of 600 s every `pause_every` steps; returns (bytes, points).
std::pair<int64_t, int64_t> WriteEventFile(const std::string& path, int64_t target,
                                           int64_t pause_every = 0) {
  std::ofstream out(path, std::ios::binary);
  const char* tags[] = {"train/loss", "train/grad_norm", "train/lr", "eval/loss"};
  std::string chunk = FrameRecord(EncodeFileVersionEvent(1.7e9));
  int64_t bytes = 0;
  int64_t points = 0;
  for (int64_t step = 0; bytes + static_cast<int64_t>(chunk.size()) < target; ++step) {
    for (const char* tag : tags) {
      const double pauses = pause_every > 0 ? 600.0 * static_cast<double>(step / pause_every) : 0;
      chunk += FrameRecord(EncodeScalarEvent(1.7e9 + 0.1 * step + pauses, step, tag,
                                             3.0 / (1.0 + 1e-5 * step) + 1e-3 * (step % 7)));
      ++points;
    }
    if (chunk.size() > (4 << 20)) {
      out.write(chunk.data(), chunk.size());
      bytes += chunk.size();
      chunk.clear();
    }
  }
  out.write(chunk.data(), chunk.size());
  bytes += chunk.size();
  return {bytes, points};
}

const BenchFile& File() {
  static const BenchFile file = [] {
    BenchFile f;
    const char* mb = std::getenv("MOSAIC_BENCH_MB");
    const int64_t target = (mb != nullptr ? std::atoll(mb) : 256) << 20;
    f.directory = (std::filesystem::temp_directory_path() /
                   ("mosaic_runs_bench_" + std::to_string(getpid()))).string();
    std::filesystem::create_directories(f.directory);
    f.path = f.directory + "/events.out.tfevents.1700000000.bench.1.0";
    std::tie(f.bytes, f.points) = WriteEventFile(f.path, target);
    f.many_directory = f.directory + "_many";
    for (int r = 0; r < 16; ++r) {
      const std::string run = f.many_directory + "/run" + std::to_string(r);
      std::filesystem::create_directories(run);
      WriteEventFile(run + "/events.out.tfevents.1700000000.bench.1.0", target / 16);
    }
    f.paused_directory = f.directory + "_paused";
    std::filesystem::create_directories(f.paused_directory);
    WriteEventFile(f.paused_directory + "/events.out.tfevents.1700000000.bench.1.0", target, 20000);
    return f;
  }();
  return file;
}

double g_plain_seconds = 0;
double g_cat_seconds = 0;

double PeakResidentMb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::atof(line.c_str() + 6) / 1024.0;
  }
  return 0;
}

// CPU seconds (user + system) of this process, every thread, or of its waited-for children.
double CpuSeconds(int who) {
  struct rusage usage {};
  getrusage(who, &usage);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * t.tv_usec; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// The best wall time and the best CPU time of one iteration (on a shared machine the CPU time is
// the steadier of the two; CPU over wall above 1 means several cores were busy).
struct Timing {
  double wall_seconds = 1e300;
  double cpu_seconds = 1e300;
};

double g_cat_cpu_seconds = 0;

void Report(benchmark::State& state, Timing t, int64_t bytes = File().bytes) {
  state.SetBytesProcessed(state.iterations() * bytes);
  state.counters["MB"] = static_cast<double>(bytes) / (1 << 20);
  state.counters["best_ms"] = t.wall_seconds * 1e3;
  state.counters["MB_per_s"] = static_cast<double>(bytes) / 1e6 / t.wall_seconds;
  state.counters["cpu_ms"] = t.cpu_seconds * 1e3;
  state.counters["MB_per_cpu_s"] = static_cast<double>(bytes) / 1e6 / t.cpu_seconds;
  if (g_plain_seconds > 0) state.counters["x_plain_read"] = t.wall_seconds / g_plain_seconds;
  if (g_cat_seconds > 0) state.counters["x_cat"] = t.wall_seconds / g_cat_seconds;
  if (g_cat_cpu_seconds > 0) state.counters["x_cat_cpu"] = t.cpu_seconds / g_cat_cpu_seconds;
  state.counters["peak_rss_MB"] = PeakResidentMb();
}

// Times `body` (which runs child processes when `children`) per iteration.
template <typename Body>
Timing Best(benchmark::State& state, Body body, bool children = false) {
  Timing best;
  const int who = children ? RUSAGE_CHILDREN : RUSAGE_SELF;
  for (auto _ : state) {
    const double cpu_start = CpuSeconds(who);
    const auto start = std::chrono::steady_clock::now();
    body();
    best.wall_seconds = std::min(
        best.wall_seconds, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    best.cpu_seconds = std::min(best.cpu_seconds, CpuSeconds(who) - cpu_start);
  }
  return best;
}

template <typename Body>
void Timed(benchmark::State& state, Body body, bool children = false) {
  Report(state, Best(state, body, children));
}

// Runs `argv` with stdout and stderr to /dev/null; returns its peak RSS in MB.
double RunQuietly(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  if (posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ) != 0) {
    std::fprintf(stderr, "cannot run %s\n", args[0]);
    std::exit(1);
  }
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  struct rusage usage {};
  wait4(pid, &status, 0, &usage);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "%s failed\n", args[0]);
    std::exit(1);
  }
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

// The mosaic binary next to this benchmark (both are built into build/).
std::string MosaicBinary() {
  return (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "mosaic").string();
}

void BM_Cat(benchmark::State& state) {
  const Timing t = Best(state, [&] { RunQuietly({"cat", File().path}); }, true);
  g_cat_seconds = t.wall_seconds;
  g_cat_cpu_seconds = t.cpu_seconds;
  Report(state, t);
}

void BM_PlainRead(benchmark::State& state) {
  const BenchFile& f = File();
  std::vector<char> buffer(1 << 20);
  const Timing t = Best(state, [&] {
    int fd = open(f.path.c_str(), O_RDONLY);
    uint64_t sum = 0;
    ssize_t n;
    while ((n = read(fd, buffer.data(), buffer.size())) > 0) sum += static_cast<uint8_t>(buffer[n - 1]);
    close(fd);
    benchmark::DoNotOptimize(sum);
  });
  g_plain_seconds = t.wall_seconds;
  Report(state, t);
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

// ReadRunDigests over `directory` on every core, as `mosaic runs DIR` reads it; `findings`: the
// findings the digests must hold at least.
void TimedSummaryPass(benchmark::State& state, const std::string& directory, size_t findings) {
  size_t found = 0;
  Timed(state, [&] {
    LoadOptions options;
    options.threads = 0;
    const std::vector<RunDigest> digests = ReadRunDigests(DiscoverRuns(directory), options, 10);
    found = 0;
    for (const RunDigest& d : digests) found += d.findings.size();
    benchmark::DoNotOptimize(found);
  });
  if (found < findings) state.SkipWithError("the digests miss findings");
}

// What `mosaic runs DIR` computes before printing: each run's series digested and checked while
// read, on every core (ReadRunDigests; no point kept).
void BM_SummaryPass(benchmark::State& state) { TimedSummaryPass(state, File().directory, 0); }

// The summary pass over the file with checkpoint pauses (a stall finding per tag): found from
// the streams' interval logs, where the run was once read a second time with its points.
void BM_SummaryPassPaused(benchmark::State& state) {
  TimedSummaryPass(state, File().paused_directory, 4);
}

// The summary pass as it was before digesting while reading: the runs loaded with every point,
// then checked (the baseline of BM_SummaryPass).
void BM_SummaryPassWithPoints(benchmark::State& state) {
  Timed(state, [&] {
    LoadOptions options;
    options.threads = 0;
    std::vector<Run> runs = LoadRuns(DiscoverRuns(File().directory), options);
    const std::vector<RunDigest> digests = DigestRuns(std::move(runs), 10, {}, 0);
    size_t findings = 0;
    for (const RunDigest& d : digests) findings += d.findings.size();
    benchmark::DoNotOptimize(findings);
  });
}

void BM_CliSummary(benchmark::State& state) {
  double child_rss = 0;
  Timed(state, [&] { child_rss = RunQuietly({MosaicBinary(), "runs", File().directory}); }, true);
  state.counters["child_peak_rss_MB"] = child_rss;
}

void BM_CliExportCsv(benchmark::State& state) {
  double child_rss = 0;
  Timed(state, [&] {
    child_rss = RunQuietly({MosaicBinary(), "runs", File().directory, "--export", "csv"});
  }, true);
  state.counters["child_peak_rss_MB"] = child_rss;
}

// 16 runs of 1/16 of the size each: the whole-run load of them all on state.range(0) threads
// (0: every hardware thread).
void BM_LoadRunsDirectory(benchmark::State& state) {
  int64_t bytes = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(File().many_directory)) {
    if (entry.is_regular_file()) bytes += static_cast<int64_t>(entry.file_size());
  }
  LoadOptions options;
  options.threads = static_cast<int>(state.range(0));
  const Timing best = Best(state, [&] {
    std::vector<Run> runs = LoadRuns(DiscoverRuns(File().many_directory), options);
    benchmark::DoNotOptimize(runs.size());
  });
  Report(state, best, bytes);
  state.counters["cpu_over_wall"] = best.cpu_seconds / best.wall_seconds;
  state.counters["threads"] =
      options.threads > 0 ? options.threads : std::thread::hardware_concurrency();
}

// The regular files under `directory`, sorted.
std::vector<std::string> FilesUnder(const std::string& directory) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(directory)) {
    if (entry.is_regular_file()) files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Evicts `files` from the page cache (written back first: dirty pages are not dropped); returns
// the share of their pages still resident afterwards (mincore), 0 when every page left.
double EvictFromPageCache(const std::vector<std::string>& files) {
  const long page = sysconf(_SC_PAGESIZE);
  int64_t pages = 0, resident = 0;
  for (const std::string& path : files) {
    const int fd = open(path.c_str(), O_RDONLY);
    if (fd < 0) continue;
    struct stat st {};
    fstat(fd, &st);
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    if (st.st_size > 0) {
      void* map = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
      if (map != MAP_FAILED) {
        const size_t n = (static_cast<size_t>(st.st_size) + page - 1) / page;
        std::vector<unsigned char> in_core(n);
        if (mincore(map, static_cast<size_t>(st.st_size), in_core.data()) == 0) {
          for (unsigned char c : in_core) resident += c & 1;
          pages += static_cast<int64_t>(n);
        }
        munmap(map, static_cast<size_t>(st.st_size));
      }
    }
    close(fd);
  }
  return pages > 0 ? static_cast<double>(resident) / static_cast<double>(pages) : 0;
}

double g_cat_cold_seconds = 0;

// Times `argv` (a child process, output to /dev/null) with the files of the 16-run directory read
// from the disk: evicted before each iteration, the eviction not timed. Skips the benchmark when
// the page cache keeps the files (a file system that ignores the advice, such as tmpfs).
Timing TimedCold(benchmark::State& state, const std::vector<std::string>& argv) {
  const std::vector<std::string> files = FilesUnder(File().many_directory);
  int64_t bytes = 0;
  for (const std::string& f : files) bytes += static_cast<int64_t>(std::filesystem::file_size(f));
  Timing best;
  double resident = 0;
  for (auto _ : state) {
    state.PauseTiming();
    resident = std::max(resident, EvictFromPageCache(files));
    state.ResumeTiming();
    const double cpu_start = CpuSeconds(RUSAGE_CHILDREN);
    const auto start = std::chrono::steady_clock::now();
    RunQuietly(argv);
    best.wall_seconds = std::min(
        best.wall_seconds,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    best.cpu_seconds = std::min(best.cpu_seconds, CpuSeconds(RUSAGE_CHILDREN) - cpu_start);
  }
  if (resident > 0.01) state.SkipWithError("the page cache kept the files: not a read from disk");
  Report(state, best, bytes);
  state.counters["resident_after_evict"] = resident;
  return best;
}

// `cat` of every file of the 16-run directory from the disk: the disk's speed.
void BM_CatCold(benchmark::State& state) {
  std::vector<std::string> argv = {"cat"};
  for (const std::string& f : FilesUnder(File().many_directory)) argv.push_back(f);
  g_cat_cold_seconds = TimedCold(state, argv).wall_seconds;
}

// `mosaic runs DIR` over the 16-run directory from the disk; x_cat_cold: its wall time over
// BM_CatCold's (1 when the summary is limited by the disk).
void BM_CliSummaryCold(benchmark::State& state) {
  const Timing t = TimedCold(state, {MosaicBinary(), "runs", File().many_directory});
  if (g_cat_cold_seconds > 0) state.counters["x_cat_cold"] = t.wall_seconds / g_cat_cold_seconds;
}

BENCHMARK(BM_Cat)->Iterations(5)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_PlainRead)->Iterations(5)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Crc32cOnly)->Iterations(3)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ReadRecords)->Iterations(3)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ReadScalars)->Iterations(3)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LoadRun)->Iterations(3)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SummaryPass)->Iterations(3)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SummaryPassPaused)->Iterations(3)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SummaryPassWithPoints)->Iterations(3)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CliSummary)->Iterations(3)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CliExportCsv)->Iterations(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LoadRunsDirectory)->Arg(1)->Arg(0)->Iterations(3)->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_CatCold)->Iterations(3)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CliSummaryCold)->Iterations(3)->Unit(benchmark::kMillisecond)->UseRealTime();

struct Cleanup {
  ~Cleanup() {
    std::error_code ec;
    if (!File().directory.empty()) std::filesystem::remove_all(File().directory, ec);
    if (!File().many_directory.empty()) std::filesystem::remove_all(File().many_directory, ec);
    if (!File().paused_directory.empty()) std::filesystem::remove_all(File().paused_directory, ec);
  }
} cleanup;

}  // namespace
