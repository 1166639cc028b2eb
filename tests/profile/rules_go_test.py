"""Go drivers' layers: a system call's time is the kernel's, through Go's own wrappers as through
libc's (frames as perf wrote them in profiles of the Go drivers)."""

from clientlab.profile.rules import Rules

BIN = "(drivers/go/net-http/build/driver)"


def test_gos_system_call_wrappers_are_the_kernels_as_libcs_are():
    rules = Rules.load("go", "drivers/go/net-http")
    read = f"runtime.goexit.abi0 {BIN};net/http.(*persistConn).readLoop {BIN};net.(*conn).Read {BIN}"
    assert rules.layer_of(f"{read};syscall.read {BIN};syscall.Syscall {BIN};internal/runtime/syscall/linux.Syscall6 {BIN}") \
        == "kernel"
    poll = f"runtime.mcall {BIN};runtime.schedule {BIN};runtime.findRunnable {BIN};runtime.netpoll {BIN}"
    assert rules.layer_of(f"{poll};internal/runtime/syscall/linux.Syscall6 {BIN}") == "kernel"
    assert rules.layer_of(f"{poll};runtime.futex.abi0 {BIN}") == "kernel"
    # the scheduler's own work around them stays the runtime's, the library's code the library's
    assert rules.layer_of(poll) == "runtime"
    assert rules.layer_of(f"{read};net/http.(*persistConn).readResponse {BIN}") == "library"
