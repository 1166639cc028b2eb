<?php
// php-pecl-http: pecl_http 4 (Debian php-http, on php-raphf), one http\Client('curl') reused for
// every request of a job, sequential: enqueue, send, getResponse, dequeue; bodies as strings.

declare(strict_types=1);

require __DIR__ . '/../_lib/labdriver.php';

final class PeclHttpDriver extends Lab\Driver
{
    // accept_encoding "library": without its compress option it asks for no coding and decodes
    // nothing, as a job without accept_gzip does already
    public array $options = ['tcp_nodelay' => null, 'accept_encoding' => Lab\LIBRARY_ENCODING];

    public function versions(): array
    {
        return ['pecl_http' => (string)phpversion('http'), 'libcurl' => http\Client\Curl\Versions\CURL];
    }

    public function prepare(array $job): mixed
    {
        if ($job['http'] !== '1.1') { // not claimed; said here for a run by hand
            return new Lab\Unsupported('only HTTP/1.1 is claimed for pecl_http here (no https with the lab\'s CA: see driver.toml)');
        }
        $client = new http\Client('curl');
        $options = ['protocol' => http\Client\Curl\HTTP_VERSION_1_1];
        if ($job['timeout_s'] !== null) { // else the client's own
            $options['timeout'] = (float)$job['timeout_s'];
        }
        if (($nodelay = Lab\option($job, 'tcp_nodelay')) !== null) {
            $options['tcp_nodelay'] = $nodelay;
        }
        // its handles keep cookies on their own (libcurl's cookie engine, shared within the client);
        // without cookies, every request starts a new cookie session: no cookie is sent back
        $options['cookiesession'] = empty($job['cookies']);
        if (!empty($job['accept_gzip'])) {
            $options['compress'] = true; // decode; the header below asks for gzip only
        }
        $client->setOptions($options);
        return $client;
    }

    /** the headers an entry's requests send */
    private static function headers(array $job, array $req): array
    {
        $headers = $req['headers'] ?? [];
        if (!$job['keep_alive']) {
            $headers['Connection'] = 'close';
        }
        if (!empty($job['accept_gzip'])) {
            $headers['Accept-Encoding'] = 'gzip';
        }
        return $headers;
    }

    /** a request of an entry with a body or a redirect setting of its own */
    private static function request(array $req, string $method, array $headers): http\Client\Request
    {
        $request = new http\Client\Request($method, $req['url'], $headers);
        if (isset($req['form'])) {
            $body = new http\Message\Body();
            if (Lab\is_multipart($req)) {
                $body->addForm($req['form']);
                $request->setContentType('multipart/form-data; boundary=' . $body->getBoundary());
            } else {
                $body->append(Lab\urlencoded($req['form']));
                $request->setContentType('application/x-www-form-urlencoded');
            }
            $request->setBody($body);
        } elseif (!empty($req['body_file'])) {
            $request->setBody(new http\Message\Body(fopen($req['body_file'], 'rb')));
            $request->setContentType($req['content_type'] ?? 'application/octet-stream');
        }
        if (Lab\follow_redirects($req)) {
            $request->setOptions(['redirect' => 20]); // how many to follow; its default, 0, follows none
        }
        return $request;
    }

    public function run(array $job, mixed $state, Lab\Collector $report): void
    {
        /** @var http\Client $client */
        $client = $state;
        // entry by entry: its method and headers worked out once, then its repeats, each a new
        // Request (as pecl_http's docs make one per request; a body or a redirect setting added
        // where the entry has one), sent, and its answer read back
        foreach ($job['requests'] as $r => $req) {
            $n = (int)($req['repeat'] ?? 1);
            $method = strtoupper($req['method']);
            $url = $req['url'];
            $headers = self::headers($job, $req);
            $plain = !isset($req['form']) && empty($req['body_file']) && !Lab\follow_redirects($req);
            for ($i = 0; $i < $n; $i++) {
                $request = $plain ? new http\Client\Request($method, $url, $headers) : self::request($req, $method, $headers);
                try {
                    $client->enqueue($request)->send();
                    $response = $client->getResponse($request);
                    if ($response === null) {
                        $report->fail($r, 'no response: ' . json_encode($client->getTransferInfo($request)->error ?? ''));
                        continue;
                    }
                    $http = $response->getHttpVersion();
                    $report->add($r, $response->getResponseCode(), $http === '2.0' ? '2' : $http, $response->getBody()->toString());
                } catch (\Throwable $e) {
                    $report->failWith($r, $e);
                } finally {
                    $client->dequeue($request);
                }
            }
        }
    }

    public function finish(mixed $state): void
    {
        $state->reset(); // drops its handles and their connections
    }
}

Lab\main(new PeclHttpDriver());
