// SPDX-License-Identifier: Apache-2.0
#include "src/kube/rest_client.h"

#include <boost/json.hpp>
#include <string>

#include "src/api/decode.h"
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
    if (parsed.ok() && parsed->is_object()) {
      const auto& o = parsed->as_object();
      const auto* msg = o.if_contains("message");
      if (msg != nullptr && msg->is_string() && !msg->as_string().empty()) {
        return std::string(msg->as_string());
      }
      const auto* reason = o.if_contains("reason");
      if (reason != nullptr && reason->is_string() && !reason->as_string().empty()) {
        return std::string(reason->as_string());
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
    boost::json::object* o = body.if_object();
    if (o == nullptr) return common::InvalidArgumentError(path + ": not a JSON object");
    if (boost::json::value* items = o->if_contains("items"); items && items->is_array()) {
      for (boost::json::value& v : items->get_array()) out.push_back(std::move(v));
    }
    cont.clear();
    if (boost::json::value* m = o->if_contains("metadata"); m && m->is_object()) {
      if (boost::json::value* c = m->get_object().if_contains("continue"); c && c->is_string()) {
        cont = std::string(c->get_string());
      }
    }
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
  std::vector<std::string_view> served;
  if (const boost::json::object* o = body.if_object()) {
    if (const boost::json::value* vs = o->if_contains("versions"); vs && vs->is_array()) {
      for (const boost::json::value& v : vs->get_array()) {
        const boost::json::object* vo = v.if_object();
        const boost::json::value* gv = vo != nullptr ? vo->if_contains("groupVersion") : nullptr;
        if (gv != nullptr && gv->is_string()) served.push_back(gv->get_string());
      }
    }
  }
  for (std::string_view c : candidates) {
    for (std::string_view s : served) {
      if (s == c) return std::string(c);
    }
  }
  return common::NotFoundError(req.path + ": none of the versions gpusched reads is served");
}

}  // namespace gpusched::kube
