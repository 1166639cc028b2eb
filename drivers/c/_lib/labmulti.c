/* labmulti: see labmulti.h. */
#include "labmulti.h"

#include <stdlib.h>
#include <string.h>

#define MOPT(opt, val) do { if (curl_multi_setopt(m->multi, opt, val) != CURLM_OK) { \
        snprintf(why, why_len, "libcurl refused %s", #opt); return LAB_UNSUPPORTED; } } while (0)

static const lab_multi_loop *the_loop;

static lab_status open_multi(lab_multi *m, const lab_job *job, char *why, size_t why_len)
{
    int share = job->opt.share > 0 ? job->opt.share : 0; /* LAB_SHARE_* */

    m->job = job;
    m->loop = the_loop;
    if (job->opt.multi_api != LAB_MULTI_UNSET && job->opt.multi_api != m->loop->api) {
        snprintf(why, why_len, "this driver uses %s; multi_api=%s is c-libcurl-%s", m->loop->description,
                 job->opt.multi_api == LAB_MULTI_MULTI ? "multi" : "multi_socket",
                 job->opt.multi_api == LAB_MULTI_MULTI ? "multi" : "multi-socket");
        return LAB_UNSUPPORTED;
    }
    if ((m->h2c_fix = lab_curl_h2c_fix(job, why, why_len)) < 0)
        return LAB_UNSUPPORTED;
    if (!(m->multi = curl_multi_init())) {
        snprintf(why, why_len, "curl_multi_init failed");
        return LAB_ERROR;
    }
    if (job->opt.max_host_connections > 0)
        MOPT(CURLMOPT_MAX_HOST_CONNECTIONS, job->opt.max_host_connections);
    MOPT(CURLMOPT_PIPELINING, job->http == LAB_HTTP_11 ? (long)CURLPIPE_NOTHING : (long)CURLPIPE_MULTIPLEX);
    if (share || job->cookies) {
        m->share = curl_share_init();
        if (share & LAB_SHARE_DNS)
            curl_share_setopt(m->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
        if (share & LAB_SHARE_TLS)
            curl_share_setopt(m->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
        if ((share & LAB_SHARE_CONNECTIONS)
            && curl_share_setopt(m->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT) != CURLSHE_OK) {
            snprintf(why, why_len, "this libcurl cannot share connections (CURL_LOCK_DATA_CONNECT)");
            return LAB_UNSUPPORTED;
        }
        if (job->cookies) /* one cookie store for the job, whichever handle runs a request */
            curl_share_setopt(m->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_COOKIE);
    }
    m->n_pool = job->concurrency > 1 ? (size_t)job->concurrency : 1;
    if (!(m->pool = calloc(m->n_pool, sizeof *m->pool))) {
        snprintf(why, why_len, "out of memory");
        return LAB_ERROR;
    }
    for (size_t i = 0; i < m->n_pool; i++) {
        lab_transfer *t = &m->pool[i];
        lab_status st;
        if (!(t->easy = curl_easy_init())) {
            snprintf(why, why_len, "curl_easy_init failed");
            return LAB_ERROR;
        }
        if ((st = lab_curl_job_options(t->easy, job, why, why_len)) != LAB_READY)
            return st;
        curl_easy_setopt(t->easy, CURLOPT_ERRORBUFFER, t->errbuf);
        curl_easy_setopt(t->easy, CURLOPT_PRIVATE, t);
        if (m->share)
            curl_easy_setopt(t->easy, CURLOPT_SHARE, m->share);
        if (job->http != LAB_HTTP_11 && job->keep_alive) /* wait for a connection that can multiplex,
                                                            rather than open more */
            curl_easy_setopt(t->easy, CURLOPT_PIPEWAIT, 1L);
    }
    if (m->loop->open && m->loop->open(m)) {
        snprintf(why, why_len, "cannot set up the event loop");
        return LAB_ERROR;
    }
    return LAB_READY;
}

static lab_transfer *idle_transfer(lab_multi *m)
{
    for (size_t i = 0; i < m->n_pool; i++)
        if (!m->pool[i].busy)
            return &m->pool[i];
    return NULL;
}

/* the next request on `t`'s handle; -1 (an error in the report) when its files cannot be opened */
static int set_up(lab_multi *m, lab_transfer *t, const lab_request *q)
{
    t->q = q;
    t->errbuf[0] = 0;
    if (lab_curl_entry(t->easy, m->job, q, &t->entry)) {
        lab_add_error(m->rep, q->r, "cannot read body_file %s", q->body_file);
        lab_curl_entry_free(&t->entry);
        return -1;
    }
    if (lab_curl_sink_open(t->easy, m->job, q, &t->sink)) {
        lab_add_error(m->rep, q->r, "cannot open sink_path %s", q->sink_path);
        lab_curl_entry_free(&t->entry);
        return -1;
    }
    if (m->h2c_fix) {
        t->h2c_reuse = m->h2c_live;
        curl_easy_setopt(t->easy, CURLOPT_HTTP_VERSION, lab_curl_h2c_version(t->h2c_reuse));
    }
    return 0;
}

/* requests in order onto idle handles, until the pool is busy or the job has none left */
static void start(lab_multi *m)
{
    lab_transfer *t;
    while (m->next_entry < m->job->n_requests && (t = idle_transfer(m))) {
        const lab_request *q = &m->job->requests[m->next_entry];
        if (m->h2c_fix && !m->h2c_live && m->running)
            break; /* one transfer opens the h2c connection, the others wait to reuse it */
        if (++m->next_repeat >= q->repeat) {
            m->next_entry++;
            m->next_repeat = 0;
        }
        if (set_up(m, t, q))
            continue;
        t->busy = 1;
        m->running++;
        curl_multi_add_handle(m->multi, t->easy);
    }
}

/* curl#10634 (labcurl.h): a transfer that asked for plain HTTP/2 must have reused the h2c
   connection; had it opened one, that was by Upgrade, not prior knowledge */
static CURLcode h2c_done(lab_multi *m, lab_transfer *t, CURLcode rc)
{
    long version = 0, connects = 0;
    curl_easy_getinfo(t->easy, CURLINFO_HTTP_VERSION, &version);
    curl_easy_getinfo(t->easy, CURLINFO_NUM_CONNECTS, &connects);
    if (rc == CURLE_OK && t->h2c_reuse && connects > 0) {
        snprintf(t->errbuf, sizeof t->errbuf, "opened a connection by Upgrade instead of prior knowledge");
        rc = CURLE_HTTP2;
    }
    m->h2c_live = rc == CURLE_OK && version == CURL_HTTP_VERSION_2_0;
    return rc;
}

void lab_multi_reap(lab_multi *m)
{
    CURLMsg *msg;
    int left;
    int finished = 0;
    while ((msg = curl_multi_info_read(m->multi, &left))) {
        lab_transfer *t;
        if (msg->msg != CURLMSG_DONE)
            continue;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&t);
        CURLcode rc = msg->data.result;
        curl_multi_remove_handle(m->multi, t->easy); /* msg is invalid from here on */
        if (m->h2c_fix)
            rc = h2c_done(m, t, rc);
        lab_curl_done(t->easy, rc, t->errbuf, m->job, t->q, &t->sink, m->rep);
        lab_curl_entry_free(&t->entry);
        t->busy = 0;
        m->running--;
        finished = 1;
    }
    if (finished)
        start(m);
}

void lab_multi_abort(lab_multi *m, const char *message)
{
    for (size_t i = 0; i < m->n_pool; i++) {
        lab_transfer *t = &m->pool[i];
        if (!t->busy)
            continue;
        curl_multi_remove_handle(m->multi, t->easy);
        snprintf(t->errbuf, sizeof t->errbuf, "%s", message);
        lab_curl_done(t->easy, CURLE_ABORTED_BY_CALLBACK, t->errbuf, m->job, t->q, &t->sink, m->rep);
        lab_curl_entry_free(&t->entry);
        t->busy = 0;
    }
    for (; m->next_entry < m->job->n_requests; m->next_entry++, m->next_repeat = 0)
        for (; m->next_repeat < m->job->requests[m->next_entry].repeat; m->next_repeat++)
            lab_add_error(m->rep, m->job->requests[m->next_entry].r, "%s", message);
    m->running = 0;
}

static void close_multi(lab_multi *m)
{
    for (size_t i = 0; m->pool && i < m->n_pool; i++)
        if (m->pool[i].easy)
            curl_easy_cleanup(m->pool[i].easy);
    free(m->pool);
    if (m->multi)
        curl_multi_cleanup(m->multi); /* closes the connections: the next job starts cold */
    if (m->share)
        curl_share_cleanup(m->share); /* and the shared ones */
    if (m->loop && m->loop->close) /* last: libcurl calls the loop's callbacks while closing */
        m->loop->close(m);
}

static lab_status prepare(const lab_job *job, void **state, char *why, size_t why_len)
{
    lab_multi *m = calloc(1, sizeof *m);
    *state = m;
    if (!m) {
        snprintf(why, why_len, "out of memory");
        return LAB_ERROR;
    }
    return open_multi(m, job, why, why_len);
}

static void run(const lab_job *job, void *state, lab_report *rep)
{
    lab_multi *m = state;
    (void)job;
    m->rep = rep;
    start(m);
    m->loop->run(m);
}

/* the next calibration round on the kept pool: its options stand (the same scenario); start()
   feeds `job` from its first request, and the curl#10634 work-around must know whether the
   round's port still has the h2c connection */
static lab_status reuse(const lab_job *job, void *state, char *why, size_t why_len)
{
    lab_multi *m = state;
    (void)why;
    (void)why_len;
    if (m->h2c_live && !(job->n_requests && m->job->n_requests
                         && lab_curl_h2c_same_origin(m->job->requests[0].url, job->requests[0].url)))
        m->h2c_live = 0;
    m->job = job;
    m->next_entry = 0;
    m->next_repeat = 0;
    return LAB_READY;
}

static void finish(const lab_job *job, void *state)
{
    (void)job;
    if (state)
        close_multi(state);
    free(state);
}

int lab_multi_main(const lab_multi_loop *loop)
{
    lab_driver d = {
        .name = loop->name,
        /* accept_encoding "library": as the easy driver (libcurl sends no Accept-Encoding unless told) */
        .options = LAB_OPT_TCP_NODELAY | LAB_OPT_EXPECT_100 | LAB_OPT_MAX_HOST_CONNECTIONS | LAB_OPT_SHARE |
                   LAB_OPT_MULTI_API | LAB_OPT_ACCEPT_ENCODING,
        .versions = lab_curl_versions,
        .prepare = prepare,
        .run = run,
        .finish = finish,
        .reuse = reuse,
    };
    int rc;
    the_loop = loop;
    if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
        fprintf(stderr, "%s: curl_global_init failed\n", loop->name);
        return 3;
    }
    rc = lab_main(&d);
    curl_global_cleanup();
    return rc;
}
