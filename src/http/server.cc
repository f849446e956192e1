// SPDX-License-Identifier: Apache-2.0
// Boost.Beast is the only throwing library here; every exception it can raise is caught in this
// file (construction, bind, TLS setup) or reported through error_code (I/O).
#include "src/http/server.h"

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <exception>
#include <map>
#include <optional>
#include <thread>
#include <type_traits>

namespace gpusched::http {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;

constexpr uint32_t kHeaderLimit = 64u << 10;

struct Routes {
  // path -> method -> handler
  std::map<std::string, std::map<std::string, Handler, std::less<>>, std::less<>> by_path;
  Filter filter;

  Response Dispatch(const Request& req) const {
    if (filter) {
      try {
        if (std::optional<Response> early = filter(req)) return std::move(*early);
      } catch (const std::exception& e) {
        return Response{500, "text/plain", std::string("internal error: ") + e.what() + "\n", {}};
      }
    }
    auto p = by_path.find(req.path);
    if (p == by_path.end()) return Response{404, "text/plain", "not found: " + req.path + "\n", {}};
    auto m = p->second.find(req.method);
    if (m == p->second.end()) {
      std::string allow;
      for (const auto& [method, h] : p->second) allow += (allow.empty() ? "" : ", ") + method;
      return Response{405, "text/plain", "method not allowed\n", {{"Allow", allow}}};
    }
    try {
      return m->second(req);
    } catch (const std::exception& e) {
      return Response{500, "text/plain", std::string("internal error: ") + e.what() + "\n", {}};
    } catch (...) {
      return Response{500, "text/plain", "internal error\n", {}};
    }
  }
};

struct Shared {
  ServerOptions options;
  Routes routes;
};

// The subject of the verified client certificate of `ssl`, if there is one.
std::optional<PeerCertificate> VerifiedPeer(SSL* ssl) {
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
  X509* cert = SSL_get1_peer_certificate(ssl);
#else
  X509* cert = SSL_get_peer_certificate(ssl);
#endif
  if (cert == nullptr) return std::nullopt;
  std::optional<PeerCertificate> peer;
  if (SSL_get_verify_result(ssl) == X509_V_OK) {
    peer.emplace();
    X509_NAME* subject = X509_get_subject_name(cert);
    auto text = [subject](int index) {
      ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, index));
      return std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(data)),
                         static_cast<size_t>(ASN1_STRING_length(data)));
    };
    for (int i = -1; (i = X509_NAME_get_index_by_NID(subject, NID_commonName, i)) >= 0;) {
      peer->common_name = text(i);  // the last CN, as Go's pkix.Name
    }
    for (int i = -1; (i = X509_NAME_get_index_by_NID(subject, NID_organizationName, i)) >= 0;) {
      peer->organizations.push_back(text(i));
    }
  }
  X509_free(cert);
  return peer;
}

template <class Stream>
class Session : public std::enable_shared_from_this<Session<Stream>> {
 public:
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

  template <class... Args>
  Session(const Shared& shared, std::shared_ptr<void> keep, Args&&... args)
      : shared_(shared), keep_(std::move(keep)), stream_(std::forward<Args>(args)...) {}

  void Start() {
    if constexpr (kTls) {
      Lowest().expires_after(shared_.options.io_timeout);
      stream_.async_handshake(asio::ssl::stream_base::server,
                              [self = this->shared_from_this()](beast::error_code ec) {
                                if (ec) return;  // dropped: not a TLS client, or timed out
                                self->peer_ = VerifiedPeer(self->stream_.native_handle());
                                self->ReadRequest();
                              });
    } else {
      ReadRequest();
    }
  }

 private:
  beast::tcp_stream& Lowest() { return beast::get_lowest_layer(stream_); }

