// SPDX-License-Identifier: Apache-2.0
#include "src/cel/device_selector.h"

#include <array>

#include "src/cel/program.h"
#include "src/cel/semver.h"

namespace gpusched::cel {
namespace {

// Splits "<domain>/<id>"; a name without '/' belongs to the driver's domain.
std::pair<std::string_view, std::string_view> SplitName(std::string_view name,
                                                        std::string_view driver) {
  size_t slash = name.find('/');
  if (slash == std::string_view::npos) return {driver, name};
  return {name.substr(0, slash), name.substr(slash + 1)};
}

Value AttributeValue(const api::DeviceAttribute& a) {
  switch (a.kind) {
    case api::DeviceAttribute::Kind::kInt: return Value::Int(a.int_value);
    case api::DeviceAttribute::Kind::kBool: return Value::Bool(a.bool_value);
    case api::DeviceAttribute::Kind::kString: return Value::StringView(a.string_value);
    case api::DeviceAttribute::Kind::kVersion: return Value::SemverView(a.string_value);
  }
  return Value::Null();
}

Value EntryValue(const api::DeviceAttribute& a) { return AttributeValue(a); }
Value EntryValue(const api::Quantity& q) { return Value::QuantityView(&q); }

class EmptyMap final : public MapValue {
 public:
  size_t size() const override { return 0; }
  bool Find(const Value&, Value*) const override { return false; }
  Value KeyAt(size_t) const override { return Value::Null(); }
};

const EmptyMap kEmptyMap;

// The ids of one domain: device.attributes["<domain>"] or device.capacity["<domain>"].
template <typename T>
class DomainGroup final : public MapValue {
 public:
  using Entries = std::vector<std::pair<std::string, T>>;
  DomainGroup() = default;
  DomainGroup(const Entries* entries, std::string_view domain, std::string_view driver)
      : entries_(entries), domain_(domain), driver_(driver) {
    for (const auto& [name, unused] : *entries_) {
      if (SplitName(name, driver_).first == domain_) ++size_;
    }
  }
  std::string_view domain() const { return domain_; }
  size_t size() const override { return size_; }
  bool Find(const Value& key, Value* out) const override {
    if (key.kind() != Kind::kString) return false;
    for (const auto& [name, value] : *entries_) {
      auto [domain, id] = SplitName(name, driver_);
      if (id == key.text() && domain == domain_) {
        *out = EntryValue(value);
        return true;
      }
    }
    return false;
  }
  Value KeyAt(size_t i) const override {
    for (const auto& [name, unused] : *entries_) {
      auto [domain, id] = SplitName(name, driver_);
      if (domain == domain_ && i-- == 0) return Value::StringView(id);
    }
    return Value::Null();
  }

 private:
  const Entries* entries_ = nullptr;
  std::string_view domain_;
  std::string_view driver_;
  size_t size_ = 0;
};

// device.attributes or device.capacity: domain -> DomainGroup; an unknown domain reads as an
// empty map (upstream's newStringInterfaceMapWithDefault).
template <typename T>
class DomainMap final : public MapValue {
 public:
  using Entries = typename DomainGroup<T>::Entries;
  DomainMap(const Entries* entries, std::string_view driver) {
    if (entries == nullptr) return;
    for (const auto& [name, unused] : *entries) {
      std::string_view domain = SplitName(name, driver).first;
      if (FindGroup(domain) != nullptr) continue;
      if (count_ < inline_.size()) {
        inline_[count_] = DomainGroup<T>(entries, domain, driver);
      } else {
        overflow_.emplace_back(entries, domain, driver);
      }
      ++count_;
    }
  }
  size_t size() const override { return count_; }
  bool Find(const Value& key, Value* out) const override {
    if (key.kind() != Kind::kString) return false;
    const DomainGroup<T>* g = FindGroup(key.text());
    *out = Value::MapView(g != nullptr ? static_cast<const MapValue*>(g) : &kEmptyMap);
    return true;
  }
  bool Contains(const Value& key) const override {
    return key.kind() == Kind::kString && FindGroup(key.text()) != nullptr;
  }
  Value KeyAt(size_t i) const override { return Value::StringView(Group(i).domain()); }

