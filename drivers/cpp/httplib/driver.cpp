/* cpp-httplib: one httplib::Client for the job, built for the job's server; keep-alive through
 * set_keep_alive(true) when the job asks for it (the library's default closes after every
 * request), redirects through set_follow_location as the job names them, every other setting as
 * the library ships it. Requests one after another: a Client serves one request at a time. */
#include <httplib.h>

#include "labcpp.hpp"

#include <openssl/crypto.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>

namespace {

const char *const NAME = "cpp-httplib";

struct client {
    lab::url origin;
    std::unique_ptr<httplib::Client> http;
};

/* the requests this driver sends as httplib's users do: a GET (into memory or streamed to a file
   by a content receiver), a form POST (Params urlencoded, MultipartFormDataItems multipart) */
lab_status check(const lab_request &q, char *why, size_t why_len)
{
    bool get = !strcmp(q.method, "GET"), post = !strcmp(q.method, "POST");
    if (q.body_file)
        snprintf(why, why_len, "%s: raw request bodies are not done by this driver", NAME);
    else if (q.has_form && !post)
        snprintf(why, why_len, "%s: a form is sent by POST only here, not %s", NAME, q.method);
    else if (!get && !post)
        snprintf(why, why_len, "%s: method %s is not done by this driver", NAME, q.method);
    else if (post && !q.has_form)
        snprintf(why, why_len, "%s: a POST without a form is not done by this driver", NAME);
    else
        return LAB_READY;
    return LAB_UNSUPPORTED;
}

lab_status build(const lab_job *job, client &c, char *why, size_t why_len)
{
    lab_status st = lab::job_origin(job, NAME, c.origin, why, why_len);
    for (size_t i = 0; st == LAB_READY && i < job->n_requests; i++)
        st = check(job->requests[i], why, why_len);
    if (st != LAB_READY)
        return st;
    if (job->opt.expect_100 == 1) {
        snprintf(why, why_len, "%s never sends Expect: 100-continue", NAME);
        return LAB_UNSUPPORTED;
    }
    c.http = std::make_unique<httplib::Client>(c.origin.origin());
    if (!c.http->is_valid()) {
        snprintf(why, why_len, "httplib::Client refused %s", c.origin.origin().c_str());
        return LAB_ERROR;
    }
    if (job->keep_alive)
        c.http->set_keep_alive(true);
    if (job->tls_ca)
        c.http->set_ca_cert_path(job->tls_ca);
    if (job->timeout_s > 0) { /* httplib limits each phase (connect, each read, each write), not a
                                  whole request: the job's limit on each, its documented way */
        time_t sec = static_cast<time_t>(job->timeout_s);
        time_t usec = static_cast<time_t>((job->timeout_s - static_cast<double>(sec)) * 1e6);
        c.http->set_connection_timeout(sec, usec);
        c.http->set_read_timeout(sec, usec);
        c.http->set_write_timeout(sec, usec);
    }
    if (job->opt.tcp_nodelay >= 0)
        c.http->set_tcp_nodelay(job->opt.tcp_nodelay != 0);
    return LAB_READY;
}

const char *version_of(const httplib::Response &res)
{
    return res.version == "HTTP/1.1" ? "1.1" : res.version == "HTTP/1.0" ? "1.0" : "?";
}

void outcome(const lab_job *job, const lab_request *q, const httplib::Result &res, lab_report *rep)
{
    if (!res)
        lab_add_error(rep, q->r, "%s", httplib::to_string(res.error()).c_str());
    else if (q->sink_file)
        lab::add_file(rep, job, q, res->status, version_of(*res));
    else
        lab::add_body(rep, job, q, res->status, res->body.data(), res->body.size(), version_of(*res));
}

void one_request(client &c, const lab_job *job, const lab_request *q, const std::string &target,
                 const httplib::Headers &headers, lab_report *rep)
{
    if (q->sink_file) {
        std::ofstream out(q->sink_path, std::ios::binary | std::ios::trunc);
        if (!out) {
            lab_add_error(rep, q->r, "cannot open sink_path %s", q->sink_path);
            return;
        }
        auto res = c.http->Get(target, headers, [&out](const char *data, size_t len) {
            return static_cast<bool>(out.write(data, static_cast<std::streamsize>(len)));
        });
        out.close();
        outcome(job, q, res, rep);
    } else if (q->has_form && q->multipart) {
        httplib::MultipartFormDataItems items;
        for (size_t i = 0; i < q->n_form; i++)
            items.push_back({q->form[i].name, q->form[i].value, "", ""});
        outcome(job, q, c.http->Post(target, headers, items), rep);
    } else if (q->has_form) {
        httplib::Params params;
        for (size_t i = 0; i < q->n_form; i++)
            params.emplace(q->form[i].name, q->form[i].value);
        outcome(job, q, c.http->Post(target, headers, params), rep);
    } else {
        outcome(job, q, c.http->Get(target, headers), rep);
    }
}

void run(const lab_job *job, void *state, lab_report *rep)
{
    client &c = *static_cast<client *>(state);
    const lab_request *entry = nullptr; /* the entry whose headers and redirect setting are set */
    httplib::Headers headers;
    lab::each_request(job, rep, [&](const lab_request *q, const std::string &target) {
        if (q != entry) {
            entry = q;
            headers.clear();
            for (size_t k = 0; k < q->n_headers; k++)
                headers.emplace(q->headers[k].name, q->headers[k].value);
            if (q->follow_redirects >= 0) /* absent: the URL does not redirect, httplib's default stands */
                c.http->set_follow_location(q->follow_redirects == 1);
        }
        one_request(c, job, q, target, headers, rep);
    }, [] {});
}

/* a Client is built for one server: a calibration round on another port gets a new one, and the
   job's end deletes it, closing its connection (the next job starts cold) */
using frame = lab::one_origin<client, build>;

void versions(json_t *v)
{
#ifdef CPPHTTPLIB_VERSION
    json_object_set_new(v, "cpp-httplib", json_string(CPPHTTPLIB_VERSION));
#endif
    json_object_set_new(v, "openssl", json_string(OpenSSL_version(OPENSSL_VERSION)));
    json_object_set_new(v, "compiler", json_string(lab_compiler()));
}

} // namespace

int main()
{
    // accept_encoding "library": httplib built without CPPHTTPLIB_ZLIB_SUPPORT asks for no coding
    // and decodes nothing, as every job does already
    return frame::main(NAME, LAB_OPT_TCP_NODELAY | LAB_OPT_EXPECT_100 | LAB_OPT_ACCEPT_ENCODING, versions, run);
}
