// SPDX-License-Identifier: Apache-2.0
// Checks on TLS material before it reaches libcurl, so a bad kubeconfig fails at startup with
// the field named instead of at the first handshake with an OpenSSL error string. OpenSSL
// underneath; thread-safe. Messages never include key material.
#pragma once

#include <string_view>

#include "src/common/status.h"

namespace gpusched::kube::client {

// OK if `pem` holds at least one PEM certificate and nothing unparsable. `field` names it in the
// error ("certificate-authority-data").
common::Status CheckPemCertificates(std::string_view pem, std::string_view field);
// OK if `cert_pem` and `key_pem` parse and the key belongs to the (first) certificate.
common::Status CheckPemKeyPair(std::string_view cert_pem, std::string_view key_pem,
                               std::string_view cert_field, std::string_view key_field);

}  // namespace gpusched::kube::client
