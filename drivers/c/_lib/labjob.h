/* Internal to labdriver: job parsing and checks. */
#ifndef LABJOB_H
#define LABJOB_H

#include "labdriver.h"

/* LAB_READY: parsed and doable; LAB_UNSUPPORTED / LAB_ERROR: `why` says what */
lab_status lab_job_parse(json_t *obj, const lab_driver *d, lab_job *job, char *why, size_t why_len);
void lab_job_free(lab_job *job);

#endif
