<?php
// Test driver php-curl-planted: one curl handle for the job, as php-curl uses it (HTTP/1.1 only),
// with a deliberate busy function on every request, which the CPU profile's differential must find
// and name (planted_slow_path).

declare(strict_types=1);

require __DIR__ . '/../../../drivers/php/_lib/labdriver.php';
require __DIR__ . '/../../../drivers/php/_lib/labcurl.php';

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

final class PlantedDriver extends Lab\Driver
{
    public array $options = Lab\Curl\HONOURED;

    public function versions(): array
    {
        return Lab\Curl\versions();
    }

    public function prepare(array $job): mixed
    {
        if ($job['http'] !== '1.1') {
            return new Lab\Unsupported('this test driver speaks HTTP/1.1 only');
        }
        $ch = curl_init();
        curl_setopt_array($ch, Lab\Curl\job_options($job, CURL_HTTP_VERSION_1_1));
        return $ch;
    }

    public function run(array $job, mixed $ch, Lab\Collector $report): void
    {
        $configured = null;
        foreach (Lab\work($job) as [$r, $req]) {
            planted_slow_path();
            if ($configured !== $r) {
                if (($why = Lab\Curl\configure($ch, $job, $req)) !== null) {
                    $report->fail($r, $why);
                    continue;
                }
                $configured = $r;
            }
            $t = Lab\Curl\attach($ch, $r, $req);
            if (is_string($t)) {
                $report->fail($r, $t);
                continue;
            }
            $body = curl_exec($ch);
            Lab\Curl\finish($ch, $t, curl_errno($ch), is_string($body) ? $body : null, $report);
        }
    }
}

Lab\main(new PlantedDriver());
