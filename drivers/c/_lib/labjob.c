/* Parsing a job into C structs, and refusing options the driver cannot honour exactly. */
#include "labjob.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAIL(status, ...) do { snprintf(why, why_len, __VA_ARGS__); return (status); } while (0)

static const char *str_field(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static int bool_field(json_t *obj, const char *key, int dflt)
{
    json_t *v = json_object_get(obj, key);
    return json_is_boolean(v) ? json_is_true(v) : dflt;
}

/* {"name": "value", ...} → lab_kv array; -1 when a value is not a string */
static int kv_list(json_t *obj, lab_kv **out, size_t *n)
{
    const char *key;
    json_t *value;
    *out = NULL;
    *n = 0;
    if (!json_is_object(obj) || json_object_size(obj) == 0)
        return 0;
    *out = calloc(json_object_size(obj), sizeof **out);
    if (!*out)
        return -1;
    json_object_foreach(obj, key, value) {
        if (!json_is_string(value))
            return -1;
        (*out)[*n].name = key;
        (*out)[(*n)++].value = json_string_value(value);
    }
    return 0;
}

static lab_status parse_request(json_t *e, lab_request *q, char *why, size_t why_len)
{
    json_t *v;
    const char *s;
    q->method = str_field(e, "method");
    q->url = str_field(e, "url");
    if (!q->method || !q->url)
        FAIL(LAB_ERROR, "request %d: method and url must be strings", q->r);
    v = json_object_get(e, "repeat");
    q->repeat = json_is_integer(v) ? (long)json_integer_value(v) : 1;
    if (q->repeat < 0)
        FAIL(LAB_ERROR, "request %d: negative repeat", q->r);
    if (kv_list(json_object_get(e, "headers"), &q->headers, &q->n_headers) < 0)
        FAIL(LAB_ERROR, "request %d: header values must be strings", q->r);
    v = json_object_get(e, "form");
    q->has_form = json_is_object(v);
    if (kv_list(v, &q->form, &q->n_form) < 0)
        FAIL(LAB_ERROR, "request %d: form values must be strings", q->r);
    s = str_field(e, "form_encoding");
    if (s && strcmp(s, "urlencoded") && strcmp(s, "multipart"))
        FAIL(LAB_UNSUPPORTED, "form_encoding '%s' is not known", s);
    q->multipart = s && !strcmp(s, "multipart");
    q->body_file = str_field(e, "body_file");
    q->content_type = str_field(e, "content_type");
    if (q->has_form && q->body_file)
        FAIL(LAB_ERROR, "request %d: both form and body_file", q->r);
    q->follow_redirects = bool_field(e, "follow_redirects", -1);
    s = str_field(e, "sink");
    if (s && strcmp(s, "memory") && strcmp(s, "file"))
        FAIL(LAB_UNSUPPORTED, "sink '%s' is not known", s);
    q->sink_file = s && !strcmp(s, "file");
    q->sink_path = str_field(e, "sink_path");
    if (q->sink_file && !q->sink_path)
        FAIL(LAB_ERROR, "request %d: sink file without sink_path", q->r);
    return LAB_READY;
}

/* job.options → job->opt; a non-null option the driver does not honour, or a bad value, is refused */
static lab_status parse_options(json_t *opts, lab_job *job, unsigned honoured, char *why,
                                size_t why_len)
{
    static const struct { const char *name; unsigned bit; } known[] = {
        {"tcp_nodelay", LAB_OPT_TCP_NODELAY}, {"max_host_connections", LAB_OPT_MAX_HOST_CONNECTIONS},
        {"share", LAB_OPT_SHARE}, {"expect_100", LAB_OPT_EXPECT_100}, {"multi_api", LAB_OPT_MULTI_API},
        {"accept_encoding", LAB_OPT_ACCEPT_ENCODING},
    };
    const char *key;
    json_t *v;
    job->opt.tcp_nodelay = job->opt.expect_100 = job->opt.share = -1;
    job->opt.max_host_connections = -1;
    job->opt.multi_api = LAB_MULTI_UNSET;
    job->opt.library_encoding = 0;
    if (opts && !json_is_object(opts) && !json_is_null(opts))
        FAIL(LAB_ERROR, "options must be an object");
    json_object_foreach(opts, key, v) {
        unsigned bit = 0;
        if (json_is_null(v))
            continue; /* null: the client's own default, always fine */
        for (size_t i = 0; i < sizeof known / sizeof *known; i++)
            if (!strcmp(key, known[i].name))
                bit = known[i].bit;
        if (!bit)
            FAIL(LAB_UNSUPPORTED, "option '%s' is not known to this driver", key);
        if (!(honoured & bit))
            FAIL(LAB_UNSUPPORTED, "option '%s' cannot be set with this client", key);
        if (bit == LAB_OPT_TCP_NODELAY || bit == LAB_OPT_EXPECT_100) {
            if (!json_is_boolean(v))
                FAIL(LAB_UNSUPPORTED, "option '%s' must be true or false", key);
            *(bit == LAB_OPT_TCP_NODELAY ? &job->opt.tcp_nodelay : &job->opt.expect_100) = json_is_true(v);
        } else if (bit == LAB_OPT_MAX_HOST_CONNECTIONS) {
            if (!json_is_integer(v) || json_integer_value(v) < 1)
                FAIL(LAB_UNSUPPORTED, "option '%s' must be a positive integer", key);
            job->opt.max_host_connections = (long)json_integer_value(v);
        } else if (bit == LAB_OPT_SHARE) {
            size_t i;
            json_t *item;
            if (!json_is_array(v))
                FAIL(LAB_UNSUPPORTED, "option 'share' must be a list");
            job->opt.share = 0;
            json_array_foreach(v, i, item) {
                const char *s = json_string_value(item);
                if (s && !strcmp(s, "dns")) job->opt.share |= LAB_SHARE_DNS;
                else if (s && !strcmp(s, "tls")) job->opt.share |= LAB_SHARE_TLS;
                else if (s && !strcmp(s, "connections")) job->opt.share |= LAB_SHARE_CONNECTIONS;
                else FAIL(LAB_UNSUPPORTED, "option 'share': unknown item");
            }
        } else if (bit == LAB_OPT_ACCEPT_ENCODING) {
            const char *s = json_string_value(v);
            if (!s || strcmp(s, "library"))
                FAIL(LAB_UNSUPPORTED, "option 'accept_encoding' must be \"library\"");
            job->opt.library_encoding = 1;
        } else {
            const char *s = json_string_value(v);
            if (s && !strcmp(s, "multi")) job->opt.multi_api = LAB_MULTI_MULTI;
            else if (s && !strcmp(s, "multi_socket")) job->opt.multi_api = LAB_MULTI_SOCKET;
            else FAIL(LAB_UNSUPPORTED, "option 'multi_api' must be \"multi\" or \"multi_socket\"");
        }
    }
    return LAB_READY;
}

lab_status lab_job_parse(json_t *obj, const lab_driver *d, lab_job *job, char *why, size_t why_len)
{
    json_t *reqs = json_object_get(obj, "requests"), *v;
    const char *http = str_field(obj, "http");
    lab_status st;

    memset(job, 0, sizeof *job);
    job->json = obj;
    if (!json_is_object(obj) || !json_is_array(reqs))
        FAIL(LAB_ERROR, "job must be an object with a requests list");
    job->scenario = str_field(obj, "scenario");
    job->verify = bool_field(obj, "verify", 0);
    if (!http || !strcmp(http, "1.1")) job->http = LAB_HTTP_11;
    else if (!strcmp(http, "2")) job->http = LAB_HTTP_2;
    else if (!strcmp(http, "h2c")) job->http = LAB_HTTP_H2C;
    else FAIL(LAB_UNSUPPORTED, "http '%s' is not known", http);
    job->tls_ca = str_field(obj, "tls_ca");
    v = json_object_get(obj, "concurrency");
    job->concurrency = json_is_integer(v) ? (int)json_integer_value(v) : 1;
    if (job->concurrency < 1)
        FAIL(LAB_ERROR, "concurrency must be at least 1");
    job->keep_alive = bool_field(obj, "keep_alive", 1);
    job->cookies = bool_field(obj, "cookies", 0);
    job->accept_gzip = bool_field(obj, "accept_gzip", 0);
    v = json_object_get(obj, "timeout_s");
    job->timeout_s = json_is_number(v) ? json_number_value(v) : 0;
    if (json_is_number(v) && job->timeout_s <= 0)
        FAIL(LAB_ERROR, "timeout_s must be positive");

    job->n_requests = json_array_size(reqs);
    job->requests = calloc(job->n_requests ? job->n_requests : 1, sizeof *job->requests);
    if (!job->requests)
        FAIL(LAB_ERROR, "out of memory");
    for (size_t i = 0; i < job->n_requests; i++) {
        job->requests[i].r = (int)i;
        if ((st = parse_request(json_array_get(reqs, i), &job->requests[i], why, why_len)))
            return st;
        job->total += job->requests[i].repeat;
    }
    return parse_options(json_object_get(obj, "options"), job, d->options, why, why_len);
}

void lab_job_free(lab_job *job)
{
    for (size_t i = 0; job->requests && i < job->n_requests; i++) {
        free(job->requests[i].headers);
        free(job->requests[i].form);
    }
    free(job->requests);
    job->requests = NULL;
}
