/* Response bodies: a growing buffer, and SHA-256 for verification passes. */
#include "labdriver.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int lab_buf_append(lab_buf *buf, const void *data, size_t len)
{
    if (buf->len + len > buf->cap) {
        size_t cap = buf->cap ? buf->cap : 16384;
        char *p;
        while (cap < buf->len + len)
            cap *= 2;
        if (!(p = realloc(buf->data, cap)))
            return -1;
        buf->data = p;
        buf->cap = cap;
    }
    memcpy(buf->data + buf->len, data, len);
    buf->len += len;
    return 0;
}

void lab_buf_free(lab_buf *buf)
{
    free(buf->data);
    buf->data = NULL;
    buf->len = buf->cap = 0;
}

struct lab_sha256 { EVP_MD_CTX *ctx; };

lab_sha256 *lab_sha256_new(void)
{
    lab_sha256 *h = malloc(sizeof *h);
    if (!h || !(h->ctx = EVP_MD_CTX_new()) || !EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL)) {
        fprintf(stderr, "labdriver: cannot start SHA-256\n");
        exit(3);
    }
    return h;
}

void lab_sha256_update(lab_sha256 *h, const void *data, size_t len)
{
    EVP_DigestUpdate(h->ctx, data, len);
}

void lab_sha256_final(lab_sha256 *h, unsigned char out[32])
{
    unsigned int n = 32;
    EVP_DigestFinal_ex(h->ctx, out, &n);
    EVP_MD_CTX_free(h->ctx);
    free(h);
}

void lab_sha256_buf(const void *data, size_t len, unsigned char out[32])
{
    lab_sha256 *h = lab_sha256_new();
    lab_sha256_update(h, data, len);
    lab_sha256_final(h, out);
}

int lab_sha256_file(const char *path, unsigned char out[32], long long *size)
{
    static char chunk[1 << 16];
    FILE *f = fopen(path, "rb");
    lab_sha256 *h;
    size_t n;
    if (!f)
        return -1;
    h = lab_sha256_new();
    *size = 0;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        lab_sha256_update(h, chunk, n);
        *size += (long long)n;
    }
    lab_sha256_final(h, out);
    n = (size_t)ferror(f);
    fclose(f);
    return n ? -1 : 0;
}

const char *lab_compiler(void)
{
    static char name[32];
#if defined(__clang__)
    snprintf(name, sizeof name, "clang %d.%d", __clang_major__, __clang_minor__);
#elif defined(__GNUC__)
    snprintf(name, sizeof name, "gcc %d.%d", __GNUC__, __GNUC_MINOR__);
#else
    snprintf(name, sizeof name, "unknown");
#endif
    return name;
}
