#include "mosaic/study/study_config.h"

#include <gtest/gtest.h>

namespace mosaic {
namespace {

std::string ErrorOf(const std::string& toml) {
  try {
    LoadStudyFromToml(toml, "study.toml");
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

constexpr const char* kMinimal =
    "model = \"marin-ladder\"\npeak_flops_per_gpu = 2.5e15\nassumed_mfu = 0.15\n"
    "[[rungs]]\nd_model = 768\n";

TEST(LoadStudy, EmbeddedDefaultIsTheSeedStudy) {
  const StudyConfig study = LoadStudy(kDefaultStudy);
  EXPECT_EQ(study.rungs.size(), 4u);
  EXPECT_EQ(study.arms.size(), 3u);
  EXPECT_EQ(study.tokens_per_active_param, 750);
  EXPECT_EQ(study.flop_convention, FlopConvention::kLevanterTable);
  EXPECT_EQ(study.rungs[3].racks, 4);
}

// Two cadence rules from one min_d_model: one would never apply.
TEST(LoadStudy, CadenceRulesStartAtDistinctSizes) {
  const std::string rules =
      "[[cadence]]\nmin_d_model = 1024\nevery_steps = 500\n"
      "[[cadence]]\nmin_d_model = 1024\nevery_steps = 1000\n";
  EXPECT_NE(ErrorOf(std::string(kMinimal) + rules)
                .find("two [[cadence]] rules have min_d_model = 1024; each min_d_model starts one "
                      "rule"),
            std::string::npos)
      << ErrorOf(std::string(kMinimal) + rules);
}

TEST(LoadStudy, MinimalStudyGetsAReferenceArm) {
  const StudyConfig study = LoadStudyFromToml(kMinimal, "study.toml");
  ASSERT_EQ(study.arms.size(), 1u);
  EXPECT_EQ(study.arms[0].name, "base");
}

// The caret of an unknown key is under the key, not its value.
TEST(LoadStudy, UnknownKeySuggestsClosest) {
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "[[arms]]\nname = \"a\"\nlayuot = \"ep=64\"\n"),
            "study.toml:8:1: unknown key 'layuot' in [[arms]] (did you mean 'layout'?)\n"
            "  layuot = \"ep=64\"\n"
            "  ^");
}

TEST(LoadStudy, MfuIsAFractionOfAtLeastOneThousandth) {
  // 1e-300 was accepted and printed a wall-clock of some 300 digits.
  for (const char* mfu : {"1e-300", "0.0009", "0"}) {
    EXPECT_NE(ErrorOf(std::string("model = \"marin-ladder\"\npeak_flops_per_gpu = 2.5e15\n"
                                  "assumed_mfu = ") +
                      mfu + "\n[[rungs]]\nd_model = 768\n")
                  .find("Violated constraint: 0.001 <= assumed_mfu <= 1"),
              std::string::npos)
        << mfu;
  }
}

TEST(LoadStudy, MfuIsAFraction) {
  EXPECT_EQ(ErrorOf("model = \"marin-ladder\"\npeak_flops_per_gpu = 2.5e15\nassumed_mfu = 15\n"
                    "[[rungs]]\nd_model = 768\n"),
            "study.toml:3:15: assumed_mfu = 15. Violated constraint: 0.001 <= assumed_mfu <= 1 "
            "(a fraction: 0.15, not 15; below 0.1% no training run is)\n"
            "  assumed_mfu = 15\n"
            "                ^");
}

TEST(LoadStudy, RacksArePositive) {
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "racks = 0\n"),
            "study.toml:6:9: racks = 0. Violated constraint: racks >= 1\n"
            "  racks = 0\n"
            "          ^");
}

TEST(LoadStudy, UnknownModelFieldInSet) {
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "set = { expert = 3 }\n"),
            "study.toml:6:9: unknown model field 'expert' in set (did you mean 'experts'?)\n"
            "  set = { expert = 3 }\n"
            "          ^");
}

TEST(LoadStudy, NoRungs) {
  EXPECT_EQ(ErrorOf("model = \"x\"\npeak_flops_per_gpu = 1e15\nassumed_mfu = 0.4\n"),
            "study.toml: the study has no [[rungs]]");
}

