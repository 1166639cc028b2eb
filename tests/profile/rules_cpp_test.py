"""C++ drivers' layers: the header-only libraries live in the driver's own binary, so the rules
tell them from the lab's code by symbol."""

from clientlab.profile.model import LAYERS
from clientlab.profile.rules import Rules

BIN = "(drivers/cpp/beast/build/driver)"


def test_cpp_rules_load_and_name_known_layers():
    rules = Rules.load("cpp")
    assert rules.rules and all(r.layer in LAYERS for r in rules.rules)


def test_cpp_library_frames_in_the_driver_binary_or_a_shared_object_are_the_library():
    rules = Rules.load("cpp", "drivers/cpp/beast")
    read = f"void boost::beast::http::detail::read_some_op<x>::operator()(y) {BIN}"
    assert rules.layer_of(f"driver (process);main {BIN};lab_main {BIN};{read}") == "library"
    assert rules.layer_of(f"driver (process);lab_main {BIN};boost::asio::detail::socket_ops::recv {BIN}") == "library"
    assert rules.layer_of("driver (process);httplib::ClientImpl::send (libcpp-httplib.so.0.11.4)") == "library"
    assert rules.layer_of("driver (process);pplx::details::_Task_impl_base::_RunContinuation (libcpprest.so.2.10)") \
        == "library"
    assert rules.layer_of(f"driver (process);boost::asio::ssl::detail::engine::perform {BIN}") == "tls"


def test_cpp_standard_library_counts_for_its_caller_and_the_lab_code_is_the_harness():
    rules = Rules.load("cpp", "drivers/cpp/beast")
    assert rules.layer_of(f"driver (process);lab_add_response {BIN}") == "harness"
    grow = "std::vector<char, std::allocator<char> >::_M_realloc_insert (drivers/cpp/beast/build/driver)"
    assert rules.layer_of(f"driver (process);lab_main {BIN};{grow}") == "harness"
    assert rules.layer_of(f"driver (process);boost::beast::http::write {BIN};{grow}") == "library"
    assert rules.layer_of("driver (process);lab_main (x);operator new(unsigned long) (libstdc++.so.6.0.30)") == "memory"
