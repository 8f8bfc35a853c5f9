// Profile files: flags and numbers parse, round-trip through ProfilesToToml, and bad entries name
// the file, line, key and rule.
#include "mosaic/perf/profile.h"

#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "mosaic/util/error.h"

namespace mosaic {
namespace {

// The text of a complete profile file: SharedPerfParams' defaults and one profile "mine" on h100
// with every parameter. Each (key, value) of `set` replaces that key's line in the profile, or in
// [shared] for a "shared." key, or is appended to the profile when it has no line.
std::string ProfileText(const std::vector<std::pair<std::string, std::string>>& set = {}) {
  ProfileSet profiles;
  PerfProfile mine;
  mine.name = "mine";
  mine.hardware = "h100";
  profiles.profiles.push_back(mine);
  std::string text = ProfilesToToml(profiles, "");
  for (const auto& [qualified, value] : set) {
    const bool shared = qualified.starts_with("shared.");
    const std::string key = shared ? qualified.substr(7) : qualified;
    const size_t section = text.find(shared ? "[shared]" : "[profiles.");
    const size_t at = text.find("\n" + key + " = ", section);
    if (at == std::string::npos || (shared && at > text.find("[profiles."))) {
      text += key + " = " + value + "\n";
    } else {
      text.replace(at + 1, text.find('\n', at + 1) - at - 1, key + " = " + value);
    }
  }
  return text;
}

// The error ParseProfiles gives `text` read as "bad.toml", or "no error".
std::string message(const std::string& text) {
  try {
    ParseProfiles(text, "bad.toml");
  } catch (const InputError& e) {
    return std::string(e.what());
  }
  return std::string("no error");
}

const std::string kProfiles = ProfileText({{"shared.moe_sync_seconds", "0.001"},
                                           {"moe_host_sync", "true"},
                                           {"fused_attention_sinks", "false"},
                                           {"gemm_efficiency", "0.7"},
                                           {"scale_up_efficiency", "0.4"},
                                           {"expert_group_seconds", "3e-5"}});

TEST(Profile, FlagsAndNumbersParseAndRoundTrip) {
  const ProfileSet set = ParseProfiles(kProfiles, "mine.toml");
  ASSERT_EQ(set.profiles.size(), 1u);
  const PerfProfile& p = set.profiles[0];
  EXPECT_TRUE(p.moe_host_sync);
  EXPECT_FALSE(p.fused_attention_sinks);
  EXPECT_EQ(p.gemm_efficiency, 0.7);
  EXPECT_EQ(p.scale_up_efficiency, 0.4);
  EXPECT_EQ(set.shared.moe_sync_seconds, 0.001);
  EXPECT_EQ(p.expert_group_seconds, 3e-5);
  const ProfileSet again = ParseProfiles(ProfilesToToml(set, "# header"), "again.toml");
  EXPECT_EQ(again.profiles[0].moe_host_sync, true);
  EXPECT_EQ(again.profiles[0].fused_attention_sinks, false);
  EXPECT_EQ(again.profiles[0].scale_up_efficiency, 0.4);
  EXPECT_EQ(again.profiles[0].expert_group_seconds, 3e-5);
}

// Names and texts that need quoting in TOML (a space, a quote, a backslash, a dot, a tab) are
// written quoted and read back the same (found by fuzz/hardware_fuzz.cc: the written file did
// not parse).
TEST(Profile, NamesAndTextsNeedingQuotesRoundTrip) {
  std::string text = ProfileText({{"stack", "\"x\\\\y\\tz\""}});
  text.replace(text.find("[profiles.\"mine\"]"), 17, "[profiles.\"a b\\\" c.d\"]");
  const ProfileSet set = ParseProfiles(text, "quoted.toml");
  ASSERT_EQ(set.profiles.size(), 1u);
  EXPECT_EQ(set.profiles[0].name, "a b\" c.d");
  EXPECT_EQ(set.profiles[0].stack, "x\\y\tz");
  const ProfileSet again = ParseProfiles(ProfilesToToml(set, "# header"), "again.toml");
  ASSERT_EQ(again.profiles.size(), 1u);
  EXPECT_EQ(again.profiles[0].name, "a b\" c.d");
  EXPECT_EQ(again.profiles[0].stack, "x\\y\tz");
  EXPECT_EQ(again.profiles[0].hardware, "h100");
}

TEST(Profile, BadEntriesNameFileLineKeyAndRule) {
  EXPECT_EQ(message("[profiles.x]\nmoe_host_sync = 1\n"),
            "bad.toml:2:17: moe_host_sync = 1 has type integer. Violated constraint: true or "
            "false");
  EXPECT_EQ(message("[profiles.x]\nmoe_host_synk = true\n"),
            "bad.toml:2:1: unknown profile parameter 'moe_host_synk' (did you mean "
            "'moe_host_sync'?)");
  EXPECT_EQ(message("[profiles.x]\ngemm_efficiency = -0.5\n"),
            "bad.toml:2:19: gemm_efficiency = -0.5. Violated constraint: 0.01 <= gemm_efficiency "
            "<= 1 (a share of the peak rate, which divides a time)");
  EXPECT_EQ(message("[shared]\nscale_out_efficiency = 0\n"),
            "bad.toml:2:24: scale_out_efficiency = 0. Violated constraint: 0.01 <= "
            "scale_out_efficiency <= 1 (a share of the peak rate, which divides a time)");
  EXPECT_EQ(message("[profiles.x]\nhardware = 5\n"),
            "bad.toml:2:12: hardware = 5 has type integer. Violated constraint: a string");
  EXPECT_EQ(message("[profiles.x]\nhardware = \"\"\n"),
            "bad.toml:2:12: hardware = \"\". Violated constraint: a device name");
  EXPECT_EQ(message("[profiles.x]\ncalibrated = \"no\"\n"),
            "bad.toml:2:14: calibrated = 'no' has type string. Violated constraint: true or false");
  EXPECT_EQ(message("[profiles]\nfoo = 3\n"),
            "bad.toml:2:7: profiles.foo has type integer. Violated constraint: a [profiles.NAME] "
            "table");
  EXPECT_EQ(message("[shared]\noverlap_ep = 0.5\n"),
            "bad.toml:2:14: overlap_ep = 0.5 in [shared]. Violated constraint: overlap_ep is a "
            "profile parameter (each stack hides its own share of the EP all-to-all); move it "
            "into each [profiles.NAME] table");
  EXPECT_EQ(message("[shared]\noverlap_tp = 2\n"),
            "bad.toml:2:14: overlap_tp = 2. Violated constraint: 0 <= overlap_tp <= 1 (a share of "
            "a whole)");
  EXPECT_EQ(message("[profiles.x]\ngemm_efficiency = 0\n"),
            "bad.toml:2:19: gemm_efficiency = 0. Violated constraint: 0.01 <= gemm_efficiency <= "
            "1 (a share of the peak rate, which divides a time)");
  EXPECT_EQ(message(""),
            "bad.toml: a profile file has a [shared] table and at least one [profiles.NAME] table");
  EXPECT_EQ(message("[shared]\n[profiles.x]\nhardware = \"h100\"\n"),
            "bad.toml:2:1: profile 'x' has no moe_host_sync. Violated constraint: every profile "
            "sets every parameter but overlap_fsdp and scale_up_efficiency (left out: the shared "
            "value), grouped_gemm_row_tile (left out: 0), recompute (left out: the least that "
            "fits), stack and source (left out: none) and the flags calibrated (left out: false), "
            "moe_calibrated, ep_calibrated (left out: the flag before's value) and "
            "untraced_sink_model_cost (left out: false)");
  // -0 is stored as 0; counts are whole; a profile's name is not empty or padded.
  EXPECT_EQ(ParseProfiles(ProfileText({{"step_overhead_seconds", "-0.0"}}), "mine.toml")
                .profiles[0]
                .step_overhead_seconds,
            0.0);
  EXPECT_FALSE(std::signbit(
      ParseProfiles(ProfileText({{"step_overhead_seconds", "-0.0"}}), "mine.toml")
          .profiles[0]
          .step_overhead_seconds));
  EXPECT_EQ(message("[shared]\ngemm_half_size = 128.5\n"),
            "bad.toml:2:18: gemm_half_size = 128.5. Violated constraint: a whole number of rows");
  EXPECT_EQ(message("[shared]\nelementwise_passes = 9.5\n"),
            "bad.toml:2:22: elementwise_passes = 9.5. Violated constraint: a whole number of "
            "passes");
  for (const std::string name : {"\"\"", "\" megatron-h100 \""}) {
    EXPECT_NE(message("[profiles." + name + "]\nhardware = \"h100\"\n")
                  .find(". Violated constraint: a name that is not empty and neither begins nor "
                        "ends with a space"),
              std::string::npos)
        << name;
  }
  EXPECT_EQ(message("[shared]\nmoe_sync_second = 1\n"),
            "bad.toml:2:1: unknown shared parameter 'moe_sync_second' (did you mean "
            "'moe_sync_seconds'?)");
  // A device file given as the profiles: its keys are at the top level (it said "unknown
  // section 'hbm_gb'").
  EXPECT_EQ(message("hbm_gb = 80\n"),
            "bad.toml:1:10: key 'hbm_gb' at the top level. Violated constraint: a profile file "
            "holds only the tables [shared] and [profiles.NAME] (this looks like a device file: "
            "give it to --hardware)");
  EXPECT_EQ(message("[sharde]\n"),
            "bad.toml:1:1: table 'sharde' at the top level. Violated constraint: a profile file "
            "holds only the tables [shared] and [profiles.NAME]");
}

// Values far outside a parameter's physical range gave an infinite step time or a NaN
// recompute line with exit status 0 (a new user's report); each is refused with its range.
TEST(Profile, ValuesOutsideTheirPhysicalRangeAreRefused) {
  EXPECT_EQ(message("[profiles.x]\nexpert_group_seconds = 1e308\n"),
            "bad.toml:2:24: expert_group_seconds = 1e+308. Violated constraint: 0 <= "
            "expert_group_seconds <= 0.01 (one expert GEMM's cost beyond its FLOPs is "
            "microseconds)");
  EXPECT_EQ(message("[profiles.x]\nstep_overhead_seconds = 1e308\n"),
            "bad.toml:2:25: step_overhead_seconds = 1e+308. Violated constraint: 0 <= "
            "step_overhead_seconds <= 3600 (a fixed cost per step, at most an hour)");
  EXPECT_EQ(message("[shared]\nelementwise_passes = 1e308\n"),
            "bad.toml:2:22: elementwise_passes = 1e+308. Violated constraint: 0 <= "
            "elementwise_passes <= 100 (reads and writes of a layer's activations per step)");
  EXPECT_EQ(message("[shared]\nmoe_sync_seconds = 1e308\n"),
            "bad.toml:2:20: moe_sync_seconds = 1e+308. Violated constraint: 0 <= "
            "moe_sync_seconds <= 0.1 (host time per MoE layer pass is milliseconds)");
  EXPECT_EQ(message("[profiles.x]\ngemm_efficiency = 1e-300\n"),
            "bad.toml:2:19: gemm_efficiency = 1e-300. Violated constraint: 0.01 <= "
            "gemm_efficiency <= 1 (a share of the peak rate, which divides a time)");
  EXPECT_EQ(message("[profiles.x]\nscale_up_efficiency = 1e-300\n"),
            "bad.toml:2:23: scale_up_efficiency = 1e-300. Violated constraint: 0.01 <= "
            "scale_up_efficiency <= 1 (a share of the peak rate, which divides a time; 0 takes "
            "the shared value)");
  EXPECT_EQ(message("[profiles.x]\noptimizer_bytes_per_param = 65\n"),
            "bad.toml:2:29: optimizer_bytes_per_param = 65. Violated constraint: 0 <= "
            "optimizer_bytes_per_param <= 64 (bytes per parameter; Adam's fp32 master weights and "
            "moments take 12)");
  // A profile's scale_up_efficiency of 0 takes the shared one; the range's ends are accepted.
  const ProfileSet set = ParseProfiles(ProfileText({{"shared.scale_out_efficiency", "0.01"},
                                                    {"gemm_efficiency", "1"},
                                                    {"scale_up_efficiency", "0"},
                                                    {"step_overhead_seconds", "3600"}}),
                                       "edge.toml");
  EXPECT_EQ(set.profiles[0].scale_up_efficiency, 0);
  EXPECT_EQ(set.shared.scale_out_efficiency, 0.01);
}

// A hardware name that is no device matched the profile to nothing (the device's default profile
// then fell back to another stack's); a device file path is accepted.
TEST(Profile, HardwareIsAShippedDeviceOrADeviceFile) {
  try {
    ParseProfiles(ProfileText({{"hardware", "\"h10\""}}), "hw.toml");
    FAIL() << "no error";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(": hardware = \"h10\". Violated constraint: a shipped device ("),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("gb200-nvl72"), std::string::npos) << what;
    EXPECT_NE(what.find("or a device file (did you mean 'h100'?)"), std::string::npos) << what;
  }
  // A device file must exist and load (a missing file or a directory was taken as a name).
  const std::string file = std::string(MOSAIC_SOURCE_DIR) + "/data/hardware/h100.toml";
  const ProfileSet set = ParseProfiles(ProfileText({{"hardware", "\"" + file + "\""}}), "hw.toml");
  EXPECT_EQ(set.profiles[0].hardware, file);
  for (const std::string bad : {"/nonexistent/x.toml", "/etc"}) {
    try {
      ParseProfiles(ProfileText({{"hardware", "\"" + bad + "\""}}), "hw.toml");
      ADD_FAILURE() << bad << ": no error";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(": hardware = \"" + bad +
                                           "\". Violated constraint: a device file that loads ("),
                std::string::npos)
          << e.what();
    }
  }
}

