<?php
// Guzzle's plain loop (docs/driver-protocol.md §9): one GuzzleHttp\Client with its defaults (its
// curl handler keeps the connection), $client->get($url) and (string)$response->getBody(), as its
// quickstart shows it; a 4xx or 5xx throws, as Guzzle does by default. close: a
// Connection: close header on every request (as the driver does).
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

require '/usr/share/php/GuzzleHttp/autoload.php';

$client = new GuzzleHttp\Client($close ? ['headers' => ['Connection' => 'close']] : []);

/** one GET: the body's length */
function get(): int
{
    global $client, $url;
    try {
        $response = $client->get($url);
        $body = (string)$response->getBody();
    } catch (Throwable $e) {
        fail("GET $url: " . $e->getMessage());
    }
    if (($status = $response->getStatusCode()) !== 200) {
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
