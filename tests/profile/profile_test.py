"""Folding, layer rules, the differential and the known causes, on stacks written out here."""

from __future__ import annotations

import json

import pytest

from clientlab.profile import folded as fold
from clientlab.profile.causes import cause_of
from clientlab.profile.differential import Path, Weighted, combined, paths
from clientlab.profile.layers import layers, perf_side
from clientlab.profile.model import LAYERS
from clientlab.profile.rules import RULES_DIR, Rules, _raw
from clientlab.profile.samplers import Jfr

PERF_SCRIPT = """\
python3 4242/4242
\t          16e0ba __memset_avx512_unaligned_erms+0x1a (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t            66ca zlib_compress (/usr/lib/python3.11/lib-dynload/zlib.cpython-311-x86_64-linux-gnu.so)
\t          101b56 _PyEval_EvalFrameDefault (/usr/lib/libpython3.11.so.1.0)

python3 4242/4242
\t        ffffffff81e0 tcp_sendmsg ([kernel.kallsyms])
\t        ffffffff81e1 __sys_sendto ([kernel.kallsyms])
\t           1234 __libc_send (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t          101b56 _PyEval_EvalFrameDefault (/usr/lib/libpython3.11.so.1.0)

python3 4242/4243
\t           10b19 [unknown] (/usr/lib/x86_64-linux-gnu/libz.so.1.2.13)
\t          101b56 _PyEval_EvalFrameDefault (/usr/lib/libpython3.11.so.1.0)
"""


def test_perf_script_folds_root_first_with_the_process_as_root():
    f = fold.parse_perf_script(PERF_SCRIPT)
    assert f == {
        "python3 (process);_PyEval_EvalFrameDefault (libpython3.11.so.1.0);zlib_compress "
        "(zlib.cpython-311-x86_64-linux-gnu.so);__memset_avx512_unaligned_erms (libc.so.6)": 1,
        "python3 (process);_PyEval_EvalFrameDefault (libpython3.11.so.1.0);__libc_send (libc.so.6);"
        "__sys_sendto (kernel);tcp_sendmsg (kernel)": 1,
        "python3 (process);_PyEval_EvalFrameDefault (libpython3.11.so.1.0);? (libz.so.1.2.13)": 1,
    }


def test_py_spy_frames_lose_their_line_numbers_and_long_paths():
    text = ("<module> (/work/x/.venv/lib/python3.11/site-packages/requests/api.py:12);"
            "get (/root/.pyenv/versions/3.11.7/lib/python3.11/http/client.py:900);"
            "0x7f15 (libcrypto.so.3) 3\n"
            "<module> (/work/x/.venv/lib/python3.11/site-packages/requests/api.py:14);"
            "get (/root/.pyenv/versions/3.11.7/lib/python3.11/http/client.py:901);"
            "0x7f16 (libcrypto.so.3) 2\n")
    assert fold.parse_pyspy(text) == {
        "<module> (requests/api.py);get (<stdlib>/http/client.py);? (libcrypto.so.3)": 5}


def test_folded_text_round_trips():
    f = {"a (m);b (m)": 3, "a (m)": 1}
    assert fold.from_text(fold.to_text(f)) == f


@pytest.mark.parametrize("language", ["python", "c", "cli", "go", "rust", "node", "java", "kotlin", "ruby", "perl", "php"])
def test_every_languages_rules_load_and_name_known_layers(language):
    rules = Rules.load(language)
    assert rules.rules and all(r.layer in LAYERS for r in rules.rules)


def test_a_rule_naming_an_unknown_layer_is_refused(tmp_path, monkeypatch):
    (tmp_path / "klingon.toml").write_text('[[rule]]\nlayer = "warp"\nmodule = "x"\n')
    (tmp_path / "common.toml").write_text((RULES_DIR / "common.toml").read_text())
    monkeypatch.setattr("clientlab.profile.rules.RULES_DIR", tmp_path)
    _raw.cache_clear()
    try:
        with pytest.raises(ValueError, match="unknown layer 'warp'"):
            Rules.load("klingon")
    finally:
        _raw.cache_clear()


