/* cli-curl: the curl command line, one process per request (so its start-up cost is measured).
 * The body comes back on a pipe (sink memory) or in sink_path (-o); -w writes status and HTTP
 * version to curl's stderr, which goes to a scratch file so the body stays clean. */
#define _GNU_SOURCE
#include "labdriver.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define WRITE_OUT_TAG "clientlab-w: "

typedef struct { char **v; size_t n, cap; } argv_t;

static long curl_version_num;   /* 0x078801 for 7.88.1, from `curl --version` at hello */

typedef struct {
    char dir[256], err_path[300], jar_path[300];
    argv_t *argv;               /* one command line per request entry */
    size_t n_argv;
} cli;

static void add(argv_t *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(argv_t *a, const char *fmt, ...)
{
    va_list ap;
    if (a->n + 2 > a->cap) {
        a->cap = a->cap ? a->cap * 2 : 32;
        if (!(a->v = realloc(a->v, a->cap * sizeof *a->v)))
            exit(3);
    }
    va_start(ap, fmt);
    if (vasprintf(&a->v[a->n++], fmt, ap) < 0)
        exit(3);
    va_end(ap);
    a->v[a->n] = NULL;
}

/* percent-encodes a form field name: --data-urlencode only encodes the value part */
static char *escape(const char *s)
{
    char *out = malloc(strlen(s) * 3 + 1), *p = out;
    if (!out)
        exit(3);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("-._~", c))
            *p++ = (char)c;
        else
            p += sprintf(p, "%%%02X", c);
    }
    *p = 0;
    return out;
}

/* runs argv with stdin from /dev/null, stdout to out_fd (or /dev/null), stderr to err_path */
static int spawn(char **argv, int out_fd, const char *err_path, pid_t *pid)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t pipe_only;
    int rc;
    /* the driver ignores SIGPIPE, and ignored signals survive exec: give curl the default */
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setsigdefault(&attr, &pipe_only);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (out_fd >= 0)
        posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
    else
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, err_path ? err_path : "/dev/null",
                                     O_WRONLY | O_CREAT | O_TRUNC, 0600);
    rc = posix_spawnp(pid, argv[0], &fa, &attr, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    return rc;
}

/* runs argv, its stdout into buf (when buf is not NULL); returns the wait status, or -1 */
static int run_curl(char **argv, lab_buf *buf, const char *err_path, char *why, size_t why_len)
{
    static char chunk[1 << 16];
    int fds[2] = {-1, -1}, status = 0, rc;
    pid_t pid;
    ssize_t n;

    if (buf && pipe2(fds, O_CLOEXEC)) {
        snprintf(why, why_len, "pipe: %s", strerror(errno));
        return -1;
    }
    rc = spawn(argv, fds[1], err_path, &pid);
    if (fds[1] >= 0)
        close(fds[1]);
    if (rc) {
        snprintf(why, why_len, "cannot start %s: %s", argv[0], strerror(rc));
        if (fds[0] >= 0)
            close(fds[0]);
        return -1;
    }
    while (buf && ((n = read(fds[0], chunk, sizeof chunk)) > 0 || (n < 0 && errno == EINTR)))
        if (n > 0 && lab_buf_append(buf, chunk, (size_t)n))
            break; /* out of memory: curl then fails on a broken pipe */
    if (fds[0] >= 0)
        close(fds[0]);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return status;
}

static void versions(json_t *v)
{
    char *argv[] = {"curl", "--version", NULL}, why[256];
    lab_buf out = {0};
    char *line, *tok, *save;
    if (run_curl(argv, &out, NULL, why, sizeof why) != 0 || lab_buf_append(&out, "", 1) != 0) {
        json_object_set_new(v, "curl", json_string("unknown"));
    } else {
        /* "curl 7.88.1 (x86_64-pc-linux-gnu) libcurl/7.88.1 OpenSSL/3.0.22 ... nghttp2/1.52.0 ..." */
        line = strtok_r(out.data, "\n", &save);
        for (int i = 0; (tok = strtok_r(i ? NULL : line, " ", &save)); i++) {
            unsigned major = 0, minor = 0, patch = 0;
            if (i == 1 && sscanf(tok, "%u.%u.%u", &major, &minor, &patch) >= 2)
                curl_version_num = (long)(major << 16 | minor << 8 | patch);
            if (i == 1)
                json_object_set_new(v, "curl", json_string(tok));
            else if (!strncmp(tok, "libcurl/", 8))
                json_object_set_new(v, "libcurl", json_string(tok + 8));
            else if (!strncmp(tok, "OpenSSL/", 8) || !strncmp(tok, "GnuTLS/", 7))
                json_object_set_new(v, "ssl", json_string(tok));
            else if (!strncmp(tok, "nghttp2/", 8))
                json_object_set_new(v, "nghttp2", json_string(tok + 8));
        }
    }
    json_object_set_new(v, "compiler", json_string(lab_compiler()));
    lab_buf_free(&out);
}