// Every parameter is set: one left out took a built-in default, not a calibrated value, with no
// word (a new user's report: dropping expert_group_seconds made a step 38% faster).
TEST(Profile, EveryParameterIsSet) {
  auto without = [](const std::string& key, bool shared) {
    std::string text = ProfileText();
    const size_t at = text.find("\n" + key + " = ", text.find(shared ? "[shared]" : "[profiles."));
    text.erase(at + 1, text.find('\n', at + 1) - at);
    return message(text);
  };
  EXPECT_EQ(without("expert_group_seconds", false),
            "bad.toml:22:1: profile 'mine' has no expert_group_seconds. Violated constraint: every "
            "profile sets every parameter but overlap_fsdp and scale_up_efficiency (left out: the "
            "shared value), grouped_gemm_row_tile (left out: 0), recompute (left out: the least "
            "that fits), stack and source (left out: none) and the flags calibrated (left out: "
            "false), moe_calibrated, ep_calibrated (left out: the flag before's value) and "
            "untraced_sink_model_cost (left out: false)");
  EXPECT_EQ(without("moe_host_sync", false).find("profile 'mine' has no moe_host_sync"), 15u);
  EXPECT_EQ(without("fp8_quantize_seconds", true),
            "bad.toml:2:1: [shared] has no fp8_quantize_seconds. Violated constraint: [shared] sets "
            "every shared parameter but untraced_sink_model_seconds (left out: 0)");
  // The two that mean "the shared value" may be left out, and those whose absence means 0.
  EXPECT_EQ(without("scale_up_efficiency", false), "no error");
  EXPECT_EQ(without("untraced_sink_model_seconds", true), "no error");
}

