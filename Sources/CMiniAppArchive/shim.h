#ifndef CMINIAPP_ARCHIVE_SHIM_H
#define CMINIAPP_ARCHIVE_SHIM_H

#include <archive.h>
#include <archive_entry.h>

/* File-type macros from archive_entry.h do not import into Swift. */
static inline unsigned int CMiniAppArchive_AE_IFMT(void) { return AE_IFMT; }
static inline unsigned int CMiniAppArchive_AE_IFREG(void) { return AE_IFREG; }
static inline unsigned int CMiniAppArchive_AE_IFDIR(void) { return AE_IFDIR; }
static inline unsigned int CMiniAppArchive_AE_IFLNK(void) { return AE_IFLNK; }

static inline int CMiniAppArchive_OK(void) { return ARCHIVE_OK; }
static inline int CMiniAppArchive_EOF(void) { return ARCHIVE_EOF; }
static inline int CMiniAppArchive_WARN(void) { return ARCHIVE_WARN; }

#endif
