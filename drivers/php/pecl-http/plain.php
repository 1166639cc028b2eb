<?php
// pecl_http's plain loop (docs/driver-protocol.md §9): one http\Client, a new http\Client\Request
// per GET, enqueue()->send() and getResponse(), as its docs show them (the client keeps its
// curl handle and connection). close: a Connection: close header on every request (as the
// driver does).
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

$client = new http\Client();
$headers = $close ? ['Connection' => 'close'] : [];

/** one GET: the body's length */
function get(): int
{
    global $client, $url, $headers;
    $request = new http\Client\Request('GET', $url, $headers);
    try {
        $client->enqueue($request)->send();
        $response = $client->getResponse($request);
    } catch (Throwable $e) {
        fail("GET $url: " . $e->getMessage());
    } finally {
        $client->dequeue($request);
    }
    if ($response === null) {
        fail("GET $url: no response");
    }
    if (($status = $response->getResponseCode()) !== 200) {
        fail("GET $url: status $status");
    }
    return strlen($response->getBody()->toString());
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
