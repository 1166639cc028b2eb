<?php
// Test driver php-curl-planted: php-curl's own driver with a deliberate busy function before every
// request, which the CPU profile's differential must find and name (planted_slow_path).

declare(strict_types=1);

require __DIR__ . '/../../../drivers/php/curl/driver.php';

/** a plain loop, no function call: every sample in it is this function's own */
function planted_slow_path(): int
{
    $loops = (int)(getenv('PLANTED_LOOPS') ?: 20000);
    $x = 0;
    for ($i = 0; $i < $loops; $i++) {
        $x = ($x ^ ($i * 7)) & 0xffffffff;
    }
    return $x;
}

$driver = new CurlDriver();
// called from a closure: a first-class callable (planted_slow_path(...)) is sampled as {closure}
$driver->beforeEach = static fn () => planted_slow_path();
Lab\main($driver);
