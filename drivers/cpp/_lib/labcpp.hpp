/* labcpp: what the C++ drivers share on top of the C drivers' protocol code (drivers/c/_lib,
 * linked as C): its header with C linkage, a job's one origin taken from its URLs, and a response
 * into the report. A driver fills a lab_driver and calls lab_main(), as a C driver does; no
 * exception may leave its callbacks, since they are called from C. */
#ifndef LABCPP_HPP
#define LABCPP_HPP

#include <cstddef>
#include <jansson.h> /* first: C++'s own headers must not be read inside the extern "C" below */
#include <string>

extern "C" {
#include "labdriver.h"
}

namespace lab {

/* an absolute http or https URL, in the parts the C++ clients take */
struct url {
    std::string scheme, host;       /* host without brackets */
    std::string port;               /* always set: the scheme's port when the URL names none */
    std::string target;             /* path and query, "/" at least */
    bool tls() const { return scheme == "https"; }
    std::string origin() const;     /* scheme://host:port */
};

/* `text` taken apart; false when it is not an absolute http or https URL */
bool split_url(const char *text, url &out);

/* the one origin every request of `job` goes to, which the client is built for (the lab's jobs
   name one server); LAB_UNSUPPORTED with `why` when they name two, LAB_ERROR for a URL that is
   not absolute http(s). Also refuses a job in another HTTP version than 1.1, which none of the
   C++ clients here speaks */
lab_status job_origin(const lab_job *job, const char *client, url &out, char *why, size_t why_len);

/* a response held whole in memory: its length and, when verifying, its SHA-256 */
void add_body(lab_report *rep, const lab_job *job, const lab_request *q, int status, const void *data,
              std::size_t len, const char *http);

/* a response streamed to q->sink_path: the file's size and, when verifying, its digest */
void add_file(lab_report *rep, const lab_job *job, const lab_request *q, int status, const char *http);

/* "1.1" for "HTTP/1.1", 11, ... */
const char *http_label(int major, int minor);

} // namespace lab

#endif
