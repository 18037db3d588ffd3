#include "cli/views/table.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>

#include "cli/views/style.h"

namespace onset::cli {

Table::Table(std::vector<std::string> headers)
    : headers_(std::move(headers)), right_(headers_.size(), false) {}

void Table::AlignRight(size_t column) {
  if (column < right_.size()) right_[column] = true;
}

void Table::AddRow(std::vector<std::string> cells) {
  cells.resize(headers_.size());
  rows_.push_back(std::move(cells));
}

std::string Table::Render() const {
  std::vector<size_t> width(headers_.size());
  for (size_t c = 0; c < headers_.size(); ++c) width[c] = VisibleWidth(headers_[c]);
  for (const auto& row : rows_) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], VisibleWidth(row[c]));
  }
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string text;
    for (size_t c = 0; c < cells.size(); ++c) {
      if (c > 0) text += "  ";
      std::string pad(width[c] - VisibleWidth(cells[c]), ' ');
      text += right_[c] ? pad + cells[c] : cells[c] + pad;
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text + "\n";
  };
  line(headers_);
  for (const auto& row : rows_) line(row);
  return out;
}

std::string FormatTokens(int64_t tokens) {
  struct Unit {
    int64_t scale;
    const char* suffix;
  };
  for (Unit u : {Unit{1'000'000'000, "B"}, Unit{1'000'000, "M"}, Unit{1'000, "K"}}) {
    if (tokens >= u.scale) {
      double v = static_cast<double>(tokens) / static_cast<double>(u.scale);
      char buf[32];
      if (tokens % u.scale == 0 || v >= 100) {
        std::snprintf(buf, sizeof(buf), "%.0f%s", v, u.suffix);
      } else {
        std::snprintf(buf, sizeof(buf), "%.1f%s", v, u.suffix);
        std::string s(buf);
        // "20.0K" reads better as "20K".
        size_t dot = s.find(".0");
        if (dot != std::string::npos && dot + 2 == s.size() - 1) s.erase(dot, 2);
        return s;
      }
      return buf;
    }
  }
  return std::to_string(tokens);
}

std::string FormatTokensText(const std::string& text) {
  char* end = nullptr;
  const long long n = std::strtoll(text.c_str(), &end, 10);
  return end != nullptr && *end == '\0' ? FormatTokens(n) : text;
}

std::vector<std::string> CapitalHeaders(const std::vector<std::string>& axes) {
  std::vector<std::string> headers;
  for (const std::string& a : axes) {
    std::string h = a;
    for (char& c : h) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    headers.push_back(h);
  }
  return headers;
}

std::string FormatValue(double value) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.4g", value);
  return buf;
}

std::string FormatFlops(double flops) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3g", flops);
  std::string s(buf);
  // "2.35e+15" -> "2.35e15", "1e-05" -> "1e-5".
  const size_t e = s.find('e');
  if (e == std::string::npos) return s;
  std::string exponent = s.substr(e + 1);
  const bool negative = exponent[0] == '-';
  if (exponent[0] == '+' || negative) exponent.erase(0, 1);
  exponent.erase(0, std::min(exponent.find_first_not_of('0'), exponent.size() - 1));
  return s.substr(0, e + 1) + (negative ? "-" : "") + exponent;
}

std::string Truncate(const std::string& text, size_t max_chars) {
  std::string flat = text;
  std::replace(flat.begin(), flat.end(), '\n', ' ');
  if (flat.size() <= max_chars) return flat;
  return flat.substr(0, max_chars > 3 ? max_chars - 3 : 0) + "...";
}

std::string FormatDuration(double seconds) {
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  char buf[32];
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(s));
  } else if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  } else if (s < 86400) {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>(s % 3600 / 60));
  } else {
    std::snprintf(buf, sizeof buf, "%lldd%02lldh", static_cast<long long>(s / 86400),
                  static_cast<long long>(s % 86400 / 3600));
  }
  return buf;
}

}  // namespace onset::cli
