// SPDX-License-Identifier: Apache-2.0
// Fuzzes kube::client::Http1ResponseParser, which reads every answer to the scheduler's writes
// (bindings, events, status patches) off the wire.
// Input: byte 0 picks the piece size (1..16) and the HEAD flag; the rest is the server's bytes.
// Properties: the body never exceeds the limit; fed whole and fed in pieces, an answer that is
// complete both ways has the same status, body and keep-alive; a finished parse accepts no more.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "src/kube/client/http1_response.h"

using gpusched::kube::client::Http1ResponseParser;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t piece = 1 + (data[0] & 15);
  const bool head = (data[0] & 16) != 0;
  const std::string_view wire(reinterpret_cast<const char*>(data) + 1, size - 1);
  constexpr size_t kMaxBody = 4096;

  Http1ResponseParser whole(kMaxBody, head);
  whole.Feed(wire);
  whole.Finish();
  Http1ResponseParser pieces(kMaxBody, head);
  for (size_t i = 0; i < wire.size() && pieces.state() == Http1ResponseParser::State::kNeedMore;
       i += piece) {
    pieces.Feed(wire.substr(i, piece));
  }
  pieces.Finish();

  for (const Http1ResponseParser* p : {&whole, &pieces}) {
    FUZZ_CHECK(p->body().size() <= kMaxBody, "the body stays within the limit");
    FUZZ_CHECK(p->state() != Http1ResponseParser::State::kNeedMore, "Finish() ends every parse");
    if (p->state() == Http1ResponseParser::State::kDone) {
      FUZZ_CHECK(p->status() >= 200 && p->status() <= 999, "a final status is 2xx..9xx");
    } else if (p->state() == Http1ResponseParser::State::kError) {
      FUZZ_CHECK(!p->error().empty(), "an error says what was wrong");
      FUZZ_CHECK(!p->keep_alive(), "a connection with a bad answer is not reused");
    }
  }
  if (whole.state() == Http1ResponseParser::State::kDone &&
      pieces.state() == Http1ResponseParser::State::kDone) {
    FUZZ_CHECK(whole.status() == pieces.status(), "same status whole and in pieces");
    FUZZ_CHECK(whole.body() == pieces.body(), "same body whole and in pieces");
    FUZZ_CHECK(whole.keep_alive() == pieces.keep_alive(), "same keep-alive whole and in pieces");
  }
  return 0;
}
