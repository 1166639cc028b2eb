/* The plain loop of c-libcurl (docs/driver-protocol.md §9): one easy handle, its body into a
 * growing buffer by a write callback, as curl's getinmemory.c example does, curl_easy_perform
 * in a loop; close mode: CURLOPT_FRESH_CONNECT and CURLOPT_FORBID_REUSE, as the driver does.
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

/* one GET into a fresh buffer; its body's length, or exits 1 */
static size_t get(CURL *curl, const char *url)
{
    struct memory mem = {0};
    long status = 0;
    CURLcode rc;
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &mem);
    rc = curl_easy_perform(curl);
    if (rc != CURLE_OK) {
        fprintf(stderr, "plain c-libcurl: GET %s: %s\n", url, curl_easy_strerror(rc));
        exit(1);
    }
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    if (status != 200) {
        fprintf(stderr, "plain c-libcurl: GET %s: status %ld\n", url, status);
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
    CURL *curl;

    if (argc != 5 || (strcmp(argv[3], "keep-alive") && strcmp(argv[3], "close"))) {
        fprintf(stderr, "usage: plain URL COUNT keep-alive|close WARMUP_S\n");
        return 1;
    }
    count = strtol(argv[2], &end, 10);
    if (*end || count < 0) {
        fprintf(stderr, "plain c-libcurl: COUNT must be a whole number >= 0, not %s\n", argv[2]);
        return 1;
    }
    warmup = strtod(argv[4], &end);
    if (*end || warmup < 0) {
        fprintf(stderr, "plain c-libcurl: WARMUP_S must be a number of seconds >= 0, not %s\n", argv[4]);
        return 1;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (!(curl = curl_easy_init())) {
        fprintf(stderr, "plain c-libcurl: curl_easy_init failed\n");
        return 1;
    }
    curl_easy_setopt(curl, CURLOPT_URL, argv[1]);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, write_cb);
    if (!strcmp(argv[3], "close")) {
        curl_easy_setopt(curl, CURLOPT_FRESH_CONNECT, 1L);
        curl_easy_setopt(curl, CURLOPT_FORBID_REUSE, 1L);
    }

    for (double until = now() + warmup; now() < until;)
        get(curl, argv[1]);
    start = now();
    for (long i = 0; i < count; i++)
        total += get(curl, argv[1]);
    seconds = now() - start;
    printf("{\"requests\": %ld, \"bytes\": %llu, \"seconds\": %.6f}\n", count, total, seconds);

    curl_easy_cleanup(curl);
    curl_global_cleanup();
    return 0;
}
