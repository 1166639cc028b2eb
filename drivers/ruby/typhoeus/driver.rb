# frozen_string_literal: true

# clientlab driver: Typhoeus (libcurl through Ethon/FFI). Requests one after another with
# Typhoeus::Request#run (one pooled easy handle, its connection kept), or up to `concurrency`
# in flight on a Typhoeus::Hydra (max_concurrency) for parallel jobs (over HTTP/2 without
# multiplexing: see open).

require_relative "../_lib/labdriver"
require "fileutils"
require "tmpdir"
require "typhoeus"

class TyphoeusDriver < LabDriver::Driver
  # CURLOPT_TCP_NODELAY, an Expect header (Typhoeus sends "Expect:" by default, which keeps
  # libcurl from adding one) and CURLMOPT_MAX_HOST_CONNECTIONS on the Hydra's multi handle
  # accept_encoding "library": libcurl sends no Accept-Encoding unless told, as a job without
  # accept_gzip does already
  OPTIONS = { "tcp_nodelay" => nil, "expect_100" => nil, "max_host_connections" => nil,
              "accept_encoding" => LabDriver::LIBRARY_ENCODING }.freeze
  CURL_VERSION_HTTP2 = 1 << 16 # curl_version_info features bit (Ethon has no constant for it)
  # h2c (:httpv2_prior_knowledge) is not claimed: libcurl < 8.0.0 (Debian 12 has 7.88.1) fails
  # every prior-knowledge request that reuses the connection (curl#10634)
  HTTP_VERSIONS = { "1.1" => :httpv1_1, "2" => :httpv2_tls }.freeze

  def versions
    info = Ethon::Curl.version_info
    libs = Ethon::Curl.version.split.map { |part| part.split("/", 2) }.select { |pair| pair.size == 2 }.to_h
    LabDriver.base_versions(openssl: false).merge(
      "typhoeus" => Typhoeus::VERSION, "ethon" => Ethon::VERSION, "ffi" => FFI::VERSION,
      "libcurl" => info[:version], "libcurl-ssl" => info[:ssl_version],
      "nghttp2" => libs.fetch("nghttp2", "none"), "zlib" => info[:libz_version]
    )
  end

  def refuse(job)
    return "no HTTP/#{job.http} version for libcurl" unless HTTP_VERSIONS.key?(job.http)
    if job.http != "1.1" && (Ethon::Curl.version_info[:features] & CURL_VERSION_HTTP2).zero?
      return "this libcurl is built without HTTP/2"
    end
    nil
  end

  def open(job)
    @job = job
    @expect = job.option("expect_100")
    # Ethon sets every option of a request on its handle again each time: only the settings the
    # job needs. Verification is libcurl's default (ssl_verifypeer, ssl_verifyhost 2) and stays
    # on; HTTP/1.1 is libcurl's own choice for http:// URLs, asked for only where TLS could
    # negotiate HTTP/2
    @base = job.timeout_s ? { timeout_ms: (job.timeout_s * 1000).ceil } : {} # else libcurl's own
    if job.http != "1.1" || job.requests.any? { |req| req.url.start_with?("https:") }
      @base[:http_version] = HTTP_VERSIONS.fetch(job.http)
    end
    @base[:cainfo] = job.tls_ca if job.tls_ca
    @base[:accept_encoding] = "gzip" if job.accept_gzip # libcurl asks for gzip and decodes it
    @base.update(forbid_reuse: true, fresh_connect: true) unless job.keep_alive
    @base[:tcp_nodelay] = job.option("tcp_nodelay") unless job.option("tcp_nodelay").nil?
    if job.cookies
      # Typhoeus::Pool erases a handle's in-memory cookies whenever it takes the handle back, and
      # Ethon cannot set a libcurl share: Typhoeus keeps cookies only in a cookie file, as its
      # README shows (written after every transfer, read before the next)
      @cookie_dir = Dir.mktmpdir("clientlab-typhoeus-")
      jar = File.join(@cookie_dir, "cookies.txt")
      @base.update(cookiefile: jar, cookiejar: jar)
    end
    @hydra = nil
    return unless job.concurrency > 1

    hydra_options = { max_concurrency: job.concurrency }
    # HTTP/2: one stream per connection (CURLMOPT_PIPELINING = CURLPIPE_NOTHING, Ethon's
    # Multi#pipelining=), a departure declared in driver.toml. libcurl 7.88.1 can lose the wake-up
    # of a stream whose response another transfer read off the shared connection during a
    # curl_multi_perform pass that also started new transfers: curl_multi_timeout then gives the
    # whole request timeout although the response is buffered, and Ethon's Multi#perform sleeps
    # in select() for all of it (no cap), so a multiplexed Hydra hangs on its last responses
    hydra_options[:pipelining] = 0 if job.http != "1.1"
    @hydra = Typhoeus::Hydra.new(hydra_options)
    limit = job.option("max_host_connections")
    # Typhoeus and Ethon have no setter for it: Ethon's own curl_multi_setopt binding
    Ethon::Curl.set_option(:max_host_connections, limit, @hydra.multi.handle, :multi) if limit
  end

  # Sequential: one Request#run after another (at most one connection in use, so
  # max_host_connections holds); parallel: every request queued on the Hydra.
  def run_all(job, report)
    job.each_work do |req|
      request = report.guard(req) { build(req, report) } or next
      @hydra ? @hydra.queue(request) : request.run
    end
    @hydra&.run
  end

  def close
    @hydra&.multi&.handle&.free # curl_multi_cleanup: closes the Hydra's connections
    # Typhoeus has no public way to close the easy handles it pools (and the connections
    # they keep): clean them up here instead of waiting for the garbage collector
    easies = Typhoeus::Pool.send(:easies).dup
    Typhoeus::Pool.clear
    easies.each(&:cleanup)
    FileUtils.rm_rf(@cookie_dir) if @cookie_dir
    @hydra = @cookie_dir = nil
  end

  private

  # A Typhoeus::Request for one entry, whose completion goes into the report.
  def build(req, report)
    headers = req.upload_headers(length: false) # libcurl counts the body itself
    headers = headers.merge("Expect" => @expect ? "100-continue" : "") if req.body? && !@expect.nil?
    options = @base.merge(method: req.method.downcase.to_sym, headers: headers)
    # set only when the job names it: Typhoeus' own default (no following, maxredirs 50) otherwise
    options[:followlocation] = req.follow_redirects if req.redirects_named?
    if req.form
      options[:body] = req.form
      options[:multipart] = true if req.multipart? # curl_formadd parts
    elsif req.body_file
      # Typhoeus takes a raw body only as a String: Ethon's PUT sets the upload's size from it
      # (after any option given) and reads it from memory
      options[:body] = File.binread(req.body_file)
    end
    request = Typhoeus::Request.new(req.url, options)
    sink = nil
    if req.to_file?
      request.on_body do |chunk, _response|
        (sink ||= LabDriver::FileSink.new(req.sink_path, @job.verify)).write(chunk)
      end
    end
    request.on_complete do |response|
      report.record(req) do
        sink ||= LabDriver::FileSink.new(req.sink_path, @job.verify) if req.to_file?
        sink&.close
        raise "#{response.return_code}: #{response.return_message}" unless response.return_code == :ok

        if sink
          sink.response(response.code, response.http_version)
        else
          LabDriver::Response.of(response.code, response.http_version, response.body, @job.verify)
        end
      end
    end
    request
  end
end

LabDriver.main(TyphoeusDriver.new) if $PROGRAM_NAME == __FILE__
