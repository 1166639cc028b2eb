/* c-libcurl-multi-socket: libcurl's multi interface driven by curl_multi_socket_action from an
 * epoll loop (CURLMOPT_SOCKETFUNCTION + CURLMOPT_TIMERFUNCTION), up to `concurrency` transfers
 * in flight on reused easy handles (the pool is in labmulti). */
#include "labmulti.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    int epoll;
    long long deadline_ms;      /* when libcurl wants CURL_SOCKET_TIMEOUT; -1: no timer */
} loop_state;

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* libcurl tells which events a socket waits for, or that it is done with it */
static int on_socket(CURL *easy, curl_socket_t fd, int what, void *user, void *socketp)
{
    loop_state *ls = user;
    struct epoll_event ev = {.data.fd = fd};
    (void)easy;
    (void)socketp;
    if (what == CURL_POLL_REMOVE) {
        epoll_ctl(ls->epoll, EPOLL_CTL_DEL, fd, NULL); /* may be closed already: ignore the error */
        return 0;
    }
    ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0) | (what & CURL_POLL_OUT ? EPOLLOUT : 0);
    if (epoll_ctl(ls->epoll, EPOLL_CTL_MOD, fd, &ev) && errno == ENOENT)
        return epoll_ctl(ls->epoll, EPOLL_CTL_ADD, fd, &ev);
    return 0;
}

static int on_timer(CURLM *multi, long timeout_ms, void *user)
{
    loop_state *ls = user;
    (void)multi;
    ls->deadline_ms = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
    return 0;
}

static int open_loop(lab_multi *m)
{
    loop_state *ls = calloc(1, sizeof *ls);
    if (!ls || (ls->epoll = epoll_create1(EPOLL_CLOEXEC)) < 0) {
        free(ls);
        return -1;
    }
    ls->deadline_ms = -1;
    m->user = ls;
    curl_multi_setopt(m->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(m->multi, CURLMOPT_SOCKETDATA, ls);
    curl_multi_setopt(m->multi, CURLMOPT_TIMERFUNCTION, on_timer);
    curl_multi_setopt(m->multi, CURLMOPT_TIMERDATA, ls);
    return 0;
}

static void run(lab_multi *m)
{
    loop_state *ls = m->user;
    struct epoll_event events[64];
    int still;
    while (m->running) {
        CURLMcode mc = CURLM_OK;
        long long left = ls->deadline_ms < 0 ? -1 : ls->deadline_ms - now_ms();
        int n = epoll_wait(ls->epoll, events, 64, ls->deadline_ms < 0 ? -1 : left > 0 ? (int)left : 0);
        if (n < 0 && errno != EINTR) {
            lab_multi_abort(m, strerror(errno));
            return;
        }
        for (int i = 0; i < n && mc == CURLM_OK; i++)
            mc = curl_multi_socket_action(m->multi, events[i].data.fd,
                                          (events[i].events & (EPOLLIN | EPOLLHUP) ? CURL_CSELECT_IN : 0) |
                                          (events[i].events & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
                                          (events[i].events & EPOLLERR ? CURL_CSELECT_ERR : 0),
                                          &still);
        if (mc == CURLM_OK && ls->deadline_ms >= 0 && now_ms() >= ls->deadline_ms) {
            ls->deadline_ms = -1; /* the call below may set a new one */
            mc = curl_multi_socket_action(m->multi, CURL_SOCKET_TIMEOUT, 0, &still);
        }
        if (mc != CURLM_OK)
            lab_multi_abort(m, curl_multi_strerror(mc));
        lab_multi_reap(m); /* finished transfers out, the next requests in */
    }
}

static void close_loop(lab_multi *m)
{
    loop_state *ls = m->user;
    if (ls)
        close(ls->epoll);
    free(ls);
}

int main(void)
{
    static const lab_multi_loop loop = {
        .name = "c-libcurl-multi-socket",
        .description = "curl_multi_socket_action from an epoll loop",
        .api = LAB_MULTI_SOCKET,
        .open = open_loop,
        .run = run,
        .close = close_loop,
    };
    return lab_multi_main(&loop);
}
