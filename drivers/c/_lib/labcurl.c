/* labcurl: see labcurl.h. */
#include "labcurl.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

static size_t on_body(char *data, size_t size, size_t n, void *user)
{
    lab_sink *s = user;
    size_t len = size * n;
    if (s->file) {
        if (fwrite(data, 1, len, s->file) != len)
            return 0;
        if (s->sha)
            lab_sha256_update(s->sha, data, len);
    } else if (lab_buf_append(&s->buf, data, len)) {
        return 0;
    }
    s->bytes += (long long)len;
    return len;
}

void lab_curl_versions(json_t *v)
{
    curl_version_info_data *info = curl_version_info(CURLVERSION_NOW);
    json_object_set_new(v, "libcurl", json_string(info->version));
    if (info->ssl_version)
        json_object_set_new(v, "ssl", json_string(info->ssl_version));
    if (info->nghttp2_version)
        json_object_set_new(v, "nghttp2", json_string(info->nghttp2_version));
    if (info->libz_version)
        json_object_set_new(v, "zlib", json_string(info->libz_version));
    json_object_set_new(v, "compiler", json_string(lab_compiler()));
}

#define SET(opt, val) do { if (curl_easy_setopt(h, opt, val) != CURLE_OK) { \
        snprintf(why, why_len, "libcurl refused %s", #opt); return LAB_UNSUPPORTED; } } while (0)

lab_status lab_curl_job_options(CURL *h, const lab_job *job, char *why, size_t why_len)
{
    curl_version_info_data *info = curl_version_info(CURLVERSION_NOW);
    long version = CURL_HTTP_VERSION_1_1;

    if (job->http != LAB_HTTP_11 && !(info->features & CURL_VERSION_HTTP2)) {
        snprintf(why, why_len, "this libcurl is built without HTTP/2");
        return LAB_UNSUPPORTED;
    }
    /* 2TLS: h2 over TLS via ALPN; a server that declines shows up as "1.1" in the report */
    if (job->http == LAB_HTTP_2)
        version = CURL_HTTP_VERSION_2TLS;
    if (job->http == LAB_HTTP_H2C)
        version = CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE;
    SET(CURLOPT_HTTP_VERSION, version);
    SET(CURLOPT_WRITEFUNCTION, on_body);
    if (job->timeout_s > 0)
        SET(CURLOPT_TIMEOUT_MS, (long)(job->timeout_s * 1000));
    if (job->tls_ca)
        SET(CURLOPT_CAINFO, job->tls_ca);
    if (job->cookies)
        SET(CURLOPT_COOKIEFILE, ""); /* "" turns on the in-memory cookie engine, no file read */
    if (job->accept_gzip)
        SET(CURLOPT_ACCEPT_ENCODING, "gzip");
    if (!job->keep_alive) { /* a connection of its own per transfer, closed after it */
        SET(CURLOPT_FRESH_CONNECT, 1L);
        SET(CURLOPT_FORBID_REUSE, 1L);
    }
    if (job->opt.tcp_nodelay >= 0)
        SET(CURLOPT_TCP_NODELAY, (long)job->opt.tcp_nodelay);
    return LAB_READY;
}

/* "name: value" ("name;" sends an empty value, curl's syntax) */
static struct curl_slist *add_header(struct curl_slist *list, const char *name, const char *value)
{
    char line[8192];
    snprintf(line, sizeof line, *value ? "%s: %s" : "%s;", name, value);
    return curl_slist_append(list, line);
}

/* name=value&... with both escaped, as application/x-www-form-urlencoded */
static char *urlencode(CURL *easy, const lab_request *q)
{
    lab_buf out = {0};
    for (size_t i = 0; i < q->n_form; i++) {
        char *k = curl_easy_escape(easy, q->form[i].name, 0);
        char *v = curl_easy_escape(easy, q->form[i].value, 0);
        if (i)
            lab_buf_append(&out, "&", 1);
        lab_buf_append(&out, k, strlen(k));
        lab_buf_append(&out, "=", 1);
        lab_buf_append(&out, v, strlen(v));
        curl_free(k);
        curl_free(v);
    }
    lab_buf_append(&out, "", 1);
    return out.data;
}

int lab_curl_entry(CURL *h, const lab_job *job, const lab_request *q, lab_entry *e)
{
    int has_body = q->has_form || q->body_file;
    int natural = !strcmp(q->method, has_body ? "POST" : "GET");

    curl_easy_setopt(h, CURLOPT_URL, q->url);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, NULL);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)-1);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, NULL);
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L); /* back to a plain GET: no upload, no nobody */
    /* absent: the URL does not redirect, and FOLLOWLOCATION stays as it is (libcurl's default,
       off, unless an earlier entry of the job set it) */
    if (q->follow_redirects >= 0)
        curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, (long)q->follow_redirects);

    for (size_t i = 0; i < q->n_headers; i++)
        e->headers = add_header(e->headers, q->headers[i].name, q->headers[i].value);
    if (q->has_form && !q->multipart) {
        e->form = urlencode(h, q);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, e->form);
    } else if (q->has_form) {
        e->mime = curl_mime_init(h);
        for (size_t i = 0; i < q->n_form; i++) {
            curl_mimepart *part = curl_mime_addpart(e->mime);
            curl_mime_name(part, q->form[i].name);
            curl_mime_data(part, q->form[i].value, CURL_ZERO_TERMINATED);
        }
        curl_easy_setopt(h, CURLOPT_MIMEPOST, e->mime);
    } else if (q->body_file) {
        struct stat st;
        /* streamed from the file by libcurl's default read function (fread) */
        if (!(e->upload = fopen(q->body_file, "rb")) || fstat(fileno(e->upload), &st))
            return -1;
        curl_easy_setopt(h, CURLOPT_READFUNCTION, NULL);
        curl_easy_setopt(h, CURLOPT_READDATA, e->upload);
        if (!strcmp(q->method, "PUT")) {
            natural = 1;
            curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
            curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)st.st_size);
        } else {
            curl_easy_setopt(h, CURLOPT_POST, 1L);
            curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)st.st_size);
        }
        e->headers = add_header(e->headers, "Content-Type",
                                q->content_type ? q->content_type : "application/octet-stream");
    } else if (!strcmp(q->method, "HEAD")) {
        natural = 1;
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    }
    /* only a method libcurl would not pick itself: a custom one is kept across redirects */
    if (!natural)
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, q->method);
    if (has_body && job->opt.expect_100 >= 0)
        e->headers = add_header(e->headers, "Expect", job->opt.expect_100 ? "100-continue" : "");
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, e->headers);
    return 0;
}