def test_kotlin_reads_its_own_rules_then_javas_then_the_common_ones():
    rules = Rules.load("kotlin", "drivers/kotlin/ktor-cio")
    jit = "(jit)"
    assert rules.layer_of(f"java (process);io.ktor.client.engine.cio.Endpoint.execute {jit}") == "library"
    assert rules.layer_of(f"java (process);kotlinx.io.Buffer.write {jit}") == "library"
    assert rules.layer_of(f"java (process);kotlinx.coroutines.EventLoopImplBase.processNextEvent {jit}") == "runtime"
    # Kotlin's standard library counts for the code that called it, else for the runtime
    assert rules.layer_of(f"java (process);io.ktor.http.HeadersImpl.get {jit};kotlin.text.StringsKt.equals {jit}") \
        == "library"
    assert rules.layer_of(f"java (process);kotlin.collections.ArraysKt.copyOf {jit}") == "runtime"
    # Java's rules still hold: OkHttp under the OkHttp engine, the JDK's TLS, the lab's own code, the collector
    assert rules.layer_of(f"java (process);okhttp3.internal.http.RealInterceptorChain.proceed {jit}") == "library"
    assert rules.layer_of(f"java (process);sun.security.ssl.SSLEngineImpl.wrap {jit}") == "tls"
    assert rules.layer_of(f"java (process);clientlab.ktor.KtorDriver.record {jit}") == "harness"
    assert rules.layer_of("java (process);G1ParScanThreadState::trim_queue (libjvm.so)") == "runtime"
    assert rules.layer_of("java (process);x (nothing-known);write (libc.so.6)") == "kernel"


def test_each_sample_goes_to_the_layer_of_its_leaf_or_of_the_code_that_called_the_runtime():
    rules = Rules.load("python", "drivers/python/requests")
    harness = "main (drivers/python/_lib/labdriver.py)"
    lib = "send (requests/sessions.py)"
    assert rules.layer_of(f"{harness};{lib};PyDict_GetItem (libpython3.11.so.1.0)") == "library"
    assert rules.layer_of(f"{harness};{lib};? (libssl.so.3)") == "tls"
    assert rules.layer_of(f"{harness};{lib};deflate (libz.so.1.2.13)") == "compression"
    assert rules.layer_of(f"{harness};{lib};_PyObject_Malloc (libpython3.11.so.1.0)") == "memory"
    assert rules.layer_of(f"{harness};{lib};gc_collect_main (libpython3.11.so.1.0);visit (x.c)") == "runtime"
    assert rules.layer_of(f"{harness};report (drivers/python/_lib/labdriver.py)") == "harness"
    assert rules.layer_of(f"{harness};{lib};send (libc.so.6)") == "kernel"
    assert rules.layer_of(f"{lib};asm_exc_page_fault (kernel);clear_page_erms (kernel)") == "memory"
    assert rules.layer_of("x (nothing-known)") == "unattributed"


def test_layer_attribution_adds_up_to_the_whole():
    rules = Rules.load("python", "drivers/python/requests")
    perf = fold.parse_perf_script(PERF_SCRIPT)
    spy = {"main (drivers/python/_lib/labdriver.py);send (requests/sessions.py)": 7,
           "main (drivers/python/_lib/labdriver.py);loop (drivers/python/_lib/labdriver.py)": 2,
           "main (drivers/python/_lib/labdriver.py);send (requests/sessions.py);recv (libc.so.6)": 5,
           "main (drivers/python/_lib/labdriver.py);zz (unknown-thing)": 1}
    for profiles in ({"perf": perf}, {"py-spy": spy}, {"perf": perf, "py-spy": spy}):
        got = layers(profiles, rules, cpu_s=0.3, requests=1000, overhead=0.1)
        assert [s.layer for s in got.shares] == list(LAYERS)
        assert sum(s.share for s in got.shares) == pytest.approx(1.0, abs=1e-4)
        assert sum(s.us_per_request for s in got.shares) == pytest.approx(300.0, abs=0.05)
    both = layers({"perf": perf, "py-spy": spy}, rules, cpu_s=0.3, requests=1000, overhead=None)
    # the kernel from perf (1 of 3 samples); py-spy's sample in recv is not counted twice
    assert both.share_of("kernel").share == pytest.approx(1 / 3, abs=1e-3)
    # a frame no rule knows counts for its caller: the harness has 3 of py-spy's 10 user samples
    assert both.share_of("harness").share == pytest.approx(2 / 3 * 3 / 10, abs=1e-3)


