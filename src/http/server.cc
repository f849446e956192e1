// SPDX-License-Identifier: Apache-2.0
// Boost.Beast is the only throwing library here; every exception it can raise is caught in this
// file (construction, bind, TLS setup) or reported through error_code (I/O).
#include "src/http/server.h"

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

  Response Dispatch(const Request& req) const {
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

template <class Stream>
class Session : public std::enable_shared_from_this<Session<Stream>> {
 public:
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

  template <class... Args>
  Session(const Shared& shared, Args&&... args)
      : shared_(shared), stream_(std::forward<Args>(args)...) {}

  void Start() {
    if constexpr (kTls) {
      Lowest().expires_after(shared_.options.io_timeout);
      stream_.async_handshake(asio::ssl::stream_base::server,
                              [self = this->shared_from_this()](beast::error_code ec) {
                                if (ec) return;  // dropped: not a TLS client, or timed out
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
  Stream stream_;
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
  std::optional<asio::ssl::context> ssl;
  asio::io_context ioc;
  std::optional<tcp::acceptor> acceptor;
  std::vector<std::thread> threads;
  uint16_t port = 0;
  bool started = false;
  bool stopped = false;

  void Accept() {
    acceptor->async_accept(
        asio::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
          if (ec == asio::error::operation_aborted || !acceptor->is_open()) return;
          if (!ec) {
            beast::error_code ignored;
            socket.set_option(tcp::no_delay(true), ignored);
            if (ssl) {
              std::make_shared<Session<beast::ssl_stream<beast::tcp_stream>>>(
                  shared, std::move(socket), *ssl)
                  ->Start();
            } else {
              std::make_shared<Session<beast::tcp_stream>>(shared, std::move(socket))->Start();
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
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    return common::InvalidArgumentError(
        "http: TLS needs both a certificate and a private key file");
  }
  auto impl = std::make_unique<Impl>();
  if (!options.tls_cert_file.empty()) {
    try {
      impl->ssl.emplace(asio::ssl::context::tls_server);
      impl->ssl->set_options(asio::ssl::context::default_workarounds |
                             asio::ssl::context::no_sslv2 | asio::ssl::context::no_sslv3 |
                             asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1);
      impl->ssl->use_certificate_chain_file(options.tls_cert_file);
      impl->ssl->use_private_key_file(options.tls_key_file, asio::ssl::context::pem);
    } catch (const std::exception& e) {
      return common::InvalidArgumentError("http: loading TLS cert " + options.tls_cert_file +
                                          " / key " + options.tls_key_file + ": " + e.what());
    }
  }
  impl->shared.options = std::move(options);
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

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

bool Server::tls() const { return impl_->ssl.has_value(); }

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
