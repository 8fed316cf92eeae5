#ifndef CMINIAPP_TEST_SUPPORT_H
#define CMINIAPP_TEST_SUPPORT_H

#include <spawn.h>

/* glibc calls the test support's process starter needs, which glibc declares only under _GNU_SOURCE. */

/* Adds to `actions` the closing of every descriptor from 3 up (posix_spawn_file_actions_addclosefrom_np)
   and, when `directory` is not NULL, a change to it (posix_spawn_file_actions_addchdir_np): 0 or an errno. */
int CMiniAppTestSupport_closeOthersAndChangeDirectory(posix_spawn_file_actions_t *actions, const char *directory);

/* A pipe whose two ends are closed on exec (pipe2): 0, or -1 with errno. */
int CMiniAppTestSupport_closeOnExecPipe(int descriptors[2]);

#endif
