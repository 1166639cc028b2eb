/* cpp-beast-async: Boost.Beast's asynchronous HTTP/1.1 client, as Beast's http_client_async(_ssl)
 * examples write it: one net::io_context run on the driver's thread, and `concurrency` sessions
 * (one when the job runs its requests one after another), each a chain of async_resolve,
 * async_connect, async_handshake for https, then async_write and async_read per request, taking
 * the job's next request when its last one is done, on its connection while the job and the
 * server keep it alive. A time limit the job names is the stream's expiry (expires_after) on
 * every operation, as the examples set it. */
#include "labbeast.hpp"

#include <chrono>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <vector>

using namespace lab;

namespace {

const char *const NAME = "cpp-beast-async";

class session;

struct client {
    url origin;
    net::io_context ioc;
    ssl::context ctx{ssl::context::tls_client};
    /* the sessions and their connections, kept until the client is closed (after the report), as
       the synchronous driver keeps its one */
    std::vector<std::shared_ptr<session>> sessions;
};

/* the job's requests in order, each entry `repeat` times, handed to whichever session is free */
struct work {
    const lab_job *job;
    lab_report *rep;
    std::vector<std::string> targets; /* per entry */
    size_t entry = 0;
    long done_of_entry = 0;

    const lab_request *next()
    {
        while (entry < job->n_requests && done_of_entry >= job->requests[entry].repeat) {
            entry++;
            done_of_entry = 0;
        }
        if (entry >= job->n_requests)
            return nullptr;
        done_of_entry++;
        return &job->requests[entry];
    }
};

class session : public std::enable_shared_from_this<session> {
  public:
    explicit session(client &c) : c_(c), resolver_(c.ioc) {}

    /* take requests from `w` until it has none left */
    void start(work &w)
    {
        w_ = &w;
        next();
    }

    void close() { conn_.close(); }

  private:
    void next()
    {
        if (!(q_ = w_->next()))
            return; /* the connection stays open for the client's close */
        beast_request(req_, w_->job, q_, c_.origin, w_->targets[static_cast<size_t>(q_->r)]);
        parser_.emplace();
        parser_->body_limit(std::numeric_limits<std::uint64_t>::max()); /* a departure (driver.toml) */
        /* the last body's buffer, emptied: a program reading into one response<string_body> from
           GET to GET (Beast's example's res, reset with res = {}) keeps its string's buffer, and
           a parser a message (for body_limit) would start every body in a new one */
        parser_->get().body() = std::move(spare_);
        if (conn_.open)
            write();
        else
            resolver_.async_resolve(c_.origin.host, c_.origin.port,
                                    beast::bind_front_handler(&session::on_resolve, shared_from_this()));
    }

    void expiry()
    {
        if (w_->job->timeout_s > 0)
            conn_.lowest().expires_after(std::chrono::microseconds(static_cast<long long>(w_->job->timeout_s * 1e6)));
    }

    void on_resolve(beast::error_code ec, tcp::resolver::results_type results)
    {
        if (!ec)
            conn_.make(c_.ioc, c_.ctx, c_.origin, ec);
        if (ec)
            return fail(ec);
        expiry();
        conn_.lowest().async_connect(results, beast::bind_front_handler(&session::on_connect, shared_from_this()));
    }

    void on_connect(beast::error_code ec, tcp::resolver::results_type::endpoint_type)
    {
        if (!ec && w_->job->opt.tcp_nodelay >= 0)
            conn_.lowest().socket().set_option(tcp::no_delay(w_->job->opt.tcp_nodelay != 0), ec);
        if (ec)
            return fail(ec);
        if (!conn_.tls)
            return on_handshake(ec);
        expiry();
        conn_.tls->async_handshake(ssl::stream_base::client,
                                   beast::bind_front_handler(&session::on_handshake, shared_from_this()));
    }

    void on_handshake(beast::error_code ec)
    {
        if (ec)
            return fail(ec);
        conn_.open = true;
        write();
    }

    void write()
    {
        expiry();
        conn_.with([this](auto &stream) {
            http::async_write(stream, req_, beast::bind_front_handler(&session::on_write, shared_from_this()));
        });
    }

    void on_write(beast::error_code ec, std::size_t)
    {
        if (ec)
            return fail(ec);
        conn_.with([this](auto &stream) {
            http::async_read(stream, conn_.buffer, *parser_,
                             beast::bind_front_handler(&session::on_read, shared_from_this()));
        });
    }

    void on_read(beast::error_code ec, std::size_t)
    {
        if (ec)
            return fail(ec);
        beast_response(w_->rep, w_->job, q_, parser_->get());
        spare_ = std::move(parser_->get().body());
        spare_.clear();
        if (!w_->job->keep_alive || !parser_->get().keep_alive())
            conn_.close();
        next();
    }

    void fail(beast::error_code ec)
    {
        lab_add_error(w_->rep, q_->r, "%s", ec == beast::error::timeout ? "timed out" : ec.message().c_str());
        conn_.close();
        next();
    }

    client &c_;
    work *w_ = nullptr;
    tcp::resolver resolver_;
    beast_connection conn_;
    http::request<http::string_body> req_;
    std::optional<http::response_parser<http::string_body>> parser_;
    std::string spare_; /* the last body's buffer (next) */
    const lab_request *q_ = nullptr;
};

lab_status prepare(const lab_job *job, void **state, char *why, size_t why_len)
{
    client *c = new_state<client>(state, why, why_len);
    if (!c)
        return LAB_ERROR;
    lab_status st = beast_job(job, NAME, c->origin, c->ctx, why, why_len);
    for (size_t i = 0; st == LAB_READY && i < job->n_requests; i++)
        if (job->requests[i].sink_file) {
            snprintf(why, why_len, "%s reads bodies into memory only", NAME);
            st = LAB_UNSUPPORTED;
        }
    return st;
}

void run(const lab_job *job, void *state, lab_report *rep)
{
    client &c = *static_cast<client *>(state);
    work w{job, rep, {}, 0, 0};
    for (size_t i = 0; i < job->n_requests; i++) {
        url u;
        split_url(job->requests[i].url, u); /* job_origin read every URL already */
        w.targets.push_back(u.target);
    }
    try {
        size_t n = static_cast<size_t>(job->concurrency < job->total ? job->concurrency : job->total);
        while (c.sessions.size() < n)
            c.sessions.push_back(std::make_shared<session>(c));
        for (size_t i = 0; i < n; i++)
            c.sessions[i]->start(w);
        c.ioc.run();
        c.ioc.restart();
    } catch (const std::exception &e) { /* nothing may unwind into the C protocol loop */
        lab_add_error(rep, 0, "%s", e.what());
        c.ioc.restart();
    }
}

void close(client &c)
{
    for (auto &s : c.sessions)
        s->close();
    c.sessions.clear();
}

/* the next calibration round: the same scenario, maybe on another port; the kept connections go
   with the old one */
lab_status reuse(const lab_job *job, void *state, char *why, size_t why_len)
{
    client &c = *static_cast<client *>(state);
    if (same_origin(job, c.origin))
        return LAB_READY;
    close(c);
    return job_origin(job, NAME, c.origin, why, why_len);
}

void finish(const lab_job *, void *state)
{
    client *c = static_cast<client *>(state);
    if (c)
        close(*c); /* the next job starts cold */
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
