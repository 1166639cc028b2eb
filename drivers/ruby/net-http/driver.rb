# frozen_string_literal: true

# clientlab driver: Net::HTTP (Ruby's standard library), one started connection per host kept
# for the job (keep-alive), requests one after another.

require_relative "../_lib/labdriver"
require "net/http"
require "zlib"

class NetHttpDriver < LabDriver::Driver
  # Net::HTTP sets TCP_NODELAY on every socket it opens and has no setting to turn it off; it
  # sends Expect: 100-continue only when the caller adds that header, which this driver never does
  # accept_encoding "library": Net::HTTP's own Accept-Encoding (gzip, deflate, identity), decoded by it
  OPTIONS = { "tcp_nodelay" => [true], "expect_100" => [false], "accept_encoding" => LabDriver::LIBRARY_ENCODING }.freeze
  OPTION_NOTES = {
    "tcp_nodelay" => "Net::HTTP sets TCP_NODELAY on every connection and has no setting for it",
    "expect_100" => "this driver sends no Expect header",
    "max_host_connections" => "Net::HTTP has no connection limit (one connection per host here)",
  }.freeze

  def versions
    # Net::HTTP inflates with Ruby's zlib
    LabDriver.base_versions.merge("net-http" => Net::HTTP::VERSION, "zlib" => Zlib.zlib_version)
  end

  def refuse(job)
    name = job.multipart_name_matching(/[\r\n]/) or return nil

    "Net::HTTP's multipart encoder escapes only \\ and \" in field names: #{name.inspect} would break its part's header"
  end

  def open(job)
    @job = job
    # origin => Net::HTTP, started (connected) by its first request and kept for the job
    @connections = job.origins.to_h { |origin| [origin, new_http(URI(origin))] }
    # exactly what the job asks for (left unset, Net::HTTP would ask for gzip, deflate and
    # identity, as it does where the job leaves it to the library)
    @headers = job.encoding_headers
    @headers["Connection"] = "close" unless job.keep_alive # Net::HTTP closes, then reconnects
  end

  # Entry by entry: the repeats of a GET of the URL alone (no headers, body or file of its own, no
  # gzip to decode) are Net::HTTP's own loop written out, `http.get(path, headers)` on the kept
  # connection and each answer read back, as a program repeating one request writes it; anything
  # else goes through `request`, one call a repeat.
  def run_all(job, report)
    job.requests.each do |req|
      if req.method == "GET" && req.headers.empty? && !req.body? && !req.to_file? && !job.accept_gzip
        gets(req, report)
      else
        req.repeat.times { report.record(req) { request(req) } }
      end
    end
  end

  def request(req)
    uri = req.uri
    http = @connections[req.origin] ||= new_http(uri)
    http.start unless http.started? # the connection opens here, in the timed phase
    headers = @headers.merge(req.upload_headers)
    message = Net::HTTPGenericRequest.new(req.method, req.body?, req.method != "HEAD", uri.request_uri, headers)
    if req.multipart?
      message.set_form(req.form.to_a, "multipart/form-data")
    elsif req.form
      message.set_form_data(req.form)
    end
    req.open_body do |body|
      message.body_stream = body if body # streamed from the file, Content-Length from upload_headers
      perform(http, message, req)
    end
  end

  def close
    @connections&.each_value { |http| http.finish if http.started? }
    @connections = nil
  end

  private

  def gets(req, report)
    uri = req.uri
    http = @connections[req.origin] ||= new_http(uri)
    path = uri.request_uri
    verify = @job.verify
    before = @before_each # a test driver's planted work (tests/testdrivers/planted-ruby); none here
    req.repeat.times do
      before&.call
      http.start unless http.started? # the connection opens here, in the timed phase
      res = http.get(path, @headers)
      report.add(req, LabDriver::Response.of(res.code, res.http_version, res.body, verify))
    rescue StandardError => e # a failed request is reported, never fatal
      report.fail(req, e)
    end
  end

  def new_http(uri)
    http = Net::HTTP.new(uri.hostname, uri.port)
    if uri.scheme == "https"
      http.use_ssl = true
      http.verify_mode = OpenSSL::SSL::VERIFY_PEER
      http.ca_file = @job.tls_ca if @job.tls_ca
    end
    # else Net::HTTP's own
    http.open_timeout = http.read_timeout = http.write_timeout = http.ssl_timeout = @job.timeout_s if @job.timeout_s
    http
  end

  def perform(http, message, req)
    LabDriver.response_for(req, @job.verify) do |sink|
      res = http.request(message) do |response|
        # a caller's own Accept-Encoding turns Net::HTTP's decoding off; the response's
        # decode_content turns its inflater (the one it uses for its own header) back on
        response.decode_content = true if @job.accept_gzip
        response.read_body { |chunk| sink.write(chunk) } if sink
      end
      [res.code, res.http_version, sink ? nil : res.body]
    end
  end
end

LabDriver.main(NetHttpDriver.new) if $PROGRAM_NAME == __FILE__