// A hand-written profile is not "calibrated" unless it says so; calibrate writes the key.
TEST(Profile, OnlyAProfileThatSaysSoIsCalibrated) {
  ProfileSet set = ParseProfiles(kProfiles, "mine.toml");
  EXPECT_FALSE(set.profiles[0].calibrated);
  EXPECT_EQ(CalibrationText(set.profiles[0]), "uncalibrated: set by hand for h100");
  set.profiles[0].calibrated = true;
  const ProfileSet again = ParseProfiles(ProfilesToToml(set, "# header"), "again.toml");
  EXPECT_TRUE(again.profiles[0].calibrated);
  EXPECT_EQ(CalibrationText(again.profiles[0]), "calibrated on h100");
  EXPECT_EQ(CalibrationText(again.ForHardware("tpu-v6e")), "uncalibrated defaults");
}

// Whether the MoE parameters were calibrated too: left out, as calibrated as the profile; a
// profile fitted on dense rows alone says false, and keeps saying it through a round trip.
TEST(Profile, MoeCalibratedTakesCalibratedUnlessGiven) {
  EXPECT_FALSE(ParseProfiles(kProfiles, "mine.toml").profiles[0].moe_calibrated);
  ProfileSet set = ParseProfiles(ProfileText({{"calibrated", "true"}}), "mine.toml");
  EXPECT_TRUE(set.profiles[0].moe_calibrated);
  set = ParseProfiles(ProfileText({{"calibrated", "true"}, {"moe_calibrated", "false"}}),
                      "mine.toml");
  EXPECT_TRUE(set.profiles[0].calibrated);
  EXPECT_FALSE(set.profiles[0].moe_calibrated);
  const ProfileSet again = ParseProfiles(ProfilesToToml(set, "# header"), "again.toml");
  EXPECT_FALSE(again.profiles[0].moe_calibrated);
  EXPECT_NE(message(ProfileText({{"moe_calibrated", "1"}})).find(
                "moe_calibrated = 1 has type integer. Violated constraint: true or false"),
            std::string::npos)
      << message(ProfileText({{"moe_calibrated", "1"}}));
}

