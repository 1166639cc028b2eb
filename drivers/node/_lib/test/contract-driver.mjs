// The golden transcript's contract client (drivers/contract/transcript.json, `client`) behind
// the helper's seam: transcript.test.mjs runs it as a driver and feeds it every case.
import { Driver, Response, baseVersions, main } from '../labdriver.mjs';

class ContractClient extends Driver {
  options = { tcp_nodelay: null, expect_100: [false] };

  versions() {
    return { ...baseVersions(), contract: '1' };
  }

  refuse(job) {
    return job.scenario === 'refused-by-client' ? 'the contract client refuses this job' : null;
  }

  async open(job) {
    if (job.scenario === 'open-fails') throw new Error('the contract client cannot be built');
    this.verify = job.verify;
  }

  async request(req) {
    if (req.url.includes('/fail')) throw new Error('connection refused');
    const status = req.url.match(/\/status\/(\d{3})/);
    return Response.of(status ? Number(status[1]) : 200, '1.1', Buffer.from(req.url), this.verify);
  }
}

await main(new ContractClient());
