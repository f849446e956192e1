// SPDX-License-Identifier: Apache-2.0
// SelectorCache: which devices satisfy a DeviceChoice (its DeviceClass's CEL selectors and its
// own), computed once per (class, selectors) and device index version and shared by every pod
// that asks the same; CEL programs compiled once per expression (src/cel). Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "src/common/mutex.h"
#include "src/common/status.h"
#include "src/framework/dra_view.h"
#include "src/plugins/dynamic_resources/allocator.h"

namespace gpusched::cel {
class Program;
}

namespace gpusched::plugins::dynamic_resources {

class SelectorCache {
 public:
  // The devices of `index` that satisfy `choice`. Errors (UnschedulableAndUnresolvable for the
  // caller): the class does not exist ("device class X does not exist"), or a selector does not
  // compile.
  common::StatusOr<std::shared_ptr<const ChoiceMatches>> Matches(
      const framework::DraView& view, const framework::DeviceIndex& index,
      const api::DeviceChoice& choice);
  // The devices the class alone selects (its selectors only), as Matches of a bare choice.
  common::StatusOr<std::shared_ptr<const ChoiceMatches>> ClassMatches(
      const framework::DraView& view, const framework::DeviceIndex& index,
      const std::string& device_class);

 private:
  struct Memo {
    uint64_t index_version = 0;
    uint64_t class_version = 0;
    std::shared_ptr<const ChoiceMatches> matches;
  };
  common::StatusOr<std::shared_ptr<const cel::Program>> Compile(const std::string& expression)
      GPUSCHED_REQUIRES(mu_);

  common::Mutex mu_;
  std::map<std::string, Memo, std::less<>> memos_ GPUSCHED_GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<const cel::Program>, std::less<>> programs_
      GPUSCHED_GUARDED_BY(mu_);
};

// The claim's requests (each alternative with the devices it matches) and its matchAttribute
// constraints, as the allocator takes them. Error: "request <name>: <why>" (a missing class, a
// selector that does not compile).
common::StatusOr<ClaimPlan> PlanClaim(SelectorCache& selectors, const framework::DraView& view,
                                      const framework::DeviceIndex& index,
                                      api::ResourceClaimPtr claim);

}  // namespace gpusched::plugins::dynamic_resources
