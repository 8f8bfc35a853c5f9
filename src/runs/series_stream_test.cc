// A series streamed in stretches, as the files and parts of a run are read, finds what
// CheckHealth finds on the series loaded whole: in particular the step gaps and stalls, whose
// medians the stream takes from its interval log (interval_log.h) without the points.
#include "series_stream.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "mosaic/runs/health.h"
#include "mosaic/runs/run.h"

namespace mosaic::runs::detail {
namespace {

std::string Describe(const std::vector<Finding>& findings) {
  std::string text;
  for (const Finding& f : findings) {
    text += fmt::format("{} {} [{}]\n", ToString(f.kind), f.message, fmt::join(f.steps, " "));
  }
  return text;
}

struct Streamed {
  bool decided = false;
  std::string findings;
};

// The series streamed in stretches that begin at the indices `seams` (increasing, each in
// (0, points.size())), appended in order.
Streamed Stream(const std::vector<ScalarPoint>& points, const std::string& tag,
                const std::vector<size_t>& seams, const HealthOptions& health) {
  const std::unique_ptr<RE2> spike_tags = CompileSpikeTags(health);
  const SeriesStreamOptions options{&health, spike_tags.get(), 10};
  std::vector<size_t> bounds = {0};
  bounds.insert(bounds.end(), seams.begin(), seams.end());
  bounds.push_back(points.size());
  SeriesStream whole(options);
  for (size_t b = 0; b + 1 < bounds.size(); ++b) {
    SeriesStream stretch(options);
    for (size_t i = bounds[b]; i < bounds[b + 1]; ++i) stretch.Add(points[i], tag);
    whole.Append(std::move(stretch), tag);
  }
  Streamed out;
  out.decided = whole.DecidedWithoutPoints();
  if (out.decided) {
    std::vector<Finding> findings;
    whole.Report(tag, &findings);
    out.findings = Describe(findings);
  }
  return out;
}

std::string Loaded(const std::vector<ScalarPoint>& points, const std::string& tag,
                   const HealthOptions& health) {
  Run run;
  run.name = "run";
  TimeSeries series;
  series.run = "run";
  series.tag = tag;
  series.points = points;
  run.series.push_back(series);
  return Describe(CheckHealth(run, health));
}

std::vector<ScalarPoint> Build(int n, const std::function<int64_t(int)>& step,
                               const std::function<double(int)>& wall) {
  std::vector<ScalarPoint> points;
  for (int i = 0; i < n; ++i) points.push_back({step(i), wall(i), 2.0 + 0.001 * (i % 7)});
  return points;
}

// Every seam for a short series, and one, two and three seams spread over a long one.
std::vector<std::vector<size_t>> SeamsOf(size_t n) {
  std::vector<std::vector<size_t>> all = {{}};
  if (n < 40) {
    for (size_t s = 1; s < n; ++s) all.push_back({s});
    for (size_t s = 1; s + 1 < n; ++s) all.push_back({s, s + 1});
  } else {
    all.push_back({n / 2});
    all.push_back({1, n - 1});
    all.push_back({n / 5, n / 3, n - 2});
  }
  return all;
}

void ExpectAsLoaded(const std::vector<ScalarPoint>& points, const std::string& expected_kind,
                    const HealthOptions& health = {}) {
  const std::string loaded = Loaded(points, "train/loss", health);
  if (!expected_kind.empty()) {
    EXPECT_NE(loaded.find(expected_kind), std::string::npos) << loaded;
  }
  for (const std::vector<size_t>& seams : SeamsOf(points.size())) {
    SCOPED_TRACE(fmt::format("seams at {}", fmt::join(seams, ", ")));
    const Streamed streamed = Stream(points, "train/loss", seams, health);
    ASSERT_TRUE(streamed.decided);
    EXPECT_EQ(streamed.findings, loaded);
  }
}

TEST(SeriesStream, StepGapsWithTheMedianOfIrregularIntervals) {
  auto wall = [](int i) { return 1.7e9 + 2.0 * i; };
  // Intervals 1 and 2 alternating, then a jump of 50 steps, in an odd and an even count of
  // intervals (the even median is the mean of the two middle intervals: 1.5).
  for (int n : {31, 32, 33}) {
    SCOPED_TRACE(n);
    ExpectAsLoaded(Build(n, [](int i) { return int64_t{i} + i / 2 + (i >= 20 ? 50 : 0); }, wall),
                   "step-gap 1 step gap");
  }
  // Two gaps, the later larger: the largest is the later one.
  ExpectAsLoaded(Build(30, [](int i) { return int64_t{10} * i + (i >= 9 ? 40 : 0) + (i >= 21 ? 90 : 0); },
                       wall),
                 "step-gap 2 step gaps");
  // Warmup logged every step, then every 10 steps (most intervals 10: the first ones are no gap),
  // and a resume that skipped 1000 steps.
  ExpectAsLoaded(Build(300, [](int i) { return i < 20 ? int64_t{i} : 20 + 10 * int64_t{i - 20} + (i >= 250 ? 1000 : 0); },
                       wall),
                 "step-gap");
  // Every step of a long run of gaps listed (a gap run of equal intervals holds many gaps).
  ExpectAsLoaded(Build(200, [](int i) { return i < 150 ? int64_t{i} : 150 + 100 * int64_t{i - 150}; },
                       wall),
                 "49 step gaps");
  // Logged every 100 steps at first, then every step: the first intervals, met before the
  // smallest, are gaps.
  ExpectAsLoaded(Build(220, [](int i) { return i < 20 ? int64_t{100} * i : 1980 + int64_t{i}; },
                       wall),
                 "20 step gaps");
  // Steps across the whole 64-bit range.
  const int64_t low = std::numeric_limits<int64_t>::min() + 3;
  ExpectAsLoaded(Build(9, [&](int i) {
                   return i < 8 ? low + i : std::numeric_limits<int64_t>::max();
                 }, wall),
                 "step-gap");
}

TEST(SeriesStream, StallsWithTheMedianOfWallIntervals) {
  auto step = [](int i) { return int64_t{100} * i; };
  // Intervals of 1 to 3 seconds and two checkpoint pauses of 20 minutes and one of 6 minutes.
  for (int n : {40, 41}) {
    SCOPED_TRACE(n);
    ExpectAsLoaded(Build(n, step, [](int i) {
                     return 1.7e9 + i * 2.0 + (i % 3) * 0.37 + (i >= 11 ? 1200.0 : 0) +
                            (i >= 25 ? 1200.0 : 0) + (i >= 33 ? 360.0 : 0);
                   }),
                   "stall 3 stalls");
  }
  // Wall times that go back or are not finite are left out of the median, as loaded.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  ExpectAsLoaded(Build(30, step, [&](int i) {
                   if (i == 5) return nan;
                   if (i == 17) return inf;
                   if (i == 9) return 1.7e9;  // back in time
                   return 1.7e9 + 30.0 * i + (i >= 20 ? 4000.0 : 0);
                 }),
                 "stall");
  // Every other wall interval negative (-50 s, then 250 s): the usual interval is 250 s, so a
  // pause of 2 250 s is no stall.
  ExpectAsLoaded(Build(41, step, [](int i) {
                   return 1.7e9 + 100.0 * i - (i % 2 == 1 ? 150.0 : 0) + (i >= 20 ? 2000.0 : 0);
                 }),
                 "");
  // A pause above stall_min_seconds that is not 10 times the usual interval: no stall.
  ExpectAsLoaded(Build(30, step, [](int i) { return 1.7e9 + 100.0 * i + (i == 12 ? 400 : 0); }), "");
  // A gap and a stall together, with other options.
  HealthOptions options;
  options.gap_factor = 1.5;
  options.stall_factor = 4;
  options.stall_min_seconds = 10;
  ExpectAsLoaded(Build(60, [](int i) { return int64_t{3} * i + i % 2 + (i >= 40 ? 7 : 0); },
                       [](int i) { return 1.7e9 + 1.5 * i + (i >= 30 ? 15.0 : 0); }),
                 "step-gap", options);
}