def _weighted(stacks: dict[str, int], us: float) -> Weighted:
    return Weighted(stacks, us)


def test_the_differential_names_the_deepest_frame_that_holds_the_extra_cpu():
    rules = Rules.load("python", "drivers/python/x")
    base = "main (drivers/python/_lib/labdriver.py);request (x/client.py)"
    fast = _weighted({f"{base};parse (x/client.py)": 50, f"{base};write (x/client.py)": 50}, 1.0)
    slow = _weighted({f"{base};parse (x/client.py)": 50, f"{base};write (x/client.py)": 50,
                      f"{base};prepare (x/client.py);planted_slow_path (x/client.py)": 400}, 1.0)
    found = paths(slow, fast, rules)
    assert found[0].frames[-1] == "planted_slow_path (x/client.py)"
    assert found[0].us == pytest.approx(400.0)
    assert "prepare (x/client.py)" in found[0].frames   # its caller, part of its path
    assert all(p.frames[-1] not in ("parse (x/client.py)", "write (x/client.py)") for p in found)


def test_a_faster_cell_has_no_paths():
    rules = Rules.load("python")
    w = _weighted({"a (x/y.py)": 10}, 1.0)
    assert paths(w, _weighted({"a (x/y.py)": 20}, 1.0), rules) == []


@pytest.mark.parametrize(("frame", "cause"), [
    ("get_environ_proxies (requests/utils.py)", "trust-env-per-request"),
    ("CookieJar.add_cookie_header (<stdlib>/http/cookiejar.py)", "cookie-jar-per-request"),
    ("RedirectableRequest._performRequest (follow-redirects/index.js)", "redirect-layer"),
    ("SSL_CTX_load_verify_locations (libssl.so.3)", "tls-context-per-request"),
    ("CaseInsensitiveDict.__init__ (requests/structures.py)", "header-normalisation"),
    ("planted_slow_path (driver)", "planted-slow-path"),
    ("HTTP::Headers::_header (perlsub)", "header-normalisation"),
    ("readline (gems/excon-0.88.0/lib/excon/socket.rb)", "head-read-a-byte-a-call"),
    ("Net::HTTP::Methods::can_read (perlsub)", "select-before-each-read"),
    ("current_async_library (httpcore/_synchronization.py)", "import-per-request"),
    ("JS:setProxy file:///d/node_modules/axios/lib/adapters/http.js (jit)", "env-proxy-per-request"),
    ("JS:getProxyForUrl file:///d/node_modules/proxy-from-env/index.js (jit)", "env-proxy-per-request"),
    ("JS:shouldBypassProxy file:///d/node_modules/axios/lib/helpers/shouldBypassProxy.js (jit)",
     "env-proxy-per-request"),
])
def test_known_paths_are_named_by_their_cause(frame, cause):
    c = cause_of(Path(("main (x)", frame), 10.0, 10.0, 0.0, "library"))
    assert c is not None and c.id == cause


