#ifndef CMINIAPP_SYSTEM_H
#define CMINIAPP_SYSTEM_H

#include <locale.h>

/* Linux calls that glibc declares only under _GNU_SOURCE, and globals that Swift 6 cannot read safely. */
int CMiniAppSystem_syncfs(int descriptor);

/* Gives the calling thread the lowest scheduling priority (nice 19), for background work. */
void CMiniAppSystem_lowerThisThreadsPriority(void);

/* The process environment (`environ`), a null-terminated array of "NAME=value" strings. */
char *const *CMiniAppSystem_environment(void);

/* The processors this process may run on (its affinity mask), at least 1. */
int CMiniAppSystem_processorCount(void);

/* Names the calling thread (cut to 15 bytes), as tools such as perf and top show it. */
void CMiniAppSystem_nameThisThread(const char *name);

/* A locale whose character type is UTF-8 (C.UTF-8, else en_US.UTF-8), made once; 0 when the system has none. */
locale_t CMiniAppSystem_utf8Locale(void);

/* A pipe whose two ends are non-blocking and closed on exec (pipe2, a _GNU_SOURCE call): 0, or -1 with errno. */
int CMiniAppSystem_nonBlockingPipe(int descriptors[2]);

#endif
