<?php
// The golden transcript's contract client (drivers/contract/transcript.json, `client`) behind the
// helper's seam: transcript_test.php runs it as a driver and feeds it every case.

declare(strict_types=1);

require __DIR__ . '/../labdriver.php';

final class ContractClient extends Lab\Driver
{
    public array $options = ['tcp_nodelay' => null, 'expect_100' => [false]];

    public function versions(): array
    {
        return ['contract' => '1'];
    }

    public function prepare(array $job): mixed
    {
        $scenario = $job['scenario'] ?? '';
        if ($scenario === 'refused-by-client') {
            return new Lab\Unsupported('the contract client refuses this job');
        }
        if ($scenario === 'open-fails') {
            throw new RuntimeException('the contract client cannot be built');
        }
        return null;
    }

    public function run(array $job, mixed $state, Lab\Collector $report): void
    {
        foreach (Lab\work($job) as [$r, $req]) {
            if (str_contains($req['url'], '/fail')) {
                $report->fail($r, 'connection refused');
                continue;
            }
            $status = preg_match('#/status/(\d{3})#', $req['url'], $m) ? (int)$m[1] : 200;
            $report->add($r, $status, '1.1', $req['url']);
        }
    }
}

Lab\main(new ContractClient());
