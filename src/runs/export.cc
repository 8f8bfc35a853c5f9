#include "mosaic/runs/export.h"

#include <charconv>
#include <cmath>
#include <system_error>

#include <nlohmann/json.hpp>

#include "mosaic/util/error.h"
#include "mosaic/util/json_output.h"

namespace mosaic::runs {
namespace {

std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

std::string JsonString(const std::string& text) {
  return DumpJson(nlohmann::ordered_json(text), -1);
}

// Appends what FormatValue(value, float32) returns, without a temporary string.
void AppendValue(std::string* out, double value, bool float32) {
  if (!std::isfinite(value)) {
    *out += FormatValue(value, float32);
    return;
  }
  char buffer[64];
  const std::to_chars_result result =
      float32 ? std::to_chars(buffer, buffer + sizeof buffer, static_cast<float>(value))
              : std::to_chars(buffer, buffer + sizeof buffer, value);
  out->append(buffer, result.ptr);
}

// Appends FormatWallTime(seconds) for a finite `seconds`, without a temporary string.
void AppendWallTime(std::string* out, double seconds) {
  char buffer[64];
  std::to_chars_result result =
      std::to_chars(buffer, buffer + sizeof buffer, seconds, std::chars_format::fixed);
  // Beyond 64 digits (no real wall time), the shortest form.
  if (result.ec != std::errc()) result = std::to_chars(buffer, buffer + sizeof buffer, seconds);
  out->append(buffer, result.ptr);
}

void AppendInteger(std::string* out, int64_t value) {
  char buffer[24];
  const std::to_chars_result result = std::to_chars(buffer, buffer + sizeof buffer, value);
  out->append(buffer, result.ptr);
}

}  // namespace

std::string_view ToString(ExportFormat format) {
  switch (format) {
    case ExportFormat::kCsv: return "csv";
    case ExportFormat::kJson: return "json";
  }
  return "?";
}

ExportFormat ExportFormatFromString(std::string_view text) {
  if (text == "csv") return ExportFormat::kCsv;
  if (text == "json") return ExportFormat::kJson;
  throw FieldError({}, "--export", text, "one of csv, json");
}

std::string FormatValue(double value, bool float32) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[64];
  std::to_chars_result result = float32
      ? std::to_chars(buffer, buffer + sizeof buffer, static_cast<float>(value))
      : std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

std::string FormatWallTime(double seconds) {
  if (!std::isfinite(seconds)) return FormatValue(seconds, false);
  std::string out;
  AppendWallTime(&out, seconds);
  return out;
}

std::string ExportRuns(const std::vector<Run>& runs, ExportFormat format, bool with_pass) {
  std::string out;
  switch (format) {
    case ExportFormat::kCsv:
      out += with_pass ? "run,tag,step,wall_time,value,pass\n" : "run,tag,step,wall_time,value\n";
      {
        // Room for every row (a step, a wall time and a value take at most about 60 characters),
        // so that the text is not copied as it grows.
        size_t bytes = out.size();
        for (const Run& run : runs) {
          for (const TimeSeries& s : run.series) {
            bytes += s.points.size() * (run.name.size() + s.tag.size() + 64);
          }
        }
        out.reserve(bytes);
      }
      for (const Run& run : runs) {
        const std::string run_field = CsvField(run.name);
        for (const TimeSeries& s : run.series) {
          const std::string prefix = run_field + "," + CsvField(s.tag) + ",";
          for (size_t i = 0; i < s.points.size(); ++i) {
            const ScalarPoint& p = s.points[i];
            out += prefix;
            AppendInteger(&out, p.step);
            out += ',';
            if (std::isfinite(p.wall_time_seconds)) AppendWallTime(&out, p.wall_time_seconds);
            out += ',';
            AppendValue(&out, p.value, s.float32);
            if (with_pass) {
              out += ',';
              AppendInteger(&out, s.PassOf(i));
            }
            out += '\n';
          }
        }
      }
      break;
    case ExportFormat::kJson: {
      out += "[";
      bool first = true;
      for (const Run& run : runs) {
        const std::string run_field = JsonString(run.name);
        for (const TimeSeries& s : run.series) {
          const std::string prefix = "{\"run\": " + run_field + ", \"tag\": " + JsonString(s.tag);
          for (size_t i = 0; i < s.points.size(); ++i) {
            const ScalarPoint& p = s.points[i];
            out += first ? "\n  " : ",\n  ";
            first = false;
            out += prefix;
            out += ", \"step\": " + std::to_string(p.step);
            out += ", \"wall_time\": ";
            out += std::isfinite(p.wall_time_seconds) ? FormatWallTime(p.wall_time_seconds)
                                                      : "null";
            out += ", \"value\": ";
            out += std::isfinite(p.value) ? FormatValue(p.value, s.float32) : "null";
            if (with_pass) out += ", \"pass\": " + std::to_string(s.PassOf(i));
            out += "}";
          }
        }
      }
      out += first ? "]\n" : "\n]\n";
      break;
    }
  }
  return out;
}

}  // namespace mosaic::runs
