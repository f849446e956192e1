// SPDX-License-Identifier: Apache-2.0
#include "src/sim/microservices.h"

#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace gpusched::sim {
namespace {

struct Service {
  const char* name;
  int replicas;
  const char* cpu;
  const char* memory;
};

// A call edge: caller -> callee, average traffic of the whole caller service in MB/s (request
// and response bytes per call x calls per second).
struct Call {
  const char* from;
  const char* to;
  double mbps;
};

struct NodeGroup {
  const char* instance_type;
  const char* cpu;     // allocatable
  const char* memory;  // allocatable
  int per_zone[3];
};

struct Background {
  const char* name;
  const char* zone_node;  // pinned node name (spec.nodeName), a pre-bound load
  const char* cpu;
};

struct Example {
  const char* ns;
  std::vector<NodeGroup> groups;
  std::vector<Service> services;  // arrival order
  std::vector<Call> calls;
  std::vector<Background> background;
};

constexpr const char* kZones[] = {"us-east-1a", "us-east-1b", "us-east-1c"};

Example Boutique() {
  Example e;
  e.ns = "shop";
  e.groups = {{"m5.2xlarge", "7910m", "30Gi", {4, 4, 4}}};
  e.services = {
      {"frontend", 3, "500m", "512Mi"},       {"checkout", 2, "300m", "256Mi"},
      {"cart", 2, "300m", "256Mi"},           {"redis-cart", 2, "250m", "1Gi"},
      {"productcatalog", 2, "300m", "256Mi"}, {"catalog-db", 2, "500m", "2Gi"},
      {"currency", 2, "200m", "128Mi"},       {"payment", 2, "200m", "128Mi"},
      {"shipping", 2, "200m", "128Mi"},       {"email", 2, "200m", "128Mi"},
      {"recommendation", 2, "300m", "512Mi"}, {"ad", 2, "200m", "256Mi"},
  };
  e.calls = {
      {"frontend", "productcatalog", 6},
      {"frontend", "currency", 4},
      {"frontend", "cart", 3},
      {"frontend", "recommendation", 2},
      {"frontend", "ad", 1},
      {"frontend", "checkout", 2},
      {"frontend", "shipping", 1},
      {"checkout", "cart", 8},
      {"checkout", "productcatalog", 10},
      {"checkout", "currency", 6},
      {"checkout", "shipping", 8},
      {"checkout", "payment", 6},
      {"checkout", "email", 4},
      {"cart", "redis-cart", 20},
      {"recommendation", "productcatalog", 12},
      {"productcatalog", "catalog-db", 25},
  };
  return e;
}

Example Social() {
  Example e;
  e.ns = "social";
  e.groups = {{"m5.xlarge", "3920m", "14Gi", {4, 3, 2}},
              {"m5.4xlarge", "15890m", "60Gi", {2, 2, 2}}};
  e.services = {
      {"gateway", 4, "500m", "512Mi"}, {"auth", 3, "200m", "256Mi"},
      {"user", 2, "300m", "512Mi"},    {"user-db", 2, "1", "4Gi"},
      {"post", 2, "400m", "512Mi"},    {"post-db", 2, "1", "4Gi"},
      {"timeline", 3, "400m", "1Gi"},  {"timeline-cache", 2, "500m", "4Gi"},
      {"media", 2, "500m", "1Gi"},     {"media-store", 2, "500m", "2Gi"},
      {"search", 2, "800m", "2Gi"},
  };
  e.calls = {
      {"gateway", "auth", 3},   {"gateway", "timeline", 6},
      {"gateway", "post", 3},   {"gateway", "media", 4},
      {"gateway", "search", 2}, {"auth", "user", 4},
      {"user", "user-db", 15},  {"post", "post-db", 18},
      {"post", "user", 5},      {"timeline", "timeline-cache", 30},
      {"timeline", "post", 9},  {"media", "media-store", 40},
      {"search", "post", 6},
  };
  e.background = {{"etl-0", "social-m5-4xl-0-0", "6"},
                  {"etl-1", "social-m5-4xl-1-0", "6"},
                  {"etl-2", "social-m5-xl-2-0", "2"}};
  return e;
}

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.4g", v);
  return buf;
}

