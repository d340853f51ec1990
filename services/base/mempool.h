/* A free list per size class in front of malloc, for one thread's many small, short-lived
 * blocks: nghttp2 allocates a stream, its queued frames and its decoded fields for every
 * request and frees them a moment later, and glibc's per-thread cache holds only 7 blocks of
 * a size, so a connection's burst went on into the arena (malloc and free were 5 % of an
 * admin read's instructions).
 *
 * Bounded: blocks above MEMPOOL_CLASS_MAX bytes go straight to malloc, and freed blocks are
 * kept only while the pool caches at most its max_cached bytes; past that they go back to
 * free(). Not thread-safe: a pool belongs to one thread (h2server: its event_base's). */
#ifndef NDD_MEMPOOL_H
#define NDD_MEMPOOL_H

#include <stddef.h>

#include <nghttp2/nghttp2.h>

#define MEMPOOL_CLASS_MAX 4096

typedef struct mempool mempool_t;

mempool_t *mempool_new(size_t max_cached);
/* Frees the cached blocks. Blocks still out must not be freed to it afterwards. */
void mempool_free_all(mempool_t *p);

/* malloc, free, calloc and realloc semantics (alignment of max_align_t, NULL on failure,
 * mempool_free(p, NULL) does nothing). */
void *mempool_alloc(mempool_t *p, size_t n);
void mempool_free(mempool_t *p, void *ptr);
void *mempool_calloc(mempool_t *p, size_t nmemb, size_t n);
void *mempool_realloc(mempool_t *p, void *ptr, size_t n);

/* Bytes kept in the free lists now. */
size_t mempool_cached(const mempool_t *p);

/* nghttp2's allocator interface on the pool (nghttp2_session_*_new3), for a session used by
 * the pool's thread only. */
void mempool_nghttp2_mem(mempool_t *p, nghttp2_mem *out);

#endif
