/* labcpp: what the C++ drivers share on top of the C drivers' protocol code (drivers/c/_lib,
 * linked as C): its header with C linkage, a job's one origin taken from its URLs, a response
 * into the report, and the frame of a driver's callbacks (its state, its loop over the job's
 * requests, a client built for one server). A driver fills a lab_driver and calls lab_main(), as a C driver does; no
 * exception may leave its callbacks, since they are called from C. */
#ifndef LABCPP_HPP
#define LABCPP_HPP

#include <cstddef>
#include <jansson.h> /* first: C++'s own headers must not be read inside the extern "C" below */
#include <cstdio>
#include <exception>
#include <new>
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

/* whether `job` (the next calibration round's) goes to `origin`, which the client was built for;
   a round may be on another port of the bench server */
bool same_origin(const lab_job *job, const url &origin);

/* a driver's state, made by its `prepare`: a new T in *state (the protocol hands *state to
   `finish` whatever `prepare` answers), or nullptr with "out of memory" in `why` */
template <class T> T *new_state(void **state, char *why, size_t why_len)
{
    T *c = new (std::nothrow) T;
    *state = c;
    if (!c)
        snprintf(why, why_len, "out of memory");
    return c;
}

/* every request of `job` in order, each entry `repeat` times, one after another:
   `one(q, target)` does one and adds its outcome to `rep`. What it throws becomes that request's
   error, after `dropped()` (which forgets a connection the exception left in an unknown state):
   the callbacks are called from C, and nothing may unwind into the protocol loop */
template <class One, class Dropped>
void each_request(const lab_job *job, lab_report *rep, One &&one, Dropped &&dropped)
{
    for (size_t i = 0; i < job->n_requests; i++) {
        const lab_request *q = &job->requests[i];
        url u;
        split_url(q->url, u); /* job_origin read every URL already */
        for (long k = 0; k < q->repeat; k++) {
            try {
                one(q, u.target);
            } catch (const std::exception &e) {
                dropped();
                lab_add_error(rep, q->r, "%s", e.what());
            }
        }
    }
}

/* The frame of a driver whose library client is built for one server (httplib::Client,
   cpprestsdk's http_client): `Client` holds `origin` and `http`, a std::unique_ptr to the
   library's client, and `Build(job, client, why, why_len)` checks the job and builds both.
   `prepare` builds a client; `reuse` keeps it for a round on the same server and builds a new one
   for another; `finish` deletes it, and the library's client closes its connections with it. */
template <class Client, lab_status (*Build)(const lab_job *, Client &, char *, size_t)>
struct one_origin {
    static lab_status prepare(const lab_job *job, void **state, char *why, size_t why_len)
    {
        Client *c = new_state<Client>(state, why, why_len);
        return c ? Build(job, *c, why, why_len) : LAB_ERROR;
    }

    static lab_status reuse(const lab_job *job, void *state, char *why, size_t why_len)
    {
        Client &c = *static_cast<Client *>(state);
        if (same_origin(job, c.origin))
            return LAB_READY;
        c.http.reset();
        return Build(job, c, why, why_len);
    }

    static void finish(const lab_job *, void *state) { delete static_cast<Client *>(state); }

    /* the driver's process: the protocol loop (lab_main) with this frame and the driver's own
       name, the job options it honours, its versions and its `run` */
    static int main(const char *name, unsigned options, void (*versions)(json_t *),
                    void (*run)(const lab_job *, void *, lab_report *))
    {
        static const lab_driver d = {name, options, versions, prepare, run, finish, reuse};
        return lab_main(&d);
    }
};

} // namespace lab

#endif
