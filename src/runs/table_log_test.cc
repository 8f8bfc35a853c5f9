#include "mosaic/runs/table_log.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "mosaic/util/error.h"

namespace mosaic::runs {
namespace {

const TagPoints& Tag(const TableLog& log, const std::string& name) {
  for (const TagPoints& t : log.tags) {
    if (t.tag == name) return t;
  }
  throw std::runtime_error("no tag " + name);
}

TEST(CsvLog, WideDiagnosticsWithLateColumnsAndAResume) {
  const std::string text =
      "step,H/L03/moe/cH01/act_var,H/L03/attn/cH01/act_norm\n"
      "0,,1.5\n"
      "50,0.25,1.25\n"
      "100,0.5,\n"
      "50,0.75,1.0\n";  // resumed: step 50 again
  const TableLog log = ReadCsvLog(text, "module_diag.csv");
  EXPECT_EQ(log.step_column, "step");
  EXPECT_EQ(log.rows, 4);
  const TagPoints& var = Tag(log, "H/L03/moe/cH01/act_var");
  ASSERT_EQ(var.points.size(), 3u);
  EXPECT_EQ(var.points[0].step, 50);
  EXPECT_EQ(var.points[2].step, 50);
  EXPECT_EQ(var.points[2].value, 0.75);
  EXPECT_TRUE(std::isnan(var.points[0].wall_time_seconds));
  const std::vector<ScalarPoint> first = ApplyRestartPolicy(RestartPolicy::kFirst, var.points, {});
  EXPECT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].value, 0.25);
  EXPECT_EQ(FindRestarts("v", var.points).size(), 1u);
}

TEST(CsvLog, WandbAndRayStyleColumns) {
  const TableLog wandb = ReadCsvLog("_step,_timestamp,loss\n1,1700000000.5,2.5\n2,1700000001,nan\n",
                                    "history.csv");
  EXPECT_EQ(wandb.step_column, "_step");
  EXPECT_EQ(wandb.wall_time_column, "_timestamp");
  EXPECT_EQ(Tag(wandb, "loss").points[0].wall_time_seconds, 1700000000.5);
  EXPECT_TRUE(std::isnan(Tag(wandb, "loss").points[1].value));
  const TableLog ray = ReadCsvLog(
      "episode_reward_max,timesteps_total,done,hist_stats/episode_reward,training_iteration\n"
      "1.5,4000,False,\"[1.0, 2.0]\",1\n",
      "progress.csv");
  EXPECT_EQ(ray.step_column, "timesteps_total");
  EXPECT_EQ(ray.non_numeric_cells, 2);
  EXPECT_EQ(Tag(ray, "training_iteration").points[0].step, 4000);
  // TensorBoard's own CSV download: one tag's Value by Step, with its wall time.
  const TableLog tensorboard = ReadCsvLog(
      "Wall time,Step,Value\n1700000000.25,100,3.5\n1700000010.5,200,3.25\n",
      "run-base-tag-train_loss.csv");
  EXPECT_EQ(tensorboard.step_column, "Step");
  EXPECT_EQ(tensorboard.wall_time_column, "Wall time");
  // The tag is named by the file, as TensorBoard names the download.
  ASSERT_EQ(Tag(tensorboard, "train_loss").points.size(), 2u);
  EXPECT_EQ(Tag(tensorboard, "train_loss").points[1].step, 200);
  EXPECT_EQ(Tag(tensorboard, "train_loss").points[1].wall_time_seconds, 1700000010.5);
  EXPECT_EQ(Tag(tensorboard, "train_loss").points[1].value, 3.25);
  EXPECT_EQ(ReadCsvLog("Wall time,Step,Value\n1.5,1,2\n", "dir/lr.csv").tags[0].tag, "lr");
  // A column named twice would be one tag written twice a step: the file is refused.
  try {
    ReadCsvLog("step,loss,loss\n1,3,4\n2,2,5\n", "dup.csv");
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "dup.csv:1: column 'loss' appears twice in the header "
                                     "(columns 2 and 3): each column is a tag of its own");
  }
  // A cell past a double's range is named as such, not as text.
  const TableLog huge = ReadCsvLog("step,loss\n1,-1e400\n2,2.5\n", "m.csv");
  ASSERT_FALSE(huge.notes.empty());
  EXPECT_EQ(huge.notes[0], "m.csv:2: loss = '-1e400' is a number beyond the range of a double "
                           "(about ±1.8e308); cell skipped");
  // An underflow is a number, as close to 0 as a double comes.
  const TableLog tiny = ReadCsvLog("step,loss\n0,2.5\n1,1e-400\n3,2.0\n", "t.csv");
  EXPECT_TRUE(tiny.notes.empty()) << tiny.notes.front();
  ASSERT_EQ(tiny.tags.size(), 1u);
  ASSERT_EQ(tiny.tags[0].points.size(), 3u);
  EXPECT_EQ(tiny.tags[0].points[1].value, 0.0);
  // Each skipped cell is named with its own reason, up to five a file.
  const TableLog bad = ReadCsvLog("step,loss,acc\n0,a,1e400\n1,b,2\n", "b.csv");
  ASSERT_EQ(bad.notes.size(), 3u);
  EXPECT_EQ(bad.notes[0], "b.csv:2: loss = 'a' is not a number; cell skipped");
  EXPECT_EQ(bad.notes[1], "b.csv:2: acc = '1e400' is a number beyond the range of a double "
                          "(about ±1.8e308); cell skipped");
  EXPECT_EQ(bad.notes[2], "b.csv:3: loss = 'b' is not a number; cell skipped");
  EXPECT_EQ(bad.non_numeric_cells, 3);
}

