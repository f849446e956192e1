// SPDX-License-Identifier: Apache-2.0
#include "src/kube/client/http1_response.h"

#include <algorithm>
#include <boost/beast/core/buffers_range.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <stdexcept>

#include "src/common/strings.h"

namespace gpusched::kube::client {
namespace {

namespace beast = boost::beast;
namespace bhttp = beast::http;

constexpr size_t kMaxHead = size_t{64} << 10;

std::optional<uint64_t> ParseDecimal(std::string_view s) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

// Where the body goes: into `data`, or to `sink` when one is set.
struct BodyValue {
  std::string data;
  const std::function<bool(std::string_view)>* sink = nullptr;
  uint64_t received = 0;  // body bytes so far, wherever they went
  bool stopped = false;   // the sink said stop
};

// A Beast Body (http::string_body, plus the sink).
struct SinkBody {
  using value_type = BodyValue;

  class reader {
   public:
    template <bool isRequest, class Fields>
    reader(bhttp::header<isRequest, Fields>&, value_type& v) : v_(v) {}

    // `n` is within the body limit when there is no sink (the parser checked it).
    void init(const boost::optional<uint64_t>& n, beast::error_code& ec) {
      if (n && !HasSink()) v_.data.reserve(static_cast<size_t>(*n));
      ec = {};
    }

    template <class ConstBufferSequence>
    size_t put(const ConstBufferSequence& buffers, beast::error_code& ec) {
      ec = {};
      size_t taken = 0;
      for (auto b : beast::buffers_range_ref(buffers)) {
        std::string_view piece(static_cast<const char*>(b.data()), b.size());
        if (HasSink() && !piece.empty() && !(*v_.sink)(piece)) {
          v_.stopped = true;
          ec = beast::error_code(ECANCELED, boost::system::generic_category());
          break;
        }
        if (!HasSink()) v_.data.append(piece);
        taken += piece.size();
      }
      v_.received += taken;
      return taken;
    }

    void finish(beast::error_code& ec) { ec = {}; }

   private:
    bool HasSink() const { return v_.sink != nullptr && *v_.sink; }
    value_type& v_;
  };
};

using Parser = bhttp::response_parser<SinkBody>;

std::string_view FirstLine(std::string_view at) {
  return at.substr(0, std::min(at.find('\n'), at.find("\r\n")));
}

// The trimmed value of the header line at `at` ("Name: value\r\n...").
std::string_view HeaderValue(std::string_view at) {
  std::string_view line = FirstLine(at);
  size_t colon = line.find(':');
  return common::Trim(colon == std::string_view::npos ? line : line.substr(colon + 1));
}

// The message for Beast's `ec`, raised at `at` (the input the parser did not consume).
// `at_start`: no byte of the head was consumed yet (the status line is at `at`).
// `body_seen`: body bytes arrived (a chunk was read).
std::string ParseErrorMessage(beast::error_code ec, std::string_view at, bool at_start,
                              bool body_seen) {
  using E = bhttp::error;
  if (ec == E::bad_version || ec == E::bad_reason || (ec == E::bad_line_ending && at_start)) {
    return "malformed status line " + common::Quote(FirstLine(at).substr(0, 80));
  }
  if (ec == E::bad_status) {
    std::string_view code = FirstLine(at).substr(9, 3);
    if (code.size() == 3 && std::all_of(code.begin(), code.end(), [](char c) {
          return c >= '0' && c <= '9';
        })) {  // the code is fine, what follows is not (no SP before the reason phrase)
      return "malformed status line " + common::Quote(FirstLine(at).substr(0, 80));
    }
    return "malformed status code " + common::Quote(code);
  }
  if (ec == E::header_limit) return "response headers exceed 64 KiB";
  if (ec == E::bad_field || ec == E::bad_value || ec == E::bad_obs_fold ||
      ec == E::bad_line_ending) {
    return "malformed header line " + common::Quote(FirstLine(at).substr(0, 80));
  }
  if (ec == E::bad_content_length || ec == E::multiple_content_length) {
    return "malformed Content-Length " + common::Quote(HeaderValue(at).substr(0, 40)) +
           " (conflicting, or with Transfer-Encoding)";
  }
  if (ec == E::bad_transfer_encoding) {
    return "unsupported Transfer-Encoding " + common::Quote(HeaderValue(at).substr(0, 40)) +
           " (repeated, or with Content-Length)";
  }
  if (ec == E::bad_chunk || ec == E::bad_chunk_extension) {
    // Beast reads a chunk's closing CRLF with the next chunk's size line.
    if (body_seen && at.substr(0, 2) != "\r\n") return "chunk not followed by CRLF";
    if (at.substr(0, 2) == "\r\n") at.remove_prefix(2);
    std::string_view line = common::Trim(FirstLine(at)).substr(0, 40);
    return (ec == E::bad_chunk ? "malformed chunk size " : "malformed chunk extension ") +
           common::Quote(line);
  }
  return ec.message();
}

}  // namespace

std::optional<int64_t> ParseRetryAfterSeconds(std::string_view value) {
  auto secs = ParseDecimal(common::Trim(value));
  if (!secs) return std::nullopt;
  return static_cast<int64_t>(std::min<uint64_t>(*secs, 86400));
}

struct Http1ResponseParser::Impl {
  Impl(size_t max_body, bool head) : max_body(max_body), head_request(head) { Restart(); }