// Arm layouts are perf layouts ("fsdp=64, moe_chunk=1"); a key that is not one is an error.
TEST(LoadStudy, ArmLayoutIsALayout) {
  const auto with_layout = [](const std::string& layout) {
    return std::string(kMinimal) + "[[arms]]\nname = \"a\"\nlayout = \"" + layout + "\"\n";
  };
  EXPECT_EQ(LoadStudyFromToml(with_layout("fsdp=64, moe_chunk=1"), "study.toml").arms.at(0).layout,
            "fsdp=64, moe_chunk=1");
  EXPECT_EQ(ErrorOf(with_layout("fsdp=64, moe_chunks=1")),
            "study.toml:8:10: layout fsdp=64, moe_chunks=1: unknown layout key 'moe_chunks' (did "
            "you mean 'moe_chunk'?)\n"
            "  layout = \"fsdp=64, moe_chunks=1\"\n"
            "           ^");
  EXPECT_NE(ErrorOf(with_layout("ep=0")), "");
  EXPECT_NE(ErrorOf(with_layout("fsdp")), "");
  // What the layout names fits the rung's 64 GPUs (it was only parsed: ep=63 planned and decided).
  EXPECT_NE(ErrorOf(with_layout("ep=63"))
                .find("study.toml:8:10: layout = \"ep=63\". Violated constraint: the layout fits "
                      "every rung: ep·etp = 63 divides the 64 GPUs of d768 (1 × 64 per rack)"),
            std::string::npos)
      << ErrorOf(with_layout("ep=63"));
  EXPECT_NE(ErrorOf(with_layout("ep=64,tp=3")).find("tp·pp·cp·dp·fsdp = 3 divides the 64 GPUs"),
            std::string::npos);
  EXPECT_NE(ErrorOf(with_layout("fsdp=65")).find("tp·pp·cp·dp·fsdp = 65 divides"),
            std::string::npos);
  EXPECT_EQ(ErrorOf(with_layout("ep=64")), "");
}

TEST(LoadStudy, RungsHaveDistinctWidths) {
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "[[rungs]]\nd_model = 768\nracks = 2\n"),
            "study.toml:7:11: d_model = 768. Violated constraint: each [[rungs]] entry has its own "
            "d_model (this one is given twice)\n"
            "  d_model = 768\n"
            "            ^");
}

TEST(ResolveOverride, EvaluatesExpressionsInD) {
  EXPECT_EQ(ResolveOverride({"latent_dim", "d/2", {}}, 1536), "768");
  EXPECT_EQ(ResolveOverride({"expert_width", "d", {}}, 1536), "1536");
  EXPECT_EQ(ResolveOverride({"expert_width", "3*d/2", {}}, 1024), "1536");
  EXPECT_EQ(ResolveOverride({"norm", "gatednorm", {}}, 1024), "gatednorm");
  EXPECT_EQ(ResolveOverride({"experts", "192", {}}, 1024), "192");
  // Only integer fields take expressions; others are passed on as written (and checked there).
  EXPECT_EQ(ResolveOverride({"capacity_factor", "d", {}}, 1024), "d");
}

std::string ResolveError(const std::string& field, const std::string& value) {
  try {
    ResolveOverride({field, value, {}}, 1024);
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

// INT64_MIN / -1 does not fit in 64 bits (found by fuzz/study_fuzz.cc; it was undefined
// behaviour, a SIGFPE on x86).
TEST(ResolveOverride, QuotientOutsideTheRangeIsRefused) {
  EXPECT_EQ(ResolveError("latent_dim", "-9223372036854775808/-1"),
            "latent_dim = \"-9223372036854775808/-1\" at d = 1024. Violated constraint: the value "
            "fits in 64 bits");
  EXPECT_EQ(ResolveOverride({"latent_dim", "-9223372036854775807/-1", {}}, 1024),
            "9223372036854775807");
}

TEST(ResolveOverride, RejectsMalformedExpressions) {
  const std::string grammar =
      "an integer, or integers and d joined by * and / (e.g. \"d\", \"d/2\", \"3*d/2\")";
  EXPECT_EQ(ResolveError("latent_dim", "d/3"),
            "latent_dim = \"d/3\" at d = 1024. Violated constraint: the quotient is an exact "
            "integer");
  EXPECT_EQ(ResolveError("latent_dim", "d/0"),
            "latent_dim = \"d/0\" at d = 1024. Violated constraint: no division by zero");
  EXPECT_EQ(ResolveError("latent_dim", "d-1000"),
            "latent_dim = \"d-1000\" at d = 1024. Violated constraint: " + grammar);
  EXPECT_EQ(ResolveError("latent_dim", "d*"),
            "latent_dim = \"d*\" at d = 1024. Violated constraint: " + grammar);
  EXPECT_EQ(ResolveError("latent_dim", "dd"),
            "latent_dim = \"dd\" at d = 1024. Violated constraint: " + grammar);
  EXPECT_EQ(ResolveError("latent_dim", "99999999999999999999*d"),
            "latent_dim = \"99999999999999999999*d\" at d = 1024. Violated constraint: the value "
            "fits in 64 bits");
  EXPECT_EQ(ResolveError("latent_dim", "4611686018427387904*d"),
            "latent_dim = \"4611686018427387904*d\" at d = 1024. Violated constraint: the value "
            "fits in 64 bits");
}

TEST(LoadStudy, ArmNamesAreUnique) {
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "[[arms]]\nname = \"a\"\n[[arms]]\nname = \"a\"\n"),
            "study.toml:8:1: two [[arms]] are named 'a'; arm names are unique\n"
            "  [[arms]]\n"
            "  ^");
}

