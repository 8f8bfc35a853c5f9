#include "mosaic/scaling/data_table.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <muParser.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <numeric>

#include "mosaic/util/atomic_file.h"
#include "mosaic/util/csv.h"
#include "location.h"
#include "mosaic/util/error.h"
#include "mosaic/util/spellcheck.h"
#include "mosaic/util/text_input.h"

namespace mosaic::scaling {

int DataTable::Find(std::string_view name) const {
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<int>(i);
  }
  return -1;
}

int DataTable::Require(std::string_view name, std::string_view purpose) const {
  const int index = Find(name);
  if (index >= 0) return index;
  throw InputError(fmt::format(
      "{}: unknown column '{}' for {}{}. Columns: {}. Map one with --column {}=COLUMN", origin,
      name, purpose, DidYouMean(name, names), fmt::join(names, ", "), name));
}

void DataTable::KeepRows(const std::vector<bool>& keep) {
  auto filter = [&](auto& v) {
    size_t out = 0;
    for (size_t i = 0; i < v.size(); ++i) {
      if (!keep[i]) continue;
      // Never move an element onto itself: a self-moved std::string is left empty.
      if (out != i) v[out] = std::move(v[i]);
      ++out;
    }
    v.resize(out);
  };
  for (auto& c : text) filter(c);
  for (auto& c : values) filter(c);
  for (auto& c : cell_column) filter(c);
  filter(line);
  filter(line_text);
}

SourceLocation DataTable::CellWhere(int column, size_t row) const {
  if (lines_are_rows) {
    SourceLocation where;
    where.origin = fmt::format("{} row {}", origin, line[row]);
    return where;
  }
  return CsvLocation(origin, line[row], line_text[row], cell_column[column][row]);
}

double ParseCellNumber(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  if (s.empty()) return NAN;
  if (s.front() == '+') s.remove_prefix(1);
  double value = NAN;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec == std::errc::result_out_of_range && end == s.data() + s.size()) {
    // A number past a double's range (1e400, 1e-400) is read as strtod rounds it (±inf, 0), so
    // that its rule ("> 0 and finite") names it, not "is a number".
    return std::strtod(std::string(s).c_str(), nullptr);
  }
  if (ec != std::errc() || end != s.data() + s.size()) return NAN;
  return value;
}

DataTable ParseCsv(std::string_view text, const std::string& origin) {
  std::vector<CsvRecord> records = ParseCsvRecords(text, origin);
  if (records.empty()) throw InputError(fmt::format("{}: empty file (no header row)", origin));
  DataTable table;
  table.origin = origin;
  // Header names are trimmed as cells are ("run, N, D" names N and D).
  CsvRecord& head = records.front();
  for (CsvField& field : head.fields) field.text = std::string(TrimAsciiWhitespace(field.text));
  CheckUniqueColumnNames(head, origin);
  for (size_t c = 0; c < head.fields.size(); ++c) {
    table.names.push_back(head.fields[c].text);
    table.derivations.emplace_back();
  }
  table.text.resize(head.fields.size());
  table.values.resize(head.fields.size());
  table.cell_column.resize(head.fields.size());
  for (size_t r = 1; r < records.size(); ++r) {
    CsvRecord& record = records[r];
    if (record.fields.size() != table.names.size()) {
      throw LocatedError(At(origin, record.line, 0, record.line_text),
                         fmt::format("{} fields, the header has {}", record.fields.size(),
                                     table.names.size()));
    }
    for (size_t c = 0; c < record.fields.size(); ++c) {
      table.values[c].push_back(ParseCellNumber(record.fields[c].text));
      table.text[c].push_back(std::move(record.fields[c].text));
      table.cell_column[c].push_back(record.fields[c].column);
    }
    table.line.push_back(record.line);
    table.line_text.push_back(std::move(record.line_text));
  }
  return table;
}

DataTable ReadCsv(const std::string& path) { return ParseCsv(ReadTextFile(path), path); }

ColumnMapping ParseColumnMapping(std::string_view text) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == text.size()) {
    throw FlagError("--column", text, "TARGET=SOURCE, e.g. N=Model Size or D=C/(6*N)");
  }
  return {std::string(text.substr(0, eq)), std::string(text.substr(eq + 1))};
}

