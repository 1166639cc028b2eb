// The plain loop of cpp-beast (docs/driver-protocol.md §9), after Beast's http_client_sync
// example: resolve, connect a beast::tcp_stream, then http::write of one request<string_body>
// and http::read into a response<string_body> per GET; keep-alive mode on the one connection,
// close mode a connection per GET (keep_alive(false), then the socket shut down), as the driver
// does. Usage: plain URL COUNT MODE WARMUP_S (MODE keep-alive or close; an http:// URL).
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/version.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

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

    try {
        net::io_context ioc;
        tcp::resolver resolver(ioc);
        beast::tcp_stream stream(ioc);
        auto const results = resolver.resolve(host, port);
        http::request<http::string_body> req{http::verb::get, target, 11};
        req.set(http::field::host, host + ":" + port);
        req.set(http::field::user_agent, BOOST_BEAST_VERSION_STRING);
        req.keep_alive(keep);
        beast::flat_buffer buffer;
        bool open = false;

        auto get = [&]() -> std::size_t {
            if (!open) {
                stream.connect(results);
                open = true;
            }
            http::write(stream, req);
            http::response<http::string_body> res;
            http::read(stream, buffer, res);
            if (res.result_int() != 200) {
                std::cerr << "plain cpp-beast: GET " << url << ": status " << res.result_int() << "\n";
                std::exit(1);
            }
            if (!keep || !res.keep_alive()) {
                beast::error_code ec;
                stream.socket().shutdown(tcp::socket::shutdown_both, ec);
                stream.close();
                buffer.clear();
                open = false;
            }
            return res.body().size();
        };

        using clock = std::chrono::steady_clock;
        for (auto until = clock::now() + std::chrono::duration<double>(warmup); clock::now() < until;)
            get();
        unsigned long long total = 0;
        auto start = clock::now();
        for (long i = 0; i < count; i++)
            total += get();
        std::chrono::duration<double> seconds = clock::now() - start;
        std::printf("{\"requests\": %ld, \"bytes\": %llu, \"seconds\": %.6f}\n", count, total, seconds.count());
    } catch (std::exception const &e) {
        std::cerr << "plain cpp-beast: GET " << url << ": " << e.what() << "\n";
        return 1;
    }
    return 0;
}
