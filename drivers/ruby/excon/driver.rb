# frozen_string_literal: true

# clientlab driver: Excon, one persistent Excon::Connection per host kept for the job,
# requests one after another.

require_relative "../_lib/labdriver"
require "excon"
require "zlib"

class ExconDriver < LabDriver::Driver
  # Excon's own :tcp_nodelay (default false: the socket keeps the system's default, Nagle on);
  # it never sends Expect: 100-continue
  # accept_encoding "library": Excon sends no Accept-Encoding, and its default middlewares
  # decode nothing
  OPTIONS = { "tcp_nodelay" => nil, "expect_100" => [false], "accept_encoding" => LabDriver::LIBRARY_ENCODING }.freeze
  OPTION_NOTES = {
    "expect_100" => "Excon does not wait for 100 Continue",
    "max_host_connections" => "Excon has no connection limit (one connection per host here)",
  }.freeze
  FOLLOW = (Excon.defaults[:middlewares] + [Excon::Middleware::RedirectFollower]).freeze
  GZIP = [Excon::Middleware::Decompress].freeze

  def versions
    # Decompress inflates with Ruby's zlib
    LabDriver.base_versions.merge("excon" => Excon::VERSION, "zlib" => Zlib.zlib_version)
  end

  # Decompress leaves a streamed (response_block) body as it came: a gzip body could not reach
  # its file decoded
  def refuse(job)
    return nil unless job.accept_gzip && job.requests.any?(&:to_file?)

    "Excon's Decompress middleware does not decode a body streamed to a file (response_block)"
  end

  def open(job)
    @job = job
    @params = {
      persistent: job.keep_alive, # false: Excon closes the socket after every response
      ssl_verify_peer: true,
      headers: job.encoding_headers,
    }
    if job.timeout_s # else Excon's own
      @params.merge!(connect_timeout: job.timeout_s, read_timeout: job.timeout_s, write_timeout: job.timeout_s)
    end
    @params[:ssl_ca_file] = job.tls_ca if job.tls_ca
    @params[:tcp_nodelay] = job.option("tcp_nodelay") unless job.option("tcp_nodelay").nil?
    # origin => Excon::Connection (it connects on its first request)
    @connections = job.origins.to_h { |origin| [origin, Excon.new(origin, **@params)] }
  end

  def request(req)
    uri = req.uri
    conn = @connections[req.origin] ||= Excon.new(req.origin, **@params)
    # only what the request has of its own: Excon merges each parameter into the connection's
    params = { method: req.method, path: uri.path.empty? ? "/" : uri.path }
    params[:query] = uri.query if uri.query
    headers = req.upload_headers
    # RedirectFollower (its own redirect limit) follows on a new Excon::Connection per hop;
    # Excon's default stack reports a 3xx as it is
    middlewares = req.follow? ? FOLLOW : nil
    middlewares = (middlewares || Excon.defaults[:middlewares]) + GZIP if @job.accept_gzip
    params[:middlewares] = middlewares if middlewares
    if req.multipart? # Excon has no form encoder: bodies built by hand, as its README does
      content_type, params[:body] = LabDriver.multipart(req.form)
      headers = { "Content-Type" => content_type }.merge(headers)
    elsif req.form
      headers = { "Content-Type" => "application/x-www-form-urlencoded" }.merge(headers)
      params[:body] = LabDriver.urlencoded(req.form)
    end
    params[:headers] = headers unless headers.empty?
    req.open_body do |file|
      params[:body] = file if file # streamed from the file
      perform(conn, params, req)
    end
  end

  def close
    @connections&.each_value(&:reset) # closes the kept socket
    @connections = nil
  end

  private

  def perform(conn, params, req)
    LabDriver.response_for(req, @job.verify) do |sink|
      params[:response_block] = ->(chunk, _left, _total) { sink.write(chunk) } if sink
      resp = conn.request(params)
      [resp.status, version(resp), resp.body]
    end
  end

  def version(resp)
    resp.status_line.to_s[%r{\AHTTP/(\S+)}, 1] || "?"
  end
end

LabDriver.main(ExconDriver.new) if $PROGRAM_NAME == __FILE__