  // A fresh Beast parser for the next message (the first, or the one after an interim answer).
  void Restart() {
    parser.emplace();
    parser->header_limit(static_cast<std::uint32_t>(kMaxHead));
    if (sink) {
      parser->body_limit(boost::none);
    } else {
      parser->body_limit(max_body);
    }
    parser->skip(head_request);
    parser->get().body().sink = &sink;
    head_consumed = 0;
    head_checked = false;
  }

  const size_t max_body;
  const bool head_request;
  std::function<bool(std::string_view)> sink;
  std::optional<Parser> parser;
  std::string pending;       // input the parser has not consumed (an incomplete head or line)
  size_t head_consumed = 0;  // bytes of the current head the parser has consumed
  bool head_checked = false;
};

Http1ResponseParser::Http1ResponseParser(size_t max_body, bool head)
    : impl_(std::make_unique<Impl>(max_body, head)) {}
Http1ResponseParser::~Http1ResponseParser() = default;
Http1ResponseParser::Http1ResponseParser(Http1ResponseParser&&) noexcept = default;
Http1ResponseParser& Http1ResponseParser::operator=(Http1ResponseParser&&) noexcept = default;

void Http1ResponseParser::set_body_sink(std::function<bool(std::string_view)> sink) {
  impl_->sink = std::move(sink);
  // The limit does not apply to a sink (it enforces its own).
  if (impl_->sink && !impl_->parser->is_header_done()) impl_->parser->body_limit(boost::none);
}

const std::string& Http1ResponseParser::body() const { return impl_->parser->get().body().data; }
std::string& Http1ResponseParser::mutable_body() { return impl_->parser->get().body().data; }

Http1ResponseParser::State Http1ResponseParser::Fail(std::string message) {
  error_ = std::move(message);
  keep_alive_ = false;
  return state_ = State::kError;
}

Http1ResponseParser::State Http1ResponseParser::CheckHead() {
  Impl& m = *impl_;
  m.head_checked = true;
  const auto& head = m.parser->get();
  // Beast frames any Transfer-Encoding and ignores Content-Encoding; the client accepts only
  // chunked and asks for no content coding.
  if (auto te = head.find(bhttp::field::transfer_encoding); te != head.end()) {
    if (!common::EqualsIgnoreCase(te->value(), "chunked")) {
      return Fail("unsupported Transfer-Encoding " + common::Quote(te->value().substr(0, 40)));
    }
  }
  if (auto ce = head.find(bhttp::field::content_encoding); ce != head.end()) {
    if (!common::EqualsIgnoreCase(ce->value(), "identity")) {
      return Fail("unrequested Content-Encoding " + common::Quote(ce->value().substr(0, 40)));
    }
  }
  const unsigned code = head.result_int();
  if (code < 100) return Fail("malformed status code " + common::Quote(std::to_string(code)));
  if (code == 101) return Fail("unexpected 101 Switching Protocols");
  status_ = static_cast<int>(code);
  retry_after_.reset();
  if (auto ra = head.find(bhttp::field::retry_after); ra != head.end()) {
    retry_after_ = ParseRetryAfterSeconds(ra->value());
  }
  return state_;
}

Http1ResponseParser::State Http1ResponseParser::MessageDone(std::string_view rest) {
  Impl& m = *impl_;
  if (status_ < 200) {  // an interim answer: the real one follows
    m.Restart();
    return state_;
  }
  if (!rest.empty()) return Fail("unexpected bytes after the response");
  keep_alive_ = m.parser->keep_alive();
  return state_ = State::kDone;
}

void Http1ResponseParser::Consume(std::string_view& in) {
  Impl& m = *impl_;
  while (state_ == State::kNeedMore && !in.empty()) {
    // Boost.Beast before Boost 1.86 asserts (boostorg/beast#2861) when a chunked body's last
    // chunk, with no chunk before it, comes again in fewer than 5 bytes ("0\r\n", then
    // "0\r\n\r"). A last chunk needs at least 5 ("0\r\n\r\n") and Beast consumes none of it
    // before it has them all, so waiting for 5 changes nothing else.
    if (m.parser->is_header_done() && m.parser->chunked() && in.size() < 5 && in.front() == '0') {
      return;
    }
    const bool at_start = m.head_consumed == 0 && !m.parser->is_header_done();
    beast::error_code ec;
    size_t n = 0;
    try {
      n = m.parser->put(boost::asio::buffer(in.data(), in.size()), ec);
    } catch (const std::length_error&) {  // a header field too long for Beast's fields
      ec = bhttp::error::header_limit;
    }
    if (!m.parser->is_header_done()) m.head_consumed += n;
    in.remove_prefix(n);
    if (ec == bhttp::error::need_more) {
      if (!m.parser->is_header_done() && m.head_consumed + in.size() > kMaxHead) {
        Fail("response headers exceed 64 KiB");
      }
      return;
    }
    const BodyValue& body = m.parser->get().body();
    if (body.stopped) {
      keep_alive_ = false;
      state_ = State::kStopped;
    } else if (ec == bhttp::error::body_limit) {
      keep_alive_ = false;
      state_ = State::kTooLarge;
    } else if (ec) {
      Fail(ParseErrorMessage(ec, in, at_start, body.received > 0));
    } else {
      if (m.parser->is_header_done() && !m.head_checked && CheckHead() != State::kNeedMore) return;
      if (m.parser->is_done()) {
        MessageDone(in);
      } else if (n == 0) {
        return;  // not expected: Beast consumes something or says why not
      }
    }
  }
}

Http1ResponseParser::State Http1ResponseParser::Feed(std::string_view data) {
  if (state_ != State::kNeedMore || data.empty()) return state_;
  started_ = true;
  std::string& pending = impl_->pending;
  if (pending.empty()) {  // fast path: parse in place, keep only what is left
    Consume(data);
    if (state_ == State::kNeedMore) pending.assign(data);
    return state_;
  }
  pending.append(data);
  std::string_view in(pending);
  Consume(in);
  if (state_ == State::kNeedMore) pending.erase(0, pending.size() - in.size());
  return state_;
}

Http1ResponseParser::State Http1ResponseParser::Finish() {
  if (state_ != State::kNeedMore) return state_;
  keep_alive_ = false;
  Parser& p = *impl_->parser;
  if (p.is_header_done() && impl_->head_checked && p.need_eof() && impl_->pending.empty()) {
    beast::error_code ec;
    p.put_eof(ec);
    if (!ec) return state_ = State::kDone;
  }
  truncated_ = true;
  if (!started_) return Fail("connection closed before any response");
  return Fail("connection closed in the middle of the response");
}

}  // namespace gpusched::kube::client
