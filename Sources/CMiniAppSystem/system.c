#define _GNU_SOURCE
#include <unistd.h>
#include "CMiniAppSystem.h"

int CMiniAppSystem_syncfs(int descriptor) {
    return syncfs(descriptor);
}