// Whether the EP overlap was calibrated: left out, as calibrated as the MoE parameters; a profile
// whose MoE rows ran without EP says false, and keeps saying it through a round trip.
TEST(Profile, EpCalibratedTakesMoeCalibratedUnlessGiven) {
  EXPECT_FALSE(ParseProfiles(kProfiles, "mine.toml").profiles[0].ep_calibrated);
  ProfileSet set = ParseProfiles(ProfileText({{"calibrated", "true"}}), "mine.toml");
  EXPECT_TRUE(set.profiles[0].ep_calibrated);
  set = ParseProfiles(ProfileText({{"calibrated", "true"}, {"moe_calibrated", "false"}}),
                      "mine.toml");
  EXPECT_FALSE(set.profiles[0].ep_calibrated);
  set = ParseProfiles(ProfileText({{"calibrated", "true"}, {"ep_calibrated", "false"}}),
                      "mine.toml");
  EXPECT_TRUE(set.profiles[0].moe_calibrated);
  EXPECT_FALSE(set.profiles[0].ep_calibrated);
  const std::string text = ProfilesToToml(set, "# header");
  EXPECT_NE(text.find("ep_calibrated = false\n"), std::string::npos) << text;
  const ProfileSet again = ParseProfiles(text, "again.toml");
  EXPECT_TRUE(again.profiles[0].moe_calibrated);
  EXPECT_FALSE(again.profiles[0].ep_calibrated);
  EXPECT_NE(message(ProfileText({{"ep_calibrated", "\"no\""}})).find(
                "ep_calibrated = 'no' has type string. Violated constraint: true or false"),
            std::string::npos)
      << message(ProfileText({{"ep_calibrated", "\"no\""}}));
}

