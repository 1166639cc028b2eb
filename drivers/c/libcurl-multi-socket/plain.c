/* The plain loop of c-libcurl-multi-socket (docs/driver-protocol.md §9): one easy handle on a
 * multi handle driven by curl_multi_socket_action from an epoll loop, libcurl telling its
 * sockets and its timer through CURLMOPT_SOCKETFUNCTION and CURLMOPT_TIMERFUNCTION (curl's
 * ephiperfifo.c example, without its FIFO), the body into a growing buffer by a write callback
 * (getinmemory.c), the handle added and removed for each GET; close mode: CURLOPT_FRESH_CONNECT
 * and CURLOPT_FORBID_REUSE, as the driver does.
 * Usage: plain URL COUNT MODE WARMUP_S (MODE keep-alive or close). */
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>

struct memory {
    char *data;
    size_t size;
};

static int epfd;
static long timeout_ms = -1; /* what libcurl last asked for: -1 none, 0 act now */

static size_t write_cb(char *ptr, size_t size, size_t n, void *user)
{
    struct memory *mem = user;
    size_t len = size * n;
    char *p = realloc(mem->data, mem->size + len + 1);
    if (!p)
        return 0; /* out of memory: libcurl fails the transfer */
    mem->data = p;
    memcpy(mem->data + mem->size, ptr, len);
    mem->size += len;
    mem->data[mem->size] = 0;
    return len;
}

static int socket_cb(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
    struct epoll_event ev = {.data.fd = fd};
    (void)easy, (void)userp, (void)socketp;
    if (what == CURL_POLL_REMOVE) {
        epoll_ctl(epfd, EPOLL_CTL_DEL, fd, NULL);
        return 0;
    }
    ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0) | (what & CURL_POLL_OUT ? EPOLLOUT : 0);
    if (epoll_ctl(epfd, EPOLL_CTL_MOD, fd, &ev) && errno == ENOENT)
        epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
    return 0;
}

static int timer_cb(CURLM *multi, long ms, void *userp)
{
    (void)multi, (void)userp;
    timeout_ms = ms;
    return 0;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void fail(const char *url, const char *what)
{
    fprintf(stderr, "plain c-libcurl-multi-socket: GET %s: %s\n", url, what);
    exit(1);
}

/* one GET into a fresh buffer; its body's length, or exits 1 */
static size_t get(CURLM *multi, CURL *curl, const char *url)
{
    struct memory mem = {0};
    struct epoll_event events[16];
    int running = 1;
    long status = 0;
    CURLMsg *msg;
    int left;

    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &mem);
    curl_multi_add_handle(multi, curl); /* sets a timer of 0: the loop starts it */
    while (running) {
        int n = epoll_wait(epfd, events, 16, (int)timeout_ms);
        if (n < 0 && errno != EINTR)
            fail(url, strerror(errno));
        if (n == 0) {
            timeout_ms = -1; /* the call below may set a new one */
            curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running);
        }
        for (int i = 0; i < n; i++)
            curl_multi_socket_action(multi, events[i].data.fd,
                                     (events[i].events & (EPOLLIN | EPOLLHUP) ? CURL_CSELECT_IN : 0) |
                                     (events[i].events & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
                                     (events[i].events & EPOLLERR ? CURL_CSELECT_ERR : 0),
                                     &running);
    }
    while ((msg = curl_multi_info_read(multi, &left)))
        if (msg->msg == CURLMSG_DONE && msg->data.result != CURLE_OK)
            fail(url, curl_easy_strerror(msg->data.result));
    curl_multi_remove_handle(multi, curl);
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    if (status != 200) {
        fprintf(stderr, "plain c-libcurl-multi-socket: GET %s: status %ld\n", url, status);
        exit(1);
    }
    free(mem.data);
    return mem.size;
}

int main(int argc, char **argv)
{
    char *end;
    long count;
    double warmup, start, seconds;
    unsigned long long total = 0;
    CURLM *multi;
    CURL *curl;

    if (argc != 5 || (strcmp(argv[3], "keep-alive") && strcmp(argv[3], "close"))) {
        fprintf(stderr, "usage: plain URL COUNT keep-alive|close WARMUP_S\n");
        return 1;
    }
    count = strtol(argv[2], &end, 10);
    if (*end || count < 0) {
        fprintf(stderr, "plain c-libcurl-multi-socket: COUNT must be a whole number >= 0, not %s\n", argv[2]);
        return 1;
    }
    warmup = strtod(argv[4], &end);
    if (*end || warmup < 0) {
        fprintf(stderr, "plain c-libcurl-multi-socket: WARMUP_S must be a number of seconds >= 0, not %s\n",
                argv[4]);
        return 1;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    multi = curl_multi_init();
    if (!multi || !(curl = curl_easy_init()) || (epfd = epoll_create1(EPOLL_CLOEXEC)) < 0) {
        fprintf(stderr, "plain c-libcurl-multi-socket: cannot set up libcurl or epoll\n");
        return 1;
    }
    curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, socket_cb);
    curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, timer_cb);
    curl_easy_setopt(curl, CURLOPT_URL, argv[1]);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, write_cb);
    if (!strcmp(argv[3], "close")) {
        curl_easy_setopt(curl, CURLOPT_FRESH_CONNECT, 1L);
        curl_easy_setopt(curl, CURLOPT_FORBID_REUSE, 1L);
    }

    for (double until = now() + warmup; now() < until;)
        get(multi, curl, argv[1]);
    start = now();
    for (long i = 0; i < count; i++)
        total += get(multi, curl, argv[1]);
    seconds = now() - start;
    printf("{\"requests\": %ld, \"bytes\": %llu, \"seconds\": %.6f}\n", count, total, seconds);

    curl_easy_cleanup(curl);
    curl_multi_cleanup(multi);
    curl_global_cleanup();
    return 0;
}
