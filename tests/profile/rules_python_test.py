"""Python drivers' layers where the client is C under Python: pycurl's wheel bundles its own
libcurl (and OpenSSL) under names with a hash, and py-spy names pycurl's C code by source file.
Their CPU is the library's, not the lab's driver code that called perform()."""

import pytest

from clientlab.profile.layers import layers
from clientlab.profile.rules import Rules

CURL = "libcurl-330bcbb6.so.4.8.0"
REQUEST = ("Loop.on_go (drivers/python/_lib/labdriver.py);Driver.run_all (drivers/python/_lib/labdriver.py);"
           f"PycurlDriver.request (drivers/python/pycurl/driver.py);do_curl_perform (easyperform.c);"
           f"curl_easy_perform ({CURL});curl_multi_perform ({CURL});multi_perform ({CURL})")
# py-spy's stacks of a large body read by pycurl (their shape as py-spy --native wrote them):
# libcurl handing each piece to pycurl's write callback, which copies it into the user's BytesIO
# in an unnamed libc function; libcurl parsing the response; a receive
BODY = (f"{REQUEST};Curl_client_write ({CURL});cw_out_write ({CURL});write_callback (easycb.c);"
        "util_write_callback (easycb.c);? (libc.so.6)")
PARSE = f"{REQUEST};Curl_http_readwrite_headers ({CURL});Curl_http_parse_header ({CURL})"
RECV = f"{REQUEST};Curl_sendrecv ({CURL});cf_socket_recv ({CURL});recv (libc.so.6)"
HARNESS = "Loop.on_go (drivers/python/_lib/labdriver.py);Driver.run_all (drivers/python/_lib/labdriver.py)"


@pytest.fixture
def rules():
    return Rules.load("python", "drivers/python/pycurl")


def test_libcurl_bundled_in_a_wheel_under_a_hashed_name_is_the_library(rules):
    assert rules.layer_of(PARSE) == "library"
    assert rules.layer_of(f"{REQUEST};Curl_ossl_recv ({CURL});SSL_read (libssl-8b66dd34.so.3)") == "tls"
    assert rules.layer_of(f"{REQUEST};inflate (libz-0fa4e9d2.so.1.3)") == "compression"


def test_a_body_copied_in_pycurls_write_callback_is_the_library_not_the_driver_that_called_perform(rules):
    assert rules.layer_of(BODY) == "library"
    assert rules.layer_of("PycurlDriver.request (drivers/python/pycurl/driver.py);do_curl_setopt (easyopt.c)") == "library"


def test_a_cell_whose_cpu_is_in_libcurl_under_python_is_counted_as_library(rules):
    spy = {BODY: 60, PARSE: 20, RECV: 10, HARNESS: 2}
    perf = {"python3 (process);tcp_recvmsg (kernel)": 10, f"python3 (process);multi_perform ({CURL})": 90}
    got = layers({"perf": perf, "py-spy": spy}, rules, cpu_s=1.0, requests=1000, overhead=None)
    library, harness = got.share_of("library"), got.share_of("harness")
    assert library is not None and harness is not None
    # the kernel's 10 % from perf; of the rest, py-spy's 80 of 82 CPU samples in libcurl and pycurl
    assert library.share == pytest.approx(0.9 * 80 / 82, abs=1e-4)   # shares are kept to 5 places
    assert harness.share == pytest.approx(0.9 * 2 / 82, abs=1e-4)


# py-spy's stacks of aiohttp on get-small (their shape as py-spy --native wrote them): the event
# loop the driver's run_all started, in its own code and in a task step of the C accelerator
LOOP = ("Loop.on_go (drivers/python/_lib/labdriver.py);AiohttpDriver.run_all (drivers/python/aiohttp/driver.py);"
        "Runner.run (<stdlib>/asyncio/runners.py);BaseEventLoop.run_until_complete (<stdlib>/asyncio/base_events.py);"
        "BaseEventLoop.run_forever (<stdlib>/asyncio/base_events.py);BaseEventLoop._run_once (<stdlib>/asyncio/base_events.py)")


