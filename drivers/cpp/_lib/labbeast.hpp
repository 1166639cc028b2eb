/* labbeast: what the Boost.Beast drivers share (cpp-beast, synchronous; cpp-beast-async): one
 * connection to the job's server as Beast's examples make it (a beast::tcp_stream, or a
 * beast::ssl_stream over one with SNI and host-name verification), the job's checks, a request
 * built as the examples build it, and the versions. Beast is the HTTP layer only: what it has no
 * code for (redirects, cookies, multipart, gzip) is refused here, once for both drivers. */
#ifndef LABBEAST_HPP
#define LABBEAST_HPP

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "labcpp.hpp"

#include <optional>
#include <string>

namespace lab {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;

/* one connection to the job's server, plain or TLS */
struct beast_connection {
    std::optional<beast::tcp_stream> plain;
    std::optional<beast::ssl_stream<beast::tcp_stream>> tls;
    beast::flat_buffer buffer;
    bool open = false;

    /* a new stream for `origin` (not connected): over TLS with SNI and host-name verification */
    void make(net::io_context &ioc, ssl::context &ctx, const url &origin, beast::error_code &ec);
    beast::tcp_stream &lowest() { return tls ? beast::get_lowest_layer(*tls) : *plain; }
    /* `f` called with the stream HTTP goes over */
    template <class F> void with(F &&f)
    {
        if (tls)
            f(*tls);
        else
            f(*plain);
    }
    /* shut down and closed as Beast's examples do; over TLS without waiting for the server's
       close_notify, which a server that keeps the connection open never sends */
    void close();
};

/* what a Beast driver refuses in every job (redirects, cookies, multipart, raw bodies, Expect),
   the job's one server into `origin`, and its CA into `ctx` for https */
lab_status beast_job(const lab_job *job, const char *name, url &origin, ssl::context &ctx, char *why,
                     size_t why_len);

/* the request for entry `q`, as Beast's examples build it: Host, User-Agent, the job's headers, a
   form percent-encoded into the string body, keep-alive as the job says */
void beast_request(http::request<http::string_body> &req, const lab_job *job, const lab_request *q,
                   const url &origin, const std::string &target);

/* a response read whole into the report */
void beast_response(lab_report *rep, const lab_job *job, const lab_request *q,
                    const http::response<http::string_body> &res);

void beast_versions(json_t *v);

} // namespace lab

#endif
