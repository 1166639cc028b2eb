/* The protocol loop: hello, then per job: parse, prepare, ready, go, run, done, report, finish;
 * and the calibration loop: bare rounds of run() on one kept client, with a tally for a report. */
#define _GNU_SOURCE
#include "labdriver.h"
#include "labjob.h"

#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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

/* A full array is where a report grows and a tally only counts: the check is the one a report
   needs anyway, so a tally costs the timed path nothing. */
void lab_add_response(lab_report *rep, int r, long status, long long bytes, const char *http,
                      const unsigned char *sha)
{
    lab_response *x;
    if (rep->n_responses >= rep->cap_responses) {
        if (rep->tally) {
            rep->n_responses++;
            return;
        }
        rep->responses = grow(rep->responses, &rep->cap_responses, rep->n_responses + 1, sizeof *x);
    }
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
    if (rep->n_errors >= rep->cap_errors) {
        if (rep->tally) {
            rep->n_errors++;
            free(msg);
            return;
        }
        rep->errors = grow(rep->errors, &rep->cap_errors, rep->n_errors + 1, sizeof *rep->errors);
    }
    rep->errors[rep->n_errors].r = r;
    rep->errors[rep->n_errors++].message = msg ? msg : strdup("(no message)");
}

/* a bare round's collector: room for the first error's message (the answer's "error"), none
   for responses */
static lab_report tally_new(void)
{
    lab_report t = {.tally = 1, .cap_errors = 1};
    if (!(t.errors = malloc(sizeof *t.errors))) {
        lab_log("out of memory for the tally");
        exit(3);
    }
    return t;
}

static void report_free(lab_report *rep)
{
    for (size_t i = 0; i < rep->n_errors && i < rep->cap_errors; i++) /* a tally counts past its room */
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

static void refuse(lab_status st, const char *why)
{
    send_simple(st == LAB_UNSUPPORTED ? "unsupported" : "error", st == LAB_UNSUPPORTED ? "reason" : "message",
                why[0] ? why : "refused");
}

/* lab_job_parse(), saying "bad job: …" for a malformed one, as the other languages' helpers do */
static lab_status parse_job(json_t *obj, const lab_driver *d, lab_job *job, char *why, size_t why_len)
{
    lab_status st = lab_job_parse(obj, d, job, why, why_len);
    if (st == LAB_ERROR) {
        char *text = strdup(why);
        snprintf(why, why_len, "bad job: %s", text ? text : "");
        free(text);
    }
    return st;
}

/* parse `obj` and build its client; 0, or -1 after answering the refusal (nothing left open) */
static int open_job(const lab_driver *d, json_t *obj, lab_job *job, void **state)
{
    char why[512] = "";
    lab_status st = parse_job(obj, d, job, why, sizeof why);

    *state = NULL;
    if (st == LAB_READY && (st = d->prepare(job, state, why, sizeof why)) != LAB_READY && d->finish)
        d->finish(job, *state);
    if (st != LAB_READY) {
        refuse(st, why);
        lab_job_free(job);
        return -1;
    }
    return 0;
}

/* one job, from parsing to finish; returns 0, or 1 when stdin ended while waiting for go */
static int do_job(const lab_driver *d, json_t *msg, char **line, size_t *cap)
{
    lab_job job;
    lab_report rep = {0};
    void *state;
    const char *type;
    json_t *go;

    if (open_job(d, json_object_get(msg, "job"), &job, &state))
        return 0;
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

/* The calibration loop's client (docs/driver-protocol.md §5): built by the first bare round,
   kept for the next ones as a long-lived program keeps its client, closed by a job message or
   the end of input. */
typedef struct {
    lab_job *job;              /* the last round's job, NULL while no client is kept; on the heap
                                  since the client may keep a pointer to it */
    json_t *json;              /* the job object, which that job's strings point into */
    void *state;
} bare_client;

/* the last round's job, once the client no longer points into it */
static void drop_job(bare_client *b)
{
    lab_job_free(b->job);
    free(b->job);
    json_decref(b->json);
}

static void end_bare(const lab_driver *d, bare_client *b)
{
    if (!b->job)
        return;
    if (d->finish)
        d->finish(b->job, b->state);
    drop_job(b);
    memset(b, 0, sizeof *b);
}

/* `job` parsed for the next round: the first round builds the client from it, a later one hands
   it to the kept client (reuse); 0, or -1 after answering the refusal */
static int bare_job(const lab_driver *d, json_t *obj, bare_client *b, lab_job *job)
{
    char why[512] = "";
    lab_status st;

    if (!b->job)
        return open_job(d, obj, job, &b->state);
    if ((st = parse_job(obj, d, job, why, sizeof why)) == LAB_READY && d->reuse)
        st = d->reuse(job, b->state, why, sizeof why);
    if (st != LAB_READY) {
        refuse(st, why);
        lab_job_free(job);
        end_bare(d, b); /* a round it cannot do ends the loop; the next round starts afresh */
        return -1;
    }
    return 0;
}

/* one bare round: run() as in a timed trial, into a tally, timed by the driver's own clock */
static void do_bare(const lab_driver *d, json_t *msg, bare_client *b)
{
    json_t *obj = json_object_get(msg, "job");
    lab_job *job = calloc(1, sizeof *job);
    lab_report tally;
    struct timespec t0, t1;

    if (!job) {
        lab_log("out of memory for a bare round");
        exit(3);
    }
    if (bare_job(d, obj, b, job)) {
        free(job);
        return;
    }
    if (b->job)
        drop_job(b);
    b->job = job;
    b->json = json_incref(obj); /* msg is freed after this round; the job's strings live on */
    tally = tally_new();
    clock_gettime(CLOCK_MONOTONIC, &t0);
    d->run(job, b->state, &tally);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    fprintf(proto, "{\"type\":\"bare\",\"wall_s\":%.9f,\"requests\":%zu,\"errors\":%zu",
            (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9, tally.n_responses,
            tally.n_errors);
    if (tally.n_errors) {
        fputs(",\"error\":", proto);
        put_json_string(proto, tally.errors[0].message);
    }
    fputs("}\n", proto);
    fflush(proto);
    report_free(&tally);
}

int lab_main(const lab_driver *d)
{
    char *line = NULL;
    size_t cap = 0;
    bare_client bare = {0};
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
            end_bare(d, &bare); /* a timed trial starts cold: no client of the loop's stays open */
            ended = do_job(d, msg, &line, &cap);
        } else if (!strcmp(type, "bare")) {
            do_bare(d, msg, &bare);
        } else {
            lab_log("unexpected message type '%s'%s", type, strcmp(type, "go") ? "" : " (no job is ready)");
            exit(2);
        }
        json_decref(msg);
        if (ended)
            break;
    }
    end_bare(d, &bare);
    free(line);
    fclose(proto);
    return 0;
}