TEST(CsvLog, ErrorsNameFileLineFieldAndRule) {
  try {
    ReadCsvLog("a,b\n1,2\n", "m.csv");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "m.csv:1: no step column (looked for step, _step, global_step, timesteps_total, "
              "training_iteration, iteration, epoch, Step); name one with --step-column");
  }
  try {
    ReadCsvLog("a,b\n1,2\n", "m.csv", "it");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "m.csv:1: --step-column = it. Violated constraint: a column of the header");
  }
  const TableLog log = ReadCsvLog("epoch,loss\n1,2\nx,3\n2.5,4\n3,5", "m.csv");
  EXPECT_EQ(log.rows, 2);
  EXPECT_EQ(log.rows_without_step, 2);
  EXPECT_EQ(log.notes[0], "m.csv:3: epoch = 'x' is not an integer step; row skipped");
}

// A spreadsheet's UTF-8 byte-order mark is not part of the first column name or JSON key.
TEST(TableLog, ByteOrderMarkIsIgnoredByEveryReader) {
  const TableLog csv = ReadCsvLog("\xEF\xBB\xBFstep,loss\n1,2.5\n2,2.25\n", "excel.csv");
  EXPECT_EQ(csv.step_column, "step");
  EXPECT_EQ(Tag(csv, "loss").points.size(), 2u);
  const TableLog named = ReadCsvLog("\xEF\xBB\xBFstep,loss\n1,2.5\n", "excel.csv", "step");
  EXPECT_EQ(named.rows, 1);
  const TableLog jsonl = ReadJsonlLog("\xEF\xBB\xBF{\"step\": 1, \"loss\": 2}\n", "m.jsonl");
  EXPECT_EQ(jsonl.rows, 1);
  EXPECT_EQ(jsonl.malformed_rows, 0);
}

// A logger appending after a resume writes its header again, here with a new column: the rows
// after it are read with the new columns, none lost.
TEST(CsvLog, HeaderWrittenAgainStartsANewColumnSet) {
  const TableLog log = ReadCsvLog(
      "step,loss,lr\n1,2.5,0.1\n2,2.25,0.1\n"
      "step,loss,lr,grad_norm\n2,2.2,0.1,0.5\n3,2.0,0.1,0.25\n",
      "metrics.csv");
  EXPECT_EQ(log.rows, 4);
  EXPECT_EQ(log.repeated_headers, 1);
  EXPECT_EQ(log.rows_with_extra_cells, 0);
  EXPECT_EQ(log.rows_without_step, 0);
  EXPECT_EQ(Tag(log, "loss").points.size(), 4u);
  ASSERT_EQ(Tag(log, "grad_norm").points.size(), 2u);
  EXPECT_EQ(Tag(log, "grad_norm").points[1].step, 3);
  EXPECT_EQ(Tag(log, "grad_norm").points[1].value, 0.25);
  EXPECT_EQ(log.notes.at(0),
            "metrics.csv:4: header written again (4 columns, 3 before); the rows after it are read "
            "with it");
  // Columns may also move: the step column is found again by name.
  const TableLog moved = ReadCsvLog("step,loss\n1,2\nloss,step\n3,2\n", "m.csv");
  EXPECT_EQ(Tag(moved, "loss").points.at(1).step, 2);
  EXPECT_EQ(Tag(moved, "loss").points.at(1).value, 3);
}

