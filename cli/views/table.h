// The CLI's table engine and number formats: what every view lays its text out with. Knows
// nothing of studies or cells.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace onset::cli {

// A table with one header row; columns are as wide as their widest cell, separated by two
// spaces. Right-aligned columns suit numbers.
class Table {
 public:
  explicit Table(std::vector<std::string> headers);
  void AlignRight(size_t column);
  void AddRow(std::vector<std::string> cells);  // missing trailing cells render empty
  // One line per row, header first, each ending in '\n'; trailing spaces trimmed.
  std::string Render() const;

 private:
  std::vector<std::string> headers_;
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
};

// Column headers of grouping axes: their names in capitals.
std::vector<std::string> CapitalHeaders(const std::vector<std::string>& axes);
// "950", "20K", "1.5M", "2B": decimal suffixes, at most one decimal.
std::string FormatTokens(int64_t tokens);
// A token count as a study writes it ("3000000") in FormatTokens' form ("3M"); any other text
// as it is.
std::string FormatTokensText(const std::string& text);
// Four significant digits: "3.142", "0.0123", "1.235e+05".
std::string FormatValue(double value);
// FLOPs in three significant digits with a power of ten: "2.35e15", "1e18"; "950" below 1e4.
std::string FormatFlops(double flops);
// `text` cut to `max_chars` with "..." at the end, newlines flattened.
std::string Truncate(const std::string& text, size_t max_chars);
// "45s", "1m32s", "2h05m", "3d04h".
std::string FormatDuration(double seconds);

}  // namespace onset::cli
