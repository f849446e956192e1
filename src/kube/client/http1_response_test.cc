// SPDX-License-Identifier: Apache-2.0
#include "src/kube/client/http1_response.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpusched::kube::client {
namespace {

using State = Http1ResponseParser::State;
using ::testing::HasSubstr;

// Feeds `wire` in pieces of `piece` bytes (0: all at once), then Finish() when `close` is set.
Http1ResponseParser Parse(std::string_view wire, size_t piece = 0, bool close = false,
                          size_t max_body = 1 << 20, bool head = false) {
  Http1ResponseParser p(max_body, head);
  if (piece == 0) piece = wire.size() == 0 ? 1 : wire.size();
  for (size_t i = 0; i < wire.size() && p.state() == State::kNeedMore; i += piece) {
    p.Feed(wire.substr(i, piece));
  }
  if (close) p.Finish();
  return p;
}

struct Case {
  const char* name;
  std::string wire;
  bool close;  // the server closes after `wire`
  int status;
  std::string body;
  bool keep_alive;
};

TEST(Http1ResponseParserTest, ParsesWhateverWayTheBytesArrive) {
  const Case cases[] = {
      {"content-length",
       "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n"
       "Content-Length: 11\r\n\r\n{\"kind\":1}\n",
       false, 201, "{\"kind\":1}\n", true},
      {"empty reason phrase", "HTTP/1.1 200 \r\nContent-Length: 2\r\n\r\nok", false, 200, "ok",
       true},
      {"empty body", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false, 200, "", true},
      {"chunked with extension and trailer",
       "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
       "5;ext=1\r\nhello\r\nA\r\n, world!!!\r\n0\r\nX-Trailer: t\r\n\r\n",
       false, 200, "hello, world!!!", true},
      {"chunked, the last chunk only (Beast < 1.86 asserted on it fed a byte at a time)",
       "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", false, 200, "", true},
      {"chunked, the last chunk only, with a trailer",
       "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: 1\r\n\r\n", false, 200, "",
       true},
      {"interim 100 then the answer",
       "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 409 Conflict\r\nContent-Length: 1\r\n\r\nx", false,
       409, "x", true},
      {"body until close", "HTTP/1.1 500 Internal Server Error\r\n\r\nboom", true, 500, "boom",
       false},
      {"connection close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\n1",
       false, 200, "1", false},
      {"HTTP/1.0 closes", "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\n1", false, 200, "1", false},
      {"HTTP/1.0 keep-alive",
       "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 1\r\n\r\n1", false, 200, "1",
       true},
      {"204 has no body", "HTTP/1.1 204 No Content\r\n\r\n", false, 204, "", true},
      {"header case and spacing", "HTTP/1.1 200 OK\r\ncOnTeNt-LeNgTh:   3  \r\n\r\nabc", false, 200,
       "abc", true},
  };
  for (const auto& c : cases) {
    for (size_t piece : {size_t{0}, size_t{1}, size_t{2}, size_t{3}, size_t{7}}) {
      SCOPED_TRACE(std::string(c.name) + ", pieces of " + std::to_string(piece));
      auto p = Parse(c.wire, piece, c.close);
      ASSERT_EQ(p.state(), State::kDone) << p.error();
      EXPECT_EQ(p.status(), c.status);
      EXPECT_EQ(p.body(), c.body);
      EXPECT_EQ(p.keep_alive(), c.keep_alive);
    }
  }
}

TEST(Http1ResponseParserTest, RetryAfterAndHead) {
  auto p = Parse("HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\nContent-Length: 0\r\n\r\n");
  ASSERT_EQ(p.state(), State::kDone);
  EXPECT_EQ(p.retry_after_seconds(), 3);
  auto date = Parse(
      "HTTP/1.1 503 x\r\nRetry-After: Wed, 21 Oct 2015 07:28:00 GMT\r\n"
      "Content-Length: 0\r\n\r\n");
  EXPECT_FALSE(date.retry_after_seconds().has_value()) << "the date form is ignored";
  auto head = Parse("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", 0, false, 1 << 20, true);
  ASSERT_EQ(head.state(), State::kDone) << "a HEAD answer has no body whatever its length says";
  EXPECT_EQ(head.body(), "");
}

TEST(Http1ResponseParserTest, IncompleteAnswersNeedMoreThenFailOnClose) {
  for (std::string wire :
       {"HTTP/1.1 200 OK\r\nContent-Len", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel"}) {
    SCOPED_TRACE(wire);
    auto p = Parse(wire);
    EXPECT_EQ(p.state(), State::kNeedMore);
    EXPECT_TRUE(p.started());
    EXPECT_EQ(p.Finish(), State::kError);
    EXPECT_THAT(p.error(), HasSubstr("closed in the middle"));
    EXPECT_FALSE(p.keep_alive());
  }
  Http1ResponseParser none(100, false);
  EXPECT_FALSE(none.started());
  EXPECT_EQ(none.Finish(), State::kError);
  EXPECT_THAT(none.error(), HasSubstr("before any response"));
}

TEST(Http1ResponseParserTest, MalformedAnswersNameWhatIsWrong) {
  const std::pair<std::string, std::string> cases[] = {
      {"SSH-2.0-OpenSSH\r\n\r\n", "malformed status line"},
      {"HTTP/2.0 200 OK\r\n\r\n", "malformed status line"},
      {"HTTP/1.1 2x0 OK\r\n\r\n", "malformed status code"},
      {"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "malformed header line"},
      {"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "malformed Content-Length \"-1\""},
      {"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", "Content-Length"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
       "unsupported Transfer-Encoding \"gzip\""},
      {"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 1\r\n\r\n",
       "Content-Encoding"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
       "malformed chunk size \"zz\""},
      // (Beast reads a chunk's CRLF with the next size line, so the wire goes on to the last
      // chunk.)
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n0\r\n\r\n",
       "chunk not followed by CRLF"},
      {"HTTP/1.1 101 Switching Protocols\r\n\r\n", "101"},
      {"HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", "malformed status line \"HTTP/1.1 200\""},
      {"HTTP/1.1 099 Low\r\nContent-Length: 0\r\n\r\n", "malformed status code"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\nabc",
       "Transfer-Encoding"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nabc",
       "Content-Length"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nab", "unexpected bytes after the response"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200 OK\r\n", "unexpected bytes"},
  };
  for (const auto& [wire, want] : cases) {
    for (size_t piece : {size_t{0}, size_t{1}}) {
      // Fed a byte at a time, the response ends before the extra bytes arrive.
      if (piece == 1 && want.find("unexpected bytes") != std::string::npos) continue;
      SCOPED_TRACE(wire + " in pieces of " + std::to_string(piece));
      auto p = Parse(wire, piece);
      ASSERT_EQ(p.state(), State::kError);
      EXPECT_THAT(p.error(), HasSubstr(want));
      EXPECT_FALSE(p.keep_alive());
    }
  }
  std::string huge_head = "HTTP/1.1 200 OK\r\nX: " + std::string(70000, 'a');
  auto p = Parse(huge_head, 1000);
  ASSERT_EQ(p.state(), State::kError);
  EXPECT_THAT(p.error(), HasSubstr("64 KiB"));
  // Many short fields: the limit counts the whole head, however it arrives.
  std::string many = "HTTP/1.1 200 OK\r\n";
  while (many.size() < 70000) many += "X-Field: 0123456789abcdef0123456789abcdef\r\n";
  many += "Content-Length: 0\r\n\r\n";
  for (size_t piece : {size_t{0}, size_t{1000}}) {
    SCOPED_TRACE(piece);
    auto m = Parse(many, piece);
    ASSERT_EQ(m.state(), State::kError);
    EXPECT_THAT(m.error(), HasSubstr("64 KiB"));
  }
}

TEST(Http1ResponseParserTest, BodiesAboveTheLimitAreTooLarge) {
  EXPECT_EQ(Parse("HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n", 0, false, 10).state(),
            State::kTooLarge);
  EXPECT_EQ(Parse("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789", 0, false, 10).state(),
            State::kDone);
  EXPECT_EQ(Parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\n012345\r\n"
                  "6\r\n012345\r\n0\r\n\r\n",
                  3, false, 10)
                .state(),
            State::kTooLarge);
  EXPECT_EQ(Parse("HTTP/1.1 200 OK\r\n\r\n" + std::string(11, 'x'), 0, false, 10).state(),
            State::kTooLarge);
}

TEST(Http1ResponseParserTest, ABodySinkGetsAStreamAndCanStopIt) {
  const std::string wire =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "8\r\n{\"a\":1}\n\r\n8\r\n{\"b\":2}\n\r\n0\r\n\r\n";
  for (size_t piece : {size_t{1}, size_t{5}, wire.size()}) {
    SCOPED_TRACE(piece);
    Http1ResponseParser p(4, false);  // the limit does not apply to a sink
    std::string got;
    p.set_body_sink([&](std::string_view d) {
      EXPECT_EQ(p.status(), 200);
      got.append(d);
      return true;
    });
    for (size_t i = 0; i < wire.size(); i += piece) p.Feed(std::string_view(wire).substr(i, piece));
    EXPECT_EQ(p.state(), State::kDone);
    EXPECT_EQ(got, "{\"a\":1}\n{\"b\":2}\n");
    EXPECT_EQ(p.body(), "");
    EXPECT_TRUE(p.keep_alive());
  }
  Http1ResponseParser stop(1 << 20, false);
  int calls = 0;
  stop.set_body_sink([&](std::string_view) { return ++calls < 2; });
  EXPECT_EQ(stop.Feed(wire), State::kStopped);
  EXPECT_EQ(calls, 2);
  EXPECT_FALSE(stop.keep_alive());
}

}  // namespace
}  // namespace gpusched::kube::client
