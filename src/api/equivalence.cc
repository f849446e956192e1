// SPDX-License-Identifier: Apache-2.0
#include "src/api/equivalence.h"

#include <cstring>

namespace gpusched::api {
namespace {

// Appends fixed-width values and length-prefixed strings/lists; the encoding is unambiguous, so
// equal bytes mean equal fields.
class KeyWriter {
 public:
  explicit KeyWriter(std::string& out) : out_(out) {}

  void U8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void I64(int64_t v) {
    char b[sizeof v];
    std::memcpy(b, &v, sizeof v);
    out_.append(b, sizeof v);
  }
  void U32(uint32_t v) {
    char b[sizeof v];
    std::memcpy(b, &v, sizeof v);
    out_.append(b, sizeof v);
  }
  void Size(size_t n) { U32(static_cast<uint32_t>(n)); }
  void A(Atom a) { U32(a.id); }
  void Str(std::string_view s) {
    Size(s.size());
    out_.append(s);
  }

  void Resources(const ResourceList& r) {
    I64(r.milli_cpu);
    I64(r.memory);
    I64(r.ephemeral_storage);
    I64(r.pods);
    Size(r.scalar.size());
    for (const auto& [name, v] : r.scalar) {
      A(name);
      I64(v);
    }
  }
  void Req(const Requirement& r) {
    A(r.key);
    U8(static_cast<uint8_t>(r.op));
    Size(r.values.size());
    for (Atom v : r.values) A(v);
    I64(r.number);
  }
  void Selector(const LabelSelector& s) {
    Size(s.requirements.size());
    for (const Requirement& r : s.requirements) Req(r);
  }
  void Term(const NodeSelectorTerm& t) {
    Size(t.match_expressions.size());
    for (const Requirement& r : t.match_expressions) Req(r);
    Size(t.match_fields_names_in.size());
    for (const std::string& s : t.match_fields_names_in) Str(s);
    Size(t.match_fields_names_not_in.size());
    for (const std::string& s : t.match_fields_names_not_in) Str(s);
  }
  void PodTerm(const PodAffinityTerm& t) {
    Selector(t.label_selector);
    Size(t.namespaces.size());
    for (const std::string& s : t.namespaces) Str(s);
    U8(t.namespace_selector.has_value() ? 1 : 0);
    if (t.namespace_selector) Selector(*t.namespace_selector);
    A(t.topology_key);
  }
  void PodAff(const PodAffinity& p) {
    Size(p.required.size());
    for (const PodAffinityTerm& t : p.required) PodTerm(t);
    Size(p.preferred.size());
    for (const WeightedPodAffinityTerm& w : p.preferred) {
      I64(w.weight);
      PodTerm(w.term);
    }
  }
  void Containers(const std::vector<Container>& cs) {
    Size(cs.size());
    for (const Container& c : cs) {
      Resources(c.requests);
      Resources(c.limits);
      U8(c.restartable ? 1 : 0);
      Size(c.ports.size());
      for (const ContainerPort& port : c.ports) {
        U32(static_cast<uint32_t>(port.host_port));
        A(port.protocol);
        Str(port.host_ip);
      }
    }
  }

