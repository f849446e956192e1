// SPDX-License-Identifier: Apache-2.0
// Object names as the API server validates them (k8s.io/apimachinery pkg/util/validation):
// Pod, Node and workload names are DNS-1123 subdomains, namespaces and container names DNS-1123
// labels. The messages are apimachinery's, so a user sees what `kubectl apply` would print.
#pragma once

#include <string>
#include <string_view>

namespace gpusched::api {

// Lower-case alphanumerics and '-', starting and ending alphanumeric; at most 63 bytes.
bool IsDns1123Label(std::string_view s);
// DNS-1123 labels joined by '.'; at most 253 bytes.
bool IsDns1123Subdomain(std::string_view s);

// Why `s` is not a DNS-1123 subdomain (label), as the API server words it; "" when it is one.
std::string Dns1123SubdomainError(std::string_view s);
std::string Dns1123LabelError(std::string_view s);

}  // namespace gpusched::api
