// The Python extension `mosaic._mosaic`: the C++ library bound with pybind11. It returns plain
// Python values (JSON documents, numpy arrays, lists); python/mosaic/__init__.py turns them into
// the package's objects and pandas DataFrames. Long C++ work runs without the GIL. InputError and
// UsageError become mosaic.InputError (a ValueError) with the CLI's message.
#include <fmt/format.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "mosaic/codesign/codesign.h"
#include "mosaic/decision/decision.h"
#include "mosaic/model/model_json.h"
#include "mosaic/perf/perf_request.h"
#include "mosaic/report/codesign_report.h"
#include "mosaic/report/decision_report.h"
#include "mosaic/runs/digest_json.h"
#include "mosaic/runs/health.h"
#include "mosaic/runs/run.h"
#include "mosaic/scaling/fit_json.h"
#include "mosaic/scaling/fit_request.h"
#include "mosaic/scaling/projection.h"
#include "mosaic/study/ladder.h"
#include "mosaic/study/ladder_report.h"
#include "mosaic/study/study_config.h"
#include "mosaic/util/json_output.h"
#include "mosaic/util/parallel_for.h"

namespace py = pybind11;
using namespace mosaic;

namespace {

std::vector<FieldOverride> Overrides(const std::map<std::string, std::string>& fields) {
  std::vector<FieldOverride> out;
  for (const auto& [name, value] : fields) {
    FieldOverride f;
    f.field = name;
    f.value = value;
    f.where.origin = name + "=" + value;
    out.push_back(std::move(f));
  }
  return out;
}

std::string Dump(const nlohmann::ordered_json& j) {
  return DumpJson(j, -1);
}

PerfSetup Setup(const std::string& model, const std::map<std::string, std::string>& sets,
                const std::string& hardware, int64_t gpus, int64_t batch, int64_t seq,
                const std::string& format, const std::string& routing, double capacity_factor,
                bool capacity_padding, const std::string& profile,
                const std::string& profiles_file) {
  PerfRequest r;
  r.model = model;
  for (FieldOverride& f : Overrides(sets)) AddFieldOverride(r, std::move(f));
  r.hardware = hardware;
  r.gpus = gpus;
  r.batch = batch;
  r.seq = seq;
  SetFormatAndRouting(r, format, routing);
  r.capacity_factor = capacity_factor;
  r.pad_to_capacity = capacity_padding;
  r.profile = profile;
  r.profiles_file = profiles_file;
  return PreparePerf(r);
}

// A fitted law, kept for predictions and the frontier.
struct FitHandle {
  scaling::Law law;
  scaling::FittedArm arm;
  double flops_per_param_token = 6;

  std::string Json() const { return DumpJson(scaling::FitJson(law, arm), -1); }

  // The law's inputs, resolved, and the loss at each element of the given equal-length arrays
  // (by input name; C for a law in N and D as scaling::ResolveInputs allows), with the bootstrap
  // interval when there is one: (inputs by name, loss, low, high); low and high are NaN without a
  // bootstrap. One path with `mosaic fit --predict` (scaling::Predict).
  py::tuple Predict(const std::map<std::string, py::array_t<double>>& inputs) const {
    const size_t n = inputs.empty() ? 0 : static_cast<size_t>(inputs.begin()->second.size());
    for (const auto& [name, column] : inputs) {
      if (static_cast<size_t>(column.size()) != n) {
        throw InputError("predict: the input arrays differ in length");
      }
    }
    std::vector<py::array_t<double>> resolved;
    for (size_t k = 0; k < law.inputs.size(); ++k) resolved.emplace_back(n);
    py::array_t<double> loss(n), low(n), high(n);
    auto l = loss.mutable_unchecked<1>();
    auto lo = low.mutable_unchecked<1>();
    auto hi = high.mutable_unchecked<1>();
    const scaling::BootstrapResult* boot = arm.bootstrap ? &*arm.bootstrap : nullptr;
    scaling::InputPoint point;
    for (const auto& [name, unused] : inputs) point.emplace_back(name, 0.0);
    if (inputs.empty()) {  // names the first input the law needs
      scaling::Predict(law, arm.fit, boot, point, flops_per_param_token, "predict");
    }
    for (size_t i = 0; i < n; ++i) {
      size_t k = 0;
      for (const auto& [name, column] : inputs) {
        point[k++].second = column.at(static_cast<py::ssize_t>(i));
      }
      // An element of several is named by its index.
      const std::string caller = n > 1 ? fmt::format("predict[{}]", i) : "predict";
      const scaling::Prediction p =
          scaling::Predict(law, arm.fit, boot, point, flops_per_param_token, caller);
      for (size_t j = 0; j < p.inputs.size(); ++j) {
        resolved[j].mutable_at(static_cast<py::ssize_t>(i)) = p.inputs[j];
      }
      l(i) = p.loss;
      lo(i) = p.interval ? p.interval->low : NAN;
      hi(i) = p.interval ? p.interval->high : NAN;
    }
    py::dict by_name;
    for (size_t k = 0; k < law.inputs.size(); ++k) by_name[law.inputs[k].name.c_str()] = resolved[k];
    return py::make_tuple(by_name, loss, low, high);
  }

