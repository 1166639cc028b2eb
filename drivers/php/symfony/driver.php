<?php
// php-symfony: Symfony HttpClient 5.4 (Debian), HttpClient::create() (CurlHttpClient), one client
// reused for the job. Sequential jobs call request() then getContent(); parallel jobs (and file
// sinks) keep up to `concurrency` responses open and drain them with the client's stream(),
// starting the next request as each one ends.

declare(strict_types=1);

require __DIR__ . '/../_lib/labdriver.php';
require '/usr/share/php/Symfony/Component/HttpClient/autoload.php';

use Symfony\Component\HttpClient\CurlHttpClient;
use Symfony\Component\HttpClient\HttpClient;
use Symfony\Contracts\HttpClient\HttpClientInterface;
use Symfony\Contracts\HttpClient\ResponseInterface;

/** one request in flight: its entry, and the file its body streams to (sink "file") */
final class Open
{
    /** @param resource|null $out */
    public function __construct(public int $r, public array $req, public $out)
    {
    }
}

final class SymfonyDriver extends Lab\Driver
{
    // expect_100: it removes libcurl's Expect header unless the request has one
    // accept_encoding "library": Symfony's own Accept-Encoding, decoded by it (with curl, libcurl's list)
    public array $options = ['max_host_connections' => null, 'expect_100' => null, 'accept_encoding' => Lab\LIBRARY_ENCODING];

    public function versions(): array
    {
        // Symfony components carry no version constant outside HttpKernel
        return ['symfony-http-client' => Lab\debian_version('php-symfony-http-client'), 'libcurl' => curl_version()['version']];
    }

    public function prepare(array $job): mixed
    {
        if ($job['http'] === 'h2c') { // not claimed; said here for a run by hand
            return new Lab\Unsupported("Symfony's http_version 2.0 over http:// is libcurl's Upgrade, not prior knowledge (h2c)");
        }
        if (($why = Lab\close_refusal($job, 'Symfony HttpClient')) !== null) {
            return new Lab\Unsupported($why);
        }
        if (($max = Lab\option($job, 'max_host_connections')) !== null && $max < 1) {
            return new Lab\Unsupported("option max_host_connections must be at least 1, got $max");
        }
        $defaults = [
            ...($job['timeout_s'] !== null ? ['timeout' => (float)$job['timeout_s']] : []), // else the library's own
            // 1.1 explicitly: its default is HTTP/2 for every https URL
            'http_version' => $job['http'] === '2' ? '2.0' : '1.1',
        ];
        if ($job['tls_ca'] !== null) {
            $defaults['cafile'] = $job['tls_ca'];
        }
        $client = HttpClient::create($defaults, Lab\option($job, 'max_host_connections') ?? 6);
        if (!$client instanceof CurlHttpClient) {
            return new Lab\Unsupported('HttpClient::create() chose ' . get_class($client) . ', not CurlHttpClient');
        }
        return $client;
    }

    private static function start(HttpClientInterface $client, array $job, array $req): ResponseInterface
    {
        $headers = $req['headers'] ?? [];
        if (!$job['keep_alive']) {
            $headers['Connection'] = 'close';
        }
        if (empty($job['accept_gzip']) && !Lab\library_encoding($job)) {
            // by default it asks for gzip (and decodes it); a job without gzip does not ask
            $headers['Accept-Encoding'] = 'identity';
        }
        $o = ['headers' => $headers, 'buffer' => !Lab\to_file($req)];
        if (Lab\follow_redirects($req) === false) {
            $o['max_redirects'] = 0; // true or absent: its default, which follows (up to 20)
        }
        if (isset($req['form'])) {
            $o['body'] = $req['form']; // an array is sent urlencoded
        } elseif (!empty($req['body_file'])) {
            $o['body'] = fopen($req['body_file'], 'rb'); // read by curl (CURLOPT_INFILE)
            $o['headers']['Content-Type'] = $req['content_type'] ?? 'application/octet-stream';
            $o['headers']['Content-Length'] = (string)filesize($req['body_file']); // else it goes chunked
        }
        if ((isset($req['form']) || !empty($req['body_file'])) && Lab\option($job, 'expect_100') === true) {
            $o['headers']['Expect'] = '100-continue';
        }
        return $client->request($req['method'], $req['url'], $o);
    }

    /** CurlHttpClient's http_version info is libcurl's CURL_HTTP_VERSION_* code */
    private static function version(ResponseInterface $response): string
    {
        return match ($response->getInfo('http_version')) {
            CURL_HTTP_VERSION_1_0 => '1.0',
            CURL_HTTP_VERSION_1_1 => '1.1',
            CURL_HTTP_VERSION_2_0 => '2',
            default => '?',
        };
    }

    public function run(array $job, mixed $state, Lab\Collector $report): void
    {
        /** @var HttpClientInterface $client */
        $client = $state;
        $work = Lab\work($job);
        $streamed = $job['concurrency'] > 1;
        foreach ($job['requests'] as $req) {
            $streamed = $streamed || Lab\to_file($req);
        }
        if (!$streamed) { // one after another, each body as a string
            foreach ($work as [$r, $req]) {
                try {
                    $response = self::start($client, $job, $req);
                    $body = $response->getContent(false);
                    $report->add($r, $response->getStatusCode(), self::version($response), $body);
                } catch (\Throwable $e) {
                    $report->failWith($r, $e);
                }
            }
            return;
        }
        $open = new SplObjectStorage(); // response => Open
        $fill = function () use ($work, $open, $job, $client, $report): void {
            while (count($open) < max(1, $job['concurrency']) && $work->valid()) {
                [$r, $req] = $work->current();
                $work->next();
                try {
                    $out = null;
                    if (Lab\to_file($req) && ($out = @fopen($req['sink_path'], 'wb')) === false) {
                        $report->fail($r, "cannot open sink_path {$req['sink_path']}");
                        continue;
                    }
                    $open[self::start($client, $job, $req)] = new Open($r, $req, $out);
                } catch (\Throwable $e) {
                    $report->failWith($r, $e);
                }
            }
        };
        $fill();
        while (count($open) > 0) {
            // drain the open responses until one ends, then start the next request
            foreach ($client->stream(iterator_to_array(self::responses($open), false)) as $response => $chunk) {
                $o = $open[$response];
                try {
                    if ($o->out !== null) {
                        fwrite($o->out, $chunk->getContent());
                    }
                    if (!$chunk->isLast()) continue;
                    if ($o->out !== null) {
                        fclose($o->out);
                        $report->addFile($o->r, $response->getStatusCode(), self::version($response), $o->req['sink_path']);
                    } else {
                        $report->add($o->r, $response->getStatusCode(), self::version($response), $response->getContent(false));
                    }
                } catch (\Throwable $e) { // a transport error: the chunk says so when read
                    if (is_resource($o->out)) fclose($o->out);
                    $report->failWith($o->r, $e);
                }
                $open->detach($response);
                break;
            }
            $fill();
        }
    }

    private static function responses(SplObjectStorage $open): Generator
    {
        foreach ($open as $response) {
            yield $response;
        }
    }

    public function finish(mixed $state): void
    {
        $state->reset(); // closes its connections (CurlHttpClient::reset)
    }
}

Lab\main(new SymfonyDriver());
