# frozen_string_literal: true

# clientlab driver: http.rb (HTTP::Client), one persistent client per origin kept for the job,
# requests one after another.

require_relative "../_lib/labdriver"
require "http"
require "http-parser/version"
require "zlib"

class HttpRbDriver < LabDriver::Driver
  # http.rb's nodelay (true sets TCP_NODELAY; without it the socket keeps the system's default,
  # Nagle on); it never sends Expect: 100-continue
  # accept_encoding "library": http.rb sends no Accept-Encoding and inflates nothing unless told
  OPTIONS = { "tcp_nodelay" => nil, "expect_100" => [false], "accept_encoding" => LabDriver::LIBRARY_ENCODING }.freeze
  OPTION_NOTES = {
    "expect_100" => "http.rb does not wait for 100 Continue",
    "max_host_connections" => "http.rb has no connection limit (one connection per origin here)",
  }.freeze

  # http-parser parses responses in its bundled C parser through FFI; auto_inflate inflates
  # with Ruby's zlib
  def versions
    LabDriver.base_versions.merge(
      "http.rb" => HTTP::VERSION, "http-form-data" => HTTP::FormData::VERSION,
      "http-parser" => HttpParser::VERSION, "ffi" => FFI::VERSION,
      "addressable" => Addressable::VERSION::STRING, "zlib" => Zlib.zlib_version
    )
  end

  def open(job)
    @job = job
    t = job.timeout_s
    base = HTTP.headers(job.encoding_headers)
    base = base.timeout(connect: t, write: t, read: t) if t # else http.rb's own
    base = base.use(:auto_inflate) if job.accept_gzip # decodes Content-Encoding: gzip
    base = base.nodelay if job.option("tcp_nodelay")
    @base = base # without persistent: "Connection: close" and a new connection per request
    @ssl = LabDriver.ssl_context(job)
    # origin => persistent HTTP::Client (it connects on its first request)
    # each URL's origin, parsed once (http.rb parses with Addressable: a parse per request costs
    # a small answer's request several times over)
    @origins = job.requests.to_h { |req| [req.url, origin(req.url)] }
    @clients = job.keep_alive ? @origins.values.uniq.to_h { |origin| [origin, base.persistent(origin)] } : {}
  end

  def request(req)
    client = @base
    if @job.keep_alive
      key = @origins[req.url] || origin(req.url)
      client = @clients[key] ||= @base.persistent(key)
    end
    # only the options a request has: each one is merged into the client's own per request
    opts = {}
    headers = req.upload_headers(length: false) # http.rb sizes the body
    opts[:headers] = headers unless headers.empty?
    opts[:ssl_context] = @ssl if req.url.start_with?("https:")
    # same client, same connection, http.rb's own hop limit; without it a 3xx is reported as it is
    opts[:follow] = true if req.follow?
    if req.multipart?
      opts[:form] = HTTP::FormData::Multipart.new(req.form) # plain fields as multipart parts
    elsif req.form
      opts[:form] = req.form
    end
    req.open_body do |file|
      opts[:body] = file if file # streamed from the file
      perform(client, opts, req)
    end
  end

  def close
    @clients&.each_value(&:close)
    @base&.close
    @clients = @base = nil
  end

  private

  # the origin as http.rb spells it (a persistent client refuses any other)
  def origin(url)
    HTTP::URI.parse(url).origin
  end

  def perform(client, opts, req)
    LabDriver.response_for(req, @job.verify) do |sink|
      resp = client.request(req.method.downcase.to_sym, req.url, opts)
      resp.body.each { |chunk| sink.write(chunk) } if sink # streamed chunk by chunk
      [resp.code, resp.version, sink ? nil : resp.to_s]
    end
  end
end

LabDriver.main(HttpRbDriver.new) if $PROGRAM_NAME == __FILE__
