// SPDX-License-Identifier: Apache-2.0
// Http1ResponseParser: an incremental reader of one HTTP/1.1 response, for the client's lean
// write path (HttpRestClient sends writes as raw HTTP/1.1 over a kept-alive TLS connection; see
// http_client.h). The protocol is Boost.Beast's `http::response_parser`; this class adds what
// the client needs on top: input in pieces of any size, interim 1xx answers skipped, the
// checks Beast leaves to its caller, limits, a streaming body sink, and error messages that
// name what was wrong.
//
// Feed() takes bytes as they arrive, in pieces of any size; Finish() reports end of stream.
// Understood: HTTP/1.0 and 1.1 status lines (the SP before an empty reason phrase is required,
// as RFC 9112 says), interim 1xx answers (skipped; 101 is an error), Content-Length,
// Transfer-Encoding: chunked (extensions and trailers skipped), a body delimited by the end of
// the connection, Connection: close / keep-alive, Retry-After (seconds), and answers without a
// body (HEAD, 1xx, 204, 304). Refused: another Transfer-Encoding or a Content-Encoding other
// than identity (the client asks for neither), Content-Length with Transfer-Encoding, and
// anything else malformed; each is kError with a message that names what was wrong. Limits:
// the status line and headers together at most 64 KiB; the body at most `max_body` bytes
// (kTooLarge).
//
// Bytes after the end of the response are an error (the client never pipelines): the
// connection is then not reusable.
//
// Streaming (watches): with a body sink set, body bytes go to the sink as they arrive instead of
// into body(), and `max_body` does not apply (the sink enforces its own limits). A sink that
// returns false ends the parse with kStopped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace gpusched::kube::client {

// "Retry-After: 3" -> 3 (seconds, at most a day). The HTTP-date form is not used by the API
// server and gives nullopt, as anything else that is not a plain number does. Both of the
// client's transports read the header with this.
std::optional<int64_t> ParseRetryAfterSeconds(std::string_view value);

class Http1ResponseParser {
 public:
  enum class State { kNeedMore, kDone, kError, kTooLarge, kStopped };

  // `head`: the request was HEAD (the answer has headers only).
  Http1ResponseParser(size_t max_body, bool head);
  ~Http1ResponseParser();
  Http1ResponseParser(Http1ResponseParser&&) noexcept;
  Http1ResponseParser& operator=(Http1ResponseParser&&) noexcept;

  // Body bytes go to `sink` from now on (set before the body starts; status() is known by the
  // time the sink is first called).
  void set_body_sink(std::function<bool(std::string_view)> sink);

  // Consumes `data`. Returns kNeedMore until the response is complete; once it is not
  // kNeedMore, the state is final and further input is ignored.
  State Feed(std::string_view data);
  // The peer closed the connection: completes a body delimited by the close, else kError.
  State Finish();

  State state() const { return state_; }
  int status() const { return status_; }
  const std::string& body() const;
  std::string& mutable_body();
  std::optional<int64_t> retry_after_seconds() const { return retry_after_; }
  // The connection may carry another request after this response.
  bool keep_alive() const { return keep_alive_; }
  // Whether any byte of the response has arrived.
  bool started() const { return started_; }
  const std::string& error() const { return error_; }
  // kError because the connection closed before the response was complete (not malformed).
  bool truncated() const { return truncated_; }

 private:
  struct Impl;  // the Beast parser and the unparsed input (http1_response.cc)

  State Fail(std::string message);
  // Runs the parser over `in`, dropping what it consumed, until `in` is used up, the parser
  // needs more, or the state is final.
  void Consume(std::string_view& in);
  // The head is complete: checks what Beast leaves to its caller; records status, Retry-After.
  State CheckHead();
  // The parser finished a message; `rest` follows it. An interim answer restarts the parser.
  State MessageDone(std::string_view rest);

  std::unique_ptr<Impl> impl_;
  State state_ = State::kNeedMore;
  std::string error_;
  int status_ = 0;
  std::optional<int64_t> retry_after_;
  bool keep_alive_ = true;
  bool started_ = false;
  bool truncated_ = false;
};

}  // namespace gpusched::kube::client
