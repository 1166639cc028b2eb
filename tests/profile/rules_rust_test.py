"""Rust drivers' layers: every crate is compiled into the driver's binary, so the rules tell the
client library, tokio, TLS and the lab's code apart by symbol (frames as perf wrote them in
profiles of the Rust drivers, shortened to the frames that decide)."""

from __future__ import annotations

import shutil

import pytest

from clientlab.profile import folded as fold
from clientlab.profile.rules import Rules

HYPER = "(drivers/rust/target/release/rust-hyper)"
ISAHC = "(drivers/rust/target/release/rust-isahc)"
REQWEST = "(drivers/rust/target/release/rust-reqwest)"
WORKER = (f"tokio-rt-worker (process);clone3 (libc.so.6);start_thread (libc.so.6);"
          f"<std::sys::thread::unix::Thread>::new::thread_start {HYPER};"
          f"std::sys::backtrace::__rust_begin_short_backtrace {HYPER};"
          f"tokio::runtime::scheduler::multi_thread::worker::Context::run_task {HYPER};"
          f"tokio::runtime::task::harness::Harness<T,S>::poll {HYPER}")
DISPATCH = (f"<futures_util::future::future::Map<Fut,F> as core::future::future::Future>::poll {HYPER};"
            f"hyper::proto::h1::dispatch::Dispatcher<D,Bs,I,T>::poll_catch {HYPER}")


def test_a_library_function_compiled_into_the_drivers_binary_is_the_librarys():
    rules = Rules.load("rust", "drivers/rust/hyper")
    parse = f"hyper::proto::h1::io::Buffered<T,B>::parse {HYPER}"
    assert rules.layer_of(f"{WORKER};{DISPATCH};{parse}") == "library"
    # the standard library and futures' combinators count for the library function that called them
    drop = f"core::ptr::drop_in_place<hyper::proto::h1::conn::State> {HYPER}"
    assert rules.layer_of(f"{WORKER};{DISPATCH};{drop}") == "library"
    io = f"<hyper_util::rt::tokio::TokioIo<T> as hyper::rt::io::Read>::poll_read {REQWEST}"
    assert rules.layer_of(f"{WORKER};{io}") == "library"
    assert rules.layer_of(f"{WORKER};ureq::run::BodyHandler::do_read (x);std::io::default_read_to_end (x)") \
        == "library"


def test_a_trait_impl_is_its_types_crates_code_and_a_blanket_impl_its_traits():
    rules = Rules.load("rust", "drivers/rust/isahc")
    invoke = f"<&isahc::client::HttpClient as isahc::interceptor::context::Invoke>::invoke::{{{{closure}}}} {ISAHC}"
    blanket = f"<I as isahc::interceptor::obj::DynInterceptor>::dyn_intercept::{{{{closure}}}} {ISAHC}"
    block_on = f"futures_lite::future::block_on {ISAHC}"
    assert rules.layer_of(f"rust-isahc (process);{block_on};{invoke}") == "library"
    assert rules.layer_of(f"rust-isahc (process);{block_on};{blanket}") == "library"


def test_tokio_is_the_runtime_and_a_threads_name_places_no_sample():
    rules = Rules.load("rust", "drivers/rust/hyper")
    assert rules.layer_of(WORKER) == "runtime"
    write = (f"<tokio::net::tcp::stream::TcpStream as tokio::io::async_write::AsyncWrite>::poll_write_vectored {HYPER};"
             f"<&mio::net::tcp::stream::TcpStream as std::io::Write>::write_vectored {HYPER}")
    assert rules.layer_of(f"{WORKER};{DISPATCH};{write}") == "runtime"
    assert rules.layer_of(f"{WORKER};{DISPATCH};{write};__GI___writev (libc.so.6);tcp_sendmsg (kernel)") == "kernel"
    # a thread named for a library (reqwest's runtime thread) is no frame of its code
    assert rules.layer_of(f"reqwest-internal (process);std::thread::local::LocalKey<T>::with {REQWEST}") == "runtime"
    assert rules.layer_of("isahc-agent-3 (process);? (unknown)") == "unattributed"