 private:
  std::string& out_;
};

}  // namespace

void SchedulingEquivalenceKey(const Pod& pod, std::string& out) {
  out.clear();
  KeyWriter w(out);
  w.Str(pod.meta.namespace_);
  // Annotations are sorted by key, so the scheduling ones come out in a canonical order.
  size_t n = 0;
  for (const auto& [k, v] : pod.meta.annotations) n += k.starts_with("gpusched.io/") ? 1 : 0;
  w.Size(n);
  for (const auto& [k, v] : pod.meta.annotations) {
    if (!k.starts_with("gpusched.io/")) continue;
    w.Str(k);
    w.Str(v);
  }
  w.A(pod.scheduler_name);
  w.Str(pod.node_name);
  w.I64(pod.priority);
  w.Size(pod.node_selector.size());
  for (const auto& [k, v] : pod.node_selector.items()) {
    w.A(k);
    w.A(v);
  }
  const NodeAffinity& na = pod.affinity.node_affinity;
  w.U8(na.required.has_value() ? 1 : 0);
  if (na.required) {
    w.Size(na.required->terms.size());
    for (const NodeSelectorTerm& t : na.required->terms) w.Term(t);
  }
  w.Size(na.preferred.size());
  for (const PreferredSchedulingTerm& p : na.preferred) {
    w.I64(p.weight);
    w.Term(p.preference);
  }
  w.PodAff(pod.affinity.pod_affinity);
  w.PodAff(pod.affinity.pod_anti_affinity);
  w.Size(pod.tolerations.size());
  for (const Toleration& t : pod.tolerations) {
    w.A(t.key);
    w.U8(static_cast<uint8_t>(t.op));
    w.A(t.value);
    w.U8(static_cast<uint8_t>(t.effect));
    w.U8(t.toleration_seconds.has_value() ? 1 : 0);
    w.I64(t.toleration_seconds.value_or(0));
  }
  w.Size(pod.topology_spread_constraints.size());
  for (const TopologySpreadConstraint& c : pod.topology_spread_constraints) {
    w.I64(c.max_skew);
    w.A(c.topology_key);
    w.U8(static_cast<uint8_t>(c.when_unsatisfiable));
    w.Selector(c.label_selector);
    w.U8(c.min_domains.has_value() ? 1 : 0);
    w.I64(c.min_domains.value_or(0));
    w.U8(static_cast<uint8_t>(c.node_affinity_policy));
    w.U8(static_cast<uint8_t>(c.node_taints_policy));
  }
  w.Resources(pod.overhead);
  w.Containers(pod.containers);
  w.Containers(pod.init_containers);
  w.U8(pod.has_restartable_init_containers ? 1 : 0);
  w.Resources(pod.requests);
  const GpuRequest& g = pod.gpu;
  w.I64(g.count);
  w.I64(g.milli);
  w.I64(g.share_memory_mib);
  w.I64(g.share_memory_permille);
  w.I64(g.min_device_memory_mib);
  w.Size(g.models.size());
  for (Atom m : g.models) w.A(m);
  w.Str(pod.gpu_error);
}

void NodeTwinKey(const Node& node, std::string& out) {
  out.clear();
  KeyWriter w(out);
  const Atom hostname = Names().hostname;
  const auto labels = node.meta.labels.items();
  const bool has_hostname = node.meta.labels.Has(hostname);
  w.U8(has_hostname ? 1 : 0);
  w.Size(labels.size() - (has_hostname ? 1 : 0));
  for (const auto& [k, v] : labels) {
    if (k == hostname) continue;
    w.A(k);
    w.A(v);
  }
  w.Size(node.meta.annotations.size());
  for (const auto& [k, v] : node.meta.annotations) {
    w.Str(k);
    w.Str(v);
  }
  w.U8(node.meta.deletion_timestamp.has_value() ? 1 : 0);
  w.Resources(node.capacity);
  w.Resources(node.allocatable);
  w.Size(node.taints.size());
  for (const Taint& t : node.taints) {
    w.A(t.key);
    w.A(t.value);
    w.U8(static_cast<uint8_t>(t.effect));
  }
  w.U8(node.unschedulable ? 1 : 0);
  w.Size(node.conditions.size());
  for (const Condition& c : node.conditions) {
    w.Str(c.type);
    w.Str(c.status);
    w.Str(c.reason);
  }
  w.Size(node.images.size());
  for (const ContainerImage& image : node.images) {
    w.Size(image.names.size());
    for (const std::string& name : image.names) w.Str(name);
    w.I64(image.size_bytes);
  }
  const NodeGpuInfo& g = node.gpu;
  w.I64(g.count);
  w.A(g.model);
  w.A(g.model_family);
  w.I64(g.memory_mib);
  w.U32(g.unhealthy_mask);
  for (uint8_t island : g.island) w.U8(island);
  w.U8(g.nvlink_known ? 1 : 0);
  w.I64(g.replicas);
  w.U8(g.mps ? 1 : 0);
  w.Str(g.source);
  w.Str(node.gpu_error);
}

uint64_t HashEquivalenceKey(std::string_view key) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : key) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace gpusched::api
