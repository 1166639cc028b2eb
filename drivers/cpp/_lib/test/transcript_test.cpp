/* The golden transcript (drivers/contract/transcript.json) through lab_main(), with the
 * transcript's contract client in the C++ drivers' frame (lab::one_origin, lab::each_request,
 * lab::add_body); the run of the cases is the C helper's test's (test/transcript.h).
 * Usage: driver TRANSCRIPT.json; exit status 0 when every case passed. */
#include "labcpp.hpp"
#include "test/transcript.h"

#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

namespace {

/* what a library's client would be: built for the job's one server */
struct connection {};

struct contract_client {
    lab::url origin;
    std::unique_ptr<connection> http;
};

void versions(json_t *v)
{
    json_object_set_new(v, "contract", json_string("1"));
    json_object_set_new(v, "compiler", json_string(lab_compiler()));
}

lab_status build(const lab_job *job, contract_client &c, char *why, size_t why_len)
{
    std::string scenario = job->scenario ? job->scenario : "";
    if (scenario == "refused-by-client") {
        snprintf(why, why_len, "the contract client refuses this job");
        return LAB_UNSUPPORTED;
    }
    if (job->opt.expect_100 == 1) { /* this seam says which values it honours here */
        snprintf(why, why_len, "option expect_100=true cannot be honoured (only false)");
        return LAB_UNSUPPORTED;
    }
    if (scenario == "open-fails") {
        snprintf(why, why_len, "building the client failed: the contract client cannot be built");
        return LAB_ERROR;
    }
    lab_status st = lab::job_origin(job, "the contract client", c.origin, why, why_len);
    if (st == LAB_READY)
        c.http.reset(new connection);
    return st;
}

using frame = lab::one_origin<contract_client, build>;

void run(const lab_job *job, void *, lab_report *rep)
{
    lab::each_request(
        job, rep,
        [&](const lab_request *q, const std::string &target) {
            if (target.find("/fail") != std::string::npos)
                throw std::runtime_error("connection refused");
            std::size_t at = target.find("/status/");
            int status = at == std::string::npos ? 200 : std::stoi(target.substr(at + 8, 3));
            lab::add_body(rep, job, q, status, q->url, std::strlen(q->url), "1.1");
        },
        [] {});
}

const lab_driver contract = {"contract", LAB_OPT_TCP_NODELAY | LAB_OPT_EXPECT_100, versions, frame::prepare, run,
                             frame::finish, frame::reuse};

} // namespace

int main(int argc, char **argv)
{
    return transcript_main(argc, argv, &contract);
}
