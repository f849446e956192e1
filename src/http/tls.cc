// SPDX-License-Identifier: Apache-2.0
// Boost.Asio's ssl::context throws on bad input; every call that can is inside a try block here
// and comes back as a Status. The rest is OpenSSL's C API.
#include "src/http/tls.h"

#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl.hpp>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <exception>
#include <fstream>
#include <sstream>

namespace gpusched::http {
namespace {

namespace ssl = boost::asio::ssl;

common::StatusOr<std::string> ReadFile(const char* what, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return common::InvalidArgumentError(std::string(what) + " " + path +
                                        ": cannot read the file: " + std::strerror(errno));
  }
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// The last OpenSSL error as text (or `fallback`).
std::string OpenSslError(const char* fallback) {
  unsigned long e = ERR_get_error();  // NOLINT(google-runtime-int): OpenSSL's type
  ERR_clear_error();
  if (e == 0) return fallback;
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  return buf;
}

common::StatusOr<int> ProtocolVersion(const std::string& name) {
  if (name.empty() || name == "VersionTLS12") return TLS1_2_VERSION;
  if (name == "VersionTLS13") return TLS1_3_VERSION;
  if (name == "VersionTLS11") return TLS1_1_VERSION;
  if (name == "VersionTLS10") return TLS1_VERSION;
  return common::InvalidArgumentError("TLS minimum version \"" + name +
                                      "\": want VersionTLS10, VersionTLS11, VersionTLS12 or "
                                      "VersionTLS13");
}

struct Material {
  std::string cert, key, client_ca;
};

common::StatusOr<Material> ReadMaterial(const TlsOptions& o) {
  Material m;
  if (!o.cert_file.empty()) {
    GPUSCHED_ASSIGN_OR_RETURN(m.cert, ReadFile("TLS certificate", o.cert_file));
    GPUSCHED_ASSIGN_OR_RETURN(m.key, ReadFile("TLS private key", o.key_file));
  } else {
    m.cert = o.cert_pem;
    m.key = o.key_pem;
  }
  if (!o.client_ca_file.empty()) {
    GPUSCHED_ASSIGN_OR_RETURN(m.client_ca, ReadFile("client CA", o.client_ca_file));
  }
  return m;
}

// Adds every certificate of the PEM bundle to the verify store and to the CA names sent in the
// CertificateRequest. kInvalidArgument when the bundle holds none.
common::Status AddClientCas(SSL_CTX* ctx, const std::string& pem, const std::string& path) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  STACK_OF(X509_NAME)* names = sk_X509_NAME_new_null();
  X509_STORE* store = SSL_CTX_get_cert_store(ctx);
  int count = 0;
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    X509_STORE_add_cert(store, cert);
    sk_X509_NAME_push(names, X509_NAME_dup(X509_get_subject_name(cert)));
    X509_free(cert);
    ++count;
  }
  ERR_clear_error();  // the loop ends on "no start line"
  BIO_free(bio);
  SSL_CTX_set_client_CA_list(ctx, names);  // takes ownership
  if (count == 0) {
    return common::InvalidArgumentError("client CA " + path + ": no PEM certificate in the file");
  }
  return common::Status::Ok();
}

common::StatusOr<std::shared_ptr<ssl::context>> BuildContext(const TlsOptions& o,
                                                             const Material& m) {
  GPUSCHED_ASSIGN_OR_RETURN(int version, ProtocolVersion(o.min_version));
  GPUSCHED_ASSIGN_OR_RETURN(std::string ciphers, OpenSslCipherList(o.cipher_suites));
  const std::string cert_name = o.cert_file.empty() ? "in-memory" : o.cert_file;
  try {
    auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
    ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                     ssl::context::no_sslv3 | ssl::context::single_dh_use);
    SSL_CTX* native = ctx->native_handle();
    SSL_CTX_set_min_proto_version(native, version);
    if (!ciphers.empty() && SSL_CTX_set_cipher_list(native, ciphers.c_str()) != 1) {
      return common::InvalidArgumentError("TLS cipher suites: " + OpenSslError("none usable"));
    }
    try {
      ctx->use_certificate_chain(boost::asio::buffer(m.cert));
    } catch (const std::exception& e) {
      return common::InvalidArgumentError("TLS certificate " + cert_name +
                                          ": not a PEM certificate: " + e.what());
    }
    try {
      ctx->use_private_key(boost::asio::buffer(m.key), ssl::context::pem);
    } catch (const std::exception& e) {
      return common::InvalidArgumentError(
          "TLS private key " + (o.key_file.empty() ? std::string("in-memory") : o.key_file) +
          ": not a PEM private key: " + e.what());
    }
    if (SSL_CTX_check_private_key(native) != 1) {
      return common::InvalidArgumentError("TLS private key " + o.key_file +
                                          " does not match the certificate " + cert_name + ": " +
                                          OpenSslError("mismatch"));
    }
    static constexpr unsigned char kSessionContext[] = "gpusched";
    SSL_CTX_set_session_id_context(native, kSessionContext, sizeof(kSessionContext) - 1);
    if (o.client_auth != ClientAuth::kNone) {
      GPUSCHED_RETURN_IF_ERROR(AddClientCas(native, m.client_ca, o.client_ca_file));
      SSL_CTX_set_purpose(native, X509_PURPOSE_SSL_CLIENT);  // extKeyUsage clientAuth, as Go
      int mode = SSL_VERIFY_PEER;
      if (o.client_auth == ClientAuth::kRequire) mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
      SSL_CTX_set_verify(native, mode, nullptr);
    }
    return ctx;
  } catch (const std::exception& e) {
    return common::InternalError(std::string("TLS context: ") + e.what());
  }
}

