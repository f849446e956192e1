// SPDX-License-Identifier: Apache-2.0
#include "src/metrics/exposition.h"

#include <charconv>
#include <cmath>

namespace gpusched::metrics {

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  if (ec != std::errc()) return "NaN";
  return std::string(buf, end);
}

std::string EscapeLabelValue(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
  return out;
}

std::string EscapeHelp(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {

// `{a="x",b="y"` plus an optional extra pair, closed; empty when there are no labels at all.
void AppendLabels(std::string& out, const std::vector<std::string>& names,
                  const std::vector<std::string>& values, std::string_view extra_name = {},
                  std::string_view extra_value = {}) {
  if (names.empty() && extra_name.empty()) return;
  out += '{';
  bool first = true;
  for (size_t i = 0; i < names.size() && i < values.size(); ++i) {
    if (!first) out += ',';
    first = false;
    out += names[i];
    out += "=\"";
    out += EscapeLabelValue(values[i]);
    out += '"';
  }
  if (!extra_name.empty()) {
    if (!first) out += ',';
    out += extra_name;
    out += "=\"";
    out += extra_value;
    out += '"';
  }
  out += '}';
}

void AppendFamily(std::string& out, const FamilySnapshot& f) {
  out += "# HELP ";
  out += f.name;
  out += ' ';
  out += EscapeHelp(f.help);
  out += "\n# TYPE ";
  out += f.name;
  out += ' ';
  out += TypeName(f.type);
  out += '\n';
  for (const auto& s : f.series) {
    if (f.type != Type::kHistogram) {
      out += f.name;
      AppendLabels(out, f.label_names, s.label_values);
      out += ' ';
      out += FormatValue(s.value);
      out += '\n';
      continue;
    }
    const auto& h = s.histogram;
    for (size_t i = 0; i < h.cumulative.size(); ++i) {
      out += f.name;
      out += "_bucket";
      std::string le = i < f.bounds.size() ? FormatValue(f.bounds[i]) : "+Inf";
      AppendLabels(out, f.label_names, s.label_values, "le", le);
      out += ' ';
      out += std::to_string(h.cumulative[i]);
      out += '\n';
    }
    out += f.name;
    out += "_sum";
    AppendLabels(out, f.label_names, s.label_values);
    out += ' ';
    out += FormatValue(h.sum);
    out += '\n';
    out += f.name;
    out += "_count";
    AppendLabels(out, f.label_names, s.label_values);
    out += ' ';
    out += std::to_string(h.count);
    out += '\n';
  }
}

}  // namespace

std::string WriteText(const std::vector<FamilySnapshot>& families) {
  std::string out;
  for (const auto& f : families) AppendFamily(out, f);
  return out;
}

std::string WriteText(const Registry& registry) { return WriteText(registry.Gather()); }

std::string WriteText(const std::vector<const Registry*>& registries) {
  std::string out;
  for (const Registry* r : registries) {
    if (r != nullptr) out += WriteText(*r);
  }
  return out;
}

}  // namespace gpusched::metrics