// The grouped GEMM's row tile: left out, 0 (no tile computed again); a whole number of rows in
// 0-65536 when given; written back as read.
TEST(Profile, GroupedGemmRowTileIsAWholeNumberOfRowsAndZeroWhenLeftOut) {
  EXPECT_EQ(ParseProfiles(kProfiles, "mine.toml").profiles[0].grouped_gemm_row_tile, 0);
  const ProfileSet set = ParseProfiles(ProfileText({{"grouped_gemm_row_tile", "512"}}),
                                       "mine.toml");
  EXPECT_EQ(set.profiles[0].grouped_gemm_row_tile, 512);
  EXPECT_EQ(ParseProfiles(ProfilesToToml(set, "# header"), "again.toml")
                .profiles[0]
                .grouped_gemm_row_tile,
            512);
  EXPECT_NE(message(ProfileText({{"grouped_gemm_row_tile", "512.5"}}))
                .find("grouped_gemm_row_tile = 512.5. Violated constraint: a whole number of rows"),
            std::string::npos)
      << message(ProfileText({{"grouped_gemm_row_tile", "512.5"}}));
  EXPECT_NE(message(ProfileText({{"grouped_gemm_row_tile", "-1"}}))
                .find("Violated constraint: 0 <= grouped_gemm_row_tile <= 65536"),
            std::string::npos)
      << message(ProfileText({{"grouped_gemm_row_tile", "-1"}}));
  EXPECT_EQ(LoadProfiles().Get("maxtext-tpu-v5p").grouped_gemm_row_tile, 512);
  EXPECT_EQ(LoadProfiles().Get("megatron-h100").grouped_gemm_row_tile, 0);
}