/* the command line of one request entry; everything per job and per entry, nothing per repeat */
static void command(const cli *c, const lab_job *job, const lab_request *q, argv_t *a)
{
    int has_body = q->has_form || q->body_file;
    add(a, "curl");
    add(a, "-q");               /* no ~/.curlrc: only what the job asks */
    add(a, "-sS");
    add(a, job->http == LAB_HTTP_2 ? "--http2" : job->http == LAB_HTTP_H2C ? "--http2-prior-knowledge"
                                                                         : "--http1.1");
    if (job->tls_ca) {
        add(a, "--cacert");
        add(a, "%s", job->tls_ca);
    }
    if (job->timeout_s > 0) {
        add(a, "--max-time");
        add(a, "%g", job->timeout_s);
    }
    if (job->accept_gzip) {     /* --compressed decodes; the header narrows its list to gzip */
        add(a, "--compressed");
        add(a, "-H");
        add(a, "Accept-Encoding: gzip");
    }
    if (job->cookies) {         /* one jar for the job, read and written by every process */
        add(a, "-b");
        add(a, "%s", c->jar_path);
        add(a, "-c");
        add(a, "%s", c->jar_path);
    }
    if (job->opt.tcp_nodelay >= 0)
        add(a, job->opt.tcp_nodelay ? "--tcp-nodelay" : "--no-tcp-nodelay");
    if (q->follow_redirects == 1) /* without -L curl never follows: false and absent alike */
        add(a, "-L");
    if (!strcmp(q->method, "HEAD"))
        add(a, "-I");           /* -X HEAD would wait for a body */
    else if (strcmp(q->method, has_body ? "POST" : "GET")) {
        add(a, "-X");
        add(a, "%s", q->method);
    }
    for (size_t i = 0; i < q->n_headers; i++) {
        add(a, "-H");           /* "name;" is curl's way to send an empty value */
        add(a, *q->headers[i].value ? "%s: %s" : "%s;", q->headers[i].name, q->headers[i].value);
    }
    for (size_t i = 0; i < q->n_form; i++) {
        if (q->multipart) {     /* --form-string: no @file or ;type= interpretation */
            add(a, "--form-string");
            add(a, "%s=%s", q->form[i].name, q->form[i].value);
        } else {
            char *name = escape(q->form[i].name);
            add(a, "--data-urlencode");
            add(a, "%s=%s", name, q->form[i].value);
            free(name);
        }
    }
    if (q->has_form && !q->multipart && q->n_form == 0) {
        add(a, "--data-raw");   /* an empty form is still a POST body */
        add(a, "%s", "");
    }
    if (q->body_file) {
        add(a, "--data-binary");
        add(a, "@%s", q->body_file);
        add(a, "-H");
        add(a, "Content-Type: %s", q->content_type ? q->content_type : "application/octet-stream");
    }
    if (has_body && job->opt.expect_100 >= 0) {
        add(a, "-H");
        add(a, job->opt.expect_100 ? "Expect: 100-continue" : "Expect:");
    }
    if (q->sink_file || !strcmp(q->method, "HEAD")) {
        add(a, "-o");
        add(a, "%s", q->sink_file ? q->sink_path : "/dev/null");
    }
    add(a, "-w");
    add(a, "%%{stderr}\n" WRITE_OUT_TAG "%%{http_code} %%{http_version}\n");
    add(a, "--");
    add(a, "%s", q->url);
}

static void free_commands(cli *c)
{
    for (size_t i = 0; c->argv && i < c->n_argv; i++) {
        for (size_t k = 0; k < c->argv[i].n; k++)
            free(c->argv[i].v[k]);
        free(c->argv[i].v);
    }
    free(c->argv);
    c->argv = NULL;
    c->n_argv = 0;
}

/* the command lines of `job`'s entries, in place of an earlier job's */
static lab_status commands(cli *c, const lab_job *job, char *why, size_t why_len)
{
    free_commands(c);
    for (size_t i = 0; job->http == LAB_HTTP_H2C && curl_version_num < 0x080000 && i < job->n_requests; i++)
        if (job->requests[i].follow_redirects == 1) {
            /* curl < 8.0.0 fails a redirect that reuses its h2c connection (curl#10634) */
            snprintf(why, why_len, "curl before 8.0.0 fails redirects over h2c (curl#10634)");
            return LAB_UNSUPPORTED;
        }
    for (size_t i = 0; i < job->n_requests; i++)
        if (job->requests[i].body_file && access(job->requests[i].body_file, R_OK)) {
            /* curl would warn and send an empty body */
            snprintf(why, why_len, "cannot read body_file %s", job->requests[i].body_file);
            return LAB_ERROR;
        }
    if (!(c->argv = calloc(job->n_requests + 1, sizeof *c->argv))) {
        snprintf(why, why_len, "out of memory");
        return LAB_ERROR;
    }
    c->n_argv = job->n_requests;
    for (size_t i = 0; i < job->n_requests; i++)
        command(c, job, &job->requests[i], &c->argv[i]);
    return LAB_READY;
}

