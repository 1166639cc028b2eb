// The plain loop of cpp-httplib (docs/driver-protocol.md §9): one httplib::Client for the
// server, Get(path) in a loop, each body whole in res->body, as the library's README shows it;
// keep-alive mode: set_keep_alive(true), as the driver does; close mode: the library's default.
// Usage: plain URL COUNT MODE WARMUP_S (MODE keep-alive or close).
#include <httplib.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

static std::size_t get(httplib::Client &cli, const std::string &path)
{
    auto res = cli.Get(path);
    if (!res) {
        std::cerr << "plain cpp-httplib: GET " << path << ": " << httplib::to_string(res.error()) << "\n";
        std::exit(1);
    }
    if (res->status != 200) {
        std::cerr << "plain cpp-httplib: GET " << path << ": status " << res->status << "\n";
        std::exit(1);
    }
    return res->body.size();
}

int main(int argc, char **argv)
{
    std::string mode = argc == 5 ? argv[3] : "";
    if (mode != "keep-alive" && mode != "close") {
        std::cerr << "usage: plain URL COUNT keep-alive|close WARMUP_S\n";
        return 1;
    }
    std::string url = argv[1];
    long count = std::atol(argv[2]);
    double warmup = std::atof(argv[4]);
    // httplib::Client takes the server ("http://host:port") and each Get a path
    std::size_t slash = url.find('/', url.find("://") + 3);
    std::string server = url.substr(0, slash), path = slash == std::string::npos ? "/" : url.substr(slash);

    httplib::Client cli(server);
    if (mode == "keep-alive")
        cli.set_keep_alive(true);

    using clock = std::chrono::steady_clock;
    for (auto until = clock::now() + std::chrono::duration<double>(warmup); clock::now() < until;)
        get(cli, path);
    unsigned long long total = 0;
    auto start = clock::now();
    for (long i = 0; i < count; i++)
        total += get(cli, path);
    std::chrono::duration<double> seconds = clock::now() - start;
    std::printf("{\"requests\": %ld, \"bytes\": %llu, \"seconds\": %.6f}\n", count, total, seconds.count());
    return 0;
}
