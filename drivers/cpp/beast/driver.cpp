/* cpp-beast: Boost.Beast's synchronous HTTP/1.1 client, as Beast's http_client_sync(_ssl)
 * examples write it: a beast::tcp_stream (a beast::ssl_stream over one for https) connected to
 * the resolved server, http::write of a request<string_body>, http::read into a response parser;
 * the one connection kept for the next request while the job keeps alive and the server does,
 * requests one after another. A body for a file is read by a parser of file_body. */
#include "labbeast.hpp"

#include <boost/asio/connect.hpp>

#include <cstdio>
#include <limits>
#include <string>

using namespace lab;

namespace {

const char *const NAME = "cpp-beast";

struct client {
    url origin;
    net::io_context ioc;
    ssl::context ctx{ssl::context::tls_client};
    beast_connection conn;
};

lab_status prepare(const lab_job *job, void **state, char *why, size_t why_len)
{
    client *c = new_state<client>(state, why, why_len);
    if (!c)
        return LAB_ERROR;
    lab_status st = beast_job(job, NAME, c->origin, c->ctx, why, why_len);
    if (st == LAB_READY && job->concurrency > 1) {
        snprintf(why, why_len, "%s is Beast's synchronous client, one request at a time (cpp-beast-async "
                 "keeps several in flight)", NAME);
        st = LAB_UNSUPPORTED;
    } else if (st == LAB_READY && job->timeout_s > 0) {
        snprintf(why, why_len, "Beast's synchronous calls have no time limit (tcp_stream's expiry is for "
                 "its asynchronous ones: cpp-beast-async)");
        st = LAB_UNSUPPORTED;
    }
    return st;
}

void connect(client &c, const lab_job *job, beast::error_code &ec)
{
    tcp::resolver resolver(c.ioc);
    auto const results = resolver.resolve(c.origin.host, c.origin.port, ec);
    if (!ec)
        c.conn.make(c.ioc, c.ctx, c.origin, ec);
    if (!ec)
        c.conn.lowest().connect(results, ec);
    if (!ec && job->opt.tcp_nodelay >= 0)
        c.conn.lowest().socket().set_option(tcp::no_delay(job->opt.tcp_nodelay != 0), ec);
    if (!ec && c.conn.tls)
        c.conn.tls->handshake(ssl::stream_base::client, ec);
    c.conn.open = !ec;
}

/* one exchange on the kept connection, or a new one; `p` gets the response */
template <class Body>
void exchange(client &c, const lab_job *job, http::request<http::string_body> &req, http::response_parser<Body> &p,
              beast::error_code &ec)
{
    if (!c.conn.open)
        connect(c, job, ec);
    if (!ec)
        c.conn.with([&](auto &stream) {
            http::write(stream, req, ec);
            if (!ec)
                http::read(stream, c.conn.buffer, p, ec);
        });
    if (ec || !job->keep_alive || !p.get().keep_alive())
        c.conn.close();
}

void one_request(client &c, const lab_job *job, const lab_request *q, const std::string &target, lab_report *rep)
{
    http::request<http::string_body> req;
    beast_request(req, job, q, c.origin, target);
    beast::error_code ec;
    if (q->sink_file) { /* the body straight to the file, as Beast's file_body does */
        http::response_parser<http::file_body> p;
        p.body_limit(std::numeric_limits<std::uint64_t>::max());
        p.get().body().open(q->sink_path, beast::file_mode::write, ec);
        if (ec) {
            lab_add_error(rep, q->r, "cannot open sink_path %s: %s", q->sink_path, ec.message().c_str());
            return;
        }
        exchange(c, job, req, p, ec);
        p.get().body().close();
        if (ec)
            lab_add_error(rep, q->r, "%s", ec.message().c_str());
        else
            add_file(rep, job, q, p.get().result_int(), http_label(p.get().version() / 10, p.get().version() % 10));
        return;
    }
    http::response_parser<http::string_body> p;
    p.body_limit(std::numeric_limits<std::uint64_t>::max()); /* a departure (driver.toml) */
    exchange(c, job, req, p, ec);
    if (ec)
        lab_add_error(rep, q->r, "%s", ec.message().c_str());
    else
        beast_response(rep, job, q, p.get());
}

void run(const lab_job *job, void *state, lab_report *rep)
{
    client &c = *static_cast<client *>(state);
    lab::each_request(job, rep, [&](const lab_request *q, const std::string &target) {
        one_request(c, job, q, target, rep);
    }, [&] { c.conn.close(); });
}

/* the next calibration round: the same scenario, maybe on another port; the kept connection
   goes with the old one */
lab_status reuse(const lab_job *job, void *state, char *why, size_t why_len)
{
    client &c = *static_cast<client *>(state);
    if (same_origin(job, c.origin))
        return LAB_READY;
    c.conn.close();
    return job_origin(job, NAME, c.origin, why, why_len);
}

void finish(const lab_job *, void *state)
{
    client *c = static_cast<client *>(state);
    if (c)
        c->conn.close(); /* the next job starts cold */
    delete c;
}

} // namespace

int main()
{
    static const lab_driver d = {
        NAME,
        // accept_encoding "library": Beast sends no Accept-Encoding and decodes nothing, as every job does already
        LAB_OPT_TCP_NODELAY | LAB_OPT_EXPECT_100 | LAB_OPT_ACCEPT_ENCODING,
        beast_versions,
        prepare,
        run,
        finish,
        reuse,
    };
    return lab_main(&d);
}