std::string FileSignature(const std::string& path) {
  if (path.empty()) return "-";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "missing";
  return std::to_string(st.st_ino) + "/" + std::to_string(st.st_size) + "/" +
         std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
}

// Owners for OpenSSL objects in GenerateSelfSignedCertificate.
struct Freer {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(BIO* p) const { BIO_free(p); }
  void operator()(GENERAL_NAMES* p) const { GENERAL_NAMES_free(p); }
};

std::string BioText(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);  // NOLINT(google-runtime-int): OpenSSL's type
  return std::string(data, static_cast<size_t>(n));
}

common::Status AddSans(X509* cert, const std::string& host, const std::vector<std::string>& ips) {
  std::unique_ptr<GENERAL_NAMES, Freer> names(sk_GENERAL_NAME_new_null());
  auto push = [&](int type, ASN1_STRING* value) {
    GENERAL_NAME* n = GENERAL_NAME_new();
    GENERAL_NAME_set0_value(n, type, value);
    sk_GENERAL_NAME_push(names.get(), n);
  };
  ASN1_IA5STRING* dns = ASN1_IA5STRING_new();
  ASN1_STRING_set(dns, host.data(), static_cast<int>(host.size()));
  push(GEN_DNS, dns);
  for (const std::string& ip : ips) {
    boost::system::error_code ec;
    auto addr = boost::asio::ip::make_address(ip, ec);
    if (ec) return common::InvalidArgumentError("self-signed certificate: bad IP address " + ip);
    ASN1_OCTET_STRING* octets = ASN1_OCTET_STRING_new();
    if (addr.is_v4()) {
      auto b = addr.to_v4().to_bytes();
      ASN1_OCTET_STRING_set(octets, b.data(), static_cast<int>(b.size()));
    } else {
      auto b = addr.to_v6().to_bytes();
      ASN1_OCTET_STRING_set(octets, b.data(), static_cast<int>(b.size()));
    }
    push(GEN_IPADD, octets);
  }
  if (X509_add1_ext_i2d(cert, NID_subject_alt_name, names.get(), 0, 0) != 1) {
    return common::InternalError("self-signed certificate: " + OpenSslError("SANs"));
  }
  return common::Status::Ok();
}

}  // namespace

common::StatusOr<std::string> OpenSslCipherList(const std::vector<std::string>& go_names) {
  if (go_names.empty()) return std::string();
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> probe(SSL_CTX_new(TLS_method()), SSL_CTX_free);
  if (!probe || SSL_CTX_set_cipher_list(probe.get(), "ALL:@SECLEVEL=0") != 1) {
    return common::InternalError("TLS cipher suites: " + OpenSslError("no OpenSSL context"));
  }
  STACK_OF(SSL_CIPHER)* all = SSL_CTX_get_ciphers(probe.get());
  std::string list;
  for (const std::string& go : go_names) {
    if (go == "TLS_AES_128_GCM_SHA256" || go == "TLS_AES_256_GCM_SHA384" ||
        go == "TLS_CHACHA20_POLY1305_SHA256") {
      continue;  // TLS 1.3: not configurable, as in Go
    }
    // Go's short aliases for the ChaCha20 suites.
    std::string iana = go;
    if (iana.ends_with("_CHACHA20_POLY1305")) iana += "_SHA256";
    const char* found = nullptr;
    for (int i = 0; i < sk_SSL_CIPHER_num(all) && found == nullptr; ++i) {
      const SSL_CIPHER* c = sk_SSL_CIPHER_value(all, i);
      const char* standard = SSL_CIPHER_standard_name(c);
      if (standard != nullptr && iana == standard) found = SSL_CIPHER_get_name(c);
    }
    if (found == nullptr) {
      return common::InvalidArgumentError("TLS cipher suite \"" + go +
                                          "\" is unknown or not supported by this OpenSSL");
    }
    list += (list.empty() ? "" : ":") + std::string(found);
  }
  return list;
}

