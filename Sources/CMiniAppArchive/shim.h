#ifndef CMINIAPP_ARCHIVE_SHIM_H
#define CMINIAPP_ARCHIVE_SHIM_H

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <unistd.h>

/* File-type macros from archive_entry.h do not import into Swift. */
static inline unsigned int CMiniAppArchive_AE_IFMT(void) { return AE_IFMT; }
static inline unsigned int CMiniAppArchive_AE_IFREG(void) { return AE_IFREG; }
static inline unsigned int CMiniAppArchive_AE_IFDIR(void) { return AE_IFDIR; }
static inline unsigned int CMiniAppArchive_AE_IFLNK(void) { return AE_IFLNK; }

static inline int CMiniAppArchive_OK(void) { return ARCHIVE_OK; }
static inline int CMiniAppArchive_EOF(void) { return ARCHIVE_EOF; }
static inline int CMiniAppArchive_WARN(void) { return ARCHIVE_WARN; }

/* A window of a file for a streaming reader: bytes [position, end) of `fd`, read with pread into
   `buffer`, so that threads can share the descriptor and no reader sees past its window. */
typedef struct {
    int fd;
    long long position;
    long long end;
    size_t capacity;
    void *buffer;
} CMiniAppArchive_Window;

static la_ssize_t CMiniAppArchive_windowRead(struct archive *archive, void *data, const void **block) {
    CMiniAppArchive_Window *window = (CMiniAppArchive_Window *)data;
    long long left = window->end - window->position;
    *block = window->buffer;
    if (left <= 0) return 0;
    size_t want = left < (long long)window->capacity ? (size_t)left : window->capacity;
    ssize_t got;
    do {
        got = pread(window->fd, window->buffer, want, (off_t)window->position);
    } while (got < 0 && errno == EINTR);
    if (got < 0) {
        archive_set_error(archive, errno, "cannot read the archive");
        return -1;
    }
    window->position += got;
    return got;
}

static la_int64_t CMiniAppArchive_windowSkip(struct archive *archive, void *data, la_int64_t request) {
    (void)archive;
    CMiniAppArchive_Window *window = (CMiniAppArchive_Window *)data;
    long long left = window->end - window->position;
    long long step = request < left ? request : left;
    if (step < 0) step = 0;
    window->position += step;
    return step;
}

/* Opens `archive` on `window` (which must outlive it). */
static inline int CMiniAppArchive_openWindow(struct archive *archive, CMiniAppArchive_Window *window) {
    return archive_read_open2(archive, window, NULL, CMiniAppArchive_windowRead, CMiniAppArchive_windowSkip, NULL);
}

#endif
