#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>
#include "CMiniAppSystem.h"

extern char **environ;

int CMiniAppSystem_syncfs(int descriptor) {
    return syncfs(descriptor);
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
