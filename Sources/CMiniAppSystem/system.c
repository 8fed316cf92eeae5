#define _GNU_SOURCE
#include <locale.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include "CMiniAppSystem.h"

extern char **environ;

int CMiniAppSystem_syncfs(int descriptor) {
    return syncfs(descriptor);
}

int CMiniAppSystem_nonBlockingPipe(int descriptors[2]) {
    return pipe2(descriptors, O_NONBLOCK | O_CLOEXEC);
}

void CMiniAppSystem_lowerThisThreadsPriority(void) {
    setpriority(PRIO_PROCESS, (id_t)gettid(), 19);
}

char *const *CMiniAppSystem_environment(void) {
    return environ;
}

int CMiniAppSystem_processorCount(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        int count = CPU_COUNT(&set);
        if (count > 0) return count;
    }
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online > 0 ? (int)online : 1;
}

void CMiniAppSystem_nameThisThread(const char *name) {
    char shortened[16];
    snprintf(shortened, sizeof(shortened), "%s", name);
    pthread_setname_np(pthread_self(), shortened);
}

static locale_t utf8Locale;
static pthread_once_t utf8LocaleOnce = PTHREAD_ONCE_INIT;

static void makeUTF8Locale(void) {
    const char *names[] = {"C.UTF-8", "C.utf8", "en_US.UTF-8"};
    for (unsigned index = 0; index < sizeof(names) / sizeof(names[0]) && utf8Locale == (locale_t)0; index++) {
        utf8Locale = newlocale(LC_CTYPE_MASK, names[index], (locale_t)0);
    }
}

locale_t CMiniAppSystem_utf8Locale(void) {
    pthread_once(&utf8LocaleOnce, makeUTF8Locale);
    return utf8Locale;
}
