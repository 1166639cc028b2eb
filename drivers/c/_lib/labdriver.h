/* labdriver: the clientlab driver protocol (docs/driver-protocol.md) for C drivers.
 *
 * A driver fills a lab_driver with the options it honours and its callbacks, then calls
 * lab_main(). Capabilities are declared in driver.toml only: the lab sends no job that needs
 * one the manifest does not claim. The library does hello / job / ready / go / done / report
 * and the calibration loop (bare rounds on one kept client, timed by the driver's own clock);
 * the driver only builds its client (prepare), does the requests (run) and closes it (finish).
 */
#ifndef LABDRIVER_H
#define LABDRIVER_H

#include <stddef.h>
#include <jansson.h>

/* job.options known in protocol version 1; a driver lists the ones it honours */
enum {
    LAB_OPT_TCP_NODELAY = 1 << 0, LAB_OPT_MAX_HOST_CONNECTIONS = 1 << 1, LAB_OPT_SHARE = 1 << 2,
    LAB_OPT_EXPECT_100 = 1 << 3, LAB_OPT_MULTI_API = 1 << 4,
    /* accept_encoding "library": the job leaves Accept-Encoding and decoding to the library as it
       ships (opt.library_encoding); a driver honours it where it sets neither unless told */
    LAB_OPT_ACCEPT_ENCODING = 1 << 5,
};
enum { LAB_SHARE_DNS = 1 << 0, LAB_SHARE_TLS = 1 << 1, LAB_SHARE_CONNECTIONS = 1 << 2 };
typedef enum { LAB_MULTI_UNSET = 0, LAB_MULTI_MULTI, LAB_MULTI_SOCKET } lab_multi_api;
typedef enum { LAB_HTTP_11, LAB_HTTP_2, LAB_HTTP_H2C } lab_http;

typedef struct { const char *name, *value; } lab_kv;

/* one request entry; strings point into the job's JSON and live as long as the job */
typedef struct {
    int r;                      /* index in job.requests, reported as "r" */
    const char *method, *url;
    long repeat;
    lab_kv *headers; size_t n_headers;
    lab_kv *form; size_t n_form; /* n_form > 0 or has_form: a form body */
    int has_form, multipart;    /* multipart: form_encoding == "multipart" */
    const char *body_file, *content_type; /* body_file NULL: no raw body */
    int follow_redirects;       /* 1 / 0 as the job says; -1 when absent (the URL does not
                                   redirect: the client's redirect setting stays as it ships) */
    int sink_file; const char *sink_path;
} lab_request;

typedef struct {
    const char *scenario;
    int verify;
    lab_http http;
    const char *tls_ca;         /* NULL when the job has none */
    int concurrency, keep_alive, cookies, accept_gzip;
    double timeout_s;           /* 0 when the job names none: the library keeps its own default */
    struct {                    /* -1 / 0 / LAB_MULTI_UNSET: null, i.e. the client's default */
        int tcp_nodelay, expect_100;
        long max_host_connections;
        int share;              /* LAB_SHARE_* bits, -1 when null */
        lab_multi_api multi_api;
        int library_encoding;   /* 1: accept_encoding "library", 0: null */
    } opt;
    lab_request *requests; size_t n_requests;
    long total;                 /* sum of repeats */
    json_t *json;               /* the job object itself, for anything not parsed above */
} lab_job;

/* what one request got; sha256 only when job.verify */
typedef struct {
    int r, status, has_sha;
    long long bytes;
    char http[4];
    unsigned char sha[32];
} lab_response;

typedef struct { int r; char *message; } lab_error;

/* where run() puts each request's outcome: a timed trial's report, or a bare round's tally.
   A tally keeps what fits in the room it is given (no response, the first error) and only
   counts the rest (n_responses, n_errors), so the calibration loop runs the timed trial's very
   code without building a report that a plain program would not build */
typedef struct {
    lab_response *responses; size_t n_responses, cap_responses;
    lab_error *errors; size_t n_errors, cap_errors;
    int tally;
} lab_report;

typedef enum { LAB_READY, LAB_UNSUPPORTED, LAB_ERROR } lab_status;

typedef struct {
    const char *name;           /* for log lines on stderr */
    unsigned options;           /* LAB_OPT_* it can honour */
    /* add {"name": "version"} pairs to `versions` (called once, at hello) */
    void (*versions)(json_t *versions);
    /* build the client for `job` (no connection, no request); on refusal write why */
    lab_status (*prepare)(const lab_job *job, void **state, char *why, size_t why_len);
    /* the timed phase: every request of the job, results into `report` (also a bare round's
       tally: the same code is what the calibration loop measures) */
    void (*run)(const lab_job *job, void *state, lab_report *report);
    /* close the client (after the report); also called when prepare failed half-way */
    void (*finish)(const lab_job *job, void *state);
    /* optional, for the calibration loop: the client prepared for an earlier bare round takes
       `job` for the next one (the same scenario; the server's port may differ). Untimed. The
       earlier round's job is freed only after this returns; a client that points into it must
       point at `job` from now on. On refusal the library closes the client (finish) */
    lab_status (*reuse)(const lab_job *job, void *state, char *why, size_t why_len);
} lab_driver;

int lab_main(const lab_driver *driver);

void lab_add_response(lab_report *report, int r, long status, long long bytes, const char *http,
                      const unsigned char *sha /* NULL: none */);
void lab_add_error(lab_report *report, int r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void lab_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* a growing body buffer, as a program that keeps the body would have */
typedef struct { char *data; size_t len, cap; } lab_buf;
int lab_buf_append(lab_buf *buf, const void *data, size_t len); /* 0 on success */
void lab_buf_free(lab_buf *buf);

/* SHA-256 (OpenSSL EVP), for verification passes only */
typedef struct lab_sha256 lab_sha256;
lab_sha256 *lab_sha256_new(void);
void lab_sha256_update(lab_sha256 *h, const void *data, size_t len);
void lab_sha256_final(lab_sha256 *h, unsigned char out[32]); /* also frees h */
void lab_sha256_buf(const void *data, size_t len, unsigned char out[32]);
int lab_sha256_file(const char *path, unsigned char out[32], long long *size); /* 0 on success */

/* "gcc 12.2" (the compiler that built the driver), for versions */
const char *lab_compiler(void);

#endif
