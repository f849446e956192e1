// SPDX-License-Identifier: Apache-2.0
#include "src/kube/rest_client.h"

#include <boost/json.hpp>
#include <string>

#include "src/api/decode.h"
#include "src/api/fields.h"
#include "src/common/strings.h"

namespace gpusched::kube {
namespace {

// The reason phrase for the codes the API server actually sends.
std::string_view ReasonPhrase(int code) {
  switch (code) {
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 413: return "Request Entity Too Large";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "";
  }
}

common::StatusCode CodeFor(int http) {
  using common::StatusCode;
  switch (http) {
    case 400:
    case 422: return StatusCode::kInvalidArgument;
    case 401:
    case 403: return StatusCode::kPermissionDenied;
    case 404: return StatusCode::kNotFound;
    case 405: return StatusCode::kUnimplemented;
    case 408: return StatusCode::kDeadlineExceeded;
    case 409: return StatusCode::kAborted;
    case 410: return StatusCode::kOutOfRange;
    case 413:
    case 429: return StatusCode::kResourceExhausted;
    default: break;
  }
  if (http >= 500 && http < 600) return StatusCode::kUnavailable;
  if (http == 0) return StatusCode::kUnavailable;  // no answer at all
  // Redirects and the remaining 4xx: the request cannot succeed as sent.
  return StatusCode::kFailedPrecondition;
}

// The API's own explanation: metav1.Status.message when the body is a Status, else a quoted
// prefix of the body (the body may be HTML from a proxy).
std::string BodyMessage(std::string_view body) {
  if (common::Trim(body).empty()) return "";
  if (!body.empty() && common::Trim(body).front() == '{') {
    auto parsed = api::ParseJson(body, "response");
    api::JsonReader r(api::PlainDialect());
    const api::FieldPath root;
    // Best effort: a member of the wrong type reads as absent.
    if (const boost::json::object* o = parsed.ok() ? parsed->if_object() : nullptr) {
      for (std::string_view key : {"message", "reason"}) {
        if (std::string_view text = r.StringOr(*o, key, root); !text.empty()) {
          return std::string(text);
        }
      }
    }
  }
  constexpr size_t kMaxBody = 256;
  std::string_view t = common::Trim(body);
  std::string out = common::Quote(t.substr(0, kMaxBody));
  return out;
}

}  // namespace

common::Status StatusFromResponse(const Request& request, const Response& response) {
  if (response.ok()) return common::Status::Ok();
  std::string msg = request.method + " " + request.path + ": " + std::to_string(response.status);
  std::string_view phrase = ReasonPhrase(response.status);
  if (!phrase.empty()) {
    msg += " ";
    msg += phrase;
  }
  std::string body = BodyMessage(response.body);
  if (!body.empty()) {
    msg += ": ";
    msg += body;
  }
  return common::Status(CodeFor(response.status), std::move(msg));
}

common::StatusOr<std::vector<boost::json::value>> ListAll(RestClient& rest,
                                                          const std::string& path) {
  std::vector<boost::json::value> out;
  std::string cont;
  do {
    Request req;
    req.path = path;
    req.query = {{"limit", "500"}};
    if (!cont.empty()) req.query.emplace_back("continue", cont);
    GPUSCHED_ASSIGN_OR_RETURN(Response resp, rest.Do(req));
    if (!resp.ok()) return StatusFromResponse(req, resp);
    GPUSCHED_ASSIGN_OR_RETURN(boost::json::value body, api::ParseJson(resp.body, path));
    GPUSCHED_ASSIGN_OR_RETURN(api::ListPage page, api::TakeListPage(body, path));
    for (boost::json::value& v : page.items) out.push_back(std::move(v));
    cont = std::move(page.continue_token);
  } while (!cont.empty());
  return out;
}

common::StatusOr<std::string> ServedGroupVersion(RestClient& rest, std::string_view group,
                                                 std::span<const std::string_view> candidates) {
  Request req;
  req.path = "/apis/" + std::string(group);
  GPUSCHED_ASSIGN_OR_RETURN(Response resp, rest.Do(req));
  if (!resp.ok()) return StatusFromResponse(req, resp);
  GPUSCHED_ASSIGN_OR_RETURN(boost::json::value body, api::ParseJson(resp.body, req.path));
  // An APIGroup: versions[].groupVersion.
  std::vector<std::string_view> served;
  api::JsonReader r(api::PlainDialect());
  const api::FieldPath root;
  if (const boost::json::object* o = r.AsObject(body, root)) {
    r.ForEachObject(*o, "versions", root,
                    [&](const boost::json::object& v, const api::FieldPath& vp) {
                      if (auto gv = r.String(v, "groupVersion", vp)) served.push_back(*gv);
                    });
  }
  GPUSCHED_RETURN_IF_ERROR(r.errors().ToStatus(req.path));
  for (std::string_view c : candidates) {
    for (std::string_view s : served) {
      if (s == c) return std::string(c);
    }
  }
  return common::NotFoundError(req.path + ": none of the versions gpusched reads is served");
}

}  // namespace gpusched::kube
