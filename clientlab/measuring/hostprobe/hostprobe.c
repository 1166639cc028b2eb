/* clientlab-hostprobe: how fast this core runs the kernel's side of a request right now.
 *
 * On a shared VM the host slows a core's system calls and context switches by half again for
 * a second or two at a time (another tenant on the sibling thread, a migration), without
 * reporting steal; plain computation is not slowed, so only a probe that does what a client and
 * server do — write, wake the other side, read — sees it. Two processes on one core (the one
 * this program is started on) pass a small message back and forth over a socketpair.
 *
 * Protocol: one decimal count per line on stdin; one line back on stdout, the nanoseconds of
 * one round trip, averaged over that many. EOF ends both processes.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(void) {
    int sv[2];
    char msg[64] = {0};
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        perror("socketpair");
        return 1;
    }
    pid_t echo = fork();
    if (echo < 0) {
        perror("fork");
        return 1;
    }
    if (echo == 0) { /* the other side: answer every message until the pair closes */
        close(sv[0]);
        for (;;) {
            ssize_t n = read(sv[1], msg, sizeof msg);
            if (n <= 0 || write(sv[1], msg, (size_t)n) != n)
                _exit(0);
        }
    }
    close(sv[1]);
    char line[64];
    while (fgets(line, sizeof line, stdin)) {
        long count = strtol(line, NULL, 10);
        if (count < 1 || count > 1000000)
            count = 1;
        long long start = now_ns();
        for (long i = 0; i < count; i++) {
            if (write(sv[0], msg, sizeof msg) != (ssize_t)sizeof msg || read(sv[0], msg, sizeof msg) <= 0) {
                perror("round trip");
                return 1;
            }
        }
        printf("%lld\n", (now_ns() - start) / count);
        fflush(stdout);
    }
    close(sv[0]);
    waitpid(echo, NULL, 0);
    return 0;
}
