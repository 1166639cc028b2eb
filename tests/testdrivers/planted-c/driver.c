/* Test driver c-libcurl-planted: c-libcurl's own driver.c with a deliberate busy function on
 * every request, which the CPU profile's differential must find and name (planted_slow_path). */
void planted_slow_path(void);

#define LAB_DRIVER_NAME "c-libcurl-planted"
#define LAB_BEFORE_REQUEST() planted_slow_path()
#include "../../../drivers/c/libcurl/driver.c"

volatile unsigned long planted_sink;

__attribute__((noinline)) void planted_slow_path(void)
{
    unsigned long x = planted_sink;
    for (unsigned long i = 0; i < 100000; i++)
        x = (x ^ (i * 7)) * 31 + 1;
    planted_sink = x;
}
