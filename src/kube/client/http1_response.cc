// SPDX-License-Identifier: Apache-2.0
#include "src/kube/client/http1_response.h"

#include <algorithm>

#include "src/common/strings.h"

namespace gpusched::kube::client {
namespace {

constexpr size_t kMaxHead = size_t{64} << 10;
constexpr size_t kMaxLine = 4096;

// Whether the comma-separated token list `value` holds `token` (case-insensitive).
bool HasToken(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    size_t comma = value.find(',');
    std::string_view item = common::Trim(value.substr(0, comma));
    if (common::EqualsIgnoreCase(item, token)) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

std::optional<uint64_t> ParseDecimal(std::string_view s) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

std::optional<uint64_t> ParseHex(std::string_view s) {
  if (s.empty() || s.size() > 15) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else return std::nullopt;
    v = v * 16 + static_cast<uint64_t>(d);
  }
  return v;
}

}  // namespace

std::optional<int64_t> ParseRetryAfterSeconds(std::string_view value) {
  auto secs = ParseDecimal(common::Trim(value));
  if (!secs) return std::nullopt;
  return static_cast<int64_t>(std::min<uint64_t>(*secs, 86400));
}

Http1ResponseParser::Http1ResponseParser(size_t max_body, bool head)
    : max_body_(max_body), head_request_(head) {}

Http1ResponseParser::State Http1ResponseParser::Fail(std::string message) {
  error_ = std::move(message);
  keep_alive_ = false;
  return state_ = State::kError;
}

Http1ResponseParser::State Http1ResponseParser::ParseHead(std::string_view head) {
  // Status line: HTTP/1.x SP 3DIGIT [SP reason].
  size_t eol = head.find("\r\n");
  std::string_view line = head.substr(0, eol);
  if (line.size() < 12 || line.substr(0, 7) != "HTTP/1." || line[8] != ' ' ||
      (line.size() > 12 && line[12] != ' ')) {
    return Fail("malformed status line " + common::Quote(line.substr(0, 80)));
  }
  bool http10 = line[7] == '0';
  if (!http10 && line[7] != '1') return Fail("unsupported HTTP version " + common::Quote(line.substr(0, 8)));
  auto code = ParseDecimal(line.substr(9, 3));
  if (!code || *code < 100) return Fail("malformed status code " + common::Quote(line.substr(9, 3)));
  status_ = static_cast<int>(*code);
  keep_alive_ = !http10;

  std::optional<uint64_t> content_length;
  bool chunked = false;
  retry_after_.reset();
  std::string_view rest = eol == std::string_view::npos ? std::string_view() : head.substr(eol + 2);
  while (!rest.empty()) {
    eol = rest.find("\r\n");
    line = rest.substr(0, eol);
    rest = eol == std::string_view::npos ? std::string_view() : rest.substr(eol + 2);
    if (line.empty()) continue;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      return Fail("malformed header line " + common::Quote(line.substr(0, 80)));
    }
    std::string_view name = line.substr(0, colon);
    std::string_view value = common::Trim(line.substr(colon + 1));
    if (common::EqualsIgnoreCase(name, "content-length")) {
      auto n = ParseDecimal(value);
      if (!n || (content_length && *content_length != *n)) {
        return Fail("malformed Content-Length " + common::Quote(value.substr(0, 40)));
      }
      content_length = n;
    } else if (common::EqualsIgnoreCase(name, "transfer-encoding")) {
      if (!common::EqualsIgnoreCase(value, "chunked")) {
        return Fail("unsupported Transfer-Encoding " + common::Quote(value.substr(0, 40)));
      }
      chunked = true;
    } else if (common::EqualsIgnoreCase(name, "content-encoding")) {
      if (!common::EqualsIgnoreCase(value, "identity")) {
        return Fail("unrequested Content-Encoding " + common::Quote(value.substr(0, 40)));
      }
    } else if (common::EqualsIgnoreCase(name, "connection")) {
      if (HasToken(value, "close")) keep_alive_ = false;
      else if (HasToken(value, "keep-alive")) keep_alive_ = true;
    } else if (common::EqualsIgnoreCase(name, "retry-after")) {
      retry_after_ = ParseRetryAfterSeconds(value);
    }
  }

  if (status_ < 200) {
    if (status_ == 101) return Fail("unexpected 101 Switching Protocols");
    phase_ = Phase::kHead;  // an interim answer: the real one follows
    return State::kNeedMore;
  }
  if (head_request_ || status_ == 204 || status_ == 304) {
    phase_ = Phase::kDone;
  } else if (chunked) {
    phase_ = Phase::kChunkSize;
  } else if (content_length) {
    if (!sink_ && *content_length > max_body_) return state_ = State::kTooLarge;
    remaining_ = *content_length;
    if (!sink_) body_.reserve(static_cast<size_t>(*content_length));
    phase_ = remaining_ == 0 ? Phase::kDone : Phase::kBodyLength;
  } else {
    keep_alive_ = false;
    phase_ = Phase::kBodyUntilClose;
  }
  return State::kNeedMore;
}

