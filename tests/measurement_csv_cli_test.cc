// End-to-end tests of the measurement CSVs `mosaic perf validate` and `perf calibrate` read
// (perf/measurements.h): each column takes its own values only, every cell is read without the
// whitespace at its ends, and a model or device file a row names is found, or said missing, the
// same way whatever the CSV is reached through.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "cli_support.h"

namespace mosaic::testing {
namespace {

namespace fs = std::filesystem;

// A scratch directory of this test process (removed first), so that tests run side by side do
// not share one.
fs::path ScratchDir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / (name + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// A file in `dir` holding `text`.
std::string WriteTemp(const fs::path& dir, const std::string& name, const std::string& text) {
  fs::create_directories((dir / name).parent_path());
  std::ofstream(dir / name, std::ios::binary) << text;
  return (dir / name).string();
}

// Copies the model files published.csv's MaxText rows name beside it (models/maxtext-*.toml).
void CopyPublishedModels(const fs::path& dir) {
  fs::copy(SourcePath("tests/fixtures/throughput/models"), dir / "models",
           fs::copy_options::recursive | fs::copy_options::overwrite_existing);
}

std::string Published() { return ReadText(SourcePath("tests/fixtures/throughput/published.csv")); }

std::string Header() {
  const std::string text = Published();
  return text.substr(0, text.find('\n'));
}

// The row `id` of published.csv, without its line break.
std::string Row(const std::string& id) {
  const std::string text = Published();
  const size_t start = text.find("\n" + id + ",") + 1;
  EXPECT_NE(start, 0u) << id;
  return text.substr(start, text.find('\n', start) - start);
}

void Replace(std::string& text, const std::string& from, const std::string& to) {
  ASSERT_NE(text.find(from), std::string::npos) << from;
  text.replace(text.find(from), from.size(), to);
}

// The rows of `perf validate --json` on `csv` by id, and the exit code with stderr.
struct Validated {
  CommandResult result;
  nlohmann::json rows;  // id -> row
};
Validated Validate(const std::string& arguments) {
  Validated v;
  v.result = RunMosaic("perf validate " + arguments + " --json");
  if (v.result.exit_code == 0) {
    const nlohmann::json j = nlohmann::json::parse(v.result.out);
    for (const auto& row : j["rows"]) {
      v.rows[row["id"].get<std::string>()] = row;
    }
  }
  return v;
}

TEST(MeasurementCsvCli, PipelineSplitTakesOnlyTheUnevenSplitKeys) {
  // pipeline_split = "pp_embed=1,pp_loss=1,tp=2" was read as a layout and kept tp at the tp
  // column's 1: a key of another column is refused, naming the column's rule.
  const fs::path dir = ScratchDir("mosaic_csv_split");
  const std::string rule =
      "Violated constraint: KEY=VALUE items separated by ',', KEY one of pp_first, pp_last, "
      "pp_embed, pp_loss, pp_layout (the uneven pipeline split; the other layout keys have "
      "columns of their own)";
  auto error_of = [&](const std::string& split) {
    std::string row = Row("M9");
    Replace(row, "\"pp_embed=1,pp_loss=1\"", "\"" + split + "\"");
    const std::string csv = WriteTemp(dir, "split.csv", Header() + "\n" + row + "\n");
    CommandResult r = RunMosaic("perf validate " + csv);
    EXPECT_EQ(r.exit_code, 1) << split << "\n" << r.out;
    return r.err;
  };
  const std::string at = "mosaic: error: " + (dir / "split.csv").string() + ":2: ";
  EXPECT_EQ(error_of("pp_embed=1,pp_loss=1,tp=2"),
            at + "pipeline_split = 'pp_embed=1,pp_loss=1,tp=2'. " + rule + " (not 'tp')\n");
  EXPECT_EQ(error_of("recompute=full,pp_embed=1"),
            at + "pipeline_split = 'recompute=full,pp_embed=1'. " + rule + " (not 'recompute')\n");
  EXPECT_EQ(error_of("pp_embed=1,pp_los=1"),
            at + "pipeline_split = 'pp_embed=1,pp_los=1'. " + rule +
                " (not 'pp_los') (did you mean 'pp_loss'?)\n");
  EXPECT_EQ(error_of("pp_embed=1,pp_loss"),
            at + "pipeline_split = 'pp_embed=1,pp_loss'. " + rule +
                " (not 'pp_loss', which is not KEY=VALUE)\n");
  // A value its key refuses keeps the layout grammar's message.
  EXPECT_NE(error_of("pp_embed=2,pp_loss=1").find("pp_embed = 2. Violated constraint: pp_embed is "
                                                  "0 or 1"),
            std::string::npos);
  // Its own keys are read, Megatron's cosmetic commas in pp_layout included.
  std::string m3 = Row("M3");
  Replace(m3, ",pp_layout=Et*4|(t*4|)*14tL,", ",\"pp_layout=Et*4|(t*4|)*14,tL\",");
  Validated v =
      Validate(WriteTemp(dir, "ok.csv", Header() + "\n" + Row("M9") + "\n" + m3 + "\n"));
  ASSERT_EQ(v.result.exit_code, 0) << v.result.err;
  EXPECT_NE(v.rows["M9"]["layout"].get<std::string>().find("pp_embed=1,pp_loss=1"),
            std::string::npos);
  EXPECT_NE(v.rows["M3"]["layout"].get<std::string>().find("pp_layout=Et*4|(t*4|)*14tL"),
            std::string::npos);
  fs::remove_all(dir);
}

TEST(MeasurementCsvCli, OffloadModulesTakesOnlyTheModuleList) {
  // offload_modules = "expert_fc1+moe_act,mbs=1" was read as a layout and set mbs; and
  // "expert_fc1,moe_act" got a layout-syntax message instead of the column's rule.
  const fs::path dir = ScratchDir("mosaic_csv_offload");
  const std::string rule =
      "Violated constraint: module names joined by '+', each one of attn_norm, qkv_linear, "
      "core_attn, attn_proj, mlp_norm, expert_fc1, moe_act, and nothing else (the other layout "
      "keys have columns of their own)";
  auto run = [&](const std::string& cell) {
    const std::string csv = WriteTemp(dir, "offload.csv",
                                      Header() + ",offload_modules\n" + Row("M9") + "," + cell +
                                          "\n");
    return RunMosaic("perf validate " + csv + " --json");
  };
  const std::string at = "mosaic: error: " + (dir / "offload.csv").string() + ":2: ";
  const std::string comma = " (',' does not separate modules: join them by '+', e.g. "
                            "expert_fc1+moe_act)\n";
  CommandResult r = run("\"expert_fc1+moe_act,mbs=1\"");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, at + "offload_modules = 'expert_fc1+moe_act,mbs=1'. " + rule + comma);
  r = run("\"expert_fc1,moe_act\"");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, at + "offload_modules = 'expert_fc1,moe_act'. " + rule + comma);
  r = run("mbs=1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, at + "offload_modules = 'mbs=1'. " + rule + " (not 'mbs=1')\n");
  r = run("offload_modules=moe_act");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, at + "offload_modules = 'offload_modules=moe_act'. " + rule +
                       " (not 'offload_modules=moe_act')\n");
  r = run("moe_act+expert_fc2");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, at + "offload_modules = 'moe_act+expert_fc2'. " + rule +
                       " (not 'expert_fc2') (did you mean 'expert_fc1'?)\n");
  r = run("moe_act+moe_act");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, at + "offload_modules = 'moe_act+moe_act'. " + rule +
                       " (moe_act is given twice; each module at most once)\n");
  // The list itself is read, in Megatron-Core's order.
  r = run("moe_act + expert_fc1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string layout = nlohmann::json::parse(r.out)["rows"][0]["layout"];
  EXPECT_NE(layout.find(",mbs=1,"), std::string::npos) << layout;
  EXPECT_TRUE(layout.ends_with(",offload_modules=expert_fc1+moe_act")) << layout;
  fs::remove_all(dir);
}

