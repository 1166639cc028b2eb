// The plain loop of cpp-cpprest (docs/driver-protocol.md §9): one http_client for the URL,
// request(methods::GET).get() and extract_vector().get() in a loop, as cpprestsdk's tutorial
// does with its tasks; close mode: a "Connection: close" header on every request, as the driver
// sends it. Usage: plain URL COUNT MODE WARMUP_S (MODE keep-alive or close).
#include <cpprest/http_client.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

using namespace web::http;
using namespace web::http::client;

int main(int argc, char **argv)
{
    std::string mode = argc == 5 ? argv[3] : "";
    if (mode != "keep-alive" && mode != "close") {
        std::cerr << "usage: plain URL COUNT keep-alive|close WARMUP_S\n";
        return 1;
    }
    long count = std::atol(argv[2]);
    double warmup = std::atof(argv[4]);
    try {
        http_client client(argv[1]);
        auto get = [&]() -> std::size_t {
            http_request req(methods::GET);
            if (mode == "close")
                req.headers().add(header_names::connection, "close");
            http_response res = client.request(req).get();
            if (res.status_code() != status_codes::OK) {
                std::cerr << "plain cpp-cpprest: GET " << argv[1] << ": status " << res.status_code() << "\n";
                std::exit(1);
            }
            return res.extract_vector().get().size();
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
    } catch (const std::exception &e) {
        std::cerr << "plain cpp-cpprest: GET " << argv[1] << ": " << e.what() << "\n";
        return 1;
    }
    return 0;
}
