// SPDX-License-Identifier: Apache-2.0
#include "src/framework/registry.h"

namespace gpusched::framework {

common::Status Registry::Register(std::string name, PluginFactory factory) {
  if (factories_.count(name) != 0 || aliases_.count(name) != 0) {
    return common::AlreadyExistsError("plugin \"" + name + "\" is registered twice");
  }
  factories_.emplace(std::move(name), std::move(factory));
  return common::Status::Ok();
}

common::Status Registry::RegisterAlias(std::string alias, std::string canonical) {
  if (factories_.count(alias) != 0 || aliases_.count(alias) != 0) {
    return common::AlreadyExistsError("plugin \"" + alias + "\" is registered twice");
  }
  if (factories_.count(canonical) == 0) {
    return common::NotFoundError("alias \"" + alias + "\" names unknown plugin \"" + canonical +
                                 "\"");
  }
  aliases_.emplace(std::move(alias), std::move(canonical));
  return common::Status::Ok();
}

std::string_view Registry::Canonical(std::string_view name) const {
  auto a = aliases_.find(name);
  return a == aliases_.end() ? name : std::string_view(a->second);
}

const PluginFactory* Registry::Find(std::string_view name) const {
  auto it = factories_.find(Canonical(name));
  return it == factories_.end() ? nullptr : &it->second;
}

std::vector<std::string> Registry::Names() const {
  std::vector<std::string> out;
  for (const auto& [name, f] : factories_) out.push_back(name);
  return out;
}

}  // namespace gpusched::framework