// `row` with every comma-separated cell padded by `pad` on both sides (the row holds no quoted
// cell with a comma).
std::string Padded(const std::string& row, const std::string& pad) {
  std::string out = pad;
  for (char c : row) out += c == ',' ? pad + "," + pad : std::string(1, c);
  return out + pad;
}

TEST(MeasurementCsvCli, EveryCellIsReadWithoutTheWhitespaceAtItsEnds) {
  // An integer cell took a leading space but not a trailing one; float, enum, path and device
  // cells took neither; "M3 " was another id than "M3".
  const fs::path dir = ScratchDir("mosaic_csv_trim");
  const std::string m3 = Row("M3");
  ASSERT_EQ(m3.find('"'), std::string::npos);
  const Validated plain = Validate(WriteTemp(dir, "plain.csv", Header() + "\n" + m3 + "\n"));
  ASSERT_EQ(plain.result.exit_code, 0) << plain.result.err;
  for (const std::string pad : {" ", "\t", " \t ", "  "}) {
    Validated padded = Validate(WriteTemp(
        dir, "padded.csv", Padded(Header(), pad) + "\r\n" + Padded(m3, pad) + "\r\n"));
    ASSERT_EQ(padded.result.exit_code, 0) << padded.result.err;
    ASSERT_TRUE(padded.rows.contains("M3")) << padded.result.out;
    EXPECT_EQ(padded.rows["M3"], plain.rows["M3"]);
  }
  // Quoted cells too.
  std::string quoted = m3;
  Replace(quoted, "M3,deepseek-v3,gb200-nvl72,256,",
          "\" M3\t\",\"deepseek-v3 \",\" gb200-nvl72\",\"256 \",");
  Replace(quoted, ",bf16,", ",\" bf16 \",");
  Replace(quoted, ",3139,", ",\"3139 \",");
  Replace(quoted, ",causal,", ",\"causal \",");
  Replace(quoted, ",pp_layout=Et*4|(t*4|)*14tL,", ",\" pp_layout=Et*4|(t*4|)*14tL \",");
  Validated v = Validate(WriteTemp(dir, "quoted.csv", Header() + "\n" + quoted + "\n"));
  ASSERT_EQ(v.result.exit_code, 0) << v.result.err;
  EXPECT_EQ(v.rows["M3"], plain.rows["M3"]);
  // The device name and a model file's path, as the published rows give them.
  std::string p1 = Row("P1");
  Replace(p1, "P1,models/maxtext-32b.toml,tpu-v5p,", "P1 , models/maxtext-32b.toml ,tpu-v5p ,");
  CopyPublishedModels(dir);
  v = Validate(WriteTemp(dir, "device.csv", Header() + "\n" + p1 + "\n"));
  ASSERT_EQ(v.result.exit_code, 0) << v.result.err;
  EXPECT_EQ(v.rows["P1"]["profile"], "maxtext-tpu-v5p");
  // One id with and without a space is one id: twice in a file, and in a held-out file beside
  // the calibration rows.
  std::string again = m3;
  Replace(again, "M3,", "M3 ,");
  CommandResult r = RunMosaic("perf validate " +
                              WriteTemp(dir, "twice.csv", Header() + "\n" + m3 + "\n" + again +
                                                              "\n"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "mosaic: error: " + (dir / "twice.csv").string() +
                       ":3: id = 'M3'. Violated constraint: ids are unique (line 2 has it)\n");
  const std::string published = WriteTemp(dir, "published.csv", Published());
  std::string held = Row("P1");
  Replace(held, "P1,", "\"P1 \",");
  r = RunMosaic("perf validate " + published + " --heldout " +
                WriteTemp(dir, "held.csv", Header() + "\n" + held + "\n"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("held.csv:2: held-out row P1: the calibration rows have a row of the same "
                       "id (" + published + ":"),
            std::string::npos)
      << r.err;
  // A cell of whitespace only is blank: an id, and a measurement left out.
  std::string blank_id = m3;
  Replace(blank_id, "M3,", " \t,");
  r = RunMosaic("perf validate " + WriteTemp(dir, "blank.csv", Header() + "\n" + blank_id + "\n"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "mosaic: error: " + (dir / "blank.csv").string() +
                       ":2: id = ''. Violated constraint: a row has an id (the name every figure "
                       "gives it)\n");
  std::string blank_tflops = m3;
  Replace(blank_tflops, ",3139,782,", ",3139,  ,");
  v = Validate(WriteTemp(dir, "blank_tflops.csv", Header() + "\n" + blank_tflops + "\n"));
  ASSERT_EQ(v.result.exit_code, 0) << v.result.err;
  EXPECT_EQ(v.rows["M3"]["measured_tokens_per_s_per_gpu"], 3139.0);
  fs::remove_all(dir);
}

TEST(MeasurementCsvCli, ADirectoryNamedAsAModelOrDeviceFileIsSaidToBeOne) {
  // models/adir.toml, a directory beside the CSV, was reported as "a file; none at ...".
  const fs::path dir = ScratchDir("mosaic_csv_dir");
  fs::create_directories(dir / "models" / "adir.toml");
  fs::create_directories(dir / "hw.toml");
  const std::string where = " (a relative path is looked for beside " +
                            (dir / "rows.csv").string() + ", then from the working directory)\n";
  std::string row = Row("P1");
  Replace(row, "models/maxtext-32b.toml", "models/adir.toml");
  CommandResult r =
      RunMosaic("perf validate " + WriteTemp(dir, "rows.csv", Header() + "\n" + row + "\n"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "mosaic: error: " + (dir / "rows.csv").string() +
                       ":2: model = 'models/adir.toml' (row P1). Violated constraint: a file; " +
                       (dir / "models" / "adir.toml").string() + " is a directory" + where);
  row = Row("P1");
  CopyPublishedModels(dir);
  Replace(row, ",tpu-v5p,", ",hw.toml,");
  r = RunMosaic("perf validate " + WriteTemp(dir, "rows.csv", Header() + "\n" + row + "\n"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "mosaic: error: " + (dir / "rows.csv").string() +
                       ":2: hardware = 'hw.toml' (row P1). Violated constraint: a file; " +
                       (dir / "hw.toml").string() + " is a directory" + where);
  fs::remove_all(dir);
}

TEST(MeasurementCsvCli, ACsvReachedThroughALinkFindsItsFilesBesideTheLinkThenItsTarget) {
  // A CSV linked from another folder looked for its model files beside the link only.
  const fs::path dir = ScratchDir("mosaic_csv_link");
  fs::create_directories(dir / "real");
  fs::create_directories(dir / "elsewhere");
  CopyPublishedModels(dir / "real");
  const std::string real =
      WriteTemp(dir / "real", "rows.csv", Header() + "\n" + Row("P1") + "\n" + Row("M3") + "\n");
  const fs::path link = dir / "elsewhere" / "rows.csv";
  fs::create_symlink(real, link);
  Validated v = Validate(link.string());
  ASSERT_EQ(v.result.exit_code, 0) << v.result.err;
  EXPECT_EQ(v.rows["P1"]["profile"], "maxtext-tpu-v5p");
  // Beside the link comes first.
  WriteTemp(dir / "elsewhere", "models/maxtext-32b.toml", "not_a_field = 1\n");
  CommandResult r = RunMosaic("perf validate " + link.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("rows.csv:2: model = 'models/maxtext-32b.toml' (row P1): " +
                       (dir / "elsewhere" / "models" / "maxtext-32b.toml").string() +
                       ":1:1: unknown model field 'not_a_field'"),
            std::string::npos)
      << r.err;
  // Found nowhere: the rule names every place looked, in order.
  fs::remove_all(dir / "elsewhere" / "models");
  fs::remove_all(dir / "real" / "models");
  r = RunMosaic("perf validate " + link.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "mosaic: error: " + link.string() +
                       ":2: model = 'models/maxtext-32b.toml' (row P1). Violated constraint: a "
                       "file; none at " +
                       (dir / "elsewhere" / "models" / "maxtext-32b.toml").string() +
                       " (a relative path is looked for beside " + link.string() +
                       ", then beside its link target " + fs::canonical(real).string() +
                       ", then from the working directory)\n");
  // A directory where the file should be beside the target is named there, as one.
  fs::create_directories(dir / "real" / "models" / "maxtext-32b.toml");
  r = RunMosaic("perf validate " + link.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("Violated constraint: a file; " +
                       (fs::canonical(dir / "real") / "models" / "maxtext-32b.toml").string() +
                       " is a directory (a relative path is looked for beside "),
            std::string::npos)
      << r.err;
  fs::remove_all(dir / "real" / "models");
  // A link beside its target is no other place.
  const fs::path near = dir / "real" / "near.csv";
  fs::create_symlink("rows.csv", near);
  r = RunMosaic("perf validate " + near.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(" (a relative path is looked for beside " + near.string() +
                       ", then from the working directory)\n"),
            std::string::npos)
      << r.err;
  fs::remove_all(dir);
}

TEST(MeasurementCsvCli, AStudyReachedThroughALinkFindsItsResultsBesideItsTarget) {
  // ResolveBeside serves every file named inside another: a study file linked from another
  // folder finds its results CSV beside the study it links to.
  const fs::path dir = ScratchDir("mosaic_study_link");
  fs::create_directories(dir / "real");
  fs::create_directories(dir / "elsewhere");
  fs::copy_file(SourcePath("data/studies/fsdp-vs-ep.toml"), dir / "real" / "fsdp-vs-ep.toml");
  const fs::path link = dir / "elsewhere" / "study.toml";
  fs::create_symlink(dir / "real" / "fsdp-vs-ep.toml", link);
  CommandResult r = RunMosaic("decide '" + link.string() + "'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("csv = \"fsdp-vs-ep-results.csv\". Violated constraint: a file; none at " +
                       (dir / "elsewhere" / "fsdp-vs-ep-results.csv").string() +
                       " (a relative path is looked for beside " + link.string() +
                       ", then beside its link target " +
                       fs::canonical(dir / "real" / "fsdp-vs-ep.toml").string() +
                       ", then from the working directory)"),
            std::string::npos)
      << r.err;
  fs::copy_file(SourcePath("data/studies/fsdp-vs-ep-results.csv"),
                dir / "real" / "fsdp-vs-ep-results.csv");
  r = RunMosaic("decide '" + link.string() + "'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  fs::remove_all(dir);
}

TEST(MeasurementCsvCli, ModelAndDeviceErrorsBothNameTheRow) {
  // A missing model file named the row; an unknown device (or model) name did not.
  const fs::path dir = ScratchDir("mosaic_csv_row");
  auto error_of = [&](const std::string& from, const std::string& to) {
    std::string row = Row("M3");
    Replace(row, from, to);
    CommandResult r =
        RunMosaic("perf validate " + WriteTemp(dir, "rows.csv", Header() + "\n" + row + "\n"));
    EXPECT_EQ(r.exit_code, 1) << r.out;
    return r.err;
  };
  const std::string at = "mosaic: error: " + (dir / "rows.csv").string() + ":2: ";
  std::string err = error_of(",gb200-nvl72,", ",gb201,");
  EXPECT_TRUE(err.starts_with(at + "hardware = 'gb201' (row M3): unknown hardware 'gb201' (did "
                                   "you mean 'b200'?); known: "))
      << err;
  err = error_of(",deepseek-v3,", ",nomodel,");
  EXPECT_TRUE(err.starts_with(at + "model = 'nomodel' (row M3): unknown model preset 'nomodel'"))
      << err;
  WriteTemp(dir, "nameless.toml", "peak_bf16_tflops = 1000\n");
  err = error_of(",gb200-nvl72,", ",nameless.toml,");
  EXPECT_TRUE(err.starts_with(at + "hardware = 'nameless.toml' (row M3): " +
                              (dir / "nameless.toml").string() + ": "))
      << err;
  err = error_of(",gb200-nvl72,", ",none.toml,");
  EXPECT_TRUE(err.starts_with(at + "hardware = 'none.toml' (row M3). Violated constraint: a file; "
                                   "none at "))
      << err;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace mosaic::testing