def test_a_php_callback_is_a_cause_only_where_libcurl_calls_it():
    under_curl = Path(("curl_easy_perform (libcurl.so.4.8.0)", "curl_multi_perform (libcurl.so.4.8.0)",
                       "zend_call_function (php8.2)"), 20.0, 20.0, 0.0, "runtime")
    elsewhere = Path(("zif_usort (php8.2)", "zend_call_function (php8.2)"), 20.0, 20.0, 0.0, "runtime")
    assert cause_of(under_curl).id == "callback-per-header-line"
    assert cause_of(elsewhere) is None


def test_an_unknown_path_has_no_cause():
    assert cause_of(Path(("main (x)", "parse (x/client.py)"), 10.0, 10.0, 0.0, "library")) is None


def test_a_proxy_is_a_cause_only_in_axios_and_proxy_from_env():
    # node's HTTP parser calls back into JavaScript through frames named Parser::Proxy: no look-up
    parser = "node::http_parser::Parser::Proxy<int (node::http_parser::Parser::*)(), " \
             "&node::http_parser::Parser::on_headers_complete>::Raw (node)"
    elsewhere = "JS:setProxy file:///d/node_modules/other-client/lib/agent.js (jit)"
    for frame in (parser, elsewhere):
        assert cause_of(Path(("main (x)", frame), 10.0, 10.0, 0.0, "library")) is None


def test_a_jit_functions_frames_fold_to_one_whatever_tier_compiled_it():
    script = ("node 7/7\n\t 1 JS:*'Readable.read node:internal/streams/readable:656:35 (/tmp/perf-7.map)\n\n"
              "node 7/7\n\t 2 JS:~Readable.read node:internal/streams/readable:656:35 (/tmp/perf-7.map)\n")
    assert fold.parse_perf_script(script) == {"node (process);JS:Readable.read node:internal/streams/readable (jit)": 2}


def test_gc_pressure_is_found_over_the_whole_profile_not_in_one_path():
    from clientlab.profile.causes import profile_causes

    heavy = _weighted({"main (x);gc_collect_main (gcmodule.c)": 30, "main (x);send (x/c.py)": 70}, 1.0)
    light = _weighted({"main (x);gc_collect_main (gcmodule.c)": 3, "main (x);send (x/c.py)": 97}, 1.0)
    assert [c.id for c in profile_causes(heavy)] == ["gc-pressure"]
    assert profile_causes(light) == []
    assert cause_of(Path(("main (x)", "gc_collect_main (gcmodule.c)"), 30.0, 30.0, 0.0, "runtime")) is None


def test_rbspy_frames_are_named_by_method_and_shortened_file():
    text = ("<main> - /work/x/drivers/ruby/net-http/driver.rb:3;request - /usr/lib/ruby/3.1.0/net/http.rb:1500;"
            "write - (unknown):0 4\n"
            "<main> - /work/x/drivers/ruby/net-http/driver.rb:3;request - /usr/lib/ruby/3.1.0/net/http.rb:1502;"
            "write - (unknown):0 1\n")
    assert fold.parse_rbspy(text) == {
        "<main> (driver.rb);request (<stdlib>/net/http.rb);write (ruby:(unknown))": 5}


def test_nytprof_call_paths_become_stacks_in_microseconds():
    from clientlab.paths import ROOT

    text = (f"LabDriver::_run;main::__ANON__[{ROOT}/drivers/perl/lwp/driver.pl:62];"
            "LWP::UserAgent::request;HTTP::Message::__ANON__[/usr/share/perl5/HTTP/Message.pm:12] 12345\n"
            "LabDriver::_run 5\n")
    assert fold.parse_nytprofcalls(text) == {
        "LabDriver::_run (perlsub);main::__ANON__ (drivers/perl/lwp/driver.pl);LWP::UserAgent::request (perlsub);"
        "HTTP::Message::__ANON__ (perlsub)": 1234}


def test_excimer_stacks_keep_each_functions_file():
    text = "(main) (/x/drivers/php/curl/driver.php);CurlDriver::run (/x/drivers/php/curl/driver.php);curl_exec (php) 7\n"
    assert fold.parse_excimer(text) == {"(main) (driver.php);CurlDriver::run (driver.php);curl_exec (php)": 7}


