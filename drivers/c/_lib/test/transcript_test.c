/* The golden transcript (drivers/contract/transcript.json) through lab_main(), with the
 * transcript's contract client behind the helper's seam (prepare / run / finish).
 * Usage: driver TRANSCRIPT.json; exit status 0 when every case passed. */
#define _GNU_SOURCE
#include "labdriver.h"
#include "transcript.h"

/* ---------------------------------------------------------------- the contract client */

static void versions(json_t *v)
{
    json_object_set_new(v, "contract", json_string("1"));
    json_object_set_new(v, "compiler", json_string(lab_compiler()));
}

static lab_status prepare(const lab_job *job, void **state, char *why, size_t why_len)
{
    const char *scenario = job->scenario ? job->scenario : "";
    *state = NULL;
    if (!strcmp(scenario, "refused-by-client")) {
        snprintf(why, why_len, "the contract client refuses this job");
        return LAB_UNSUPPORTED;
    }
    if (job->opt.expect_100 == 1) { /* this seam says which values it honours here */
        snprintf(why, why_len, "option expect_100=true cannot be honoured (only false)");
        return LAB_UNSUPPORTED;
    }
    if (!strcmp(scenario, "open-fails")) {
        snprintf(why, why_len, "building the client failed: the contract client cannot be built");
        return LAB_ERROR;
    }
    return LAB_READY;
}

static void run(const lab_job *job, void *state, lab_report *report)
{
    (void)state;
    for (size_t i = 0; i < job->n_requests; i++) {
        const lab_request *req = &job->requests[i];
        const char *status = strstr(req->url, "/status/");
        unsigned char sha[32];
        for (long n = 0; n < req->repeat; n++) {
            if (strstr(req->url, "/fail")) {
                lab_add_error(report, req->r, "connection refused");
                continue;
            }
            if (job->verify)
                lab_sha256_buf(req->url, strlen(req->url), sha);
            lab_add_response(report, req->r, status ? strtol(status + 8, NULL, 10) : 200, (long long)strlen(req->url),
                             "1.1", job->verify ? sha : NULL);
        }
    }
}

static void finish(const lab_job *job, void *state)
{
    (void)job;
    (void)state;
}

static const lab_driver contract = {
    .name = "contract", .options = LAB_OPT_TCP_NODELAY | LAB_OPT_EXPECT_100,
    .versions = versions, .prepare = prepare, .run = run, .finish = finish,
};

int main(int argc, char **argv)
{
    return transcript_main(argc, argv, &contract);
}
