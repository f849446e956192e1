// SPDX-License-Identifier: Apache-2.0
#include "src/api/names.h"

namespace gpusched::api {
namespace {

constexpr size_t kLabelMax = 63;
constexpr size_t kSubdomainMax = 253;

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

bool IsLabelText(std::string_view s) {
  if (s.empty() || !IsLowerAlnum(s.front()) || !IsLowerAlnum(s.back())) return false;
  for (char c : s) {
    if (!IsLowerAlnum(c) && c != '-') return false;
  }
  return true;
}

}  // namespace

bool IsDns1123Label(std::string_view s) { return s.size() <= kLabelMax && IsLabelText(s); }

bool IsDns1123Subdomain(std::string_view s) {
  if (s.empty() || s.size() > kSubdomainMax) return false;
  for (size_t start = 0;;) {
    const size_t dot = s.find('.', start);
    if (!IsLabelText(s.substr(start, dot - start))) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

std::string Dns1123SubdomainError(std::string_view s) {
  if (s.size() > kSubdomainMax) return "must be no more than 253 characters";
  if (IsDns1123Subdomain(s)) return "";
  return "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
         "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
         "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-"
         "9])?)*')";
}

std::string Dns1123LabelError(std::string_view s) {
  if (s.size() > kLabelMax) return "must be no more than 63 characters";
  if (IsDns1123Label(s)) return "";
  return "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
         "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
         "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
}

}  // namespace gpusched::api