def test_jfr_samples_fold_root_first_with_their_inlined_frames():
    doc = {"recording": {"events": [{"type": "jdk.ExecutionSample", "values": {"stackTrace": {"frames": [
        {"method": {"type": {"name": "java.lang.String"}, "name": "indexOf"}, "type": "Inlined"},
        {"method": {"type": {"name": "jdk/internal/net/http/Http1Response"}, "name": "readBody"}, "type": "JIT compiled"},
        {"method": {"type": {"name": "clientlab.lab.Main"}, "name": "main"}, "type": "Interpreted"}]}}}] * 2}}
    import json
    assert fold.parse_jfr_json(json.dumps(doc)) == {
        "clientlab.lab.Main.main (java);jdk.internal.net.http.Http1Response.readBody (java);java.lang.String.indexOf (java)": 2}


def test_jfr_keeps_no_sample_taken_after_done_was_read():
    jfr = Jfr()
    try:
        jfr.window = (1_000.0, 0.0)
        jfr.halt(done_at=1_010.0)
        assert jfr.window == (1_000.0, 1_010.0)

        def sample(at: str, method: str) -> dict:
            frame = {"method": {"name": method, "type": {"name": "lab/Driver"}}}
            return {"values": {"startTime": at, "stackTrace": {"frames": [frame]}}}

        doc = {"recording": {"events": [sample("1970-01-01T00:16:45Z", "runAll"),
                                        sample("1970-01-01T00:16:51Z", "writeReport")]}}
        kept = fold.parse_jfr_json(json.dumps(doc), jfr.window)
        assert list(kept) == ["lab.Driver.runAll (java)"], kept
    finally:
        jfr.close()


def test_beside_a_profiler_of_the_languages_frames_perf_names_what_it_places_firmly():
    rules = Rules.load("ruby", "drivers/ruby/net-http")
    perf = {"ruby (process);vm_exec_core (libruby.so.3.1);? (libssl.so.3)": 20,
            "ruby (process);vm_exec_core (libruby.so.3.1);tcp_sendmsg (kernel)": 30,
            "ruby (process);gc_marks (libruby.so.3.1)": 10,
            # the interpreter running Ruby code: rbspy says whose
            "ruby (process);vm_exec_core (libruby.so.3.1)": 40}
    spy = {"<main> (drivers/ruby/_lib/labdriver.rb);request (<stdlib>/net/http.rb)": 30,
           "<main> (drivers/ruby/_lib/labdriver.rb);report (drivers/ruby/_lib/labdriver.rb)": 10,
           # waiting in a system call: the kernel's share is perf's
           "<main> (drivers/ruby/_lib/labdriver.rb);request (<stdlib>/net/http.rb);read (libc.so.6)": 50}
    got = layers({"perf": perf, "rbspy": spy}, rules, cpu_s=1.0, requests=1000, overhead=None)
    assert got.profiler == "perf+rbspy"
    assert sum(s.share for s in got.shares) == pytest.approx(1.0, abs=1e-4)
    assert got.share_of("tls").share == pytest.approx(0.2)
    assert got.share_of("kernel").share == pytest.approx(0.3)
    assert got.share_of("runtime").share == pytest.approx(0.1)      # the collector, from perf
    # the interpreter's 40 % split as rbspy saw the Ruby code: 3 to the library, 1 to the harness
    assert got.share_of("library").share == pytest.approx(0.3)
    assert got.share_of("harness").share == pytest.approx(0.1)


