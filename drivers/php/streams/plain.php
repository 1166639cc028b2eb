<?php
// PHP's http:// stream wrapper in a plain loop (docs/driver-protocol.md §9): file_get_contents($url)
// with a stream context asking for HTTP/1.1, as the manual shows it. The wrapper has no pool and
// sends Connection: close: every request is a new connection, so close is the only mode.
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

if (!$close) {
    fail("PHP's http wrapper keeps no connection alive: only close is a plain loop of it");
}
$context = stream_context_create(['http' => ['protocol_version' => 1.1]]);

/** one GET: the body's length */
function get(): int
{
    global $context, $url;
    $body = @file_get_contents($url, false, $context);
    if ($body === false) {
        fail("GET $url: " . (error_get_last()['message'] ?? 'file_get_contents failed'));
    }
    $status = explode(' ', $http_response_header[0] ?? '')[1] ?? '';
    if ($status !== '200') {
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