common::StatusOr<CertKeyPem> GenerateSelfSignedCertificate(
    const std::string& host, const std::vector<std::string>& ip_addresses) {
  std::unique_ptr<EVP_PKEY, Freer> key(EVP_EC_gen("P-256"));
  std::unique_ptr<X509, Freer> cert(X509_new());
  if (!key || !cert)
    return common::InternalError("self-signed certificate: " + OpenSslError("key"));
  X509_set_version(cert.get(), 2);
  const long now = static_cast<long>(std::time(nullptr));  // NOLINT(google-runtime-int)
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), now);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 365L * 24 * 3600);
  X509_NAME* name = X509_get_subject_name(cert.get());
  const std::string cn = host + "@" + std::to_string(now);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(cert.get(), name);
  X509_set_pubkey(cert.get(), key.get());
  GPUSCHED_RETURN_IF_ERROR(AddSans(cert.get(), host, ip_addresses));
  X509V3_CTX v3;
  X509V3_set_ctx_nodb(&v3);
  X509V3_set_ctx(&v3, cert.get(), cert.get(), nullptr, nullptr, 0);
  for (const auto& [nid, value] :
       {std::pair{NID_key_usage, "critical,digitalSignature,keyEncipherment,keyCertSign"},
        std::pair{NID_ext_key_usage, "serverAuth"},
        std::pair{NID_basic_constraints, "critical,CA:TRUE"}}) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &v3, nid, value);
    if (ext == nullptr) return common::InternalError("self-signed certificate: extension");
    X509_add_ext(cert.get(), ext, -1);
    X509_EXTENSION_free(ext);
  }
  if (X509_sign(cert.get(), key.get(), EVP_sha256()) == 0) {
    return common::InternalError("self-signed certificate: " + OpenSslError("sign"));
  }
  std::unique_ptr<BIO, Freer> cert_bio(BIO_new(BIO_s_mem()));
  std::unique_ptr<BIO, Freer> key_bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509(cert_bio.get(), cert.get());
  PEM_write_bio_PrivateKey(key_bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr);
  return CertKeyPem{BioText(cert_bio.get()), BioText(key_bio.get())};
}

common::StatusOr<std::unique_ptr<TlsContextSource>> TlsContextSource::Create(TlsOptions options) {
  if (options.cert_file.empty() != options.key_file.empty()) {
    return common::InvalidArgumentError(
        "TLS needs both a certificate and a private key file, or neither");
  }
  if (options.cert_file.empty() && (options.cert_pem.empty() || options.key_pem.empty())) {
    return common::InvalidArgumentError("TLS needs a certificate and key (files or in memory)");
  }
  if (options.client_auth != ClientAuth::kNone && options.client_ca_file.empty()) {
    return common::InvalidArgumentError("TLS client certificates need a client CA file");
  }
  std::unique_ptr<TlsContextSource> source(new TlsContextSource(std::move(options)));
  common::MutexLock l(source->mu_);
  source->signature_ = source->Signature();
  GPUSCHED_ASSIGN_OR_RETURN(Material m, ReadMaterial(source->options_));
  GPUSCHED_ASSIGN_OR_RETURN(source->current_, BuildContext(source->options_, m));
  l.Unlock();
  return source;
}

TlsContextSource::~TlsContextSource() = default;

std::string TlsContextSource::Signature() const {
  return FileSignature(options_.cert_file) + "|" + FileSignature(options_.key_file) + "|" +
         FileSignature(options_.client_ca_file);
}

std::shared_ptr<ssl::context> TlsContextSource::Current() {
  const bool files = !options_.cert_file.empty() || !options_.client_ca_file.empty();
  std::string sig = files ? Signature() : std::string();
  common::MutexLock l(mu_);
  if (!files || sig == signature_) return current_;
  signature_ = sig;
  auto built = [&]() -> common::StatusOr<std::shared_ptr<ssl::context>> {
    GPUSCHED_ASSIGN_OR_RETURN(Material m, ReadMaterial(options_));
    return BuildContext(options_, m);
  }();
  if (built.ok()) {
    current_ = std::move(built).value();
    last_error_.clear();
    ++reloads_;
  } else {
    last_error_ = std::string(built.status().message());
  }
  return current_;
}

std::string TlsContextSource::last_reload_error() {
  common::MutexLock l(mu_);
  return last_error_;
}

int TlsContextSource::reloads() {
  common::MutexLock l(mu_);
  return reloads_;
}

}  // namespace gpusched::http
