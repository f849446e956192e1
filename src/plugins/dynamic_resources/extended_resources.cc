// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/dynamic_resources/extended_resources.h"

#include <algorithm>
#include <optional>
#include <string_view>
#include <utility>

#include "src/api/resources.h"

namespace gpusched::plugins::dynamic_resources {
namespace {

// The names of a container's requests, sorted, as upstream's requests map has them.
std::vector<std::string_view> RequestNames(const api::Container& c) {
  std::vector<std::string_view> names;
  if (c.requests.milli_cpu != 0) names.push_back("cpu");
  if (c.requests.memory != 0) names.push_back("memory");
  if (c.requests.ephemeral_storage != 0) names.push_back("ephemeral-storage");
  for (const auto& [name, value] : c.requests.scalar) names.push_back(common::Str(name));
  std::sort(names.begin(), names.end());
  return names;
}

struct ContainerResult {
  std::optional<api::DeviceRequest> request;
  std::vector<api::ContainerExtendedResourceRequest> mappings;
};

// Container `index`'s request for `resource` and its mappings, after the requests in `reusable`
// (null entries skipped) have served what they can (upstream's
// createResourceRequestAndMappings).
ContainerResult ContainerRequest(size_t index, const api::Container& c,
                                 const BackedResource& resource,
                                 std::span<const std::optional<api::DeviceRequest>> reusable) {
  ContainerResult out;
  const int64_t wanted = c.requests.Get(resource.name);
  if (wanted <= 0) return out;
  const std::string_view name = common::Str(resource.name);
  int64_t served = 0;
  for (const std::optional<api::DeviceRequest>& r : reusable) {
    if (!r) continue;
    served += r->exactly->count;
    out.mappings.push_back({c.name, std::string(name), r->name});
    if (served >= wanted) return out;
  }
  const std::vector<std::string_view> names = RequestNames(c);
  const auto j = std::find(names.begin(), names.end(), name) - names.begin();
  api::DeviceRequest req;
  req.name = "container-" + std::to_string(index) + "-request-" + std::to_string(j);
  api::DeviceChoice choice;
  choice.device_class = resource.device_class;
  choice.mode = api::AllocationMode::kExactCount;
  choice.count = wanted - served;
  req.exactly = std::move(choice);
  out.mappings.push_back({c.name, std::string(name), req.name});
  out.request = std::move(req);
  return out;
}

void AddResource(const std::vector<const api::Container*>& containers, size_t init_count,
                 const BackedResource& resource, ExtendedResourceRequests& out) {
  const auto short_lived = [&](size_t i) { return i < init_count && !containers[i]->restartable; };
  std::vector<std::optional<api::DeviceRequest>> long_lived(containers.size());
  std::vector<api::ContainerExtendedResourceRequest> long_mappings;
  for (size_t i = 0; i < containers.size(); ++i) {
    if (short_lived(i)) continue;
    ContainerResult r = ContainerRequest(i, *containers[i], resource, {});
    long_lived[i] = std::move(r.request);
    long_mappings.insert(long_mappings.end(), r.mappings.begin(), r.mappings.end());
  }
  std::optional<api::DeviceRequest> largest;
  std::vector<std::string> short_names;
  std::vector<api::ContainerExtendedResourceRequest> short_mappings;
  for (size_t i = 0; i < containers.size(); ++i) {
    if (!short_lived(i)) continue;
    ContainerResult r =
        ContainerRequest(i, *containers[i], resource,
                         std::span<const std::optional<api::DeviceRequest>>(long_lived).subspan(i));
    if (r.request) {
      short_names.push_back(r.request->name);
      if (!largest || largest->exactly->count < r.request->exactly->count) largest = r.request;
    }
    short_mappings.insert(short_mappings.end(), r.mappings.begin(), r.mappings.end());
  }
  if (largest && short_names.size() > 1) {
    for (api::ContainerExtendedResourceRequest& m : short_mappings) {
      if (std::find(short_names.begin(), short_names.end(), m.request_name) != short_names.end()) {
        m.request_name = largest->name;
      }
    }
  }
  if (largest) out.requests.push_back(*std::move(largest));
  for (std::optional<api::DeviceRequest>& r : long_lived) {
    if (r) out.requests.push_back(*std::move(r));
  }
  out.mappings.insert(out.mappings.end(), long_mappings.begin(), long_mappings.end());
  out.mappings.insert(out.mappings.end(), short_mappings.begin(), short_mappings.end());
}

}  // namespace

ExtendedResourceRequests BuildExtendedResourceRequests(const api::Pod& pod,
                                                       std::span<const BackedResource> resources) {
  std::vector<const api::Container*> containers;
  for (const api::Container& c : pod.init_containers) containers.push_back(&c);
  for (const api::Container& c : pod.containers) containers.push_back(&c);
  ExtendedResourceRequests out;
  for (const BackedResource& r : resources) {
    AddResource(containers, pod.init_containers.size(), r, out);
  }
  std::stable_sort(
      out.requests.begin(), out.requests.end(),
      [](const api::DeviceRequest& a, const api::DeviceRequest& b) { return a.name < b.name; });
  return out;
}

}  // namespace gpusched::plugins::dynamic_resources