void lab_curl_entry_free(lab_entry *e)
{
    curl_slist_free_all(e->headers);
    free(e->form);
    curl_mime_free(e->mime); /* also detaches it from the handle */
    if (e->upload)
        fclose(e->upload);
    memset(e, 0, sizeof *e);
}

int lab_curl_sink_open(CURL *h, const lab_job *job, const lab_request *q, lab_sink *s)
{
    memset(s, 0, sizeof *s);
    if (q->sink_file) {
        if (!(s->file = fopen(q->sink_path, "wb")))
            return -1;
        if (job->verify)
            s->sha = lab_sha256_new();
    }
    curl_easy_setopt(h, CURLOPT_WRITEDATA, s);
    return 0;
}

const char *lab_curl_http_label(long v)
{
    switch (v) {
    case CURL_HTTP_VERSION_1_0: return "1.0";
    case CURL_HTTP_VERSION_1_1: return "1.1";
    case CURL_HTTP_VERSION_2_0: return "2";
    case CURL_HTTP_VERSION_3: return "3";
    default: return "?";
    }
}

void lab_curl_done(CURL *h, CURLcode rc, const char *errbuf, const lab_job *job, const lab_request *q,
                   lab_sink *s, lab_report *rep)
{
    unsigned char sha[32];
    long status = 0, version = 0;

    if (s->file && fclose(s->file) && rc == CURLE_OK)
        rc = CURLE_WRITE_ERROR;
    s->file = NULL;
    if (rc != CURLE_OK) {
        lab_add_error(rep, q->r, "%s%s%s", curl_easy_strerror(rc), errbuf && *errbuf ? ": " : "",
                      errbuf ? errbuf : "");
    } else {
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_getinfo(h, CURLINFO_HTTP_VERSION, &version);
        if (s->sha) {
            lab_sha256_final(s->sha, sha);
            s->sha = NULL;
        } else if (job->verify) {
            lab_sha256_buf(s->buf.data, s->buf.len, sha);
        }
        lab_add_response(rep, q->r, status, s->bytes, lab_curl_http_label(version), job->verify ? sha : NULL);
    }
    if (s->sha) /* failed while streaming to a file: just free the digest */
        lab_sha256_final(s->sha, sha);
    s->sha = NULL;
    lab_buf_free(&s->buf); /* a new body per response, as a program keeping each body would */
}

int lab_curl_h2c_fix(const lab_job *job, char *why, size_t why_len)
{
    curl_version_info_data *info = curl_version_info(CURLVERSION_NOW);
    if (job->http != LAB_HTTP_H2C || !job->keep_alive || info->version_num >= 0x080000)
        return 0;
    for (size_t i = 0; i < job->n_requests; i++)
        if (job->requests[i].follow_redirects == 1) {
            snprintf(why, why_len, "libcurl %s fails redirects over a kept-alive h2c connection "
                     "(curl#10634, fixed in 8.0.0)", info->version);
            return -1;
        }
    return 1;
}

long lab_curl_h2c_version(int reuse)
{
    return reuse ? (long)CURL_HTTP_VERSION_2_0 : (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE;
}

/* the length of "scheme://host:port" at the start of an absolute URL */
static size_t origin_len(const char *url)
{
    const char *p = strstr(url, "://");
    return p ? (size_t)(p + 3 - url) + strcspn(p + 3, "/?#") : strlen(url);
}

int lab_curl_h2c_same_origin(const char *was, const char *url)
{
    size_t n = was && url ? origin_len(was) : 0;
    return n && n == origin_len(url) && !strncasecmp(was, url, n);
}