namespace {

bool IsIdentifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

struct UnknownVariables {
  std::vector<std::string> names;
  double scratch = 0;
};

double* RecordUnknown(const char* name, void* user) {
  auto* unknown = static_cast<UnknownVariables*>(user);
  unknown->names.emplace_back(name);
  return &unknown->scratch;
}

// Evaluates `expression` on every row; `label` names the flag in messages.
std::vector<double> EvaluateRows(const DataTable& table, const std::string& expression,
                                 const std::string& label) {
  mu::Parser parser;
  std::vector<double> slots(table.names.size());
  std::vector<int> bound;
  std::vector<std::string> identifiers;
  UnknownVariables unknown;
  RefuseAssignment(expression, label);
  try {
    for (size_t c = 0; c < table.names.size(); ++c) {
      if (!IsIdentifier(table.names[c])) continue;
      parser.DefineVar(table.names[c], &slots[c]);
      identifiers.push_back(table.names[c]);
    }
    parser.SetVarFactory(RecordUnknown, &unknown);
    parser.SetExpr(expression);
    const mu::varmap_type used = parser.GetUsedVar();
    if (!unknown.names.empty()) {
      const std::string& name = unknown.names.front();
      throw InputError(fmt::format(
          "{}: unknown column '{}' in expression '{}'{}. Columns usable in expressions: {}",
          label, name, expression, DidYouMean(name, identifiers), fmt::join(identifiers, ", ")));
    }
    for (const auto& [name, ptr] : used) bound.push_back(table.Find(name));
    std::vector<double> out(table.rows());
    for (size_t r = 0; r < table.rows(); ++r) {
      for (int c : bound) slots[c] = table.values[c][r];
      out[r] = parser.Eval();
    }
    return out;
  } catch (const mu::Parser::exception_type& e) {
    throw UsageError(fmt::format("{}: cannot parse expression '{}': {}", label, expression,
                                 e.GetMsg()));
  }
}

// The identifiers of a muparser expression (letters, digits and underscores, not starting with a
// digit): "C/(6*N)" names C and N.
std::vector<std::string> Identifiers(std::string_view expression) {
  std::vector<std::string> out;
  auto is_word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t i = 0; i < expression.size();) {
    if (!is_word(expression[i])) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < expression.size() && is_word(expression[end])) ++end;
    if (!std::isdigit(static_cast<unsigned char>(expression[i]))) {
      out.emplace_back(expression.substr(i, end - i));
    }
    i = end;
  }
  return out;
}

}  // namespace

std::vector<std::string> ColumnSources(const DataTable& table, int column) {
  if (static_cast<size_t>(column) < table.sources.size() && !table.sources[column].empty()) {
    return table.sources[column];
  }
  return {table.names[column]};
}

void ApplyMappings(DataTable& table, const std::vector<ColumnMapping>& mappings) {
  for (const ColumnMapping& m : mappings) {
    const int source = table.Find(m.source);
    // The file columns the new one is computed from: the copied column's, or those of every
    // column the expression names.
    std::vector<std::string> sources;
    auto add_sources = [&](int column) {
      for (std::string& s : ColumnSources(table, column)) {
        if (std::find(sources.begin(), sources.end(), s) == sources.end()) {
          sources.push_back(std::move(s));
        }
      }
    };
    if (source >= 0) {
      add_sources(source);
    } else {
      for (const std::string& name : Identifiers(m.source)) {
        if (const int column = table.Find(name); column >= 0) add_sources(column);
      }
    }
    std::vector<double> values;
    std::vector<std::string> text;
    std::vector<int> cell_column;
    std::string derivation;
    if (source >= 0) {
      values = table.values[source];
      text = table.text[source];
      cell_column = table.cell_column[source];
      derivation = table.derivations[source];
    } else {
      // A plain name (no operator) that is not a column is a misspelled column, not an expression.
      const bool plain = m.source.find_first_of("+-*/()^<>=&|,!?:") == std::string::npos &&
                         !std::isdigit(static_cast<unsigned char>(m.source[0]));
      if (plain && !IsIdentifier(m.source)) {
        throw InputError(fmt::format("--column {}={}: unknown column '{}' in expression{}. "
                                     "Columns: {}",
                                     m.target, m.source, m.source, DidYouMean(m.source, table.names),
                                     fmt::join(table.names, ", ")));
      }
      values = EvaluateRows(table, m.source, fmt::format("--column {}={}", m.target, m.source));
      text.assign(table.rows(), "");
      cell_column.assign(table.rows(), 0);
      derivation = m.source;
    }
    int target = table.Find(m.target);
    if (target < 0) {
      table.names.push_back(m.target);
      table.derivations.emplace_back();
      table.values.emplace_back();
      table.text.emplace_back();
      table.cell_column.emplace_back();
      target = static_cast<int>(table.names.size()) - 1;
    }
    table.values[target] = std::move(values);
    table.text[target] = std::move(text);
    table.cell_column[target] = std::move(cell_column);
    table.derivations[target] = std::move(derivation);
    table.sources.resize(table.names.size());
    table.sources[target] = std::move(sources);
  }
}

