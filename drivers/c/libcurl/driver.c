/* c-libcurl: libcurl's easy interface, one easy handle reused for every request of a job. */
#include "labcurl.h"

#include <stdlib.h>

/* A test driver may include this file under a name of its own with work added before each
   request (tests/testdrivers/planted-c); built here, it is c-libcurl and adds nothing. */
#ifndef LAB_DRIVER_NAME
#define LAB_DRIVER_NAME "c-libcurl"
#endif
#ifndef LAB_BEFORE_REQUEST
#define LAB_BEFORE_REQUEST() ((void)0)
#endif

typedef struct {
    CURL *easy;
    char errbuf[CURL_ERROR_SIZE];
    int h2c_fix;                /* work around curl#10634 (labcurl.h) */
    int h2c_live;               /* an h2c connection is open to reuse */
} client;

static lab_status prepare(const lab_job *job, void **state, char *why, size_t why_len)
{
    client *c = calloc(1, sizeof *c);
    lab_status st;

    *state = c;
    if (!c || !(c->easy = curl_easy_init())) {
        snprintf(why, why_len, "curl_easy_init failed");
        return LAB_ERROR;
    }
    if ((st = lab_curl_job_options(c->easy, job, why, why_len)) != LAB_READY)
        return st;
    curl_easy_setopt(c->easy, CURLOPT_ERRORBUFFER, c->errbuf);
    if ((c->h2c_fix = lab_curl_h2c_fix(job, why, why_len)) < 0)
        return LAB_UNSUPPORTED;
    return LAB_READY;
}

static void one_request(client *c, const lab_job *job, const lab_request *q, lab_entry *e, lab_report *rep)
{
    lab_sink s;
    long version = 0;
    CURLcode rc;

    if (lab_curl_sink_open(c->easy, job, q, &s)) {
        lab_add_error(rep, q->r, "cannot open sink_path %s", q->sink_path);
        return;
    }
    if (e->upload)
        rewind(e->upload);
    c->errbuf[0] = 0;
    LAB_BEFORE_REQUEST();
    if (c->h2c_fix)
        curl_easy_setopt(c->easy, CURLOPT_HTTP_VERSION, lab_curl_h2c_version(c->h2c_live));
    rc = curl_easy_perform(c->easy);
    curl_easy_getinfo(c->easy, CURLINFO_HTTP_VERSION, &version);
    c->h2c_live = c->h2c_fix && rc == CURLE_OK && version == CURL_HTTP_VERSION_2_0;
    lab_curl_done(c->easy, rc, c->errbuf, job, q, &s, rep);
}

static void run(const lab_job *job, void *state, lab_report *rep)
{
    client *c = state;
    for (size_t i = 0; i < job->n_requests; i++) {
        const lab_request *q = &job->requests[i];
        lab_entry e = {0};
        int ok = lab_curl_entry(c->easy, job, q, &e) == 0;
        for (long k = 0; k < q->repeat; k++)
            if (ok)
                one_request(c, job, q, &e, rep);
            else
                lab_add_error(rep, q->r, "cannot read body_file %s", q->body_file);
        lab_curl_entry_free(&e);
    }
}

/* the next calibration round on the kept handle: its options stand (the same scenario), only the
   curl#10634 work-around must know whether the round's port still has the h2c connection */
static lab_status reuse(const lab_job *job, void *state, char *why, size_t why_len)
{
    client *c = state;
    char *last = NULL;
    (void)why;
    (void)why_len;
    curl_easy_getinfo(c->easy, CURLINFO_EFFECTIVE_URL, &last);
    if (c->h2c_live && !(job->n_requests && lab_curl_h2c_same_origin(last, job->requests[0].url)))
        c->h2c_live = 0;
    return LAB_READY;
}

static void finish(const lab_job *job, void *state)
{
    client *c = state;
    (void)job;
    if (c && c->easy)
        curl_easy_cleanup(c->easy); /* closes its connections: the next job starts cold */
    free(c);
}

int main(void)
{
    static const lab_driver d = {
        .name = LAB_DRIVER_NAME,
        /* accept_encoding "library": libcurl sends no Accept-Encoding and decodes nothing unless
           CURLOPT_ACCEPT_ENCODING is set, as a job without accept_gzip does already */
        .options = LAB_OPT_TCP_NODELAY | LAB_OPT_EXPECT_100 | LAB_OPT_ACCEPT_ENCODING,
        .versions = lab_curl_versions,
        .prepare = prepare,
        .run = run,
        .finish = finish,
        .reuse = reuse,
    };
    int rc;
    if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
        fprintf(stderr, "c-libcurl: curl_global_init failed\n");
        return 3;
    }
    rc = lab_main(&d);
    curl_global_cleanup();
    return rc;
}
