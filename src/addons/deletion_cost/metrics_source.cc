// SPDX-License-Identifier: Apache-2.0
#include "src/addons/deletion_cost/metrics_source.h"

#include <algorithm>
#include <optional>

#include "src/common/strings.h"

namespace gpusched::addons::deletion_cost {
namespace {

bool NameStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}
bool NameChar(char c) { return NameStart(c) || (c >= '0' && c <= '9'); }
bool LabelStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool LabelChar(char c) { return LabelStart(c) || (c >= '0' && c <= '9'); }
bool Blank(char c) { return c == ' ' || c == '\t'; }

common::Status LineError(size_t line, std::string_view what, std::string_view text) {
  return common::InvalidArgumentError("line " + std::to_string(line) + ": " + std::string(what) +
                                      " in " + common::Quote(text));
}

// Parses one sample line into `out`.
common::Status ParseLine(std::string_view line, size_t lineno, Sample& out) {
  size_t i = 0;
  const size_t n = line.size();
  if (!NameStart(line[i])) return LineError(lineno, "invalid metric name", line);
  while (i < n && NameChar(line[i])) ++i;
  out.name = std::string(line.substr(0, i));
  size_t j = i;  // blanks before '{' are tolerated; otherwise they separate the value
  while (j < n && Blank(line[j])) ++j;
  if (j < n && line[j] == '{') {
    i = j;
    ++i;
    while (true) {
      while (i < n && Blank(line[i])) ++i;
      if (i < n && line[i] == '}') {
        ++i;
        break;
      }
      if (i >= n || !LabelStart(line[i])) return LineError(lineno, "invalid label name", line);
      const size_t ls = i;
      while (i < n && LabelChar(line[i])) ++i;
      std::string lname(line.substr(ls, i - ls));
      while (i < n && Blank(line[i])) ++i;
      if (i >= n || line[i] != '=') return LineError(lineno, "want '=' after label name", line);
      ++i;
      while (i < n && Blank(line[i])) ++i;
      if (i >= n || line[i] != '"') return LineError(lineno, "want a quoted label value", line);
      ++i;
      std::string value;
      bool closed = false;
      while (i < n) {
        const char c = line[i++];
        if (c == '"') {
          closed = true;
          break;
        }
        if (c == '\\') {
          if (i >= n) break;
          const char e = line[i++];
          if (e == 'n') {
            value.push_back('\n');
          } else if (e == '\\' || e == '"') {
            value.push_back(e);
          } else {
            return LineError(lineno, "invalid escape in label value", line);
          }
          continue;
        }
        value.push_back(c);
      }
      if (!closed) return LineError(lineno, "unterminated label value", line);
      out.labels.emplace_back(std::move(lname), std::move(value));
      while (i < n && Blank(line[i])) ++i;
      if (i < n && line[i] == ',') {
        ++i;
        continue;
      }
      if (i < n && line[i] == '}') {
        ++i;
        break;
      }
      return LineError(lineno, "want ',' or '}' in the label set", line);
    }
    std::sort(out.labels.begin(), out.labels.end());
  }
  if (i >= n || !Blank(line[i])) return LineError(lineno, "want a space before the value", line);
  while (i < n && Blank(line[i])) ++i;
  const size_t vs = i;
  while (i < n && !Blank(line[i])) ++i;
  std::optional<double> v = telemetry::prometheus::ParseSampleValue(line.substr(vs, i - vs));
  if (!v) return LineError(lineno, "invalid value", line);
  out.value = *v;
  while (i < n && Blank(line[i])) ++i;
  if (i < n && line[i] != '#') {  // an optional timestamp, then an optional OpenMetrics exemplar
    const size_t ts = i;
    while (i < n && !Blank(line[i])) ++i;
    if (!common::ParseDouble(line.substr(ts, i - ts)))
      return LineError(lineno, "invalid timestamp", line);
    while (i < n && Blank(line[i])) ++i;
    if (i < n && line[i] != '#')
      return LineError(lineno, "unexpected text after the timestamp", line);
  }
  return common::Status::Ok();
}

}  // namespace

common::StatusOr<std::vector<Sample>> ParseExposition(std::string_view text) {
  if (text.size() > kMaxExpositionBytes) {
    return common::ResourceExhaustedError("payload of " + std::to_string(text.size()) +
                                          " bytes is over the limit of " +
                                          std::to_string(kMaxExpositionBytes));
  }
  std::vector<Sample> out;
  size_t lineno = 0;
  size_t pos = 0;
  bool eof = false;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find('\0') != std::string_view::npos) return LineError(lineno, "NUL byte", "");
    std::string_view trimmed = common::Trim(line);
    if (trimmed.empty()) continue;
    if (eof) return LineError(lineno, "content after # EOF", trimmed);
    if (trimmed[0] == '#') {
      if (trimmed == "# EOF") eof = true;
      continue;
    }
    Sample s;
    GPUSCHED_RETURN_IF_ERROR(ParseLine(trimmed, lineno, s));
    if (out.size() >= kMaxSamples) {
      return common::ResourceExhaustedError("more than " + std::to_string(kMaxSamples) +
                                            " samples");
    }
    out.push_back(std::move(s));
  }
  return out;
}

common::StatusOr<double> SumSeries(
    const std::vector<Sample>& samples, std::string_view name,
    const std::vector<std::pair<std::string, std::string>>& matchers) {
  double sum = 0;
  bool found = false;
  for (const Sample& s : samples) {
    if (s.name != name) continue;
    bool ok = true;
    for (const auto& m : matchers) {
      auto it = std::find_if(s.labels.begin(), s.labels.end(),
                             [&](const auto& l) { return l.first == m.first; });
      if (it == s.labels.end() || it->second != m.second) {
        ok = false;
        break;
      }
    }
    if (!ok) continue;
    found = true;
    sum += s.value;
  }
  if (!found) return common::NotFoundError("no series " + std::string(name) + " in the scrape");
  return sum;
}

common::StatusOr<std::vector<Sample>> ScrapePod(HttpGetter& http, const std::string& url,
                                                common::Duration timeout) {
  GPUSCHED_ASSIGN_OR_RETURN(HttpResult r, http.Get(url, timeout));
  if (r.status < 200 || r.status >= 300) {
    return common::UnavailableError("GET " + url + ": HTTP " + std::to_string(r.status));
  }
  auto samples = ParseExposition(r.body);
  if (!samples.ok()) return samples.status().WithContext("GET " + url + ": bad exposition");
  return samples;
}

namespace {

// The sum of an instant vector's values; an empty vector is kNotFound.
common::StatusOr<double> Sum(const std::vector<telemetry::prometheus::Series>& series) {
  if (series.empty()) return common::NotFoundError("prometheus query returned no series");
  double sum = 0;
  for (const telemetry::prometheus::Series& s : series) sum += s.value;
  return sum;
}

}  // namespace

common::StatusOr<double> ParsePrometheusQueryResponse(std::string_view body) {
  GPUSCHED_ASSIGN_OR_RETURN(std::vector<telemetry::prometheus::Series> series,
                            telemetry::prometheus::ParseQueryVector(body));
  return Sum(series);
}

common::StatusOr<double> QueryPrometheus(HttpGetter& http, const std::string& base_url,
                                         const std::string& promql, common::Duration timeout) {
  GPUSCHED_ASSIGN_OR_RETURN(std::vector<telemetry::prometheus::Series> series,
                            telemetry::prometheus::QueryVector(http, base_url, promql, timeout));
  return Sum(series);
}

}  // namespace gpusched::addons::deletion_cost