// generic-DEVICE names a device's uncalibrated defaults: a file's profile of that name would be
// loaded and never used (--profile generic-h100 takes the defaults), so it is refused.
TEST(Profile, AFileMayNotNameAProfileGeneric) {
  for (const std::string name : {"generic", "generic-h100"}) {
    std::string text = ProfileText();
    text.replace(text.find("[profiles.\"mine\"]"), 17, "[profiles.\"" + name + "\"]");
    EXPECT_NE(message(text).find("[profiles.\"" + name + "\"]. Violated constraint: a name other "
                                 "than 'generic' and 'generic-…'"),
              std::string::npos)
        << message(text);
  }
}

// Stored activations scale by activation_factor: 0 would store none, a recompute policy's
// or offload's job; a tenth is the least a stack stores.
TEST(Profile, ActivationFactorStoresSomething) {
  EXPECT_NE(message(ProfileText({{"activation_factor", "0"}}))
                .find("activation_factor = 0. Violated constraint: 0.1 <= activation_factor <= "
                      "100"),
            std::string::npos)
      << message(ProfileText({{"activation_factor", "0"}}));
  EXPECT_EQ(ParseProfiles(ProfileText({{"activation_factor", "0.5"}}), "mine.toml")
                .profiles[0]
                .activation_factor,
            0.5);
}

// A table defined twice is named as its header writes it (toml++ 3.x garbles a quoted key in its
// own message: 'profiles."mimine"').
TEST(Profile, ATableDefinedTwiceIsNamedAsWritten) {
  std::string text = ProfileText();
  const std::string block = text.substr(text.find("[profiles.\"mine\"]"));
  text += "\n" + block;
  EXPECT_NE(message(text).find(
                "TOML syntax error: Error while parsing table header: cannot redefine existing "
                "table 'profiles.\"mine\"'"),
            std::string::npos)
      << message(text);
}

TEST(Profile, UnknownNameListsTheKnownOnes) {
  const ProfileSet set = ParseProfiles(kProfiles, "mine.toml");
  try {
    set.Get("nope");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "unknown perf profile 'nope'; known: mine, and generic-DEVICE (the "
                           "device's uncalibrated defaults)");
  }
}

}  // namespace
}  // namespace mosaic
