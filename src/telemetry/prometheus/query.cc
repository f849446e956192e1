// SPDX-License-Identifier: Apache-2.0
#include "src/telemetry/prometheus/query.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "src/api/decode.h"
#include "src/common/strings.h"

namespace gpusched::telemetry::prometheus {
namespace {

namespace json = boost::json;

common::Status Bad(std::string_view why) {
  return common::InvalidArgumentError("prometheus response: " + std::string(why));
}

// A [timestamp, "value"] pair.
common::StatusOr<double> SampleValue(const json::value& v) {
  const json::array* a = v.if_array();
  if (a == nullptr || a->size() != 2 || !(*a)[1].is_string()) {
    return Bad("want [timestamp, \"value\"]");
  }
  std::optional<double> x = ParseSampleValue(std::string_view((*a)[1].get_string()));
  if (!x) return Bad("invalid sample value " + common::Quote((*a)[1].get_string()));
  return *x;
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
  auto parsed = api::ParseJson(body, "prometheus response");
  if (!parsed.ok()) return parsed.status();
  const json::object* o = parsed->if_object();
  if (o == nullptr) return Bad("not a JSON object");
  const json::value* status = o->if_contains("status");
  if (status == nullptr || !status->is_string()) return Bad("no status");
  if (status->get_string() != "success") {
    std::string type, err;
    if (const json::value* t = o->if_contains("errorType"); t && t->is_string()) {
      type = t->get_string();
    }
    if (const json::value* e = o->if_contains("error"); e && e->is_string()) err = e->get_string();
    return common::InvalidArgumentError("prometheus query failed: " + type + ": " + err);
  }
  const json::value* data = o->if_contains("data");
  if (data == nullptr || !data->is_object()) return Bad("no data");
  const json::object& d = data->get_object();
  const json::value* type = d.if_contains("resultType");
  const json::value* result = d.if_contains("result");
  if (type == nullptr || !type->is_string() || result == nullptr) {
    return Bad("no resultType/result");
  }
  std::vector<Series> out;
  if (type->get_string() == "scalar") {
    GPUSCHED_ASSIGN_OR_RETURN(double v, SampleValue(*result));
    out.push_back(Series{{}, v});
    return out;
  }
  if (type->get_string() != "vector") {
    return Bad("resultType " + common::Quote(type->get_string()) +
               " (want vector or scalar; use an instant query)");
  }
  const json::array* series = result->if_array();
  if (series == nullptr) return Bad("result is not a list");
  out.reserve(series->size());
  for (const json::value& s : *series) {
    const json::object* so = s.if_object();
    if (so == nullptr) return Bad("series is not an object");
    const json::value* value = so->if_contains("value");
    if (value == nullptr) return Bad("series without value");
    Series item;
    GPUSCHED_ASSIGN_OR_RETURN(item.value, SampleValue(*value));
    if (const json::value* metric = so->if_contains("metric")) {
      const json::object* mo = metric->if_object();
      if (mo == nullptr) return Bad("metric is not an object");
      for (const auto& kv : *mo) {
        if (!kv.value().is_string())
          return Bad("label " + common::Quote(kv.key()) + " is not a string");
        item.labels.emplace_back(std::string(kv.key()), std::string(kv.value().get_string()));
      }
      std::sort(item.labels.begin(), item.labels.end());
    }
    out.push_back(std::move(item));
  }
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