TEST(SeriesStream, IntervalsTooVariedForTheLogNeedThePoints) {
  // Steps at squares: every interval differs, more runs than one per 8 intervals.
  const std::vector<ScalarPoint> points =
      Build(400, [](int i) { return int64_t{i} * i; }, [](int i) { return 1.7e9 + i; });
  for (const std::vector<size_t>& seams : SeamsOf(points.size())) {
    EXPECT_FALSE(Stream(points, "train/loss", seams, {}).decided);
  }
  // A step that goes back.
  std::vector<ScalarPoint> back =
      Build(50, [](int i) { return int64_t{i % 30}; }, [](int i) { return 1.7e9 + i; });
  EXPECT_FALSE(Stream(back, "train/loss", {}, {}).decided);
  // More gaps before the smallest interval than the log keeps the steps of.
  const std::vector<ScalarPoint> coarse_start =
      Build(400, [](int i) { return i < 40 ? int64_t{100} * i : 3960 + int64_t{i}; },
            [](int i) { return 1.7e9 + i; });
  EXPECT_FALSE(Stream(coarse_start, "train/loss", {}, {}).decided);
  // A pause of exactly 10 times a usual 100 s (no stall), and one of 1003 s after intervals of
  // 100.3 s, whose bucket floor 100.25 s makes it a stall, are found as loaded.
  for (const auto& [usual, pause] : {std::pair{100.0, 900.0}, std::pair{100.3, 902.7}}) {
    ExpectAsLoaded(Build(30, [](int i) { return int64_t{i}; },
                         [u = usual, p = pause](int i) { return 1.7e9 + u * i + (i >= 12 ? p : 0); }),
                   "");
  }
  EXPECT_NE(Loaded(Build(30, [](int i) { return int64_t{i}; },
                         [](int i) { return 1.7e9 + 100.3 * i + (i >= 12 ? 902.7 : 0); }),
                   "train/loss", {})
                .find("stall 1 stall (> 10 × the usual 100 s between points) after step 11;"),
            std::string::npos);
  // A few irregular intervals among many regular ones are kept: the series is decided.
  const std::vector<ScalarPoint> mostly_regular =
      Build(4000, [](int i) { return int64_t{10} * i + (i % 100 == 0 ? 3 : 0); },
            [](int i) { return 1.7e9 + i; });
  EXPECT_TRUE(Stream(mostly_regular, "train/loss", {}, {}).decided);
}

TEST(RollingBaseline, BothBisectionsCountAsLowerAndUpperBound) {
  // Every window size up to 70 (powers of two and their neighbours among them), sorted windows
  // with runs of ties, probed below, between, at and above every element.
  for (size_t n = 1; n <= 70; ++n) {
    std::vector<double> s;
    for (size_t i = 0; i < n; ++i) s.push_back(static_cast<double>((i * 7) % 11 / 3));
    std::sort(s.begin(), s.end());
    for (double x : {-1.0, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0}) {
      for (double y : {-1.0, 0.0, 1.0, 2.5, 3.0, 9.0}) {
        size_t out = 0;
        size_t in = 0;
        RollingBaseline::CountBelowBoth(s.data(), n, x, y, &out, &in);
        EXPECT_EQ(out, static_cast<size_t>(std::lower_bound(s.begin(), s.end(), x) - s.begin()))
            << "n " << n << ", x " << x;
        EXPECT_EQ(in, static_cast<size_t>(std::upper_bound(s.begin(), s.end(), y) - s.begin()))
            << "n " << n << ", y " << y;
      }
    }
  }
}

}  // namespace
}  // namespace mosaic::runs::detail
