/* What the Boost.Beast drivers share: the connection, the job's checks, the request. */
#include "labbeast.hpp"

#include <boost/beast/version.hpp>
#include <boost/version.hpp>

#include <openssl/crypto.h>
#include <openssl/err.h>

#include <cctype>
#include <cstdio>

namespace lab {

void beast_connection::make(net::io_context &ioc, ssl::context &ctx, const url &origin, beast::error_code &ec)
{
    buffer.clear();
    if (!origin.tls()) {
        plain.emplace(ioc);
        return;
    }
    tls.emplace(ioc, ctx);
    if (!SSL_set_tlsext_host_name(tls->native_handle(), origin.host.c_str())) {
        ec.assign(static_cast<int>(::ERR_get_error()), net::error::get_ssl_category());
        return;
    }
    tls->set_verify_callback(ssl::host_name_verification(origin.host));
}

void beast_connection::close()
{
    beast::error_code ec;
    if (plain || tls)
        lowest().socket().shutdown(tcp::socket::shutdown_both, ec);
    plain.reset();
    tls.reset();
    buffer.clear();
    open = false;
}

lab_status beast_job(const lab_job *job, const char *name, url &origin, ssl::context &ctx, char *why,
                     size_t why_len)
{
    lab_status st = job_origin(job, name, origin, why, why_len);
    if (st != LAB_READY)
        return st;
    for (size_t i = 0; i < job->n_requests; i++) {
        const lab_request &q = job->requests[i];
        const char *no = q.follow_redirects == 1 ? "Beast does not follow redirects"
                       : q.has_form && q.multipart ? "Beast has no multipart encoder"
                       : q.body_file ? "raw request bodies are not done by this driver" : nullptr;
        if (no) {
            snprintf(why, why_len, "%s", no);
            return LAB_UNSUPPORTED;
        }
    }
    if (job->cookies || job->accept_gzip || job->opt.expect_100 == 1) {
        snprintf(why, why_len, "Beast has no %s", job->cookies ? "cookie store" : job->accept_gzip
                 ? "gzip decoding" : "wait for 100 Continue in its client");
        return LAB_UNSUPPORTED;
    }
    if (origin.tls()) {
        beast::error_code ec;
        ctx.set_verify_mode(ssl::verify_peer);
        if (job->tls_ca)
            ctx.load_verify_file(job->tls_ca, ec);
        if (ec) {
            snprintf(why, why_len, "cannot load tls_ca %s: %s", job->tls_ca, ec.message().c_str());
            return LAB_ERROR;
        }
    }
    return LAB_READY;
}

/* the form's fields percent-encoded (application/x-www-form-urlencoded), which a Beast program
   writes itself into the request's body */
static std::string urlencoded(const lab_request *q)
{
    static const char hex[] = "0123456789ABCDEF";
    std::string out;
    auto put = [&out](const char *s) {
        for (; *s; s++) {
            unsigned char ch = static_cast<unsigned char>(*s);
            if (std::isalnum(ch) || ch == '-' || ch == '.' || ch == '_' || ch == '~')
                out += static_cast<char>(ch);
            else if (ch == ' ')
                out += '+';
            else
                out += {'%', hex[ch >> 4], hex[ch & 15]};
        }
    };
    for (size_t i = 0; i < q->n_form; i++) {
        if (i)
            out += '&';
        put(q->form[i].name);
        out += '=';
        put(q->form[i].value);
    }
    return out;
}

void beast_request(http::request<http::string_body> &req, const lab_job *job, const lab_request *q,
                   const url &origin, const std::string &target)
{
    req = {};
    req.version(11);
    req.method(http::string_to_verb(q->method));
    if (req.method() == http::verb::unknown)
        req.method_string(q->method);
    req.target(target);
    req.set(http::field::host, origin.host + ":" + origin.port);
    req.set(http::field::user_agent, BOOST_BEAST_VERSION_STRING);
    for (size_t k = 0; k < q->n_headers; k++)
        req.set(q->headers[k].name, q->headers[k].value);
    if (q->has_form) {
        req.set(http::field::content_type, "application/x-www-form-urlencoded");
        req.body() = urlencoded(q);
    }
    req.keep_alive(job->keep_alive != 0);
    req.prepare_payload();
}

void beast_response(lab_report *rep, const lab_job *job, const lab_request *q,
                    const http::response<http::string_body> &res)
{
    add_body(rep, job, q, res.result_int(), res.body().data(), res.body().size(),
             http_label(res.version() / 10, res.version() % 10));
}

void beast_versions(json_t *v)
{
    char text[32];
    snprintf(text, sizeof text, "%d.%d.%d", BOOST_VERSION / 100000, BOOST_VERSION / 100 % 1000, BOOST_VERSION % 100);
    json_object_set_new(v, "boost", json_string(text));
    snprintf(text, sizeof text, "%d", BOOST_BEAST_VERSION);
    json_object_set_new(v, "beast", json_string(text));
    json_object_set_new(v, "openssl", json_string(OpenSSL_version(OPENSSL_VERSION)));
    json_object_set_new(v, "compiler", json_string(lab_compiler()));
}

} // namespace lab