std::string Render(const Example& e) {
  std::string y;
  std::string prefix = e.ns;
  for (const NodeGroup& g : e.groups) {
    std::string short_type = g.instance_type;
    // "m5.2xlarge" -> "m5-2xl"
    std::string tag = short_type.substr(0, short_type.find('.')) + "-" +
                      short_type.substr(short_type.find('.') + 1);
    if (tag.size() > 5 && tag.compare(tag.size() - 5, 5, "large") == 0) {
      tag = tag.substr(0, tag.size() - 5) + "l";
    }
    for (int z = 0; z < 3; ++z) {
      for (int i = 0; i < g.per_zone[z]; ++i) {
        std::string name = prefix + "-" + tag + "-" + std::to_string(z) + "-" + std::to_string(i);
        y += "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: " + name + "\n  labels:\n";
        y += "    kubernetes.io/hostname: " + name + "\n";
        y += "    node.kubernetes.io/instance-type: " + std::string(g.instance_type) + "\n";
        y += "    topology.kubernetes.io/region: us-east-1\n";
        y += "    topology.kubernetes.io/zone: " + std::string(kZones[z]) + "\n";
        y += "status:\n  capacity: {cpu: \"" + std::string(g.cpu) + "\", memory: " + g.memory +
             ", pods: \"110\"}\n  allocatable: {cpu: \"" + g.cpu + "\", memory: " + g.memory +
             ", pods: \"110\"}\n";
      }
    }
  }
  for (const Background& b : e.background) {
    y += "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: " + std::string(b.name) +
         "\n  namespace: batch\nspec:\n  nodeName: " + b.zone_node +
         "\n  containers:\n  - name: main\n    image: etl\n    resources:\n      requests: {cpu: "
         "\"" +
         b.cpu + "\", memory: 4Gi}\nstatus:\n  phase: Running\n";
  }
  std::map<std::string, int> replicas;
  for (const Service& s : e.services) replicas[s.name] = s.replicas;
  for (const Service& s : e.services) {
    std::string traffic;
    for (const Call& c : e.calls) {
      if (std::string(c.from) != s.name) continue;
      if (!traffic.empty()) traffic += "; ";
      traffic += "app=" + std::string(c.to) + " => " + Num(c.mbps / s.replicas);
    }
    for (int r = 0; r < s.replicas; ++r) {
      std::string name = std::string(s.name) + "-" + std::to_string(r);
      y += "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n  namespace: " + e.ns +
           "\n  labels:\n    app: " + s.name + "\n";
      if (!traffic.empty()) y += "  annotations:\n    gpusched.io/traffic: \"" + traffic + "\"\n";
      y += "  ownerReferences:\n  - {apiVersion: apps/v1, kind: ReplicaSet, name: " +
           std::string(s.name) + ", uid: rs-" + s.name + ", controller: true}\n";
      y += "spec:\n  topologySpreadConstraints:\n  - maxSkew: 1\n"
           "    topologyKey: topology.kubernetes.io/zone\n"
           "    whenUnsatisfiable: DoNotSchedule\n"
           "    labelSelector: {matchLabels: {app: " +
           std::string(s.name) + "}}\n";
      y += "  containers:\n  - name: main\n    image: " + std::string(s.name) +
           "\n    resources:\n      requests: {cpu: " + s.cpu + ", memory: " + s.memory + "}\n";
    }
  }
  return y;
}

}  // namespace

std::vector<std::string> MicroserviceExampleNames() { return {"microservices", "microservices-b"}; }

common::StatusOr<std::string> MicroserviceExampleYaml(std::string_view name) {
  if (name == "microservices") return Render(Boutique());
  if (name == "microservices-b") return Render(Social());
  return common::NotFoundError("unknown example \"" + std::string(name) +
                               "\" (want microservices or microservices-b)");
}

common::StatusOr<Workload> MicroserviceExample(std::string_view name) {
  GPUSCHED_ASSIGN_OR_RETURN(std::string yaml, MicroserviceExampleYaml(name));
  Workload w;
  GPUSCHED_RETURN_IF_ERROR(AppendManifests(yaml, "example " + std::string(name), w));
  return w;
}

}  // namespace gpusched::sim