bool Http1ResponseParser::TakeLine(std::string_view& data, std::string& out) {
  size_t nl = data.find('\n');
  if (nl == std::string_view::npos) {
    pending_.append(data);
    data = {};
    return false;
  }
  pending_.append(data.substr(0, nl + 1));
  data.remove_prefix(nl + 1);
  out = std::move(pending_);
  pending_.clear();
  return true;
}

Http1ResponseParser::State Http1ResponseParser::AppendBody(std::string_view data) {
  if (sink_) {
    if (data.empty() || sink_(data)) return State::kNeedMore;
    keep_alive_ = false;
    return state_ = State::kStopped;
  }
  if (body_.size() + data.size() > max_body_) {
    keep_alive_ = false;
    return state_ = State::kTooLarge;
  }
  body_.append(data);
  return State::kNeedMore;
}

Http1ResponseParser::State Http1ResponseParser::Feed(std::string_view data) {
  if (!data.empty()) started_ = true;
  while (state_ == State::kNeedMore && !data.empty()) {
    switch (phase_) {
      case Phase::kHead: {
        // Fast path: the whole head in this piece.
        std::string_view head;
        size_t end;
        if (pending_.empty() && (end = data.find("\r\n\r\n")) != std::string_view::npos) {
          head = data.substr(0, end + 2);
          data.remove_prefix(end + 4);
          if (ParseHead(head) != State::kNeedMore) return state_;
          break;
        }
        size_t old = pending_.size();
        pending_.append(data);
        end = pending_.find("\r\n\r\n", old >= 3 ? old - 3 : 0);
        if (end == std::string::npos) {
          if (pending_.size() > kMaxHead) return Fail("response headers exceed 64 KiB");
          data = {};
          break;
        }
        if (end > kMaxHead) return Fail("response headers exceed 64 KiB");
        std::string all = std::move(pending_);
        pending_.clear();
        data = std::string_view(all).substr(end + 4);
        // `data` points into `all`: finish this piece here, recursively, before `all` dies.
        if (ParseHead(std::string_view(all).substr(0, end + 2)) != State::kNeedMore) return state_;
        return Feed(data);
      }
      case Phase::kBodyLength:
      case Phase::kChunkData: {  // `remaining_` counted bytes, then the end or the chunk's CRLF
        size_t take = static_cast<size_t>(std::min<uint64_t>(remaining_, data.size()));
        if (AppendBody(data.substr(0, take)) != State::kNeedMore) return state_;
        data.remove_prefix(take);
        remaining_ -= take;
        if (remaining_ == 0) phase_ = phase_ == Phase::kBodyLength ? Phase::kDone : Phase::kChunkEnd;
        break;
      }
      case Phase::kBodyUntilClose:
        if (AppendBody(data) != State::kNeedMore) return state_;
        data = {};
        break;
      case Phase::kChunkSize: {
        std::string line;
        if (!TakeLine(data, line)) {
          if (pending_.size() > kMaxLine) return Fail("chunk size line exceeds 4 KiB");
          break;
        }
        std::string_view v(line);
        v = v.substr(0, v.find_first_of(";\r\n"));
        auto size = ParseHex(common::Trim(v));
        if (!size) return Fail("malformed chunk size " + common::Quote(common::Trim(line).substr(0, 40)));
        if (!sink_ && *size > max_body_) return state_ = State::kTooLarge;
        remaining_ = *size;
        phase_ = remaining_ == 0 ? Phase::kTrailers : Phase::kChunkData;
        break;
      }
      case Phase::kChunkEnd: {
        std::string line;
        if (!TakeLine(data, line)) {
          if (pending_.size() > 2) return Fail("chunk not followed by CRLF");
          break;
        }
        if (line != "\r\n" && line != "\n") return Fail("chunk not followed by CRLF");
        phase_ = Phase::kChunkSize;
        break;
      }
      case Phase::kTrailers: {
        std::string line;
        if (!TakeLine(data, line)) {
          if (pending_.size() > kMaxLine) return Fail("trailer line exceeds 4 KiB");
          break;
        }
        if (line == "\r\n" || line == "\n") phase_ = Phase::kDone;
        break;
      }
      case Phase::kDone:
        return Fail("unexpected bytes after the response");
    }
  }
  if (state_ == State::kNeedMore && phase_ == Phase::kDone) {
    if (!data.empty()) return Fail("unexpected bytes after the response");
    state_ = State::kDone;
  }
  return state_;
}

Http1ResponseParser::State Http1ResponseParser::Finish() {
  if (state_ != State::kNeedMore) return state_;
  keep_alive_ = false;
  if (phase_ == Phase::kBodyUntilClose) return state_ = State::kDone;
  truncated_ = true;
  if (!started_) return Fail("connection closed before any response");
  return Fail("connection closed in the middle of the response");
}

}  // namespace gpusched::kube::client