  py::dict Frontier(double compute_flops) const {
    const scaling::FrontierPoint p =
        scaling::ComputeOptimal(law, arm.fit.theta, compute_flops, flops_per_param_token);
    py::dict d;
    d["compute_flops"] = p.compute_flops;
    d["params"] = p.params;
    d["tokens"] = p.tokens;
    d["loss"] = p.loss;
    return d;
  }
};

scaling::FitRequest Request(const std::vector<std::string>& columns, const std::string& where,
                            int drop_highest_loss, const std::map<std::string, double>& pins,
                            const std::string& objective, const std::string& space, double delta,
                            int bootstrap, uint64_t seed, double confidence, int threads,
                            const std::string& loss_column, const std::string& run_column,
                            const std::vector<std::string>& logs, const std::string& tag,
                            int last_k) {
  scaling::FitRequest r;
  r.columns = columns;
  r.logs = logs;
  r.tag = tag;
  r.last_k = last_k;
  r.where = where;
  r.drop_highest_loss = drop_highest_loss;
  for (const auto& [name, value] : pins) r.pins.emplace_back(name, value);
  r.objective = objective;
  r.space = space;
  r.delta = delta;
  r.bootstrap = bootstrap;
  r.seed = seed;
  r.confidence = confidence;
  r.threads = threads;
  r.loss_column = loss_column;
  r.run_column = run_column;
  return r;
}

// A DataTable from named numeric columns (a DataFrame's numeric columns) and text columns.
scaling::DataTable TableFromColumns(const std::map<std::string, py::array_t<double>>& numeric,
                                    const std::map<std::string, std::vector<std::string>>& text) {
  scaling::DataTable t;
  t.origin = "DataFrame";
  t.lines_are_rows = true;
  size_t rows = 0;
  bool first = true;
  auto check_rows = [&](size_t n) {
    if (first) {
      rows = n;
      first = false;
    } else if (n != rows) {
      throw InputError("fit: the DataFrame's columns differ in length");
    }
  };
  for (const auto& [name, values] : numeric) {
    check_rows(static_cast<size_t>(values.size()));
    t.names.push_back(name);
    t.derivations.emplace_back();
    std::vector<double> v(rows);
    std::vector<std::string> cells(rows);
    for (size_t i = 0; i < rows; ++i) {
      v[i] = values.at(static_cast<py::ssize_t>(i));
      cells[i] = std::isnan(v[i]) ? "" : fmt::format("{}", v[i]);
    }
    t.values.push_back(std::move(v));
    t.text.push_back(std::move(cells));
    t.cell_column.emplace_back(rows, 0);
  }
  for (const auto& [name, values] : text) {
    check_rows(values.size());
    t.names.push_back(name);
    t.derivations.emplace_back();
    // Text cells are read as a CSV's are: an object column of numbers is numbers.
    std::vector<double> v(rows);
    for (size_t i = 0; i < rows; ++i) v[i] = scaling::ParseCellNumber(values[i]);
    t.values.push_back(std::move(v));
    t.text.push_back(values);
    t.cell_column.emplace_back(rows, 0);
  }
  for (size_t i = 0; i < rows; ++i) {
    t.line.push_back(static_cast<int>(i));  // the row's position (lines_are_rows)
    t.line_text.emplace_back();
  }
  return t;
}

}  // namespace

