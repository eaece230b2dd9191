/*
 * LD_PRELOAD shim that skews the wall clock of one redis-server for clock-jump and
 * clock-drift tests. libfaketime cannot be used: it calls dlsym() -> calloc() while
 * jemalloc (linked into Debian's redis-server) is initialising and deadlocks. So this
 * shim never allocates and never resolves symbols: real clocks come from raw syscalls.
 *
 * Control file: env REDLOCK_CLOCKSHIM_FILE names a text file "<offset_ms> [<rate>]".
 *   fake = real + offset + (rate - 1) * (real - since)
 * where `since` is the real time at which the current setting was first seen, so a new
 * setting makes the clock jump by exactly the offset change and then drift at `rate`.
 * The file is re-read (opened by path, so writers may replace it atomically with
 * rename()) at most once per millisecond of monotonic time.
 *
 * Faked: clock_gettime(CLOCK_REALTIME / CLOCK_REALTIME_COARSE), gettimeofday, time,
 * timespec_get. Monotonic clocks stay real (Redis' timers use them; key expiry does not),
 * unless env REDLOCK_CLOCKSHIM_MONOTONIC_RATE names a rate (say 1.5): then CLOCK_MONOTONIC
 * (and _COARSE) advance that many times as fast as real time from the process start, for a
 * client whose timers run fast or slow (std::chrono::steady_clock, Asio's timers). A fixed
 * rate keeps them monotonic, as they must be.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define NS_PER_MS 1000000LL
#define NS_PER_S 1000000000LL
#define RATE_ONE 1000000LL /* the rate is kept in parts per million */
#define RELOAD_EVERY_NS NS_PER_MS

/* The setting, published with a sequence lock: odd `seq` means a writer is busy. */
static unsigned seq_;
static int64_t offset_ns_;
static int64_t rate_ppm_ = RATE_ONE;
static int64_t since_ns_;

/* The monotonic rate, fixed at start: 0 when the monotonic clocks stay real. */
static int64_t monotonic_rate_ppm_;
static int64_t monotonic_base_ns_;

static int initialised_; /* 0: not yet, 1: busy, 2: done */
static char path_[4096]; /* copied: redis rewrites its environment for the process title */
static int64_t next_reload_ns_;
static int reloading_;