TEST(LoadStudy, PeakFlopsMustBeFinite) {
  EXPECT_EQ(ErrorOf("model = \"marin-ladder\"\npeak_flops_per_gpu = inf\n"),
            "study.toml:2:22: peak_flops_per_gpu = inf. Violated constraint: 1e11 <= "
            "peak_flops_per_gpu <= 1e17 (FLOP/s per GPU, e.g. 2.5e15; not TFLOP/s)\n"
            "  peak_flops_per_gpu = inf\n"
            "                       ^");
  // A unit slip: 2.5 meant as 2.5 PFLOP/s, 2500 as TFLOP/s.
  for (const char* slip : {"2.5", "2500"}) {
    EXPECT_NE(ErrorOf(std::string("model = \"marin-ladder\"\npeak_flops_per_gpu = ") + slip + "\n")
                  .find("Violated constraint: 1e11 <= peak_flops_per_gpu <= 1e17"),
              std::string::npos)
        << slip;
  }
}

// The bootstrap's minimum depends on the confidence, which may stand after it in [fit].
TEST(LoadStudy, AFitBootstrapHasAResampleBeyondEachEnd) {
  const std::string error =
      ErrorOf(std::string(kMinimal) + "[fit]\nbootstrap = 10\nconfidence = 0.9\n");
  EXPECT_NE(error.find("study.toml:7:13: bootstrap = 10. Violated constraint: bootstrap >= 20 at "
                       "confidence 0.9"),
            std::string::npos)
      << error;
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "[fit]\nbootstrap = 20\nconfidence = 0.9\n"), "");
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "[fit]\nbootstrap = 0\n"), "");
}

TEST(LoadStudy, AMeasuredThroughputNamesTheKeysItLacks) {
  const std::string error =
      ErrorOf(std::string(kMinimal) + "[throughput]\n[[throughput.measured]]\narm = \"base\"\n"
              "tokens_per_s = 1000.0\n");
  EXPECT_NE(error.find("[[throughput.measured]] entry lacks gpus, source (each entry needs arm, "
                       "tokens_per_s, gpus and source)"),
            std::string::npos)
      << error;
}

// Files a study names are checked where they are named: the error points at the key, and says
// where the file was looked for. Results are planned before they exist: the study loads without
// them, and CheckResultsExist (what `mosaic decide` runs first) refuses them at their key.
TEST(LoadStudy, AMissingResultsFileOrModelFileIsNamedAtItsKey) {
  const auto results_error = [](const std::string& toml) -> std::string {
    const StudyConfig study = LoadStudyFromToml(toml, "study.toml");
    try {
      CheckResultsExist(*study.decision.results);
    } catch (const InputError& error) {
      return error.what();
    }
    return "";
  };
  const std::string results =
      results_error(std::string(kMinimal) + "[results]\ncsv = \"nope.csv\"\n");
  EXPECT_NE(results.find("study.toml:7:7: csv = \"nope.csv\". Violated constraint: a file; none "
                         "at nope.csv (a relative path is looked for beside study.toml, then from "
                         "the working directory)"),
            std::string::npos)
      << results;
  const std::string logs = results_error(std::string(kMinimal) +
                                         "[results]\nlogs = [\"no-such-logs\"]\ntag = \"loss\"\n"
                                         "run_pattern = \"{arm}-d{d_model}\"\n");
  EXPECT_NE(logs.find("logs = \"no-such-logs\". Violated constraint: a log directory or file; "
                      "none at no-such-logs"),
            std::string::npos)
      << logs;
  const std::string model = ErrorOf(
      "model = \"nofile.toml\"\npeak_flops_per_gpu = 2.5e15\nassumed_mfu = 0.15\n[[rungs]]\n"
      "d_model = 768\n");
  EXPECT_NE(model.find("study.toml:1:9: model = \"nofile.toml\". Violated constraint: a model "
                       "preset, or a file; none at nofile.toml"),
            std::string::npos)
      << model;
}

}  // namespace
}  // namespace mosaic
