"""clientlab driver: pycurl, one Curl easy handle reused for the job."""

from __future__ import annotations

import hashlib
import io
import os
import sys
from urllib.parse import urlencode

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_lib"))

import labdriver  # noqa: E402
import pycurl  # noqa: E402

# CURLINFO_HTTP_VERSION values -> the report's labels
HTTP_LABELS = {pycurl.CURL_HTTP_VERSION_1_0: "1.0", pycurl.CURL_HTTP_VERSION_1_1: "1.1",
               pycurl.CURL_HTTP_VERSION_2_0: "2"}


def http_label(version: int) -> str:
    """The report's label of a CURLINFO_HTTP_VERSION value."""
    return HTTP_LABELS.get(version) or str(version)


# the per-request options as a new or reset() handle has them (libcurl's defaults)
PER_REQUEST_DEFAULTS = {pycurl.FOLLOWLOCATION: 0, pycurl.HTTPHEADER: []}


class PycurlDriver(labdriver.Driver):
    """One pycurl.Curl per job; the handle keeps its connection and cookies between requests."""

    # accept_encoding "library": libcurl sends no Accept-Encoding and decodes nothing unless
    # ACCEPT_ENCODING is set, as a job without accept_gzip does already
    options = {"tcp_nodelay": None, "expect_100": None, "accept_encoding": labdriver.LIBRARY_ENCODING}

    def versions(self) -> dict[str, str]:
        info = pycurl.version_info()
        libs = dict(part.split("/", 1) for part in pycurl.version.split() if "/" in part)
        return {**labdriver.base_versions(), "pycurl": libs.get("PycURL", "?"), "libcurl": info[1],
                "libcurl-ssl": info[5], "nghttp2": libs.get("nghttp2", "none")}

    def refuse(self, job: labdriver.Job) -> str | None:
        if job.http != "1.1" and not pycurl.version_info()[4] & pycurl.VERSION_HTTP2:
            return "this libcurl has no HTTP/2"
        return None

    def open(self, job: labdriver.Job) -> None:
        self.job = job
        self.curl = pycurl.Curl()
        # HTTP/2 "prior knowledge": h2c without Upgrade, and ALPN h2 only over TLS (no fallback)
        self.version = (pycurl.CURL_HTTP_VERSION_1_1 if job.http == "1.1"
                        else pycurl.CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE)
        self._configure(self.curl)
        self.applied = dict(PER_REQUEST_DEFAULTS)  # per-request options as the handle has them now
        self.changed_method = False  # the last request set a method or a body, which reset() forgets
        self.prepared: labdriver.Request | None = None  # the GET the handle is set up for

    def _configure(self, c: pycurl.Curl) -> None:
        """Job-wide options: set once, and again after a reset()."""
        job = self.job
        c.setopt(pycurl.HTTP_VERSION, self.version)
        if job.timeout_s is not None:
            c.setopt(pycurl.TIMEOUT_MS, int(job.timeout_s * 1000))
        if job.tls_ca:
            c.setopt(pycurl.CAINFO, job.tls_ca)
        if job.cookies:
            c.setopt(pycurl.COOKIEFILE, "")  # the in-memory cookie engine; cookies live in the handle
        if job.accept_gzip:
            c.setopt(pycurl.ACCEPT_ENCODING, "gzip")  # asks for gzip and decodes it
        if not job.keep_alive:
            c.setopt(pycurl.FORBID_REUSE, 1)  # close the connection after every transfer
        if job.option("tcp_nodelay") is not None:
            c.setopt(pycurl.TCP_NODELAY, int(job.option("tcp_nodelay")))

    def run_all(self, job: labdriver.Job, report: labdriver.Report | labdriver.Tally) -> None:
        """Entry by entry: the repeats of a GET into memory are pycurl's quickstart written out, the
        handle set up once for them and each answer read back, as a pycurl program repeating one
        request loops; anything else goes through `request`, one call a repeat."""
        for req in job.requests:
            if req.method == "GET" and not req.has_body and not req.to_file:
                if req is not self.prepared:
                    self._prepare(self.curl, req)
                self._gets(req, req.repeat, job.verify, report)
                continue
            for _ in range(req.repeat):
                try:
                    report.add(req, self.request(req))
                except Exception as exc:  # a failed request is reported, never fatal
                    report.fail(req, exc)

    def _gets(self, req: labdriver.Request, count: int, verify: bool,
              report: labdriver.Report | labdriver.Tally) -> None:
        """`count` GETs of the URL the handle is set up for, each into memory as pycurl's quickstart
        makes one (WRITEDATA into a BytesIO, perform()), its status and version read back.

        Each response is kept as a plain tuple in the report's `rows`, labelled and turned into the
        report's format after `done`: a pycurl GET costs about 30 µs of CPU, and a record object
        and a method call a response were a tenth of it, which a pycurl user's loop does not pay.
        The names the loop uses are looked up once, before it."""
        perform, setopt, getinfo = self.curl.perform, self.curl.setopt, self.curl.getinfo
        writedata, code, http = pycurl.WRITEDATA, pycurl.RESPONSE_CODE, pycurl.INFO_HTTP_VERSION
        buffer_of, sha256, fail = io.BytesIO, hashlib.sha256, report.fail
        got = report.rows(req, http_label).append
        for _ in range(count):
            buffer = buffer_of()
            setopt(writedata, buffer)
            try:
                perform()
            except Exception as exc:  # a failed request is reported, never fatal
                fail(req, exc)
                continue
            body = buffer.getvalue()
            if verify:
                got((getinfo(code), len(body), getinfo(http), sha256(body).hexdigest()))
            else:
                got((getinfo(code), len(body), getinfo(http)))

    def request(self, req: labdriver.Request) -> labdriver.Response:
        c = self.curl
        if req is not self.prepared:  # a repeat of the same GET finds the handle set up already
            self._prepare(c, req)
            if req is not self.prepared:  # a method, a body or a file sink
                return self._transfer(c, req)
        # a GET into memory, as pycurl's quickstart makes one: WRITEDATA into a BytesIO, perform()
        buffer = io.BytesIO()
        c.setopt(pycurl.WRITEDATA, buffer)
        c.perform()
        body = buffer.getvalue()
        return labdriver.Response(c.getinfo(pycurl.RESPONSE_CODE), len(body), self._http(c),
                                  hashlib.sha256(body).hexdigest() if self.job.verify else None)

    def _transfer(self, c: pycurl.Curl, req: labdriver.Request) -> labdriver.Response:
        """A request with a method or a body of its own, or into a file."""
        if not req.has_body:
            return self._perform(c, req)
        with req.open_body() as body:
            mime = self._set_body(c, req, body)
            try:
                return self._perform(c, req)
            finally:
                if mime is not None:
                    mime.close()

    def _prepare(self, c: pycurl.Curl, req: labdriver.Request) -> None:
        """Set the handle up for `req` (its URL, redirects, headers and method), changing only
        what differs from the request before."""
        if self.changed_method:
            # reset() forgets the previous request's method and body but keeps the connection and
            # cookies; without it a POSTFIELDS from an earlier request would leak into a later one.
            # Only then: a pycurl program reuses its handle as it is for a run of GETs
            c.reset()
            self._configure(c)
            self.applied = dict(PER_REQUEST_DEFAULTS)
        self.changed_method = req.has_body or req.method != "GET"
        # a request that sets a method or a body is set up again (after a reset) every time
        self.prepared = None if self.changed_method or req.to_file else req
        self._set(pycurl.URL, req.url)
        # not followed when the job does not say: libcurl's default
        self._set(pycurl.FOLLOWLOCATION, int(bool(req.follow_redirects)))
        headers = req.upload_headers()
        if req.has_body and self.job.option("expect_100") is not None:
            headers["Expect"] = "100-continue" if self.job.option("expect_100") else ""
        self._set(pycurl.HTTPHEADER, [f"{k}: {v}" for k, v in headers.items()])  # "Expect:" removes it
        if req.method != ("POST" if req.has_body else "GET"):
            c.setopt(pycurl.CUSTOMREQUEST, req.method)

    def _set(self, option: int, value) -> None:
        """Set a per-request option only when it differs from what the handle has."""
        if self.applied.get(option) != value:
            self.curl.setopt(option, value)
            self.applied[option] = value

    @staticmethod
    def _set_body(c: pycurl.Curl, req: labdriver.Request, body) -> pycurl.CurlMime | None:
        """Attach the request body; returns the mime tree, which must live until perform() ends."""
        if req.multipart:
            mime = pycurl.CurlMime(c)  # curl_mime: HTTPPOST/curl_formadd is deprecated
            for name, value in req.form.items():
                mime.add_field(name, value.encode())  # str must be ASCII; bytes need not
            c.setopt(pycurl.MIMEPOST, mime)
            return mime
        if req.form is not None:
            c.setopt(pycurl.POSTFIELDS, urlencode(req.form))
        elif body is not None:
            c.setopt(pycurl.POST, 1)
            c.setopt(pycurl.READDATA, body)  # streamed from the file
            c.setopt(pycurl.POSTFIELDSIZE_LARGE, req.body_size)
        return None

    def _perform(self, c: pycurl.Curl, req: labdriver.Request) -> labdriver.Response:
        if req.to_file:
            with labdriver.FileSink(req.sink_path, self.job.verify) as sink:
                c.setopt(pycurl.WRITEFUNCTION, sink.write)
                c.perform()
                return sink.response(c.getinfo(pycurl.RESPONSE_CODE), self._http(c))
        buffer = io.BytesIO()  # the usual pycurl whole-body idiom
        c.setopt(pycurl.WRITEDATA, buffer)
        c.perform()
        return labdriver.Response.of(c.getinfo(pycurl.RESPONSE_CODE), self._http(c), buffer.getvalue(),
                                     self.job.verify)

    @staticmethod
    def _http(c: pycurl.Curl) -> str:
        return http_label(c.getinfo(pycurl.INFO_HTTP_VERSION))

    def close(self) -> None:
        self.curl.close()


if __name__ == "__main__":
    labdriver.main(PycurlDriver())
