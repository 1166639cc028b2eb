// The plain loop of cpp-beast-async (docs/driver-protocol.md §9), after Beast's
// http_client_async example: one io_context, async_resolve, async_connect, then async_write and
// async_read into a response<string_body> per GET, the next GET started from the last one's
// handler; keep-alive mode on the one connection, close mode a connection per GET
// (keep_alive(false), then the socket shut down), as the driver does. The warm-up and the timed
// GETs are two runs of the io_context. Usage: plain URL COUNT MODE WARMUP_S (an http:// URL).
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/version.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <string>

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using clock_type = std::chrono::steady_clock;

static void check(beast::error_code ec, const std::string &url)
{
    if (ec) {
        std::cerr << "plain cpp-beast-async: GET " << url << ": " << ec.message() << "\n";
        std::exit(1);
    }
}

int main(int argc, char **argv)
{
    std::string mode = argc == 5 ? argv[3] : "", url = argc == 5 ? argv[1] : "";
    if ((mode != "keep-alive" && mode != "close") || url.rfind("http://", 0) != 0) {
        std::cerr << "usage: plain http://HOST:PORT/PATH COUNT keep-alive|close WARMUP_S\n";
        return 1;
    }
    long count = std::atol(argv[2]);
    double warmup = std::atof(argv[4]);
    bool keep = mode == "keep-alive";
    std::size_t slash = url.find('/', 7), colon = url.find(':', 7);
    std::string host = url.substr(7, colon - 7), port = url.substr(colon + 1, slash - colon - 1);
    std::string target = slash == std::string::npos ? "/" : url.substr(slash);

    net::io_context ioc;
    tcp::resolver resolver(ioc);
    beast::tcp_stream stream(ioc);
    tcp::resolver::results_type results;
    http::request<http::string_body> req{http::verb::get, target, 11};
    req.set(http::field::host, host + ":" + port);
    req.set(http::field::user_agent, BOOST_BEAST_VERSION_STRING);
    req.keep_alive(keep);
    beast::flat_buffer buffer;
    http::response<http::string_body> res;
    bool open = false;
    long left = 0;
    unsigned long long total = 0;
    clock_type::time_point until;
    std::function<void()> get;

    auto on_read = [&](beast::error_code ec, std::size_t) {
        check(ec, url);
        if (res.result_int() != 200) {
            std::cerr << "plain cpp-beast-async: GET " << url << ": status " << res.result_int() << "\n";
            std::exit(1);
        }
        total += res.body().size();
        if (!keep || !res.keep_alive()) {
            stream.socket().shutdown(tcp::socket::shutdown_both, ec);
            stream.close();
            buffer.clear();
            open = false;
        }
        if (--left > 0 || (left < 0 && clock_type::now() < until))
            get();
    };
    auto on_write = [&](beast::error_code ec, std::size_t) {
        check(ec, url);
        res = {};
        http::async_read(stream, buffer, res, on_read);
    };
    get = [&]() {
        if (open)
            return http::async_write(stream, req, on_write);
        stream.async_connect(results, [&](beast::error_code ec, tcp::endpoint) {
            check(ec, url);
            open = true;
            http::async_write(stream, req, on_write);
        });
    };

    resolver.async_resolve(host, port, [&](beast::error_code ec, tcp::resolver::results_type r) {
        check(ec, url);
        results = r;
    });
    ioc.run();
    if (warmup > 0) { // untimed GETs until the warm-up's time is up: a negative count
        left = -1;
        until = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(warmup));
        get();
        ioc.restart();
        ioc.run();
    }
    total = 0;
    left = count;
    auto start = clock_type::now();
    if (count > 0) {
        get();
        ioc.restart();
        ioc.run();
    }
    std::chrono::duration<double> seconds = clock_type::now() - start;
    std::printf("{\"requests\": %ld, \"bytes\": %llu, \"seconds\": %.6f}\n", count, total, seconds.count());
    return 0;
}