// Each bad line is skipped with its own reason; the other lines are kept.
TEST(TableLog, EachBadLineHasItsOwnReason) {
  const TableLog csv = ReadCsvLog("step,loss\n1,2\n2,3,4\n3,1.5\n", "m.csv");
  EXPECT_EQ(csv.rows, 2);
  EXPECT_EQ(csv.rows_with_extra_cells, 1);
  EXPECT_EQ(csv.rows_without_step, 0);
  EXPECT_EQ(csv.notes.at(0), "m.csv:3: 3 cells for 2 columns; row skipped");
  const TableLog jsonl = ReadJsonlLog(
      "{\"step\": 1, \"loss\": 2}\n"
      "{\"step\": 100000000000000000000, \"loss\": 3}\n"
      "{\"step\": 1.5, \"loss\": 3}\n"
      "{\"loss\": 3}\n"
      "{\"step\": 2, \"loss\": 1.5}\n",
      "m.jsonl");
  EXPECT_EQ(jsonl.rows, 2);
  EXPECT_EQ(jsonl.rows_without_step, 3);
  EXPECT_EQ(Tag(jsonl, "loss").points.size(), 2u);
  ASSERT_EQ(jsonl.notes.size(), 3u);
  EXPECT_EQ(jsonl.notes[0],
            "m.jsonl:2: step = 100000000000000000000 is not a step within the 64-bit integer range; "
            "line skipped");
  EXPECT_EQ(jsonl.notes[1], "m.jsonl:3: step = 1.5 is not an integer step; line skipped");
  EXPECT_EQ(jsonl.notes[2], "m.jsonl:4: no step key; line skipped");
  // Every line with a bad step: the file is read, with no rows, rather than rejected.
  const TableLog none = ReadJsonlLog("{\"step\": 1e30, \"loss\": 3}\n", "m.jsonl");
  EXPECT_EQ(none.rows, 0);
  EXPECT_EQ(none.rows_without_step, 1);
}

// Lines that are not JSON objects are counted apart from rows without a step.
TEST(JsonlLog, CountsMalformedLinesApartFromRowsWithoutStep) {
  const TableLog log = ReadJsonlLog(
      "{\"step\": 1, \"loss\": 2}\n{bad\n{\"step\": \"x\", \"loss\": 3}\n{\"step\": 2, \"loss\": 1.5}\n",
      "m.jsonl");
  EXPECT_EQ(log.rows, 2);
  EXPECT_EQ(log.malformed_rows, 1);
  EXPECT_EQ(log.rows_without_step, 1);
  EXPECT_EQ(log.notes[0],
            "m.jsonl:2: not JSON (parse error at line 1, column 2: syntax error while parsing "
            "object key - invalid literal); line skipped");
}

