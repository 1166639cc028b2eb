/* c-libcurl-multi: libcurl's multi interface driven by curl_multi_perform + curl_multi_poll,
 * up to `concurrency` transfers in flight on reused easy handles (the pool is in labmulti). */
#include "labmulti.h"

static void run(lab_multi *m)
{
    int still;
    while (m->running) {
        CURLMcode mc = curl_multi_perform(m->multi, &still);
        if (mc == CURLM_OK) {
            lab_multi_reap(m); /* finished transfers out, the next requests in */
            if (m->running)
                mc = curl_multi_poll(m->multi, NULL, 0, 1000, NULL);
        }
        if (mc != CURLM_OK)
            lab_multi_abort(m, curl_multi_strerror(mc));
    }
}

int main(void)
{
    static const lab_multi_loop loop = {
        .name = "c-libcurl-multi",
        .description = "curl_multi_perform + curl_multi_poll",
        .api = LAB_MULTI_MULTI,
        .run = run,
    };
    return lab_multi_main(&loop);
}