def test_the_helper_and_the_drivers_own_crate_are_the_harness():
    rules = Rules.load("rust", "drivers/rust/hyper")
    run_all = f"<labdriver::parallel::Parallel<A> as labdriver::Driver>::run_all {HYPER}"
    request = f"<rust_hyper::Hyper as labdriver::parallel::AsyncDriver>::request::{{{{closure}}}} {HYPER}"
    assert rules.layer_of(f"rust-hyper (process);labdriver::main {HYPER};{run_all}") == "harness"
    # the driver's async request, polled by tokio for labdriver's loop
    block_on = f"tokio::runtime::park::CachedParkThread::block_on {HYPER}"
    assert rules.layer_of(f"rust-hyper (process);{run_all};{block_on};{request}") == "harness"
    # the helper's JSON written with the standard library: the harness's
    fmt = f"labdriver::report::Report::to_json {HYPER};core::fmt::write {HYPER}"
    assert rules.layer_of(f"rust-hyper (process);{fmt}") == "harness"
    # the library the driver calls is not
    collect = f"<http_body_util::combinators::collect::Collect<T> as core::future::future::Future>::poll {HYPER}"
    assert rules.layer_of(f"rust-hyper (process);{run_all};{block_on};{request};{collect}") == "library"


def test_tls_compression_and_memory_by_crate_and_the_plain_http_stream_enum_is_not_tls():
    rules = Rules.load("rust", "drivers/rust/reqwest")
    maybe = f"<hyper_rustls::stream::MaybeHttpsStream<T> as hyper::rt::io::Read>::poll_read {REQWEST}"
    read_head = f"hyper::proto::h1::conn::Conn<I,B,T>::poll_read_head {REQWEST}"
    assert rules.layer_of(f"{WORKER};{read_head};{maybe}") == "library"
    assert rules.layer_of(f"{WORKER};{read_head};{maybe};rustls::conn::ConnectionCommon<T>::read_tls {REQWEST}") == "tls"
    assert rules.layer_of(f"{WORKER};ring_core_0_17_14__chacha20_ctr32 {REQWEST}") == "tls"
    assert rules.layer_of(f"{WORKER};<flate2::gz::bufread::GzDecoder<R> as std::io::Read>::read {REQWEST}") \
        == "compression"
    assert rules.layer_of(f"{WORKER};{read_head};__rustc::__rdl_alloc {REQWEST}") == "memory"
    assert rules.layer_of(f"{WORKER};{read_head};alloc::raw_vec::finish_grow {REQWEST}") == "memory"


# symbols of rust-hyper's binary (nm) as a perf without a Rust demangler writes them
PERF_MANGLED = """\
rust-hyper 7/8
\t   4a1b2 _ZN5hyper2rt2io5Write19poll_write_vectored17hab1bff4b75c43747E+0x12 (/w/drivers/rust/target/release/rust-hyper)
\t   4a1b3 _ZN99_$LT$hyper_util..client..legacy..pool..Connecting$LT$T$C$K$GT$$u20$as$u20$core..ops..drop..Drop$GT$4drop17he1977c67eb711822E (/w/drivers/rust/target/release/rust-hyper)
\t   4a1b4 _RINvMs5_NtNtCsjrHSEGnQ3l9_3std2io5errorNtB6_5Error3newReEBa_ (/w/drivers/rust/target/release/rust-hyper)
"""


@pytest.mark.skipif(shutil.which("c++filt") is None, reason="c++filt (binutils) is not installed")
def test_mangled_rust_symbols_are_folded_as_perf_demangles_them_and_placed():
    [(stack, n)] = fold.parse_perf_script(PERF_MANGLED).items()
    frames = [f.rsplit(" (", 1)[0] for f in fold.frames_of(stack)]
    assert frames == ["rust-hyper", "<std::io::error::Error>::new::<&str>",
                      "<hyper_util::client::legacy::pool::Connecting<T,K> as core::ops::drop::Drop>::drop",
                      "hyper::rt::io::Write::poll_write_vectored"] and n == 1
    assert Rules.load("rust", "drivers/rust/hyper").layer_of(stack) == "library"


def test_a_demangled_name_keeps_no_hash_nor_crate_disambiguator():
    assert fold.plain_rust(["hyper::rt::io::Write::is_write_vectored::hed3e8570024a4cb8",
                            "<std[e28293b1aa0f68bd]::io::error::Error>::new::<&str>", "tcp_sendmsg"]) == {
        "hyper::rt::io::Write::is_write_vectored::hed3e8570024a4cb8": "hyper::rt::io::Write::is_write_vectored",
        "<std[e28293b1aa0f68bd]::io::error::Error>::new::<&str>": "<std::io::error::Error>::new::<&str>"}