  void ReadRequest() {
    parser_.emplace();
    parser_->body_limit(shared_.options.max_body_bytes);
    parser_->header_limit(kHeaderLimit);
    Lowest().expires_after(shared_.options.io_timeout);
    bhttp::async_read(
        stream_, buffer_, *parser_,
        [self = this->shared_from_this()](beast::error_code ec, size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    if (ec == bhttp::error::end_of_stream) return Close();
    if (ec == bhttp::error::body_limit) {
      return Write(Error(413, "request body exceeds " +
                                  std::to_string(shared_.options.max_body_bytes) + " bytes"),
                   /*keep_alive=*/false);
    }
    if (ec == bhttp::error::header_limit) {
      return Write(Error(431, "request header fields too large"), false);
    }
    if (ec && ec.category() == bhttp::make_error_code(bhttp::error::end_of_stream).category()) {
      // Any other HTTP parse error, including a message cut short by the client (partial_message).
      return Write(Error(400, "bad request: " + ec.message()), false);
    }
    if (ec) return Close();  // timeout, reset, eof before any byte
    auto msg = parser_->release();
    Request req;
    req.method = std::string(msg.method_string());
    std::string_view target = msg.target();
    size_t q = target.find('?');
    req.path = std::string(target.substr(0, q));
    if (q != std::string_view::npos) req.query = std::string(target.substr(q + 1));
    if (auto it = msg.find(bhttp::field::content_type); it != msg.end()) {
      req.content_type = std::string(it->value());
    }
    if (auto it = msg.find(bhttp::field::authorization); it != msg.end()) {
      req.authorization = std::string(it->value());
    }
    req.peer = peer_;
    req.body = std::move(msg.body());
    Write(shared_.routes.Dispatch(req), msg.keep_alive());
  }

  static Response Error(int status, std::string message) {
    return Response{status, "text/plain", std::move(message) + "\n", {}};
  }

  void Write(const Response& r, bool keep_alive) {
    res_ = {};
    res_.version(11);
    res_.result(static_cast<unsigned>(r.status));
    res_.set(bhttp::field::server, "gpusched");
    res_.set(bhttp::field::content_type, r.content_type);
    for (const auto& [k, v] : r.headers) res_.set(k, v);
    res_.body() = r.body;
    res_.keep_alive(keep_alive);
    res_.prepare_payload();
    Lowest().expires_after(shared_.options.io_timeout);
    bhttp::async_write(stream_, res_,
                       [self = this->shared_from_this(), keep_alive](beast::error_code ec, size_t) {
                         if (ec) return;
                         if (keep_alive) {
                           self->ReadRequest();
                         } else {
                           self->Close();
                         }
                       });
  }

  void Close() {
    if constexpr (kTls) {
      Lowest().expires_after(std::chrono::seconds(2));
      stream_.async_shutdown([self = this->shared_from_this()](beast::error_code) {});
    } else {
      beast::error_code ignored;
      stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
      // Read what the client is still sending (the rest of a rejected body) until it closes, so
      // that closing with unread data does not reset the connection before it reads the reply.
      Lowest().expires_after(std::chrono::seconds(5));
      Drain();
    }
  }

  void Drain() {
    drain_.resize(64u << 10);
    stream_.async_read_some(asio::buffer(drain_),
                            [self = this->shared_from_this()](beast::error_code ec, size_t n) {
                              self->drained_ += n;
                              if (!ec && self->drained_ < (size_t{64} << 20)) self->Drain();
                            });
  }

  const Shared& shared_;
  std::shared_ptr<void> keep_;  // the TLS context the stream uses (it may be swapped meanwhile)
  Stream stream_;
  std::optional<PeerCertificate> peer_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  bhttp::response<bhttp::string_body> res_;
  std::vector<char> drain_;
  size_t drained_ = 0;
};

}  // namespace

struct Server::Impl {
  // Order matters: the io_context (and the sessions its handlers own) dies before what they use.
  Shared shared;
  std::unique_ptr<TlsContextSource> tls;
  asio::io_context ioc;
  std::optional<tcp::acceptor> acceptor;
  std::vector<std::thread> threads;
  uint16_t port = 0;
  bool started = false;
  bool stopped = false;