// Steps are read as 64-bit integers, not through a double: 2^53 + 1 stays itself and 2^63 - 1
// is a step, in CSV and JSONL alike; one past the range is skipped with its own reason.
TEST(TableLog, StepsAreExactSixtyFourBitIntegers) {
  const TableLog jsonl = ReadJsonlLog(
      "{\"step\": 9007199254740993, \"loss\": 1}\n"
      "{\"step\": 9223372036854775807, \"loss\": 2}\n"
      "{\"step\": 9223372036854775808, \"loss\": 3}\n"
      "{\"step\": -9223372036854775808, \"loss\": 4}\n"
      "{\"step\": 4.0, \"loss\": 5}\n"
      "{\"step\": -9223372036854775809, \"loss\": 6}\n"
      "{\"step\": 9007199254740993.0, \"loss\": 7}\n"
      "{\"step\": -9223372036854775808.0, \"loss\": 8}\n"
      "{\"step\": 9.3e18, \"loss\": 9}\n",
      "m.jsonl");
  ASSERT_EQ(Tag(jsonl, "loss").points.size(), 4u);
  EXPECT_EQ(Tag(jsonl, "loss").points[0].step, 9007199254740993);
  EXPECT_EQ(Tag(jsonl, "loss").points[1].step, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(Tag(jsonl, "loss").points[2].step, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(Tag(jsonl, "loss").points[3].step, 4);
  ASSERT_EQ(jsonl.notes.size(), 5u);
  EXPECT_EQ(jsonl.notes[0], "m.jsonl:3: step = 9223372036854775808 is not a step within the 64-bit "
                            "integer range; line skipped");
  // Beyond the range below: the parser reads the literal as a double, exactly -2^63; the note
  // shows the literal as written, not that double.
  EXPECT_EQ(jsonl.notes[1], "m.jsonl:6: step = -9223372036854775809 is not a step within the "
                            "64-bit integer range; line skipped");
  // A decimal past 2^53 would be rounded (to ...992): refused rather than read as another step.
  EXPECT_EQ(jsonl.notes[2], "m.jsonl:7: step = 9007199254740993.0 is not an exact step (past 2^53 "
                            "a step is read exactly only when written as an integer); line skipped");
  // -2^63 written as a decimal is in range but not exact (the integer literal one below reads as
  // the same double); 9.3e18 is beyond the range.
  EXPECT_EQ(jsonl.notes[3], "m.jsonl:8: step = -9223372036854775808.0 is not an exact step (past "
                            "2^53 a step is read exactly only when written as an integer); line "
                            "skipped");
  EXPECT_EQ(jsonl.notes[4], "m.jsonl:9: step = 9.3e18 is not a step within the 64-bit integer "
                            "range; line skipped");
  const TableLog csv = ReadCsvLog(
      "step,loss\n9007199254740993,1\n99999999999999999999,2\n1e30,3\n2.5,4\n+7,5\n"
      "12345678901234567.0,6\n-9223372036854775809,7\n",
      "m.csv");
  ASSERT_EQ(Tag(csv, "loss").points.size(), 2u);
  EXPECT_EQ(Tag(csv, "loss").points[0].step, 9007199254740993);
  EXPECT_EQ(Tag(csv, "loss").points[1].step, 7);
  ASSERT_EQ(csv.notes.size(), 5u);
  EXPECT_EQ(csv.notes[0], "m.csv:3: step = '99999999999999999999' is not a step within the 64-bit "
                          "integer range; row skipped");
  EXPECT_EQ(csv.notes[1],
            "m.csv:4: step = '1e30' is not a step within the 64-bit integer range; row skipped");
  EXPECT_EQ(csv.notes[2], "m.csv:5: step = '2.5' is not an integer step; row skipped");
  EXPECT_EQ(csv.notes[3], "m.csv:7: step = '12345678901234567.0' is not an exact step (past 2^53 a "
                          "step is read exactly only when written as an integer); row skipped");
  EXPECT_EQ(csv.notes[4], "m.csv:8: step = '-9223372036854775809' is not a step within the 64-bit "
                          "integer range; row skipped");
}

// A line nested thousands of levels deep is skipped before it is parsed (its flattening would
// recurse as deep); a complete last line that is not JSON is skipped with the parser's reason,
// not taken for a truncated one; a JSON value other than an object says what it is.
// mosaic's own `runs --export csv` (run,tag,step,wall_time,value[,pass]) reads back as the
// points it holds, not as tags named "run", "tag" and "value".
TEST(CsvLog, LongFormatRowsArePointsOfTheirTag) {
  const std::string text =
      "run,tag,step,wall_time,value,pass\n"
      "r1,train/loss,0,100.5,3.5,1\n"
      "r1,train/loss,10,101.5,3.25,1\n"
      "r1,eval/loss,10,101.75,,1\n"     // a missing value
      "r1,,20,102.0,1.0,1\n"            // no tag
      "r1,eval/loss,20,102.5,inf,1\n"
      "r1,eval/loss,30,103.0,high,1\n";  // not a number
  const TableLog log = ReadCsvLog(text, "points.csv");
  EXPECT_EQ(log.wall_time_column, "wall_time");
  ASSERT_EQ(log.tags.size(), 2u);
  const TagPoints& loss = Tag(log, "train/loss");
  ASSERT_EQ(loss.points.size(), 2u);
  EXPECT_EQ(loss.points[1].step, 10);
  EXPECT_EQ(loss.points[1].value, 3.25);
  EXPECT_EQ(loss.points[1].wall_time_seconds, 101.5);
  const TagPoints& eval = Tag(log, "eval/loss");
  ASSERT_EQ(eval.points.size(), 1u);
  EXPECT_TRUE(std::isinf(eval.points[0].value));
  EXPECT_EQ(log.rows_without_tag, 1);
  EXPECT_EQ(log.non_numeric_cells, 1);
  ASSERT_EQ(log.notes.size(), 2u);
  EXPECT_EQ(log.notes[0], "points.csv:5: the tag cell is empty; such rows are skipped");
  EXPECT_EQ(log.notes[1], "points.csv:7: value = 'high' is not a number; cell skipped");
}

TEST(CsvLog, LongFormatNamesItsUnreadColumnsAndHoldsOneRun) {
  const TableLog log = ReadCsvLog("tag,step,value,host\nloss,1,2.5,a\n", "scalars.csv");
  ASSERT_EQ(log.tags.size(), 1u);
  EXPECT_EQ(log.tags[0].tag, "loss");
  ASSERT_EQ(log.notes.size(), 1u);
  EXPECT_EQ(log.notes[0], "scalars.csv:1: a long-format file (a tag and a value column, one point "
                          "a row); host is not read");
  // A row whose run cell is empty names no other run.
  EXPECT_EQ(ReadCsvLog("run,tag,step,value\n,loss,1,3\na,loss,2,2.5\n,loss,3,2\n", "one.csv")
                .tags[0]
                .points.size(),
            3u);
  try {
    ReadCsvLog("run,tag,step,value\na,loss,1,2.5\nb,loss,1,2.0\n", "all.csv");
    FAIL() << "two runs in one file were read as one";
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()),
              "all.csv:3: run = 'b', but line 2 has run = 'a': a long-format CSV in a run's folder "
              "holds one run (export each run to a file of its own, e.g. mosaic runs DIR/RUN "
              "--export csv)");
  }
}