void FilterRows(DataTable& table, std::string_view condition) {
  const std::string expression(condition);
  const std::vector<double> flags = EvaluateRows(table, expression, "--where " + expression);
  std::vector<bool> keep(flags.size());
  for (size_t r = 0; r < flags.size(); ++r) {
    if (!(flags[r] == 0 || flags[r] == 1 || std::isnan(flags[r]))) {
      SourceLocation where;
      where.origin = table.lines_are_rows ? fmt::format("{} row {}", table.origin, table.line[r])
                                          : table.origin;
      if (!table.lines_are_rows) where.line = table.line[r];
      throw FieldError(where, "--where " + expression, fmt::format("{:g}", flags[r]),
                       "a condition is 1 (keep the row) or 0 (drop it); compare a column, e.g. "
                       "'C < 1e21'");
    }
    keep[r] = flags[r] == 1;
  }
  table.KeepRows(keep);
}

void DropHighest(DataTable& table, std::string_view column, int count) {
  const int c = table.Require(column, "--drop-highest");
  std::vector<size_t> order(table.rows());
  std::iota(order.begin(), order.end(), 0);
  const auto& v = table.values[c];
  // Numbers from highest to lowest, then the cells that hold no number (NaN: empty or not
  // numeric), which rank as no value at all. Comparing NaN with > would not be a strict weak
  // ordering, which std::stable_sort requires.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const bool a_nan = std::isnan(v[a]);
    const bool b_nan = std::isnan(v[b]);
    if (a_nan || b_nan) return !a_nan && b_nan;
    return v[a] > v[b];
  });
  std::vector<bool> keep(table.rows(), true);
  for (int i = 0; i < count && i < static_cast<int>(order.size()); ++i) keep[order[i]] = false;
  table.KeepRows(keep);
}

namespace {

std::string CellValue(const DataTable& table, int column, size_t row) {
  if (table.lines_are_rows && table.text[column][row].empty() && table.derivations[column].empty()) {
    return "NaN (a missing value)";
  }
  if (!table.text[column][row].empty() || table.derivations[column].empty()) {
    return fmt::format("'{}'", table.text[column][row]);
  }
  return fmt::format("{} (= {})", table.values[column][row], table.derivations[column]);
}

}  // namespace

