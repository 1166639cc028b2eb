<?php
// The curl extension's multi interface in a plain loop (docs/driver-protocol.md §9): one easy
// handle with CURLOPT_RETURNTRANSFER added to a curl_multi handle, curl_multi_exec and
// curl_multi_select until it is done, curl_multi_getcontent, as the PHP manual's example runs
// it, one transfer after another; the multi handle keeps the connection. close:
// CURLOPT_FORBID_REUSE (as the driver does).
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

$mh = curl_multi_init();
$ch = curl_init($url);
curl_setopt($ch, CURLOPT_RETURNTRANSFER, true);
if ($close) {
    curl_setopt($ch, CURLOPT_FORBID_REUSE, true);
}

/** one GET: the body's length */
function get(): int
{
    global $mh, $ch, $url;
    curl_multi_add_handle($mh, $ch);
    do {
        $status = curl_multi_exec($mh, $active);
        if ($active) {
            curl_multi_select($mh);
        }
    } while ($active && $status === CURLM_OK);
    $info = curl_multi_info_read($mh);
    $body = curl_multi_getcontent($ch);
    curl_multi_remove_handle($mh, $ch);
    if ($status !== CURLM_OK || $info === false || $info['result'] !== CURLE_OK) {
        fail("GET $url: " . ($status !== CURLM_OK ? curl_multi_strerror($status) : curl_error($ch)));
    }
    if (($code = curl_getinfo($ch, CURLINFO_RESPONSE_CODE)) !== 200) {
        fail("GET $url: status $code");
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