// A pass that goes back below the first pass's start repeats only the steps written before: a
// run of steps 0..5 resumed at -3..1 overlaps at 0 and 1, not at -3..-1.
TEST(CsvLog, AnOverlapCountsOnlyStepsWrittenBefore) {
  const TableLog log = ReadCsvLog("step,loss\n0,1\n1,1\n2,1\n3,1\n4,1\n5,1\n-3,2\n-2,2\n-1,2\n0,2\n"
                                  "1,2\n",
                                  "m.csv");
  const std::vector<Restart> restarts = FindRestarts("loss", Tag(log, "loss").points);
  ASSERT_EQ(restarts.size(), 1u);
  EXPECT_EQ(restarts[0].from_step, 5);
  EXPECT_EQ(restarts[0].back_to_step, -3);
  EXPECT_EQ(restarts[0].overlapped_points, 2);
  const TableLog below = ReadCsvLog("step,loss\n0,1\n5,1\n-1,2\n", "m.csv");
  EXPECT_EQ(FindRestarts("loss", Tag(below, "loss").points)[0].overlapped_points, 0);
}

TEST(JsonlLog, SkipsDeepLinesAndNamesEachLinesReason) {
  const std::string deep =
      "{\"step\": 2, \"a\": " + std::string(100000, '[') + std::string(100000, ']') + "}\n";
  const TableLog log = ReadJsonlLog("{\"step\": 1, \"loss\": 2}\n" + deep +
                                        "[1, 2]\n{\"step\": 3, \"loss\": 1e400}\n",
                                    "m.jsonl");
  EXPECT_EQ(log.rows, 1);
  EXPECT_EQ(log.malformed_rows, 3);
  ASSERT_EQ(log.notes.size(), 3u);
  EXPECT_EQ(log.notes[0], "m.jsonl:2: nested 100001 levels deep (at most 64); line skipped");
  EXPECT_EQ(log.notes[1], "m.jsonl:3: a JSON array, not an object; line skipped");
  EXPECT_EQ(log.notes[2], "m.jsonl:4: not JSON (number overflow parsing '1e400'); line skipped");
  // 64 levels are read, their keys joined by '/'.
  std::string nested = "{\"step\": 1, \"loss\": 2}\n{\"step\": 2, \"k\": ";
  std::string key = "k/";
  for (int i = 0; i < 62; ++i) {
    nested += "{\"k\": ";
    key += "k/";
  }
  nested += "{\"x\": 1}" + std::string(62, '}') + "}\n";
  const TableLog deepest = ReadJsonlLog(nested, "m.jsonl");
  EXPECT_EQ(deepest.rows, 2);
  EXPECT_EQ(Tag(deepest, key + "x").points.size(), 1u);
}

