// SPDX-License-Identifier: Apache-2.0
#include "src/framework/status.h"

namespace gpusched::framework {

std::string_view CodeName(Code code) {
  switch (code) {
    case Code::kSuccess: return "Success";
    case Code::kError: return "Error";
    case Code::kUnschedulable: return "Unschedulable";
    case Code::kUnschedulableAndUnresolvable: return "UnschedulableAndUnresolvable";
    case Code::kWait: return "Wait";
    case Code::kSkip: return "Skip";
  }
  return "Unknown";
}

Status Status::Error(std::string message) {
  Status s(Code::kError, {});
  s.SetOwned(message);
  return s;
}

Status Status::WithMessage(Code code, std::string message) {
  Status s(code, {});
  s.SetOwned(message);
  return s;
}

std::string Status::ToString() const {
  std::string out(CodeName(code_));
  if (!plugin_.empty()) {
    out += " (";
    out += plugin_;
    out += ")";
  }
  if (!reason_.empty()) {
    out += ": ";
    out += reason_;
  }
  return out;
}

}  // namespace gpusched::framework
