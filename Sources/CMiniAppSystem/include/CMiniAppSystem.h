#ifndef CMINIAPP_SYSTEM_H
#define CMINIAPP_SYSTEM_H

/* Linux calls that glibc declares only under _GNU_SOURCE. */
int CMiniAppSystem_syncfs(int descriptor);

#endif
