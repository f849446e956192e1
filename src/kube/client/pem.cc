// SPDX-License-Identifier: Apache-2.0
#include "src/kube/client/pem.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <climits>
#include <memory>
#include <string>

namespace gpusched::kube::client {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;

BioPtr MemBio(std::string_view data) {
  if (data.size() > static_cast<size_t>(INT_MAX)) return nullptr;
  return BioPtr(BIO_new_mem_buf(data.data(), static_cast<int>(data.size())));
}

// The reason of the last OpenSSL error (no data, so no key material), and clears the queue.
std::string LastSslError() {
  unsigned long e = ERR_peek_last_error();
  std::string out =
      e != 0 ? ERR_reason_error_string(e) != nullptr ? ERR_reason_error_string(e) : "unknown error"
             : "no PEM data";
  ERR_clear_error();
  return out;
}

// PEM callback that refuses passphrases: an encrypted key cannot be used unattended.
int NoPassword(char*, int, int, void*) { return -1; }

}  // namespace

common::Status CheckPemCertificates(std::string_view pem, std::string_view field) {
  ERR_clear_error();
  BioPtr bio = MemBio(pem);
  if (!bio) return common::InvalidArgumentError(std::string(field) + ": too large");
  int count = 0;
  for (;;) {
    X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, NoPassword, nullptr));
    if (!cert) break;
    ++count;
  }
  unsigned long e = ERR_peek_last_error();
  bool clean_end =
      e == 0 || (ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE);
  if (count == 0 || !clean_end) {
    std::string why = count == 0 && clean_end ? "no PEM certificate found" : LastSslError();
    ERR_clear_error();
    return common::InvalidArgumentError(std::string(field) + ": not a PEM certificate: " + why);
  }
  ERR_clear_error();
  return common::Status::Ok();
}

common::Status CheckPemKeyPair(std::string_view cert_pem, std::string_view key_pem,
                               std::string_view cert_field, std::string_view key_field) {
  GPUSCHED_RETURN_IF_ERROR(CheckPemCertificates(cert_pem, cert_field));
  ERR_clear_error();
  BioPtr cert_bio = MemBio(cert_pem);
  BioPtr key_bio = MemBio(key_pem);
  if (!cert_bio || !key_bio)
    return common::InvalidArgumentError(std::string(key_field) + ": too large");
  X509Ptr cert(PEM_read_bio_X509(cert_bio.get(), nullptr, NoPassword, nullptr));
  PkeyPtr key(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, NoPassword, nullptr));
  if (!key) {
    return common::InvalidArgumentError(std::string(key_field) +
                                        ": not an unencrypted PEM private key: " + LastSslError());
  }
  if (!cert || X509_check_private_key(cert.get(), key.get()) != 1) {
    ERR_clear_error();
    return common::InvalidArgumentError(
        std::string(key_field) + ": does not match the public key in " + std::string(cert_field));
  }
  ERR_clear_error();
  return common::Status::Ok();
}

}  // namespace gpusched::kube::client
