// The whole public API of the mosaic library, one header per concept:
//   util/      errors, atomic output, input paths, JSON output, text input, terminal text, TOML
//              helpers, number formatting, exact wide integers
//   model/     model configs, presets, exact parameter and FLOP accounting
//   study/     experiment-ladder studies and the ladder planner
//   hardware/  devices and clusters
//   perf/      layouts, the step-time / memory / dropping model, search and calibration (also
//              from a team's own logs)
//   scaling/   scaling-law forms, robust multi-start fits, bootstrap and projection
//   runs/      TensorBoard, CSV and JSONL training logs, restart policies, health checks, per-loop
//              diagnostics and the ablation job (effects against a baseline on another cluster)
//   decision/  the decision job: results, fits, throughput and run health into a rule's verdict
//   codesign/  the co-design job: architectures × layouts under a cluster's constraints (MPI)
//   report/    text, JSON and self-contained HTML (inline SVG charts) renderings of the jobs
// Data flows one way: study → model → perf / scaling (fed by runs) → decision → report.
#pragma once

#include "mosaic/util/atomic_file.h"
#include "mosaic/util/embedded_data.h"
#include "mosaic/util/error.h"
#include "mosaic/util/field_override.h"
#include "mosaic/util/input_path.h"
#include "mosaic/util/json_output.h"
#include "mosaic/util/number_format.h"
#include "mosaic/util/parallel_for.h"
#include "mosaic/util/spellcheck.h"
#include "mosaic/util/terminal_text.h"
#include "mosaic/util/text_input.h"
#include "mosaic/util/toml_reader.h"
#include "mosaic/util/toml_util.h"
#include "mosaic/util/wide_int.h"
#include "mosaic/model/family.h"
#include "mosaic/model/flops.h"
#include "mosaic/model/model_config.h"
#include "mosaic/model/model_loader.h"
#include "mosaic/model/param_count.h"
#include "mosaic/study/decision_spec.h"
#include "mosaic/study/ladder.h"
#include "mosaic/study/ladder_report.h"
#include "mosaic/study/study_config.h"
#include "mosaic/hardware/hardware.h"
#include "mosaic/perf/calibration.h"
#include "mosaic/perf/dropping.h"
#include "mosaic/perf/layout.h"
#include "mosaic/perf/log_calibration.h"
#include "mosaic/perf/perf_request.h"
#include "mosaic/perf/profile.h"
#include "mosaic/perf/search.h"
#include "mosaic/perf/step_model.h"
#include "mosaic/scaling/bootstrap.h"
#include "mosaic/scaling/data_table.h"
#include "mosaic/scaling/fit.h"
#include "mosaic/scaling/fit_data.h"
#include "mosaic/scaling/fit_problem.h"
#include "mosaic/scaling/law.h"
#include "mosaic/scaling/multistart.h"
#include "mosaic/scaling/objective.h"
#include "mosaic/scaling/projection.h"
#include "mosaic/scaling/solver.h"
#include "mosaic/runs/ablation.h"
#include "mosaic/runs/compare.h"
#include "mosaic/runs/crc32c.h"
#include "mosaic/runs/event.h"
#include "mosaic/runs/event_file.h"
#include "mosaic/runs/event_writer.h"
#include "mosaic/runs/export.h"
#include "mosaic/runs/health.h"
#include "mosaic/runs/module_diag.h"
#include "mosaic/runs/restart_policy.h"
#include "mosaic/runs/run.h"
#include "mosaic/runs/table_log.h"
#include "mosaic/runs/time_series.h"
#include "mosaic/codesign/codesign.h"
#include "mosaic/codesign/distributed.h"
#include "mosaic/codesign/space.h"
#include "mosaic/decision/criteria.h"
#include "mosaic/decision/decision.h"
#include "mosaic/report/ablation_report.h"
#include "mosaic/report/codesign_report.h"
#include "mosaic/report/decision_report.h"
#include "mosaic/report/html.h"
#include "mosaic/report/svg_chart.h"
