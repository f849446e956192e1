// SPDX-License-Identifier: Apache-2.0
// KeyWriter: the canonical byte encoding behind the equivalence keys (equivalence.h) and the
// cache's twin groups (cache/twin_groups.h): fixed-width integers and length-prefixed strings
// and lists appended to a string, so that equal bytes mean equal fields.
//
// Thread safety: a KeyWriter writes one caller-owned string.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "src/api/types.h"

namespace gpusched::api {

class KeyWriter {
 public:
  explicit KeyWriter(std::string& out) : out_(out) {}

  void U8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void I64(int64_t v) {
    char b[sizeof v];
    std::memcpy(b, &v, sizeof v);
    out_.append(b, sizeof v);
  }
  void F64(double v) {
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

}  // namespace gpusched::api
