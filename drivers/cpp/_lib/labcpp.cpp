/* What the C++ drivers share: URLs taken apart, a job's origin, responses into the report. */
#include "labcpp.hpp"

#include <cstdio>
#include <cstring>

namespace lab {

std::string url::origin() const
{
    bool v6 = host.find(':') != std::string::npos;
    return scheme + "://" + (v6 ? "[" + host + "]" : host) + ":" + port;
}

bool split_url(const char *text, url &out)
{
    std::string s = text ? text : "";
    std::size_t colon = s.find("://");
    if (colon == std::string::npos)
        return false;
    out.scheme = s.substr(0, colon);
    if (out.scheme != "http" && out.scheme != "https")
        return false;
    std::size_t start = colon + 3, slash = s.find_first_of("/?#", start);
    std::string authority = s.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    std::string rest = slash == std::string::npos ? "" : s.substr(slash);
    std::size_t hash = rest.find('#');
    if (hash != std::string::npos)
        rest.erase(hash);
    out.target = rest.empty() || rest[0] != '/' ? "/" + rest : rest;
    if (!authority.empty() && authority[0] == '[') { /* an IPv6 literal */
        std::size_t close = authority.find(']');
        if (close == std::string::npos)
            return false;
        out.host = authority.substr(1, close - 1);
        authority.erase(0, close + 1);
        out.port = authority.empty() ? "" : authority.substr(authority[0] == ':' ? 1 : 0);
    } else {
        std::size_t c = authority.rfind(':');
        out.host = authority.substr(0, c);
        out.port = c == std::string::npos ? "" : authority.substr(c + 1);
    }
    if (out.port.empty())
        out.port = out.tls() ? "443" : "80";
    return !out.host.empty();
}

lab_status job_origin(const lab_job *job, const char *client, url &out, char *why, size_t why_len)
{
    if (job->http != LAB_HTTP_11) {
        snprintf(why, why_len, "%s speaks HTTP/1.1 only", client);
        return LAB_UNSUPPORTED;
    }
    for (size_t i = 0; i < job->n_requests; i++) {
        url u;
        if (!split_url(job->requests[i].url, u)) {
            snprintf(why, why_len, "request %zu: not an absolute http(s) URL: %s", i, job->requests[i].url);
            return LAB_ERROR;
        }
        if (i == 0) {
            out = u;
        } else if (u.origin() != out.origin()) {
            snprintf(why, why_len, "the job's requests go to %s and %s: the %s client here is built for one "
                     "server", out.origin().c_str(), u.origin().c_str(), client);
            return LAB_UNSUPPORTED;
        }
    }
    if (!job->n_requests) {
        snprintf(why, why_len, "the job has no requests");
        return LAB_ERROR;
    }
    return LAB_READY;
}

void add_body(lab_report *rep, const lab_job *job, const lab_request *q, int status, const void *data,
              std::size_t len, const char *http)
{
    unsigned char sha[32];
    if (job->verify)
        lab_sha256_buf(data, len, sha);
    lab_add_response(rep, q->r, status, (long long)len, http, job->verify ? sha : nullptr);
}

void add_file(lab_report *rep, const lab_job *job, const lab_request *q, int status, const char *http)
{
    unsigned char sha[32];
    long long size = 0;
    if (job->verify) {
        if (lab_sha256_file(q->sink_path, sha, &size)) {
            lab_add_error(rep, q->r, "cannot read back sink_path %s", q->sink_path);
            return;
        }
    } else {
        FILE *f = fopen(q->sink_path, "rb");
        if (!f || fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0) {
            if (f)
                fclose(f);
            lab_add_error(rep, q->r, "cannot read back sink_path %s", q->sink_path);
            return;
        }
        fclose(f);
    }
    lab_add_response(rep, q->r, status, size, http, job->verify ? sha : nullptr);
}

const char *http_label(int major, int minor)
{
    if (major == 1 && minor == 1)
        return "1.1";
    if (major == 1 && minor == 0)
        return "1.0";
    if (major == 2)
        return "2";
    return "?";
}

bool same_origin(const lab_job *job, const url &origin)
{
    url next;
    return job->n_requests && split_url(job->requests[0].url, next) && next.origin() == origin.origin();
}

} // namespace lab
