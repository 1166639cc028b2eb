<?php
// The curl extension's plain loop (docs/driver-protocol.md §9): one handle from curl_init($url)
// with CURLOPT_RETURNTRANSFER, curl_exec again and again, as the PHP manual shows it; libcurl keeps
// the connection between transfers. close: CURLOPT_FORBID_REUSE (as the driver does).
// usage: plain.php URL COUNT keep-alive|close WARMUP_S

declare(strict_types=1);


if ($argc !== 5 || !ctype_digit($argv[2]) || !in_array($argv[3], ['keep-alive', 'close'], true) || !is_numeric($argv[4])) {
    fail('usage: plain.php URL COUNT keep-alive|close WARMUP_S');
}
[, $url, $count, $mode, $warmup] = $argv;
$count = (int)$count;
$close = $mode === 'close';

function fail(string $message): never
{
    fwrite(STDERR, "plain.php: $message\n");
    exit(1);
}

$ch = curl_init($url);
curl_setopt($ch, CURLOPT_RETURNTRANSFER, true);
if ($close) {
    curl_setopt($ch, CURLOPT_FORBID_REUSE, true);
}

/** one GET: the body's length */
function get(): int
{
    global $ch, $url;
    $body = curl_exec($ch);
    if ($body === false) {
        fail("GET $url: " . curl_error($ch));
    }
    if (($status = curl_getinfo($ch, CURLINFO_RESPONSE_CODE)) !== 200) {
        fail("GET $url: status $status");
    }
    return strlen($body);
}

$until = hrtime(true) + (int)((float)$warmup * 1e9);
while (hrtime(true) < $until) {
    get();
}
$bytes = 0;
$t0 = hrtime(true);
for ($i = 0; $i < $count; $i++) {
    $bytes += get();
}
$seconds = (hrtime(true) - $t0) / 1e9;
printf("{\"requests\": %d, \"bytes\": %d, \"seconds\": %.6f}\n", $count, $bytes, $seconds);