def test_a_path_only_perf_saw_is_named_beside_a_profiler_of_the_languages_frames():
    # JFR's samples miss a busy JIT-compiled method; perf names it from the JVM's perf map
    rules = Rules.load("java", "tests/testdrivers/planted-java")
    jfr = {"clientlab.lab.Main.main (java);jdk.internal.net.http.HttpClientImpl.send (java)": 50}
    fast_perf = {"java (process);? (libjvm.so)": 50, "java (process);tcp_sendmsg (kernel)": 50}
    slow_perf = {**fast_perf, "java (process);clientlab.planted.PlantedDriver.plantedSlowPath (jit)": 300}

    def whole(perf: dict[str, int], cpu_us: float) -> Weighted:
        side = perf_side("jfr", perf, rules)
        own = Weighted(jfr, cpu_us * (1 - fold.total(side) / fold.total(perf)) / fold.total(jfr))
        return combined(own, side, cpu_us / fold.total(perf))

    found = paths(whole(slow_perf, 400.0), whole(fast_perf, 100.0), rules)
    assert found[0].frames[-1] == "clientlab.planted.PlantedDriver.plantedSlowPath (jit)"
    assert found[0].us == pytest.approx(300.0, rel=0.01)
    assert cause_of(found[0]).id == "planted-slow-path"


def test_a_tracers_own_code_is_no_path_of_the_client():
    # NYTProf's C code costs more the more subs a client calls: the profile's cost, not the client's
    rules = Rules.load("perl", "drivers/perl/lwp")
    own = Weighted({"LabDriver::main (perlsub);LWP::UserAgent::request (perlsub)": 10}, 1.0)
    perf = {"perl (process);Perl_runops_standard (perl);? (NYTProf.so)": 200,
            "perl (process);tcp_sendmsg (kernel)": 10}
    got = combined(own, perf_side("nytprof", perf, rules), 1.0)
    assert sum(n for stack, n in got.folded.items() if "NYTProf.so" in stack) == 0
    assert got.us_per_request == pytest.approx(20.0)


def test_a_tracers_reads_of_the_cpu_clock_are_its_cost_not_the_kernels():
    # NYTProf times subs on the thread's CPU clock, a system call a read: the profiler's cost
    # (runtime, as its C code), while the client's own system calls stay the kernel's
    rules = Rules.load("perl", "drivers/perl/hijk")
    nytprof = "perl (process);Perl_runops_standard (perl);? (NYTProf.so)"
    clock = (f"{nytprof};__vdso_clock_gettime (vdso);entry_SYSCALL_64_after_hwframe (kernel);do_syscall_64 (kernel);"
             "__x64_sys_clock_gettime (kernel);posix_cpu_clock_get (kernel);task_sched_runtime (kernel)")
    write = f"{nytprof};__libc_write (libc.so.6);ksys_write (kernel);tcp_sendmsg (kernel)"
    assert rules.placed(clock) == ("runtime", True)
    assert rules.layer_of(write) == "kernel"


def test_an_unnamed_frame_is_named_by_the_library_function_above_it():
    # py-spy's native stacks start at an unnamed libc frame (the thread's start) and end in one
    # where a body is copied (libc's memmove, stripped): the path is the function that copied it
    rules = Rules.load("python", "drivers/python/requests")
    base = "? (libc.so.6);main (drivers/python/_lib/labdriver.py);Session.send (requests/sessions.py)"
    fast = _weighted({f"{base};HTTPAdapter.send (requests/adapters.py)": 100}, 1.0)
    slow = _weighted({f"{base};HTTPAdapter.send (requests/adapters.py)": 100,
                      f"{base};Response.content (requests/models.py);? (libc.so.6)": 300}, 1.0)
    found = paths(slow, fast, rules)
    assert found[0].frames[-1] == "Response.content (requests/models.py)"
    assert found[0].us == pytest.approx(300.0)
    assert found[0].frames[:-1] == ("main (drivers/python/_lib/labdriver.py)", "Session.send (requests/sessions.py)")
    assert all(not p.frames[-1].startswith("? ") for p in found)


