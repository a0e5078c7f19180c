// LD_PRELOAD helper for the GPU runs: when the process aborts (glibc's "double free or corruption",
// an assert in a native library), print the aborting thread's name and native backtrace to stderr
// before the default action runs. The JVM installs no SIGABRT handler, so without this such a
// crash leaves no hs_err file and no stack.
#define _GNU_SOURCE
#include <execinfo.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static void on_abort(int sig) {
    char name[32] = {0};
    prctl(PR_GET_NAME, name, 0, 0, 0);
    static const char head[] = "\n=== abrt_trace: SIGABRT on thread '";
    write(2, head, sizeof head - 1);
    write(2, name, strlen(name));
    write(2, "'\n", 2);
    void *frames[64];
    int n = backtrace(frames, 64);
    backtrace_symbols_fd(frames, n, 2);
    write(2, "=== abrt_trace: end\n", 20);
    signal(sig, SIG_DFL);
    raise(sig);
}

__attribute__((constructor)) static void install(void) {
    void *warm[1];
    backtrace(warm, 1); // loads libgcc_s now, not inside the handler
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_abort;
    sigaction(SIGABRT, &sa, 0);
}
