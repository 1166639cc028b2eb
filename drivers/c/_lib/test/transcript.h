/* The golden transcript (drivers/contract/transcript.json) through lab_main(): the comparison
 * and the run of every case, shared by the C helper's test (transcript_test.c) and the C++ one
 * (drivers/cpp/_lib/test), each with its contract client. Each case runs in a child process whose
 * stdin holds the case's lines and whose stdout goes to a file, which is then compared with the
 * case's answers. transcript_main(argc, argv, driver): argv[1] is the transcript; 0 when every
 * case passed. Compiles as C and as C++ (include it after labdriver.h, or labcpp.hpp). */
#ifndef LAB_TRANSCRIPT_H
#define LAB_TRANSCRIPT_H

#include "labdriver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---------------------------------------------------------------- the comparison */

/* the transcript's comparison: equal JSON, where a <...> string in `want` is a pattern */
static int matches(json_t *want, json_t *got)
{
    const char *w = json_string_value(want), *key;
    json_t *value;
    size_t i;
    if (w && w[0] == '<' && w[strlen(w) - 1] == '>') {
        if (!strcmp(w, "<any string>"))
            return json_is_string(got);
        if (!strcmp(w, "<any number>"))
            return json_is_number(got) && json_number_value(got) >= 0;
        if (!strncmp(w, "<text with: ", 12)) {
            size_t n = strlen(w) - 13;
            const char *g = json_string_value(got);
            return g && memmem(g, strlen(g), w + 12, n) != NULL;
        }
    }
    if (json_is_object(want)) {
        json_t *rest = json_object_get(want, "<more>");
        if (!json_is_object(got))
            return 0;
        json_object_foreach(want, key, value)
            if (strcmp(key, "<more>") && (!json_object_get(got, key) || !matches(value, json_object_get(got, key))))
                return 0;
        json_object_foreach(got, key, value)
            if (!json_object_get(want, key) && (!rest || !matches(rest, value)))
                return 0;
        return 1;
    }
    if (json_is_array(want)) {
        if (!json_is_array(got) || json_array_size(got) != json_array_size(want))
            return 0;
        json_array_foreach(want, i, value)
            if (!matches(value, json_array_get(got, i)))
                return 0;
        return 1;
    }
    return json_equal(want, got);
}

/* ---------------------------------------------------------------- the cases */

/* the case's lab lines through lab_main() in a child; its answers into `got`; its exit status
   back, or minus the signal that killed it */
static int talk(const lab_driver *driver, json_t *lab, json_t *got)
{
    FILE *in = tmpfile(), *out = tmpfile();
    char *line = NULL;
    size_t cap = 0, i;
    json_t *m;
    int status;
    pid_t pid;

    if (!in || !out) {
        perror("tmpfile");
        exit(3);
    }
    json_array_foreach(lab, i, m) {
        if (json_is_string(m))
            fputs(json_string_value(m), in);
        else
            json_dumpf(m, in, JSON_COMPACT);
        fputc('\n', in);
    }
    fflush(in);
    rewind(in);
    fflush(stdout);
    if ((pid = fork()) < 0) {
        perror("fork");
        exit(3);
    }
    if (pid == 0) {
        FILE *quiet = fopen("/dev/null", "w"); /* the helper's log lines; its answers are what counts */
        if (!quiet || dup2(fileno(in), STDIN_FILENO) < 0 || dup2(fileno(out), STDOUT_FILENO) < 0 ||
            dup2(fileno(quiet), STDERR_FILENO) < 0)
            _exit(3);
        exit(lab_main(driver));
    }
    waitpid(pid, &status, 0);
    rewind(out);
    while (getline(&line, &cap, out) > 0) {
        json_error_t err;
        json_t *answer = json_loads(line, 0, &err);
        json_array_append_new(got, answer ? answer : json_string(line)); /* not JSON: shown, never matched */
    }
    free(line);
    fclose(in);
    fclose(out);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

/* a helper that stops at a may_stop line has answered the lines before it: a prefix of `want` */
static int is_prefix(json_t *want, json_t *got)
{
    size_t i;
    json_t *value;
    if (json_array_size(got) > json_array_size(want))
        return 0;
    json_array_foreach(got, i, value)
        if (!matches(json_array_get(want, i), value))
            return 0;
    return 1;
}

static int transcript_main(int argc, char **argv, const lab_driver *driver)
{
    json_error_t err;
    json_t *transcript, *c;
    size_t i;
    int failed = 0, stopped = 0;

    if (argc != 2) {
        fprintf(stderr, "usage: %s TRANSCRIPT.json\n", argv[0]);
        return 2;
    }
    if (!(transcript = json_load_file(argv[1], 0, &err))) {
        fprintf(stderr, "%s:%d: %s\n", argv[1], err.line, err.text);
        return 2;
    }
    json_array_foreach(json_object_get(transcript, "cases"), i, c) { /* only failures are shown */
        json_t *want = json_object_get(c, "driver"), *got = json_array();
        int code = talk(driver, json_object_get(c, "lab"), got);
        int ok = code == 0 ? matches(want, got)
                           : code > 0 && json_object_get(c, "may_stop") && is_prefix(want, got);
        stopped += ok && code;
        if (!ok) {
            char *w = json_dumps(want, JSON_COMPACT), *g = json_dumps(got, JSON_COMPACT);
            printf("FAIL %s: %s\n     want %s\n     got  %s (exit %d)\n", json_string_value(json_object_get(c, "name")),
                   json_string_value(json_object_get(c, "about")), w, g, code);
            free(w);
            free(g);
            failed++;
        }
        json_decref(got);
    }
    printf("transcript: %zu case(s), %d of them stopped where they may, %d failed\n",
           json_array_size(json_object_get(transcript, "cases")), stopped, failed);
    json_decref(transcript);
    return failed ? 1 : 0;
}

#endif
