<?php
// php-curl: the curl extension's easy interface, one handle reused for every request (curl_reset
// between requests keeps its connections, DNS cache, TLS sessions and cookies), sequential.

declare(strict_types=1);

require __DIR__ . '/../_lib/labdriver.php';
require __DIR__ . '/../_lib/labcurl.php';

final class CurlDriver extends Lab\Driver
{
    public array $options = Lab\Curl\HONOURED;
    private ?CurlHandle $ch = null;

    public function versions(): array
    {
        return Lab\Curl\versions();
    }

    public function open(array $job): void
    {
        $this->ch = curl_init();
    }

    public function run(array $job, Lab\Report $report): void
    {
        $ch = $this->ch;
        foreach (Lab\work($job) as [$r, $req]) {
            curl_reset($ch);
            $sink = Lab\Curl\setup($ch, $job, $req);
            $body = curl_exec($ch);
            Lab\Curl\finish($ch, $r, $req, is_string($body) ? $body : null, $sink, curl_errno($ch), curl_error($ch), $report);
        }
    }

    public function close(): void
    {
        $this->ch = null; // curl_close is a no-op since PHP 8: the handle closes when released
    }
}

Lab\main(new CurlDriver(), __DIR__);
