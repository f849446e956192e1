// SPDX-License-Identifier: Apache-2.0
#include "src/kube/api_client.h"

namespace gpusched::kube {

std::string TruncateEventNote(std::string note) {
  constexpr size_t kMax = 1024;
  if (note.size() <= kMax) return note;
  note.resize(kMax - 4);
  // Do not cut a UTF-8 sequence in half.
  while (!note.empty() && (static_cast<unsigned char>(note.back()) & 0xC0) == 0x80) note.pop_back();
  if (!note.empty() && (static_cast<unsigned char>(note.back()) & 0x80)) note.pop_back();
  note += " ...";
  return note;
}

}  // namespace gpusched::kube
