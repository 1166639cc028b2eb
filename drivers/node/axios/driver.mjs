/**
 * clientlab driver: axios (Node http adapter), one instance per job on keep-alive node:http /
 * node:https Agents (maxSockets = concurrency), up to `concurrency` requests in flight.
 */

import { Response, fileResponse, main, packageVersion } from '../_lib/labdriver.mjs';
import { AgentDriver, connectionHeaders } from '../_lib/labhttp.mjs';
import axios from 'axios';

class AxiosDriver extends AgentDriver {
  versions() {
    return {
      ...super.versions(), axios: axios.VERSION,
      'follow-redirects': packageVersion(import.meta.url, 'follow-redirects'),
    };
  }

  async open(job) {
    await super.open(job);
    this.client = axios.create({
      httpAgent: this.agents.http,
      httpsAgent: this.agents.https,
      // axios asks for gzip, compress, deflate, br by default: say exactly what the job wants,
      // unless it leaves that to axios (accept_encoding "library")
      headers: { ...job.encodingHeader('Accept-Encoding'), ...connectionHeaders(job) },
      ...job.timeoutOptions('timeout'),
      validateStatus: null, // every status is a response, not an error
    });
  }

  async request(req) {
    const config = {
      method: req.method,
      url: req.url,
      headers: req.uploadHeaders(),
      responseType: req.toFile ? 'stream' : 'arraybuffer', // arraybuffer: the body as a Buffer
    };
    // only a redirect the job must not follow sets anything: axios's default (follow-redirects,
    // up to 21) stays in place elsewhere, as its users have it; 0 uses plain node:http
    if (req.followRedirects === false) config.maxRedirects = 0;
    if (req.multipart) {
      config.data = req.formData(); // axios streams a spec FormData as multipart/form-data
    } else if (req.form) {
      config.data = new URLSearchParams(req.form); // sent urlencoded
    } else if (req.bodyFile) {
      config.data = req.openBody(); // streamed from the file, with its Content-Length
    }
    const res = await this.client.request(config);
    const version = res.request.res.httpVersion; // the IncomingMessage of the last hop
    if (req.toFile) return fileResponse(req, res.data, res.status, version, this.job.verify);
    return Response.of(res.status, version, res.data, this.job.verify);
  }
}

main(new AxiosDriver());
