/* The protocol loop: hello, then per job: parse, prepare, ready, go, run, done, report, finish. */
#define _GNU_SOURCE
#include "labdriver.h"
#include "labjob.h"

#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static FILE *proto;            /* the lab's stdout pipe; fd 1 itself points at stderr */
static const char *driver_name = "driver";

void lab_log(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", driver_name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* a JSON string; bytes >= 0x80 become '?' since messages need not be valid UTF-8 */
static void put_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c >= 0x80 ? '?' : c, f);
    }
    fputc('"', f);
}

static void send_json(json_t *msg)
{
    json_dumpf(msg, proto, JSON_COMPACT);
    fputc('\n', proto);
    fflush(proto);
    json_decref(msg);
}

static void send_simple(const char *type, const char *key, const char *text)
{
    fprintf(proto, "{\"type\":\"%s\"", type);
    if (key) {
        fprintf(proto, ",\"%s\":", key);
        put_json_string(proto, text);
    }
    fputs("}\n", proto);
    fflush(proto);
}

static void send_report(const lab_job *job, const lab_report *rep)
{
    fputs("{\"type\":\"report\",\"responses\":[", proto);
    for (size_t i = 0; i < rep->n_responses; i++) {
        const lab_response *x = &rep->responses[i];
        fprintf(proto, "%s{\"r\":%d,\"status\":%d,\"bytes\":%lld,\"http\":", i ? "," : "", x->r,
                x->status, x->bytes);
        put_json_string(proto, x->http);
        if (x->has_sha && job->verify) {
            fputs(",\"sha256\":\"", proto);
            for (int k = 0; k < 32; k++)
                fprintf(proto, "%02x", x->sha[k]);
            fputc('"', proto);
        }
        fputc('}', proto);
    }
    fputs("],\"errors\":[", proto);
    for (size_t i = 0; i < rep->n_errors; i++) {
        fprintf(proto, "%s{\"r\":%d,\"message\":", i ? "," : "", rep->errors[i].r);
        put_json_string(proto, rep->errors[i].message);
        fputc('}', proto);
    }
    fputs("]}\n", proto);
    fflush(proto);
}

static void *grow(void *p, size_t *cap, size_t need, size_t size)
{
    size_t n = *cap ? *cap : 64;
    void *q;
    if (need <= *cap)
        return p;
    while (n < need)
        n *= 2;
    if (!(q = realloc(p, n * size))) {
        lab_log("out of memory for the report");
        exit(3);
    }
    *cap = n;
    return q;
}

void lab_add_response(lab_report *rep, int r, long status, long long bytes, const char *http,
                      const unsigned char *sha)
{
    lab_response *x;
    rep->responses = grow(rep->responses, &rep->cap_responses, rep->n_responses + 1, sizeof *x);
    x = &rep->responses[rep->n_responses++];
    x->r = r;
    x->status = (int)status;
    x->bytes = bytes;
    snprintf(x->http, sizeof x->http, "%s", http ? http : "?");
    x->has_sha = sha != NULL;
    if (sha)
        memcpy(x->sha, sha, 32);
}

void lab_add_error(lab_report *rep, int r, const char *fmt, ...)
{
    va_list ap;
    char *msg = NULL;
    va_start(ap, fmt);
    if (vasprintf(&msg, fmt, ap) < 0)
        msg = NULL;
    va_end(ap);
    rep->errors = grow(rep->errors, &rep->cap_errors, rep->n_errors + 1, sizeof *rep->errors);
    rep->errors[rep->n_errors].r = r;
    rep->errors[rep->n_errors++].message = msg ? msg : strdup("(no message)");
}

static void report_free(lab_report *rep)
{
    for (size_t i = 0; i < rep->n_errors; i++)
        free(rep->errors[i].message);
    free(rep->errors);
    free(rep->responses);
    memset(rep, 0, sizeof *rep);
}

/* the next message, or NULL at end of stdin; a line that is not a JSON object is fatal */
static json_t *read_message(char **line, size_t *cap, const char **type)
{
    json_error_t err;
    json_t *msg;
    ssize_t n;
    do {
        if ((n = getline(line, cap, stdin)) < 0)
            return NULL;
    } while (strspn(*line, " \t\r\n") == (size_t)n);
    msg = json_loads(*line, 0, &err);
    *type = json_string_value(json_object_get(msg, "type"));
    if (!*type) {
        lab_log("not a protocol message: %s", msg ? "no type" : err.text);
        exit(2);
    }
    return msg;
}

/* one job, from parsing to finish; returns 0, or 1 when stdin ended while waiting for go */
static int do_job(const lab_driver *d, json_t *msg, char **line, size_t *cap)
{
    lab_job job;
    lab_report rep = {0};
    void *state = NULL;
    char why[512] = "";
    const char *type;
    json_t *go;
    lab_status st = lab_job_parse(json_object_get(msg, "job"), d, &job, why, sizeof why);

    if (st == LAB_READY && (st = d->prepare(&job, &state, why, sizeof why)) != LAB_READY && d->finish)
        d->finish(&job, state);
    if (st != LAB_READY) {
        send_simple(st == LAB_UNSUPPORTED ? "unsupported" : "error",
                    st == LAB_UNSUPPORTED ? "reason" : "message", why[0] ? why : "refused");
        lab_job_free(&job);
        return 0;
    }
    /* room for every response now, so the timed phase does not pay for the lab's bookkeeping */
    rep.responses = grow(NULL, &rep.cap_responses, job.total < (1 << 20) ? (size_t)job.total + 1 : 1 << 20,
                         sizeof *rep.responses);
    send_simple("ready", NULL, NULL);

    go = read_message(line, cap, &type);
    if (go && strcmp(type, "go")) {
        lab_log("expected go, got '%s'", type);
        exit(2);
    }
    if (go) {
        json_decref(go);
        d->run(&job, state, &rep);
        send_simple("done", NULL, NULL);
        send_report(&job, &rep);
    }
    if (d->finish)
        d->finish(&job, state);
    report_free(&rep);
    lab_job_free(&job);
    return go ? 0 : 1;
}

int lab_main(const lab_driver *d)
{
    char *line = NULL;
    size_t cap = 0;
    const char *type;
    json_t *msg;
    int fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);

    /* protocol lines go to a private copy of stdout; fd 1 becomes stderr so that nothing else
       (a library's default output, a child process) can ever write to the lab's pipe */
    if (fd < 0 || !(proto = fdopen(fd, "w")) || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
        perror("labdriver: stdout");
        return 3;
    }
    signal(SIGPIPE, SIG_IGN);
    driver_name = d->name;
    while ((msg = read_message(&line, &cap, &type))) {
        int ended = 0;
        if (!strcmp(type, "hello")) {
            json_t *versions = json_object();
            if (json_integer_value(json_object_get(msg, "protocol")) != 1) {
                lab_log("protocol version %lld is not 1",
                        (long long)json_integer_value(json_object_get(msg, "protocol")));
                exit(2);
            }
            d->versions(versions);
            send_json(json_pack("{s:s, s:i, s:o}", "type", "hello", "protocol", 1, "versions", versions));
        } else if (!strcmp(type, "job")) {
            ended = do_job(d, msg, &line, &cap);
        } else {
            lab_log("unexpected message type '%s'%s", type, strcmp(type, "go") ? "" : " (no job is ready)");
            exit(2);
        }
        json_decref(msg);
        if (ended)
            break;
    }
    free(line);
    fclose(proto);
    return 0;
}
