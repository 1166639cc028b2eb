/* labmulti: the part of c-libcurl-multi and c-libcurl-multi-socket that is the same: a pool of
 * `concurrency` reused easy handles on one multi handle (with an optional share handle), fed
 * with the job's requests in order as transfers finish, and the driver's protocol side. Each
 * driver supplies only its event loop: curl_multi_perform + curl_multi_poll, or
 * curl_multi_socket_action driven by epoll. */
#ifndef LABMULTI_H
#define LABMULTI_H

#include "labcurl.h"

typedef struct {
    CURL *easy;
    const lab_request *q;
    lab_entry entry;
    lab_sink sink;
    char errbuf[CURL_ERROR_SIZE];
    int busy;
    int h2c_reuse;              /* asked for plain HTTP/2 to reuse the h2c connection (curl#10634) */
} lab_transfer;

typedef struct lab_multi lab_multi;

/* a driver's event loop */
typedef struct {
    const char *name;           /* the driver's id */
    const char *description;    /* its way of driving transfers, for refusing the other multi_api */
    lab_multi_api api;
    /* optional: set up the loop on m->multi in prepare (no connection yet); 0 on success */
    int (*open)(lab_multi *m);
    /* drive the transfers until m->running is 0: lab_multi_reap() whenever libcurl may have
       finished some; on a failure of the loop itself, lab_multi_abort() */
    void (*run)(lab_multi *m);
    /* optional: undo `open` */
    void (*close)(lab_multi *m);
} lab_multi_loop;

struct lab_multi {
    CURLM *multi;
    CURLSH *share;
    lab_transfer *pool;
    size_t n_pool;
    const lab_job *job;
    const lab_multi_loop *loop;
    void *user;                 /* the loop's own state */
    lab_report *rep;
    size_t next_entry;          /* the next request: entry index and repetition */
    long next_repeat;
    size_t running;             /* transfers added and not yet finished */
    int h2c_fix, h2c_live;      /* curl#10634 work-around (labcurl.h), an h2c connection is open */
};

/* finished transfers into the report, their handles reused for the next requests */
void lab_multi_reap(lab_multi *m);

/* the loop failed: every request not yet done becomes an error with `message`, running is 0 */
void lab_multi_abort(lab_multi *m, const char *message);

/* lab_main() for a multi driver: curl_global_init, the protocol, curl_global_cleanup */
int lab_multi_main(const lab_multi_loop *loop);

#endif