def test_a_paths_callers_pass_over_the_interpreters_call_machinery():
    rules = Rules.load("python", "drivers/python/requests")
    base = "main (drivers/python/_lib/labdriver.py);HTTPResponse.read (<stdlib>/http/client.py)"
    recv = ("SocketIO.readinto (<stdlib>/socket.py);_PyObject_VectorcallTstate (inlined);"
            "method_vectorcall_VARARGS_KEYWORDS (libpython3.11.so.1.0);sock_recv_into (_socket.cpython-311-x86_64-linux-gnu.so)")
    parse = f"{base};parse_headers (<stdlib>/http/client.py)"
    found = paths(_weighted({f"{base};{recv}": 300, parse: 100}, 1.0), _weighted({f"{base};{recv}": 100, parse: 100}, 1.0),
                  rules)
    assert found[0].frames == ("HTTPResponse.read (<stdlib>/http/client.py)", "SocketIO.readinto (<stdlib>/socket.py)",
                               "sock_recv_into (_socket.cpython-311-x86_64-linux-gnu.so)")


def test_a_path_whose_extra_is_spread_over_small_allocator_calls_is_said_to_sit_in_memory():
    rules = Rules.load("python", "drivers/python/x")
    base = "main (drivers/python/_lib/labdriver.py);read (x/client.py)"
    memory = ("malloc", "free", "_int_malloc", "_int_free", "realloc", "calloc", "sysmalloc", "malloc_consolidate")
    # each allocator call under the 5 % of the gap a path needs (another path makes most of it)
    write = "main (drivers/python/_lib/labdriver.py);write (x/client.py)"
    slow = _weighted({f"{base};{m} (libc.so.6)": 15 for m in memory} | {base: 10, write: 400}, 1.0)
    found = paths(slow, _weighted({base: 10}, 1.0), rules)
    assert [(p.frames[-1], p.layer, p.held_in) for p in found] == [
        ("write (x/client.py)", "library", "library"), ("read (x/client.py)", "library", "memory")]
    assert found[1].us == pytest.approx(120.0)


def test_a_python_thread_blocked_on_a_lock_is_no_cpu_of_the_library():
    # py-spy stops the process and samples every thread, the idle ones too; perf gives the kernel
    rules = Rules.load("python", "drivers/python/niquests")
    waiting = ("idle_conn_watch_task (urllib3/connectionpool.py);Event.wait (<stdlib>/threading.py);"
               "Condition.wait (<stdlib>/threading.py);lock_PyThread_acquire_lock (libpython3.11.so.1.0);"
               "PyThread_acquire_lock_timed (libpython3.11.so.1.0);? (libc.so.6);? (libc.so.6)")
    assert rules.layer_of(waiting) == "kernel"
    assert rules.layer_of("Session.send (niquests/sessions.py);? (libc.so.6)") == "library"


def test_a_go_allocation_is_named_by_the_library_function_that_allocated():
    # under perf a Go allocation is runtime.newobject → mallocgc → its size class's path, every
    # goroutine's root runtime.goexit: neither says whose code allocated
    rules = Rules.load("go", "drivers/go/x")
    root = "runtime.goexit.abi0 (drivers/go/x/build/driver);net/http.(*persistConn).readLoop (drivers/go/x/build/driver)"
    read = f"{root};net/http.ReadResponse (drivers/go/x/build/driver)"
    alloc = ("runtime.newobject (drivers/go/x/build/driver);runtime.mallocgc (drivers/go/x/build/driver);"
             "runtime.mallocgcSmallScanNoHeader (drivers/go/x/build/driver)")
    write = "runtime.goexit.abi0 (drivers/go/x/build/driver);net/http.(*persistConn).writeLoop (drivers/go/x/build/driver)"
    fast = _weighted({read: 100, write: 300}, 1.0)
    slow = _weighted({read: 100, write: 300, f"{read};{alloc}": 300}, 1.0)
    found = paths(slow, fast, rules)
    assert [(p.frames, p.held_in) for p in found] == [
        (("net/http.(*persistConn).readLoop (drivers/go/x/build/driver)", "net/http.ReadResponse (drivers/go/x/build/driver)"),
         "memory")]
    assert found[0].us == pytest.approx(300.0)


