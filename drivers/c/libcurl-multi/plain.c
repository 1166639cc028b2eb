/* The plain loop of c-libcurl-multi (docs/driver-protocol.md §9): one easy handle on a multi
 * handle, driven by curl_multi_perform + curl_multi_poll as curl's multi-single.c example does,
 * its body into a growing buffer by a write callback (getinmemory.c), the handle added and
 * removed for each GET; close mode: CURLOPT_FRESH_CONNECT and CURLOPT_FORBID_REUSE, as the
 * driver does.
 * Usage: plain URL COUNT MODE WARMUP_S (MODE keep-alive or close). */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct memory {
    char *data;
    size_t size;
};

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

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void fail(const char *url, const char *what)
{
    fprintf(stderr, "plain c-libcurl-multi: GET %s: %s\n", url, what);
    exit(1);
}

/* one GET into a fresh buffer; its body's length, or exits 1 */
static size_t get(CURLM *multi, CURL *curl, const char *url)
{
    struct memory mem = {0};
    int still_running = 1;
    long status = 0;
    CURLMsg *msg;
    int left;

    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &mem);
    curl_multi_add_handle(multi, curl);
    while (still_running) {
        CURLMcode mc = curl_multi_perform(multi, &still_running);
        if (!mc && still_running)
            mc = curl_multi_poll(multi, NULL, 0, 1000, NULL);
        if (mc)
            fail(url, curl_multi_strerror(mc));
    }
    while ((msg = curl_multi_info_read(multi, &left)))
        if (msg->msg == CURLMSG_DONE && msg->data.result != CURLE_OK)
            fail(url, curl_easy_strerror(msg->data.result));
    curl_multi_remove_handle(multi, curl);
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    if (status != 200) {
        fprintf(stderr, "plain c-libcurl-multi: GET %s: status %ld\n", url, status);
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
        fprintf(stderr, "plain c-libcurl-multi: COUNT must be a whole number >= 0, not %s\n", argv[2]);
        return 1;
    }
    warmup = strtod(argv[4], &end);
    if (*end || warmup < 0) {
        fprintf(stderr, "plain c-libcurl-multi: WARMUP_S must be a number of seconds >= 0, not %s\n", argv[4]);
        return 1;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    multi = curl_multi_init();
    if (!multi || !(curl = curl_easy_init())) {
        fprintf(stderr, "plain c-libcurl-multi: curl_multi_init or curl_easy_init failed\n");
        return 1;
    }
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
