<?php
// Test driver php-curl-planted: php-curl's own driver with a deliberate busy function before every
// request, which the CPU profile's differential must find and name (planted_slow_path).

declare(strict_types=1);

require __DIR__ . '/../../../drivers/php/curl/driver.php';

/**
 * A plain loop, no function call: every sample in it is this function's own. Then a pause off
 * the core, which costs no CPU: excimer takes a sample at the interpreter's next check after its
 * timer's thread has run, and on a busy core that thread runs only once this one leaves it. With
 * no pause it left at the request's next wait, in curl_exec, and 30-85 % of the loop's samples
 * were taken after curl_exec returned, in CurlDriver::run: the diagnosis then named the harness
 * (Lab\Loop::perform) before this function (docs/profiles.md, excimer). The loop costs several
 * times php-curl's own work a request: excimer counts curl_exec's CPU (libcurl, the kernel) for
 * CurlDriver::run, which the diagnosis has from perf too, and on a busy host curl_exec cost this
 * cell 50-80 µs a request more than php-curl's, near the loop's 20,000 turns' 100-150 µs.
 */
function planted_slow_path(): int
{
    $loops = (int)(getenv('PLANTED_LOOPS') ?: 50000);
    $x = 0;
    for ($i = 0; $i < $loops; $i++) {
        $x = ($x ^ ($i * 7)) & 0xffffffff;
    }
    usleep(200);
    return $x;
}

$driver = new CurlDriver();
// called from a closure: a first-class callable (planted_slow_path(...)) is sampled as {closure}
$driver->beforeEach = static fn () => planted_slow_path();
Lab\main($driver);
