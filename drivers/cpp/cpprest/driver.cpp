/* cpp-cpprest: cpprestsdk's web::http::client::http_client, one for the job, built for the job's
 * server with its defaults (its connection pool keeps connections alive), a time limit the job
 * names as the client's timeout, and the job's CA through the ssl context callback; each request
 * request(...).get() then extract_vector().get(), one after another. A job without keep-alive
 * adds "Connection: close" to each request: the client still writes its own "Connection:
 * Keep-Alive" after it, but the server answers close, and a connection the server closes is
 * not pooled. */
#include <cpprest/filestream.h>
#include <cpprest/http_client.h>
#include <cpprest/version.h>

#include <boost/version.hpp>

#include "labcpp.hpp"

#include <openssl/crypto.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

using web::http::http_request;
using web::http::http_response;
using web::http::client::http_client;
using web::http::client::http_client_config;

namespace {

const char *const NAME = "cpp-cpprest";

struct client {
    lab::url origin;
    std::unique_ptr<http_client> http;
};

lab_status check(const lab_job *job, const lab_request &q, char *why, size_t why_len)
{
    if (q.follow_redirects == 1)
        snprintf(why, why_len, "cpprestsdk's asio client does not follow redirects");
    else if (q.has_form && q.multipart)
        snprintf(why, why_len, "cpprestsdk has no multipart encoder");
    else if (q.body_file)
        snprintf(why, why_len, "raw request bodies are not done by this driver");
    else if (job->cookies)
        snprintf(why, why_len, "cpprestsdk's client has no cookie store");
    else if (job->concurrency > 1)
        snprintf(why, why_len, "requests in parallel are not done by this driver");
    else if (job->opt.tcp_nodelay == 0)
        snprintf(why, why_len, "cpprestsdk's asio client always sets TCP_NODELAY, with no setting to leave it off");
    else if (job->opt.expect_100 == 1)
        snprintf(why, why_len, "cpprestsdk's client never sends Expect: 100-continue");
    else
        return LAB_READY;
    return LAB_UNSUPPORTED;
}

lab_status build(const lab_job *job, client &c, char *why, size_t why_len)
{
    lab_status st = lab::job_origin(job, NAME, c.origin, why, why_len);
    for (size_t i = 0; st == LAB_READY && i < job->n_requests; i++)
        st = check(job, job->requests[i], why, why_len);
    if (st != LAB_READY)
        return st;
    http_client_config config;
    if (job->timeout_s > 0) /* none named: the client's own default (30 s) */
        config.set_timeout(std::chrono::microseconds(static_cast<long long>(job->timeout_s * 1e6)));
    if (job->tls_ca) {
        std::string ca = job->tls_ca;
        config.set_ssl_context_callback([ca](boost::asio::ssl::context &ctx) { ctx.load_verify_file(ca); });
    }
    try {
        c.http = std::make_unique<http_client>(c.origin.origin(), config);
    } catch (const std::exception &e) {
        snprintf(why, why_len, "http_client for %s: %s", c.origin.origin().c_str(), e.what());
        return LAB_ERROR;
    }
    return LAB_READY;
}

/* the fields as application/x-www-form-urlencoded, each part encoded by cpprestsdk's own
   uri::encode_data_string */
std::string urlencoded(const lab_request *q)
{
    std::string out;
    for (size_t i = 0; i < q->n_form; i++) {
        if (i)
            out += '&';
        out += web::uri::encode_data_string(q->form[i].name) + "=" + web::uri::encode_data_string(q->form[i].value);
    }
    return out;
}

void one_request(client &c, const lab_job *job, const lab_request *q, const std::string &target, lab_report *rep)
{
    http_request req(q->method);
    req.set_request_uri(target);
    for (size_t k = 0; k < q->n_headers; k++)
        req.headers().add(q->headers[k].name, q->headers[k].value);
    if (!job->keep_alive)
        req.headers().add(web::http::header_names::connection, "close");
    if (q->has_form)
        req.set_body(urlencoded(q), "application/x-www-form-urlencoded");
    http_response res = c.http->request(req).get();
    /* the asio client speaks HTTP/1.1 and does not say which version answered; the server
       records the version of every request, and verification checks it */
    if (q->sink_file) {
        auto file = concurrency::streams::fstream::open_ostream(q->sink_path).get();
        res.body().read_to_end(file.streambuf()).get();
        file.close().get();
        lab::add_file(rep, job, q, res.status_code(), "1.1");
        return;
    }
    std::vector<unsigned char> body = res.extract_vector().get();
    lab::add_body(rep, job, q, res.status_code(), body.data(), body.size(), "1.1");
}

void run(const lab_job *job, void *state, lab_report *rep)
{
    client &c = *static_cast<client *>(state);
    lab::each_request(job, rep, [&](const lab_request *q, const std::string &target) {
        one_request(c, job, q, target, rep);
    }, [] {});
}

/* an http_client is built for one server: a calibration round on another port gets a new one,
   and the job's end deletes it with its pool (the next job starts cold) */
using frame = lab::one_origin<client, build>;

void versions(json_t *v)
{
    char text[32];
    snprintf(text, sizeof text, "%d.%d.%d", CPPREST_VERSION_MAJOR, CPPREST_VERSION_MINOR, CPPREST_VERSION_REVISION);
    json_object_set_new(v, "cpprestsdk", json_string(text));
    snprintf(text, sizeof text, "%d.%d.%d", BOOST_VERSION / 100000, BOOST_VERSION / 100 % 1000, BOOST_VERSION % 100);
    json_object_set_new(v, "boost", json_string(text));
    json_object_set_new(v, "openssl", json_string(OpenSSL_version(OPENSSL_VERSION)));
    json_object_set_new(v, "compiler", json_string(lab_compiler()));
}

} // namespace

int main()
{
    // accept_encoding "library": cpprestsdk asks for no coding unless told to
    // (request_compressed_response), as every job does already
    return frame::main(NAME, LAB_OPT_TCP_NODELAY | LAB_OPT_EXPECT_100 | LAB_OPT_ACCEPT_ENCODING, versions, run);
}
