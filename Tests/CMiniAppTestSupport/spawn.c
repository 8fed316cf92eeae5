#define _GNU_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include <unistd.h>

#include "CMiniAppTestSupport.h"

int CMiniAppTestSupport_closeOthersAndChangeDirectory(posix_spawn_file_actions_t *actions, const char *directory) {
    int result = posix_spawn_file_actions_addclosefrom_np(actions, 3);
    if (result == 0 && directory != NULL) result = posix_spawn_file_actions_addchdir_np(actions, directory);
    return result;
}

int CMiniAppTestSupport_closeOnExecPipe(int descriptors[2]) {
    return pipe2(descriptors, O_CLOEXEC);
}
