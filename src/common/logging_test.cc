// SPDX-License-Identifier: Apache-2.0
#include "src/common/logging.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <boost/json.hpp>
#include <string>
#include <vector>

namespace gpusched::common {
namespace {

std::string Json(std::string_view s) {
  std::string out;
  AppendJsonString(out, s);
  return out;
}

TEST(AppendJsonStringTest, EscapesAndRoundTrips) {
  struct Case {
    std::string name;
    std::string in;
    std::string want;       // the encoded literal
    std::string want_back;  // what a JSON parser reads back
  };
  const std::vector<Case> cases = {
      {"plain text is kept", "pod default/p", "\"pod default/p\"", "pod default/p"},
      {"quotes and backslashes are escaped", R"(a "b" \c)", R"("a \"b\" \\c")", R"(a "b" \c)"},
      {"newline, tab, CR use short escapes", "a\nb\tc\r", R"("a\nb\tc\r")", "a\nb\tc\r"},
      {"other control characters use \\u00XX", std::string("x\x01y\x1f", 4), R"("x\u0001y\u001f")",
       std::string("x\x01y\x1f", 4)},
      {"a NUL byte is escaped, not a terminator", std::string("a\0b", 3), R"("a\u0000b")",
       std::string("a\0b", 3)},
      {"valid UTF-8 passes through", "GPU \xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80",
       "\"GPU \xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\"", "GPU \xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"},
      {"a lone continuation byte becomes U+FFFD", "a\x80z", R"("a\ufffdz")", "a\xEF\xBF\xBDz"},
      {"a truncated sequence becomes U+FFFD per byte", "a\xE2\x82", R"("a\ufffd\ufffd")",
       "a\xEF\xBF\xBD\xEF\xBF\xBD"},
      {"an overlong encoding is rejected", "\xC0\xAF", R"("\ufffd\ufffd")",
       "\xEF\xBF\xBD\xEF\xBF\xBD"},
      {"a UTF-16 surrogate is rejected", "\xED\xA0\x80", R"("\ufffd\ufffd\ufffd")",
       "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::string got = Json(c.in);
    EXPECT_EQ(got, c.want);
    boost::system::error_code ec;
    boost::json::value v = boost::json::parse(got, ec);
    ASSERT_FALSE(ec) << ec.message() << " in " << got;
    ASSERT_TRUE(v.is_string());
    EXPECT_EQ(std::string(v.as_string()), c.want_back);
  }
}

TEST(FormatLogLineTest, JsonLineIsOneObjectWithTsLevelVMsgAndFields) {
  const auto ts =
      std::chrono::system_clock::time_point(std::chrono::microseconds(1764465640123456));
  const LogField fields[] = {
      {"pod", "ns/\"quoted\"\nname"}, {"feasibleNodes", 3}, {"score", 2.5}, {"bound", true}};
  std::string line = FormatLogLine(LogFormat::kJson, LogLevel::kInfo, 2, ts, 7,
                                   "Successfully bound pod to node", true, fields);
  EXPECT_EQ(line.find('\n'), std::string::npos) << "one record is one line";
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(line, ec);
  ASSERT_FALSE(ec) << line;
  const auto& o = v.as_object();
  EXPECT_DOUBLE_EQ(o.at("ts").to_number<double>(), 1764465640.123456);
  EXPECT_EQ(o.at("level").as_string(), "info");
  EXPECT_EQ(o.at("v").as_int64(), 2);
  EXPECT_EQ(o.at("msg").as_string(), "Successfully bound pod to node");
  EXPECT_EQ(o.at("pod").as_string(), "ns/\"quoted\"\nname");
  EXPECT_EQ(o.at("feasibleNodes").as_int64(), 3);
  EXPECT_DOUBLE_EQ(o.at("score").as_double(), 2.5);
  EXPECT_EQ(o.at("bound").as_bool(), true);
}

TEST(FormatLogLineTest, PlainMessagesWithJsonMetacharactersStillParse) {
  const auto ts = std::chrono::system_clock::time_point(std::chrono::seconds(1));
  for (const std::string& msg : {std::string("unschedulable message=\"0/3 nodes\" {x}"),
                                 std::string("path C:\\dir\t\x02 \xff end")}) {
    SCOPED_TRACE(msg);
    std::string line =
        FormatLogLine(LogFormat::kJson, LogLevel::kWarning, 0, ts, 1, msg, false, {});
    boost::system::error_code ec;
    boost::json::value v = boost::json::parse(line, ec);
    ASSERT_FALSE(ec) << line;
    EXPECT_EQ(v.as_object().at("level").as_string(), "warning");
    EXPECT_FALSE(v.as_object().contains("v")) << "v is for info lines";
  }
}

TEST(FormatLogLineTest, NonFiniteDoublesAreNullInJson) {
  const LogField fields[] = {{"x", std::numeric_limits<double>::infinity()}};
  std::string line = FormatLogLine(LogFormat::kJson, LogLevel::kInfo, 0, {}, 1, "m", true, fields);
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(line, ec);
  ASSERT_FALSE(ec) << line;
  EXPECT_TRUE(v.as_object().at("x").is_null());
}

TEST(FormatLogLineTest, TextLineIsKlogStyle) {
  const auto ts =
      std::chrono::system_clock::time_point(std::chrono::microseconds(1764465640123456));
  const LogField fields[] = {{"pod", "default/p"}, {"feasibleNodes", 3}, {"bad key", "v"}};
  std::string structured = FormatLogLine(LogFormat::kText, LogLevel::kInfo, 2, ts, 42,
                                         "Successfully bound pod to node", true, fields);
  EXPECT_EQ(structured,
            "I1130 01:20:40.123456      42] \"Successfully bound pod to node\" pod=\"default/p\" "
            "feasibleNodes=3 bad_key=\"v\"");
  std::string plain =
      FormatLogLine(LogFormat::kText, LogLevel::kError, 0, ts, 42, "boom", false, {});
  EXPECT_EQ(plain, "E1130 01:20:40.123456      42] boom");
}

TEST(InfoSTest, VerbosityGatesAndEveryLineParses) {
  InitLoggingForTest(LogFormat::kJson, 2);
  InfoS(2, "shown", {{"pod", "a/b"}});
  InfoS(3, "hidden");
  spdlog::info("plain \"quoted\" {}", 1);
  ErrorS("dial tcp: refused", "binding failed", {{"pod", "a/b"}});
  std::string out = TakeLogOutputForTest();
  std::vector<boost::json::object> lines;
  size_t start = 0;
  while (start < out.size()) {
    size_t nl = out.find('\n', start);
    ASSERT_NE(nl, std::string::npos);
    boost::system::error_code ec;
    auto v = boost::json::parse(std::string_view(out).substr(start, nl - start), ec);
    ASSERT_FALSE(ec) << out.substr(start, nl - start);
    lines.push_back(v.as_object());
    start = nl + 1;
  }
  ASSERT_EQ(lines.size(), 3u) << out;
  EXPECT_EQ(lines[0].at("msg").as_string(), "shown");
  EXPECT_EQ(lines[0].at("pod").as_string(), "a/b");
  EXPECT_EQ(lines[1].at("msg").as_string(), "plain \"quoted\" 1");
  EXPECT_EQ(lines[2].at("level").as_string(), "error");
  EXPECT_EQ(lines[2].at("err").as_string(), "dial tcp: refused");
}

}  // namespace
}  // namespace gpusched::common