def test_an_anonymous_javascript_function_is_named_by_the_function_that_called_it():
    # V8's perf map names an anonymous function by its file alone: every closure of undici's
    # bundle would fold into one frame with no name to look up
    rules = Rules.load("node", "drivers/node/fetch")
    base = "JS:processTicksAndRejections node:internal/process/task_queues (jit);JS:onHeadersComplete node:internal/deps/undici/undici (jit)"
    write = "JS:processTicksAndRejections node:internal/process/task_queues (jit);JS:writeH1 node:internal/deps/undici/undici (jit)"
    fast = _weighted({base: 100, write: 300}, 1.0)
    slow = _weighted({base: 100, write: 300, f"{base};JS: node:internal/deps/undici/undici (jit)": 300}, 1.0)
    found = paths(slow, fast, rules)
    assert found[0].frames[-1] == "JS:onHeadersComplete node:internal/deps/undici/undici (jit)"
    assert found[0].us == pytest.approx(300.0)
    assert all(not p.frames[-1].startswith("JS: ") for p in found)


def test_a_path_in_the_kernel_is_named_by_the_user_code_that_entered_it():
    # a context switch under a thread pool's wait: the kernel's frames say only that it switched
    rules = Rules.load("cpp", "drivers/cpp/x")
    wait = ("start_thread (libc.so.6);boost::asio::detail::scheduler::run (libcpprest.so.2.10);"
            "boost::asio::detail::scheduler::do_run_one (libcpprest.so.2.10);__futex_abstimed_wait_common (libc.so.6);"
            "entry_SYSCALL_64_after_hwframe (kernel);do_syscall_64 (kernel);__x64_sys_futex (kernel);"
            "schedule (kernel);__schedule (kernel);finish_task_switch.isra.0 (kernel)")
    work = "start_thread (libc.so.6);boost::asio::detail::scheduler::run (libcpprest.so.2.10);web::http::parse (libcpprest.so.2.10)"
    found = paths(_weighted({work: 100, wait: 300}, 1.0), _weighted({work: 100}, 1.0), rules)
    assert found[0].frames == ("boost::asio::detail::scheduler::run (libcpprest.so.2.10)",
                               "boost::asio::detail::scheduler::do_run_one (libcpprest.so.2.10)",
                               "finish_task_switch.isra.0 (kernel)")
    assert found[0].us == pytest.approx(300.0)


def test_profiled_trials_go_on_until_pyspy_holds_enough_samples_of_cpu_within_the_trial_cap():
    from clientlab.profile.profiled import more_trials, own_samples

    rules = Rules.load("python", "drivers/python/pycurl")
    gets = "Loop.on_go (drivers/python/_lib/labdriver.py);PycurlDriver._gets (drivers/python/pycurl/driver.py)"
    # py-spy's wall-time samples, nearly all of them the driver waiting in send(): 4 stand for CPU
    profiles = {"perf": {"python3 (process);tcp_sendmsg (kernel)": 900},
                "py-spy": {gets: 4, f"{gets};send (libc.so.6)": 396}}
    assert own_samples(profiles, rules) == 4 and own_samples({"perf": profiles["perf"]}, rules) is None
    assert more_trials([0.5] * 4, 4, 1.5, 20, 200)             # 2 s sampled, 4 samples of CPU: on
    assert not more_trials([0.5] * 4, 250, 1.5, 20, 200)       # enough of both
    assert not more_trials([0.5] * 4, None, 1.5, 20, 200)      # perf alone: its samples are CPU
    assert more_trials([0.5], 250, 1.5, 20, 200)               # not yet 1.5 s
    assert not more_trials([0.5] * 20, 4, 1.5, 20, 200)        # the cap holds
