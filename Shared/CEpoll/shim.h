// Linux's epoll and eventfd, which Swift's Glibc module leaves out, and thread naming: the Postgres
// reactor's thread waits on them.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>

/// Names the calling thread (as `top -H` and `perf` show it); prctl is variadic, which Swift cannot call.
static inline void aviary_name_current_thread(const char *name) {
    prctl(PR_SET_NAME, (unsigned long)name, 0UL, 0UL, 0UL);
}