def test_the_event_loop_an_asyncio_client_runs_on_is_the_library_not_the_driver_that_started_it():
    rules = Rules.load("python", "drivers/python/aiohttp")
    assert rules.layer_of(LOOP) == "library"
    assert rules.layer_of(f"{LOOP};Handle._run (<stdlib>/asyncio/events.py);task_step (_asynciomodule.c);"
                          "task_step_impl (_asynciomodule.c)") == "library"
    # the driver's own coroutine, resumed by that loop, is still the driver's
    assert rules.layer_of(f"{LOOP};Handle._run (<stdlib>/asyncio/events.py);task_step_impl (_asynciomodule.c);"
                          "AiohttpDriver._one_by_one (drivers/python/aiohttp/driver.py)") == "harness"


# py-spy's stacks of python-pycurl's profiled trials on get-small, as the store kept them: the
# helper's message loop before `go` (its line parsed) and after `done` (the report encoded and
# written), which py-spy samples until the lab's signal reaches it, beside the timed phase's own
ROOT = "<module> (drivers/python/pycurl/driver.py);main (drivers/python/_lib/labdriver.py);Loop.run (drivers/python/_lib/labdriver.py)"
GETS = f"{ROOT};Loop.on_go (drivers/python/_lib/labdriver.py);PycurlDriver.run_all (drivers/python/pycurl/driver.py);PycurlDriver._gets (drivers/python/pycurl/driver.py)"
BEFORE_GO = f"{ROOT};loads (<stdlib>/json/__init__.py)"
AFTER_DONE = (f"{ROOT};Loop.on_go (drivers/python/_lib/labdriver.py);Loop.send (drivers/python/_lib/labdriver.py);"
              "dumps (<stdlib>/json/__init__.py);encoder_listencode_list (_json.c)")
REPORT = f"{ROOT};Loop.on_go (drivers/python/_lib/labdriver.py);Report.responses (drivers/python/_lib/labdriver.py)"
PERFORM = f"{GETS};do_curl_perform (easyperform.c);curl_easy_perform ({CURL});multi_perform ({CURL})"


def test_samples_of_the_helpers_loop_before_go_and_after_done_are_left_out_of_the_timed_phase(rules):
    spy = {GETS: 7, PERFORM: 70, ROOT: 4, BEFORE_GO: 2, AFTER_DONE: 4, REPORT: 2}
    kept, left_out = rules.timed_phase(spy)
    assert kept == {GETS: 7, PERFORM: 70} and left_out == 12
    # each of them would be the harness's by self time
    assert {rules.layer_of(s) for s in (ROOT, BEFORE_GO, AFTER_DONE, REPORT)} == {"harness"}


def test_a_thread_the_driver_started_is_in_the_timed_phase_though_no_run_all_is_on_its_stack(rules):
    thread = f"_bootstrap (<stdlib>/threading.py);Thread.run (<stdlib>/threading.py);getaddrinfo ({CURL})"
    assert rules.timed_phase({thread: 3}) == ({thread: 3}, 0)


def test_a_language_without_a_phase_keeps_every_sample():
    rules = Rules.load("ruby", "drivers/ruby/net-http")
    assert rules.phase is None and rules.timed_phase({"a (x.rb);b (y.rb)": 5}) == ({"a (x.rb);b (y.rb)": 5}, 0)


def test_libcurls_sigaction_around_each_transfer_is_a_system_call_not_the_library(rules):
    # libcurl sets SIGPIPE aside around every transfer: perf found 10 % of python-pycurl's CPU in
    # rt_sigaction on get-small, in the kernel's share; py-spy's samples in its wrapper were counted
    # a second time, for libcurl, in the share py-spy splits
    assert rules.layer_of(f"{REQUEST};__libc_sigaction (libc.so.6)") == "kernel"
    assert rules.layer_of(f"{REQUEST};getenv (libc.so.6)") == "library"