 private:
  const DomainGroup<T>& Group(size_t i) const {
    return i < inline_.size() ? inline_[i] : overflow_[i - inline_.size()];
  }
  const DomainGroup<T>* FindGroup(std::string_view domain) const {
    for (size_t i = 0; i < count_; ++i) {
      if (Group(i).domain() == domain) return &Group(i);
    }
    return nullptr;
  }

  std::array<DomainGroup<T>, 4> inline_;
  std::vector<DomainGroup<T>> overflow_;
  size_t count_ = 0;
};

// The `device` variable (kubernetes.DRADevice).
class DeviceMap final : public MapValue {
 public:
  explicit DeviceMap(const DeviceInput& d)
      : device_(d), attributes_(d.attributes, d.driver), capacity_(d.capacity, d.driver) {}
  size_t size() const override { return 4; }
  bool Find(const Value& key, Value* out) const override {
    if (key.kind() != Kind::kString) return false;
    std::string_view k = key.text();
    if (k == "driver") {
      *out = Value::StringView(device_.driver);
    } else if (k == "attributes") {
      *out = Value::MapView(&attributes_);
    } else if (k == "capacity") {
      *out = Value::MapView(&capacity_);
    } else if (k == "allowMultipleAllocations") {
      *out = Value::Bool(device_.allow_multiple_allocations);
    } else {
      return false;
    }
    return true;
  }
  Value KeyAt(size_t i) const override {
    static constexpr std::string_view kKeys[] = {"driver", "attributes", "capacity",
                                                 "allowMultipleAllocations"};
    return Value::StringView(kKeys[i]);
  }

 private:
  const DeviceInput& device_;
  DomainMap<api::DeviceAttribute> attributes_;
  DomainMap<api::Quantity> capacity_;
};

std::string Quote(std::string_view expression) {
  std::string out = "CEL selector \"";
  out.append(expression.substr(0, 200));
  if (expression.size() > 200) out += "...";
  return out + "\"";
}

}  // namespace

common::StatusOr<std::shared_ptr<const Program>> CompileDeviceSelector(
    std::string_view expression) {
  if (expression.size() > kSelectorMaxLength) {
    return common::InvalidArgumentError(Quote(expression) + ": too long: " +
                                        std::to_string(expression.size()) +
                                        " bytes, must have at most " +
                                        std::to_string(kSelectorMaxLength) + " bytes");
  }
  CompileOptions options;
  options.variables = {"device"};
  options.device_variable = true;
  common::StatusOr<std::shared_ptr<const Program>> program = CompileExpression(expression, options);
  if (!program.ok()) {
    return common::InvalidArgumentError(Quote(expression) + ": compilation failed: " +
                                        std::string(program.status().message()));
  }
  StaticType t = (*program)->result_type();
  if (t != StaticType::kBool && t != StaticType::kDyn) {
    return common::InvalidArgumentError(Quote(expression) +
                                        ": must evaluate to bool or the unknown type, not " +
                                        std::string(StaticTypeName(t)));
  }
  if ((*program)->estimated_max_cost() > kSelectorMaxCost) {
    return common::InvalidArgumentError(Quote(expression) + ": too complex, exceeds cost limit");
  }
  return program;
}

common::StatusOr<bool> MatchDevice(const Program& program, const DeviceInput& device) {
  if (device.attributes != nullptr) {
    for (const auto& [name, attr] : *device.attributes) {
      std::string why;
      if (attr.kind == api::DeviceAttribute::Kind::kVersion && !ParseSemver(attr.string_value, &why)) {
        return common::InvalidArgumentError("attribute " + name + ": parse semantic version: " + why);
      }
    }
  }
  DeviceMap map(device);
  const Value vars[] = {Value::MapView(&map)};
  Value result = program.Evaluate(vars, kSelectorMaxCost);
  if (result.kind() == Kind::kBool) return result.bool_value();
  if (result.is_error()) return common::InvalidArgumentError(std::string(result.text()));
  return common::InvalidArgumentError("CEL result of type " + std::string(result.TypeName()) +
                                      " could not be converted to bool");
}

}  // namespace gpusched::cel