TEST(JsonlLog, FlattensNestedObjectsAndToleratesATruncatedLastLine) {
  const std::string text =
      "{\"step\": 1, \"loss\": 2.5, \"opt\": {\"lr\": 0.001}}\n"
      "{\"step\": 2, \"loss\": NaN, \"opt\": {\"lr\": 0.002}, \"note\": \"x\"}\n"
      "{\"step\": 3, \"loss\": 2.";
  const TableLog log = ReadJsonlLog(text, "m.jsonl");
  EXPECT_EQ(log.rows, 2);
  EXPECT_EQ(log.rows_without_step, 0);
  EXPECT_EQ(Tag(log, "opt/lr").points.size(), 2u);
  EXPECT_TRUE(std::isnan(Tag(log, "loss").points[1].value));
  EXPECT_EQ(log.non_numeric_cells, 1);
  EXPECT_EQ(log.notes.back(), "m.jsonl:3: truncated last line dropped");
  EXPECT_THROW(ReadJsonlLog("{\"a\": 1}\n", "m.jsonl"), InputError);
  // Past the cap on notes per file (five bad lines before it), the truncated tail is still named.
  std::string noisy = "{\"step\": 1, \"loss\": 2.5}\n";
  for (int i = 0; i < 6; ++i) noisy += "not json\n";
  noisy += "{\"step\": 9, \"loss\": 2.";
  const TableLog capped = ReadJsonlLog(noisy, "n.jsonl");
  EXPECT_EQ(capped.malformed_rows, 6);
  EXPECT_EQ(capped.notes.back(), "n.jsonl:8: truncated last line dropped");
}

// A step is whole as written, not after rounding to a double: 1e-400 (read as 0) and
// 1.00000000000000000000000000001 (read as 1) are skipped as not integers, 1.5e1 and 100e-2 are
// steps 15 and 1; a long literal is quoted cut, with a mark.
TEST(TableLog, StepsAreWholeAsWritten) {
  const std::string digits(90, '7');
  const TableLog jsonl = ReadJsonlLog(
      "{\"step\": 1e-400, \"loss\": 1}\n{\"step\": 1.00000000000000000000000000001, \"loss\": 1}\n"
      "{\"step\": 100e-2, \"loss\": 2}\n{\"step\": 1.5e1, \"loss\": 3}\n{\"step\": " +
          digits + ", \"loss\": 4}\n",
      "w.jsonl");
  ASSERT_EQ(Tag(jsonl, "loss").points.size(), 2u);
  EXPECT_EQ(Tag(jsonl, "loss").points[0].step, 1);
  EXPECT_EQ(Tag(jsonl, "loss").points[1].step, 15);
  ASSERT_EQ(jsonl.notes.size(), 3u);
  EXPECT_EQ(jsonl.notes[0], "w.jsonl:1: step = 1e-400 is not an integer step; line skipped");
  EXPECT_EQ(jsonl.notes[1],
            "w.jsonl:2: step = 1.00000000000000000000000000001 is not an integer step; line "
            "skipped");
  EXPECT_EQ(jsonl.notes[2], "w.jsonl:5: step = " + digits.substr(0, 40) +
                                "… is not a step within the 64-bit integer range; line skipped");
  const TableLog csv = ReadCsvLog("step,loss\n1e-400,1\n100e-2,2\n", "w.csv");
  ASSERT_EQ(Tag(csv, "loss").points.size(), 1u);
  EXPECT_EQ(Tag(csv, "loss").points[0].step, 1);
  ASSERT_FALSE(csv.notes.empty());
  EXPECT_NE(csv.notes[0].find("is not an integer step"), std::string::npos) << csv.notes[0];
}

TEST(ParseNumber, AcceptsWholeNumbersOnly) {
  double v = 0;
  EXPECT_TRUE(ParseNumber(" 1e-4 ", &v));
  EXPECT_EQ(v, 1e-4);
  EXPECT_TRUE(ParseNumber("-Infinity", &v));
  EXPECT_TRUE(std::isinf(v) && v < 0);
  EXPECT_TRUE(ParseNumber("+3", &v));
  EXPECT_FALSE(ParseNumber("", &v));
  EXPECT_FALSE(ParseNumber("3x", &v));
  EXPECT_FALSE(ParseNumber("True", &v));
}

}  // namespace
}  // namespace mosaic::runs