static lab_status prepare(const lab_job *job, void **state, char *why, size_t why_len)
{
    cli *c = calloc(1, sizeof *c);
    const char *tmp = getenv("TMPDIR");
    *state = c;
    if (!c) {
        snprintf(why, why_len, "out of memory");
        return LAB_ERROR;
    }
    snprintf(c->dir, sizeof c->dir, "%s/clientlab-cli-curl-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(c->dir)) {
        snprintf(why, why_len, "mkdtemp %s: %s", c->dir, strerror(errno));
        c->dir[0] = 0;
        return LAB_ERROR;
    }
    snprintf(c->err_path, sizeof c->err_path, "%s/stderr", c->dir);
    snprintf(c->jar_path, sizeof c->jar_path, "%s/cookies.txt", c->dir);
    return commands(c, job, why, why_len);
}

/* the next calibration round: the same scratch folder and cookie jar, the new job's URLs */
static lab_status reuse(const lab_job *job, void *state, char *why, size_t why_len)
{
    return commands(state, job, why, why_len);
}

/* "clientlab-w: 200 2" from curl's stderr; the rest of it is curl's error message, if any */
static int parse_stderr(const char *path, long *status, char http[4], char *msg, size_t msg_len)
{
    char text[4096] = "", *tag, *nl;
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f)
        fclose(f);
    text[n] = 0;
    tag = strstr(text, WRITE_OUT_TAG);
    if (tag)
        *tag = 0;
    for (nl = text + strlen(text); nl > text && strchr(" \r\n", nl[-1]); nl--)
        nl[-1] = 0;             /* the message's trailing newlines */
    snprintf(msg, msg_len, "%s", text);
    return tag && sscanf(tag + strlen(WRITE_OUT_TAG), "%ld %3s", status, http) == 2 ? 0 : -1;
}

static void one_request(cli *c, const lab_job *job, const lab_request *q, lab_report *rep)
{
    lab_buf body = {0};
    unsigned char sha[32];
    char why[512] = "", msg[4096], http[4] = "?";
    long status = 0;
    long long bytes;
    int memory = !q->sink_file && strcmp(q->method, "HEAD");
    int ws = run_curl(c->argv[q->r].v, memory ? &body : NULL, c->err_path, why, sizeof why);

    if (ws < 0) {
        lab_add_error(rep, q->r, "%s", why);
    } else if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
        parse_stderr(c->err_path, &status, http, msg, sizeof msg);
        if (WIFEXITED(ws))
            lab_add_error(rep, q->r, "curl exited %d: %s", WEXITSTATUS(ws), msg);
        else
            lab_add_error(rep, q->r, "curl killed by signal %d", WTERMSIG(ws));
    } else if (parse_stderr(c->err_path, &status, http, msg, sizeof msg)) {
        lab_add_error(rep, q->r, "no -w output from curl: %s", msg);
    } else if (q->sink_file) {
        struct stat st;
        if (job->verify ? lab_sha256_file(q->sink_path, sha, &bytes) : stat(q->sink_path, &st))
            lab_add_error(rep, q->r, "cannot read sink_path %s", q->sink_path);
        else
            lab_add_response(rep, q->r, status, job->verify ? bytes : (long long)st.st_size, http,
                             job->verify ? sha : NULL);
    } else {
        if (job->verify)
            lab_sha256_buf(body.data, body.len, sha);
        lab_add_response(rep, q->r, status, (long long)body.len, http, job->verify ? sha : NULL);
    }
    lab_buf_free(&body);
}

static void run(const lab_job *job, void *state, lab_report *rep)
{
    for (size_t i = 0; i < job->n_requests; i++)
        for (long k = 0; k < job->requests[i].repeat; k++)
            one_request(state, job, &job->requests[i], rep);
}

static void finish(const lab_job *job, void *state)
{
    cli *c = state;
    (void)job;
    if (!c)
        return;
    free_commands(c);
    if (c->dir[0]) {            /* the cookie jar goes too: the next job starts with none */
        unlink(c->err_path);
        unlink(c->jar_path);
        rmdir(c->dir);
    }
    free(c);
}

int main(void)
{
    static const lab_driver d = {
        .name = "cli-curl",
        /* accept_encoding "library": curl sends no Accept-Encoding and decodes nothing without
           --compressed, as a job without accept_gzip does already */
        .options = LAB_OPT_TCP_NODELAY | LAB_OPT_EXPECT_100 | LAB_OPT_ACCEPT_ENCODING,
        .versions = versions,
        .prepare = prepare,
        .run = run,
        .finish = finish,
        .reuse = reuse,
    };
    return lab_main(&d);
}
