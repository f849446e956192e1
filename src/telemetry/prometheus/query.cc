// SPDX-License-Identifier: Apache-2.0
#include "src/telemetry/prometheus/query.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "src/api/decode.h"
#include "src/api/fields.h"
#include "src/common/strings.h"

namespace gpusched::telemetry::prometheus {
namespace {

namespace json = boost::json;

using api::FieldPath;

// The response's errors as one status.
common::Status Bad(const api::JsonReader& r) {
  return common::InvalidArgumentError("prometheus response: " + r.errors().Join());
}

// A [timestamp, "value"] pair at `path` (0 and an error when it is not one).
double SampleValue(api::JsonReader& r, const json::value& v, const FieldPath& path) {
  const json::array* a = v.if_array();
  if (a == nullptr || a->size() != 2) {
    r.Error(path, "want [timestamp, \"value\"]");
    return 0;
  }
  const FieldPath vp = path.At(1);
  const std::optional<std::string_view> text = r.AsString((*a)[1], vp);
  if (!text) return 0;
  const std::optional<double> x = ParseSampleValue(*text);
  if (!x) r.Error(vp, "invalid sample value " + common::Quote(*text));
  return x.value_or(0);
}

// One series of a vector result: its value and its labels, sorted.
Series DecodeSeries(api::JsonReader& r, const json::object& s, const FieldPath& path) {
  Series item;
  if (const json::value* value = r.Find(s, "value")) {
    item.value = SampleValue(r, *value, path.Key("value"));
  } else {
    r.Error(path.Key("value"), "required");
  }
  if (const json::object* metric = r.Object(s, "metric", path)) {
    const FieldPath mp = path.Key("metric");
    for (const auto& kv : *metric) {
      if (auto v = r.AsString(kv.value(), mp.Key(kv.key()))) {
        item.labels.emplace_back(std::string(kv.key()), std::string(*v));
      }
    }
    std::sort(item.labels.begin(), item.labels.end());
  }
  return item;
}

}  // namespace

std::string_view Series::Label(std::string_view name) const {
  for (const auto& [k, v] : labels) {
    if (k == name) return v;
  }
  return {};
}

std::optional<double> ParseSampleValue(std::string_view tok) {
  if (tok.empty() || tok.size() > 64) return std::nullopt;
  const std::string s(tok);
  if (s == "NaN") return std::nan("");
  if (s == "+Inf" || s == "Inf") return INFINITY;
  if (s == "-Inf") return -INFINITY;
  // strtod also accepts "nan(...)", "infinity" and hex floats; allow only decimal syntax.
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-')) {
      return std::nullopt;
    }
  }
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return v;
}

std::string UrlEncode(std::string_view s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

common::StatusOr<std::vector<Series>> ParseQueryVector(std::string_view body) {
  GPUSCHED_ASSIGN_OR_RETURN(json::value parsed, api::ParseJson(body, "prometheus response"));
  api::JsonReader r(api::PlainDialect());
  const FieldPath root;
  const json::object* o = r.AsObject(parsed, root);
  if (o == nullptr) return Bad(r);
  const std::optional<std::string_view> status = r.String(*o, "status", root);
  if (status && *status != "success") {
    return common::InvalidArgumentError(
        "prometheus query failed: " + std::string(r.StringOr(*o, "errorType", root)) + ": " +
        std::string(r.StringOr(*o, "error", root)));
  }
  const json::object* data = r.Object(*o, "data", root);
  // Absent (not of the wrong type: that has its error).
  for (std::string_view key : {"status", "data"}) {
    if (r.Find(*o, key) == nullptr) r.Error(root.Key(key), "required");
  }
  if (!r.ok()) return Bad(r);
  const FieldPath dp = root.Key("data");
  const std::string_view type = r.StringOr(*data, "resultType", dp);
  const json::value* result = r.Find(*data, "result");
  if (r.ok() && (type.empty() || result == nullptr)) r.Error(dp, "want resultType and result");
  if (!r.ok()) return Bad(r);
  const FieldPath rp = dp.Key("result");
  std::vector<Series> out;
  if (type == "scalar") {
    out.push_back(Series{{}, SampleValue(r, *result, rp)});
  } else if (type != "vector") {
    r.Error(dp.Key("resultType"),
            common::Quote(type) + " (want vector or scalar; use an instant query)");
  } else if (const json::array* series = r.AsArray(*result, rp)) {
    out.reserve(series->size());
    for (size_t i = 0; i < series->size(); ++i) {
      const FieldPath sp = rp.At(i);
      if (const json::object* so = r.AsObject((*series)[i], sp)) {
        out.push_back(DecodeSeries(r, *so, sp));
      }
    }
  }
  if (!r.ok()) return Bad(r);
  return out;
}

common::StatusOr<std::vector<Series>> QueryVector(HttpGetter& http, const std::string& base_url,
                                                  const std::string& promql,
                                                  common::Duration timeout) {
  std::string base = base_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  const std::string url = base + "/api/v1/query?query=" + UrlEncode(promql);
  GPUSCHED_ASSIGN_OR_RETURN(HttpResult r, http.Get(url, timeout));
  if (r.status < 200 || r.status >= 300) {
    // Prometheus answers 400/422/503 with a JSON error body; prefer its message.
    auto parsed = ParseQueryVector(r.body);
    if (!parsed.ok() && parsed.status().message().find("query failed") != std::string_view::npos) {
      return parsed.status().WithContext("HTTP " + std::to_string(r.status));
    }
    return common::UnavailableError("GET " + base + "/api/v1/query: HTTP " +
                                    std::to_string(r.status));
  }
  return ParseQueryVector(r.body);
}

}  // namespace gpusched::telemetry::prometheus
