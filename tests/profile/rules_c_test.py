"""C drivers' layers where a body is held in memory: the write callback appends each piece to a
buffer (as libcurl's getinmemory.c does, and the job's `sink: memory` asks), and its copy is the
memory layer even where perf names libc's copy as an inlined frame."""

from clientlab.profile.rules import Rules

BIN = "(drivers/c/libcurl/build/driver)"
CALLBACK = f"driver (process);run {BIN};? (libcurl.so.4.8.0);on_body {BIN};lab_buf_append {BIN}"


def test_a_body_copied_into_the_drivers_buffer_is_memory_even_as_an_inlined_libc_frame():
    rules = Rules.load("c", "drivers/c/libcurl")
    assert rules.layer_of(f"{CALLBACK};__memcpy_avx512_unaligned_erms (inlined)") == "memory"
    assert rules.layer_of(f"{CALLBACK};__GI___libc_realloc (inlined)") == "memory"
    assert rules.layer_of(f"{CALLBACK};__memmove_avx_unaligned_erms (libc.so.6)") == "memory"


def test_the_callbacks_own_instructions_stay_the_harness():
    rules = Rules.load("c", "drivers/c/libcurl")
    assert rules.layer_of(CALLBACK) == "harness"
    # an inlined frame that is no copy nor allocation is not memory
    assert rules.layer_of(f"{CALLBACK};lab_json_escape (inlined)") == "harness"