PYBIND11_MODULE(_mosaic, m) {
  m.doc() = "mosaic's C++ library (internal; use the mosaic package)";
  static py::exception<InputError> input_error(m, "InputError", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const InputError& e) {
      input_error(e.what());
    } catch (const UsageError& e) {
      input_error(e.what());
    }
  });

  // The library's limits, so that the package checks its arguments against the same bounds.
  m.attr("MAX_THREADS") = kMaxThreads;
  m.attr("MAX_GPUS") = kMaxPerfGpus;
  m.attr("MAX_BATCH") = kMaxPerfBatch;
  m.attr("MAX_SEQ_LEN") = kMaxSeqLen;
  m.attr("MAX_CAPACITY_FACTOR") = kMaxCapacityFactor;

  m.def("model_json",
        [](const std::string& model, const std::map<std::string, std::string>& sets, int64_t seq,
           double tokens) {
          const std::vector<FieldOverride> overrides = Overrides(sets);
          return Dump(ModelJson(LoadModel(model, overrides), seq, tokens));
        },
        py::arg("model"), py::arg("sets"), py::arg("seq"), py::arg("tokens"));

  m.def("perf_json",
        [](const std::string& model, const std::map<std::string, std::string>& sets,
           const std::string& hardware, int64_t gpus, const std::string& layout, int64_t batch,
           int64_t seq, const std::string& format, const std::string& routing,
           double capacity_factor, bool capacity_padding, const std::string& profile,
           const std::string& profiles_file) {
          py::gil_scoped_release release;
          const PerfSetup s = Setup(model, sets, hardware, gpus, batch, seq, format, routing,
                                    capacity_factor, capacity_padding, profile, profiles_file);
          return Dump(PerfJson(s, EvaluateLayout(s, layout)));
        });

  m.def("search_json",
        [](const std::string& model, const std::map<std::string, std::string>& sets,
           const std::string& hardware, int64_t gpus, int64_t batch, int64_t seq,
           const std::string& format, const std::string& routing, double capacity_factor,
           bool capacity_padding, const std::string& profile, const std::string& profiles_file,
           int64_t top, const std::string& offload, const std::string& dispatch) {
          py::gil_scoped_release release;
          const PerfSetup s = Setup(model, sets, hardware, gpus, batch, seq, format, routing,
                                    capacity_factor, capacity_padding, profile, profiles_file);
          SearchOptions options;
          options.top = top;
          const std::optional<OffloadSearch> kind = OffloadSearchFromString(offload);
          if (!kind) {
            throw InputError(fmt::format("offload = '{}'. Violated constraint: none, modules or "
                                         "layers",
                                         offload));
          }
          options.offload = *kind;
          if (!dispatch.empty()) {
            const std::optional<Dispatch> d = DispatchFromString(dispatch);
            if (!d) {
              throw InputError(fmt::format("dispatch = '{}'. Violated constraint: flat, "
                                           "hierarchical or None (the profile's default)",
                                           dispatch));
            }
            options.dispatch = *d;
          }
          return Dump(SearchJson(s, SearchBestLayouts(s, options)));
        });

  py::class_<FitHandle>(m, "Fit")
      .def("json", &FitHandle::Json)
      .def("predict", &FitHandle::Predict)
      .def("frontier", &FitHandle::Frontier);

  m.def("fit_csv",
        [](const std::string& path, const std::string& law, const std::vector<std::string>& columns,
           const std::string& where, int drop_highest_loss, const std::map<std::string, double>& pins,
           const std::string& objective, const std::string& space, double delta, int bootstrap,
           uint64_t seed, double confidence, int threads, const std::string& loss_column,
           const std::string& run_column, const std::vector<std::string>& logs,
           const std::string& tag, int last_k) {
          py::gil_scoped_release release;
          FitHandle h;
          h.law = scaling::FindLaw(law);
          h.arm = scaling::FitFile(h.law, path,
                                   Request(columns, where, drop_highest_loss, pins, objective, space,
                                           delta, bootstrap, seed, confidence, threads,
                                           loss_column, run_column, logs, tag, last_k));
          return h;
        });

  m.def("fit_columns",
        [](const std::map<std::string, py::array_t<double>>& numeric,
           const std::map<std::string, std::vector<std::string>>& text, const std::string& law,
           const std::vector<std::string>& columns, const std::string& where,
           int drop_highest_loss, const std::map<std::string, double>& pins,
           const std::string& objective, const std::string& space, double delta, int bootstrap,
           uint64_t seed, double confidence, int threads, const std::string& loss_column,
           const std::string& run_column, const std::vector<std::string>& logs,
           const std::string& tag, int last_k) {
          scaling::DataTable table = TableFromColumns(numeric, text);
          py::gil_scoped_release release;
          const scaling::FitRequest r = Request(columns, where, drop_highest_loss, pins, objective,
                                                space, delta, bootstrap, seed, confidence, threads,
                                                loss_column, run_column, logs, tag, last_k);
          scaling::PrepareTable(table, r);
          FitHandle h;
          h.law = scaling::FindLaw(law);
          h.arm = scaling::FitTable(h.law, table, r);
          return h;
        });

  m.def("read_runs",
        [](const std::vector<std::string>& logdirs, const std::string& restarts,
           const std::string& tags, const std::string& step_column) {
          std::vector<runs::Run> loaded;
          {
            py::gil_scoped_release release;
            const runs::LoadOptions options = runs::MakeLoadOptions(restarts, tags, step_column);
            loaded = runs::LoadRuns(runs::DiscoverRuns(logdirs), options);
            // As `mosaic runs`: reading goes on past a file that cannot be read, but logs of
            // which nothing could be read are an error.
            runs::ReadCheck read(tags);
            for (const runs::Run& r : loaded) read.Add(r);
            read.Require();
          }
          // Long table: one row per point, runs and tags as codes into the name lists.
          size_t points = 0;
          for (const runs::Run& r : loaded) {
            for (const runs::TimeSeries& s : r.series) points += s.points.size();
          }
          py::array_t<int32_t> run(points), tag(points), pass(points);
          py::array_t<int64_t> step(points);
          py::array_t<double> wall(points), value(points);
          auto ru = run.mutable_unchecked<1>();
          auto ta = tag.mutable_unchecked<1>();
          auto pa = pass.mutable_unchecked<1>();
          auto st = step.mutable_unchecked<1>();
          auto wa = wall.mutable_unchecked<1>();
          auto va = value.mutable_unchecked<1>();
          std::vector<std::string> run_names, tag_names;
          std::map<std::string, int32_t> tag_codes;
          py::list findings, notes;
          size_t i = 0;
          for (size_t r = 0; r < loaded.size(); ++r) {
            run_names.push_back(loaded[r].name);
            for (const runs::TimeSeries& s : loaded[r].series) {
              auto [it, fresh] = tag_codes.try_emplace(s.tag, int32_t(tag_names.size()));
              if (fresh) tag_names.push_back(s.tag);
              for (size_t k = 0; k < s.points.size(); ++k) {
                const runs::ScalarPoint& p = s.points[k];
                ru(i) = int32_t(r);
                ta(i) = it->second;
                st(i) = p.step;
                wa(i) = p.wall_time_seconds;
                va(i) = p.value;
                pa(i) = s.PassOf(k);
                ++i;
              }
            }
            for (const runs::Finding& f : runs::CheckHealth(loaded[r])) {
              py::dict d;
              d["run"] = loaded[r].name;
              d["kind"] = std::string(runs::ToString(f.kind));
              d["tag"] = f.tag.empty() ? py::object(py::none()) : py::object(py::str(f.tag));
              d["steps"] = f.steps;
              d["message"] = f.message;
              findings.append(d);
            }
            // As `mosaic runs` prints them: record issues that lose nothing, then the notes.
            std::vector<std::string> texts;
            for (const runs::RecordIssue& issue : loaded[r].record_issues) {
              if (!issue.is_error()) texts.push_back(issue.Message());
            }
            texts.insert(texts.end(), loaded[r].notes.begin(), loaded[r].notes.end());
            for (const std::string& note : texts) {
              py::dict d;
              d["run"] = loaded[r].name;
              d["note"] = note;
              notes.append(d);
            }
          }
          return py::make_tuple(run_names, tag_names, run, tag, step, wall, value, pass, findings,
                                notes);
        });

  m.def("summarize_runs",
        [](const std::vector<std::string>& logdirs, const std::string& restarts,
           const std::string& tags, const std::string& step_column, int last_k) {
          if (last_k < 1) {
            throw InputError(fmt::format("last_k = {}. Violated constraint: at least 1", last_k));
          }
          py::gil_scoped_release release;
          const runs::LoadOptions options = runs::MakeLoadOptions(restarts, tags, step_column);
          // Digested batch by batch, as `mosaic runs --json` reads: the points are not kept.
          const std::vector<runs::RunDigest> digests =
              runs::ReadRunDigests(runs::DiscoverRuns(logdirs), options, last_k);
          runs::ReadCheck read(tags);
          for (const runs::RunDigest& d : digests) read.Add(d.run);
          read.Require();
          return runs::RunDigestsJson(digests);
        });

  m.def("plan",
        [](const std::string& study) {
          const LadderPlan plan = PlanLadder(LoadStudy(study));
          return std::make_pair(RenderLadderJson(plan), RenderLadderText(plan));
        });

  m.def("decide",
        [](const std::string& study, int threads) {
          py::gil_scoped_release release;
          DecideOptions options;
          options.threads = threads;
          const Decision d = Decide(LoadStudy(study), options);
          return std::make_pair(report::RenderDecisionJson(d), report::RenderDecisionHtml(d));
        });

  m.def("codesign",
        [](const std::string& space, int threads) {
          py::gil_scoped_release release;
          CodesignOptions options;
          options.threads = threads;
          const CodesignResult r = RunCodesign(LoadSpace(space), options);
          return std::make_pair(report::RenderCodesignJson(r), report::RenderCodesignHtml(r));
        });
}