FitData SelectFitData(const DataTable& table, const Law& law, const SelectOptions& options) {
  FitData data;
  data.origin = table.origin;
  data.lines_are_rows = table.lines_are_rows;
  std::vector<int> input_columns;
  for (const LawInput& in : law.inputs) {
    input_columns.push_back(
        table.Require(in.name, fmt::format("law input {} ({}) of law {}", in.name, in.meaning,
                                           law.name)));
    data.input_names.push_back(in.name);
  }
  const int loss_column = table.Require(options.loss_column, "the observed loss");
  for (size_t i = 0; i < law.inputs.size(); ++i) {
    if (input_columns[i] == loss_column) {
      throw InputError(fmt::format(
          "{}: loss column '{}' is law input {} ({}) of law {}. Violated constraint: the loss "
          "is a column of its own, not one of the law's inputs",
          table.origin, options.loss_column, law.inputs[i].name, law.inputs[i].meaning,
          law.name));
    }
    // Nor a copy of it (--column N=loss) or a column computed from it (--column N=loss*1e9),
    // directly or through other mapped columns: no file column feeds both.
    const std::vector<std::string> loss_sources = ColumnSources(table, loss_column);
    for (const std::string& source : ColumnSources(table, input_columns[i])) {
      if (std::find(loss_sources.begin(), loss_sources.end(), source) == loss_sources.end()) {
        continue;
      }
      const std::string& derivation = table.derivations[input_columns[i]];
      throw InputError(fmt::format(
          "{}: law input {} ({}) of law {}{} is computed from column '{}', as the loss column "
          "'{}' is. Violated constraint: the loss is a column of its own, not one of the law's "
          "inputs",
          table.origin, law.inputs[i].name, law.inputs[i].meaning, law.name,
          derivation.empty() ? "" : " = " + derivation, source, options.loss_column));
    }
  }
  const int run_column =
      options.run_column == kDefaultRunColumn
          ? table.Find(options.run_column)
          : table.Require(options.run_column, "the run names (--run-column)");
  const int weight_column =
      options.weight_column == kDefaultWeightColumn
          ? table.Find(options.weight_column)
          : table.Require(options.weight_column, "the point weights (--weight-column)");
  data.inputs.resize(law.inputs.size());
  std::map<std::string, int> runs;
  // A row repeating an earlier one (its run, inputs and loss) would count twice in the fit; a run
  // column may group several runs (for the bootstrap), so a run may hold two losses at the same
  // inputs. The row of each key seen, for naming a repeat.
  std::map<std::pair<int, std::vector<double>>, size_t> seen;
  for (size_t r = 0; r < table.rows(); ++r) {
    for (size_t i = 0; i < law.inputs.size(); ++i) {
      const int c = input_columns[i];
      const double x = table.values[c][r];
      std::string rule = law.ValidateInput(static_cast<int>(i), x);
      if (std::isnan(x)) rule = fmt::format("{} is a number", law.inputs[i].name);
      if (!rule.empty()) {
        throw FieldError(table.CellWhere(c, r), law.inputs[i].name, CellValue(table, c, r),
                         rule);
      }
      data.inputs[i].push_back(x);
    }
    const double loss = table.values[loss_column][r];
    if (!(std::isfinite(loss) && loss > 0)) {
      throw FieldError(table.CellWhere(loss_column, r), options.loss_column,
                       CellValue(table, loss_column, r),
                       std::isnan(loss) ? "loss is a number" : "loss > 0 and finite");
    }
    data.loss.push_back(loss);
    double weight = 1;
    if (weight_column >= 0) {
      weight = table.values[weight_column][r];
      if (!IsValidFitWeight(weight)) {
        throw FieldError(table.CellWhere(weight_column, r), options.weight_column,
                         CellValue(table, weight_column, r), kFitWeightRule);
      }
    }
    data.weight.push_back(weight);
    const std::string run_name =
        run_column >= 0                ? table.text[run_column][r]
        : table.lines_are_rows ? fmt::format("row {}", table.line[r])
                               : fmt::format("line {}", table.line[r]);
    // An empty cell would make one run of every row that lacks a name, resampled together.
    if (run_name.find_first_not_of(" \t\r") == std::string::npos) {
      throw FieldError(table.CellWhere(run_column, r), options.run_column,
                       CellValue(table, run_column, r), "a run name (not empty)");
    }
    auto [it, inserted] = runs.try_emplace(run_name, static_cast<int>(data.run_names.size()));
    if (inserted) data.run_names.push_back(run_name);
    data.run.push_back(it->second);
    data.line.push_back(table.line[r]);
    std::vector<double> key;
    for (size_t i = 0; i < law.inputs.size(); ++i) key.push_back(data.inputs[i].back());
    key.push_back(loss);
    // Without a run column every row is its own run: rows are compared by inputs and loss.
    const auto [first, fresh] = seen.try_emplace({run_column >= 0 ? it->second : -1, key}, r);
    if (!fresh) {
      const std::string earlier = table.lines_are_rows
                                      ? fmt::format("row {}", table.line[first->second])
                                      : fmt::format("line {}", table.line[first->second]);
      const int column = input_columns.empty() ? loss_column : input_columns[0];
      throw LocatedError(
          table.CellWhere(column, r),
          run_column >= 0
              ? fmt::format("this row of run '{}' repeats its {} (the same inputs and loss). "
                            "Violated constraint: each point once (a checkpoint listed twice "
                            "counts twice in the fit); drop one of the two",
                            run_name, earlier)
              : fmt::format("this row repeats {} (the same inputs and loss). Violated "
                            "constraint: each row once (a row listed twice counts twice in the "
                            "fit); drop one, or name the runs in a '{}' column",
                            earlier, kDefaultRunColumn));
    }
  }
  return data;
}

void RefuseAssignment(std::string_view expression, std::string_view label) {
  for (size_t i = 0; i < expression.size(); ++i) {
    if (expression[i] != '=') continue;
    const char before = i > 0 ? expression[i - 1] : ' ';
    const char after = i + 1 < expression.size() ? expression[i + 1] : ' ';
    if (after == '=') {
      ++i;  // "==": a comparison
      continue;
    }
    if (before == '<' || before == '>' || before == '!') continue;
    throw UsageError(fmt::format("{}: '=' at position {} of '{}' assigns to a variable in an "
                                 "expression; compare with '=='",
                                 label, i + 1, expression));
  }
}

}  // namespace mosaic::scaling