  void Accept() {
    acceptor->async_accept(asio::make_strand(ioc), [this](beast::error_code ec,
                                                          tcp::socket socket) {
      if (ec == asio::error::operation_aborted || !acceptor->is_open()) return;
      if (!ec) {
        beast::error_code ignored;
        socket.set_option(tcp::no_delay(true), ignored);
        if (tls) {
          std::shared_ptr<asio::ssl::context> ctx = tls->Current();
          asio::ssl::context& ref = *ctx;
          std::make_shared<Session<beast::ssl_stream<beast::tcp_stream>>>(shared, std::move(ctx),
                                                                          std::move(socket), ref)
              ->Start();
        } else {
          std::make_shared<Session<beast::tcp_stream>>(shared, nullptr, std::move(socket))->Start();
        }
      }
      Accept();  // accept errors (EMFILE, ...) do not stop the listener
    });
  }
};

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() { Stop(); }

common::StatusOr<std::unique_ptr<Server>> Server::Create(ServerOptions options) {
  if (options.threads < 1) return common::InvalidArgumentError("http: threads must be >= 1");
  if (options.max_body_bytes == 0)
    return common::InvalidArgumentError("http: max_body_bytes must be > 0");
  auto impl = std::make_unique<Impl>();
  if (options.tls.enabled) {
    GPUSCHED_ASSIGN_OR_RETURN(impl->tls, TlsContextSource::Create(options.tls));
  }
  impl->shared.options = std::move(options);
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

void Server::SetFilter(Filter filter) { impl_->shared.routes.filter = std::move(filter); }

void Server::Handle(std::string method, std::string path, Handler handler) {
  impl_->shared.routes.by_path[std::move(path)][std::move(method)] = std::move(handler);
}

common::Status Server::Start() {
  Impl& m = *impl_;
  if (m.started) return common::FailedPreconditionError("http: server already started");
  beast::error_code ec;
  auto address = asio::ip::make_address(m.shared.options.bind_address, ec);
  if (ec) {
    return common::InvalidArgumentError("http: bind address \"" + m.shared.options.bind_address +
                                        "\": " + ec.message());
  }
  tcp::endpoint endpoint(address, m.shared.options.port);
  m.acceptor.emplace(m.ioc);
  auto fail = [&](const char* what) {
    return common::UnavailableError(std::string("http: ") + what + " " + address.to_string() + ":" +
                                    std::to_string(m.shared.options.port) + ": " + ec.message());
  };
  if (m.acceptor->open(endpoint.protocol(), ec); ec) return fail("open");
  if (m.acceptor->set_option(asio::socket_base::reuse_address(true), ec); ec)
    return fail("setsockopt");
  if (m.acceptor->bind(endpoint, ec); ec) return fail("bind");
  if (m.acceptor->listen(asio::socket_base::max_listen_connections, ec); ec) return fail("listen");
  m.port = m.acceptor->local_endpoint(ec).port();
  m.started = true;
  m.Accept();
  for (int i = 0; i < m.shared.options.threads; ++i) {
    m.threads.emplace_back([&m] {
      for (;;) {
        try {
          m.ioc.run();
          return;
        } catch (...) {
          // A handler threw past its own catch (should not happen); keep serving.
        }
      }
    });
  }
  return common::Status::Ok();
}

uint16_t Server::port() const { return impl_->port; }

bool Server::tls() const { return impl_->tls != nullptr; }

int Server::tls_reloads() const { return impl_->tls ? impl_->tls->reloads() : 0; }

std::string Server::tls_reload_error() const {
  return impl_->tls ? impl_->tls->last_reload_error() : std::string();
}

void Server::Stop() {
  Impl& m = *impl_;
  if (!m.started || m.stopped) return;
  m.stopped = true;
  m.ioc.stop();
  for (auto& t : m.threads) t.join();
  m.threads.clear();
  // No worker runs now: the listener can be closed from here.
  beast::error_code ignored;
  m.acceptor->close(ignored);
}

}  // namespace gpusched::http
