// SPDX-License-Identifier: Apache-2.0
// The page itself is src/sim/html_report_page.html, embedded at build time as kHtmlReportPage
// (html_report_page.cc.in); this file puts the report's JSON in place of its marker.
#include "src/sim/html_report.h"

#include <boost/json.hpp>
#include <string_view>

namespace gpusched::sim {

extern const std::string_view kHtmlReportPage;  // html_report_page.cc (generated)

namespace {

constexpr std::string_view kMarker = "/*REPORT_JSON*/";

// JSON inside <script>: "</" would end the element, so it is written "<\\/".
std::string ScriptSafe(std::string json) {
  std::string out;
  out.reserve(json.size());
  for (size_t i = 0; i < json.size(); ++i) {
    if (json[i] == '<' && i + 1 < json.size() && json[i + 1] == '/') {
      out += "<\\/";
      ++i;
    } else {
      out += json[i];
    }
  }
  return out;
}

}  // namespace

std::string FormatReportHtml(const Report& report, const ReplayResult* replay) {
  boost::json::value json = ReportToJson(report);
  if (replay != nullptr) json.as_object()["replay"] = ReplayToJson(*replay);
  const size_t at = kHtmlReportPage.find(kMarker);
  std::string out(kHtmlReportPage.substr(0, at));
  out += ScriptSafe(boost::json::serialize(json));
  if (at != std::string_view::npos) out += kHtmlReportPage.substr(at + kMarker.size());
  return out;
}

}  // namespace gpusched::sim
