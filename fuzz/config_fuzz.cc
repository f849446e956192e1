// SPDX-License-Identifier: Apache-2.0
// Fuzzes config::ParseSchedulerConfig: YAML (or JSON) -> strict decoding -> defaults ->
// Validate(). Properties: no crash, no UB, no leak, no exception escaping; an accepted config
// validates again and has at least one profile.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "src/config/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> warnings;
  auto c = gpusched::config::ParseSchedulerConfig(text, "fuzz.yaml", &warnings);
  if (!c.ok()) {
    FUZZ_CHECK(!c.status().message().empty(), "a rejected config says why");
    return 0;
  }
  FUZZ_CHECK(!c->profiles.empty(), "an accepted config has a profile");
  FUZZ_CHECK(gpusched::config::Validate(*c).ok(), "an accepted config validates");
  for (const auto& p : c->profiles) (void)c->FindProfile(p.scheduler_name);
  return 0;
}
