/* labcurl: what the libcurl drivers share (c-libcurl, c-libcurl-multi, c-libcurl-multi-socket):
 * a job's settings and request entries as easy-handle options, body sinks, and the response
 * read back into the report. */
#ifndef LABCURL_H
#define LABCURL_H

#include "labdriver.h"

#include <curl/curl.h>
#include <stdio.h>

/* where one response body goes: a growing buffer, or a file (hashed while streaming) */
typedef struct {
    lab_buf buf;
    FILE *file;
    lab_sha256 *sha;
    long long bytes;
} lab_sink;

/* what a request entry needs alive while its transfer runs */
typedef struct {
    struct curl_slist *headers;
    char *form;
    curl_mime *mime;
    FILE *upload;
} lab_entry;

/* libcurl, its TLS and HTTP/2 libraries and the compiler, for `versions` */
void lab_curl_versions(json_t *v);

/* the job-wide options on a (new or reused) easy handle; LAB_UNSUPPORTED with `why` when
   libcurl refuses one */
lab_status lab_curl_job_options(CURL *h, const lab_job *job, char *why, size_t why_len);

/* the per-request options of entry `q`, undoing what an earlier entry set on the handle (but
   FOLLOWLOCATION: set only by an entry that names follow_redirects); -1 when body_file cannot
   be read */
int lab_curl_entry(CURL *h, const lab_job *job, const lab_request *q, lab_entry *e);
void lab_curl_entry_free(lab_entry *e);

/* open the sink for `q` (its file, its digest) and point the handle's writes at it; -1 when
   sink_path cannot be opened */
int lab_curl_sink_open(CURL *h, const lab_job *job, const lab_request *q, lab_sink *s);

/* a finished transfer: its response (or its error) into the report; frees the sink */
void lab_curl_done(CURL *h, CURLcode rc, const char *errbuf, const lab_job *job, const lab_request *q,
                   lab_sink *s, lab_report *rep);

const char *lab_curl_http_label(long version);

/* libcurl < 8.0.0 (Debian 12 has 7.88.1) fails a prior-knowledge request that reuses an h2c
   connection ("Error in the HTTP2 framing layer", curl#10634). The work-around: prior knowledge
   for a transfer that opens the connection, plain HTTP/2 for one that reuses it. 1: `job` needs
   it; 0: it does not; -1 with `why`: it cannot help (a redirect reuses the connection inside one
   transfer), the job is unsupported */
int lab_curl_h2c_fix(const lab_job *job, char *why, size_t why_len);

/* the CURLOPT_HTTP_VERSION for an h2c transfer under the work-around */
long lab_curl_h2c_version(int reuse);

/* whether a transfer to `url` would reuse the h2c connection the work-around counts on, the one
   opened for `was` (a URL of the round before): the same scheme, host and port. A calibration
   round on a kept client may go to another port, where it must open its connection with prior
   knowledge as a job's first transfer does. Only the round before is known: a round back on an
   older port that libcurl still has a connection to fails as curl#10634 */
int lab_curl_h2c_same_origin(const char *was, const char *url);

#endif