static int64_t raw_ns(clockid_t clock)
{
    struct timespec ts;
    if (syscall(SYS_clock_gettime, clock, &ts) != 0) return 0;
    return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

static const char* skip_blanks(const char* s)
{
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') ++s;
    return s;
}

/* "<offset_ms> [<rate>]"; returns 0 when the text is not a complete setting. */
static int parse_setting(const char* s, int64_t* offset_ns, int64_t* rate_ppm)
{
    int negative = 0;
    int64_t ms = 0;
    int64_t whole = 0;
    int64_t fraction = 0;
    int64_t scale = RATE_ONE;

    s = skip_blanks(s);
    if (*s == '+' || *s == '-') negative = *s++ == '-';
    if (*s < '0' || *s > '9') return 0;
    while (*s >= '0' && *s <= '9') ms = ms * 10 + (*s++ - '0');
    *offset_ns = (negative ? -ms : ms) * NS_PER_MS;

    s = skip_blanks(s);
    if (*s == '\0') {
        *rate_ppm = RATE_ONE;
        return 1;
    }
    if ((*s < '0' || *s > '9') && *s != '.') return 0;
    while (*s >= '0' && *s <= '9') whole = whole * 10 + (*s++ - '0');
    if (*s == '.') {
        ++s;
        while (*s >= '0' && *s <= '9') {
            scale /= 10;
            fraction += (*s++ - '0') * scale;
        }
    }
    *rate_ppm = whole * RATE_ONE + fraction;
    return 1;
}

/* Only the thread holding `reloading_` publishes. */
static void publish(int64_t offset_ns, int64_t rate_ppm, int64_t since_ns)
{
    unsigned seq = __atomic_load_n(&seq_, __ATOMIC_RELAXED);
    __atomic_store_n(&seq_, seq + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __atomic_store_n(&offset_ns_, offset_ns, __ATOMIC_RELAXED);
    __atomic_store_n(&rate_ppm_, rate_ppm, __ATOMIC_RELAXED);
    __atomic_store_n(&since_ns_, since_ns, __ATOMIC_RELAXED);
    __atomic_store_n(&seq_, seq + 2, __ATOMIC_RELEASE);
}

static void reload(void)
{
    char text[128];
    int64_t offset_ns;
    int64_t rate_ppm;
    long fd;
    long n;

    if (path_[0] == '\0') return;
    int64_t now = raw_ns(CLOCK_MONOTONIC);
    if (now < __atomic_load_n(&next_reload_ns_, __ATOMIC_RELAXED)) return;
    /* One thread reads the file; the others keep using the current setting. */
    if (__atomic_exchange_n(&reloading_, 1, __ATOMIC_ACQUIRE)) return;
    __atomic_store_n(&next_reload_ns_, now + RELOAD_EVERY_NS, __ATOMIC_RELAXED);

    fd = syscall(SYS_openat, AT_FDCWD, path_, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        n = syscall(SYS_pread64, (int)fd, text, sizeof text - 1, (off_t)0);
        syscall(SYS_close, (int)fd);
        if (n > 0) {
            text[n] = '\0';
            if (parse_setting(text, &offset_ns, &rate_ppm) &&
                (offset_ns != __atomic_load_n(&offset_ns_, __ATOMIC_RELAXED) ||
                 rate_ppm != __atomic_load_n(&rate_ppm_, __ATOMIC_RELAXED))) {
                publish(offset_ns, rate_ppm, raw_ns(CLOCK_REALTIME));
            }
        }
    }
    __atomic_store_n(&reloading_, 0, __ATOMIC_RELEASE);
}

static void initialise(void)
{
    int expected = 0;
    if (__atomic_load_n(&initialised_, __ATOMIC_ACQUIRE) == 2) return;
    if (!__atomic_compare_exchange_n(&initialised_, &expected, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        return; /* another thread is initialising: use the real clock meanwhile */
    }
    const char* path = getenv("REDLOCK_CLOCKSHIM_FILE");
    if (path != NULL && strlen(path) < sizeof path_) memcpy(path_, path, strlen(path) + 1);
    const char* monotonic = getenv("REDLOCK_CLOCKSHIM_MONOTONIC_RATE");
    int64_t unused_offset;
    int64_t rate_ppm;
    /* "0 <rate>": the setting's syntax with a zero offset */
    char setting[64] = "0 ";
    if (monotonic != NULL && strlen(monotonic) < sizeof setting - 3) {
        memcpy(setting + 2, monotonic, strlen(monotonic) + 1);
        if (parse_setting(setting, &unused_offset, &rate_ppm) && rate_ppm > 0) {
            monotonic_base_ns_ = raw_ns(CLOCK_MONOTONIC);
            monotonic_rate_ppm_ = rate_ppm;
        }
    }
    __atomic_store_n(&since_ns_, raw_ns(CLOCK_REALTIME), __ATOMIC_RELAXED);
    __atomic_store_n(&initialised_, 2, __ATOMIC_RELEASE);
}

/* Runs before main(), i.e. before redis moves its environment. */
__attribute__((constructor)) static void clockshim_constructor(void)
{
    initialise();
}

static int64_t fake_ns(int64_t real)
{
    unsigned before;
    int64_t offset_ns;
    int64_t rate_ppm;
    int64_t since_ns;

    initialise();
    if (__atomic_load_n(&initialised_, __ATOMIC_ACQUIRE) != 2) return real;
    reload();
    do {
        before = __atomic_load_n(&seq_, __ATOMIC_ACQUIRE);
        offset_ns = __atomic_load_n(&offset_ns_, __ATOMIC_RELAXED);
        rate_ppm = __atomic_load_n(&rate_ppm_, __ATOMIC_RELAXED);
        since_ns = __atomic_load_n(&since_ns_, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
    } while ((before & 1u) != 0 || before != __atomic_load_n(&seq_, __ATOMIC_RELAXED));

    __int128 drift = (__int128)(real - since_ns) * (rate_ppm - RATE_ONE) / RATE_ONE;
    return real + offset_ns + (int64_t)drift;
}

static void to_timespec(int64_t ns, struct timespec* ts)
{
    int64_t sec = ns / NS_PER_S;
    int64_t rest = ns % NS_PER_S;
    if (rest < 0) { /* keep tv_nsec in [0, 1e9) for times before the epoch */
        rest += NS_PER_S;
        --sec;
    }
    ts->tv_sec = (time_t)sec;
    ts->tv_nsec = (long)rest;
}

static int64_t fake_monotonic_ns(int64_t real)
{
    initialise();
    if (__atomic_load_n(&initialised_, __ATOMIC_ACQUIRE) != 2 || monotonic_rate_ppm_ == 0) return real;
    __int128 elapsed = (__int128)(real - monotonic_base_ns_) * monotonic_rate_ppm_ / RATE_ONE;
    return monotonic_base_ns_ + (int64_t)elapsed;
}

int clock_gettime(clockid_t clock, struct timespec* ts)
{
    long rc = syscall(SYS_clock_gettime, clock, ts);
    if (rc == 0 && (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE)) {
        to_timespec(fake_ns((int64_t)ts->tv_sec * NS_PER_S + ts->tv_nsec), ts);
    } else if (rc == 0 && (clock == CLOCK_MONOTONIC || clock == CLOCK_MONOTONIC_COARSE)) {
        to_timespec(fake_monotonic_ns((int64_t)ts->tv_sec * NS_PER_S + ts->tv_nsec), ts);
    }
    return (int)rc;
}

/* glibc declares tv as nonnull, but Linux accepts NULL: read it through a volatile
 * copy so the NULL check is neither warned about nor optimised away. */
int gettimeofday(struct timeval* restrict tv, void* restrict tz)
{
    struct timeval* volatile out = tv;
    struct timespec ts;
    (void)tz;
    if (out == NULL) return 0;
    to_timespec(fake_ns(raw_ns(CLOCK_REALTIME)), &ts);
    out->tv_sec = ts.tv_sec;
    out->tv_usec = ts.tv_nsec / 1000;
    return 0;
}

time_t time(time_t* out)
{
    struct timespec ts;
    to_timespec(fake_ns(raw_ns(CLOCK_REALTIME)), &ts);
    if (out != NULL) *out = ts.tv_sec;
    return ts.tv_sec;
}

int timespec_get(struct timespec* ts, int base)
{
    if (base != TIME_UTC) return 0;
    to_timespec(fake_ns(raw_ns(CLOCK_REALTIME)), ts);
    return base;
}
