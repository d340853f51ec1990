/* Size-class free lists in front of malloc (mempool.h). */
#include "mempool.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Classes of 32, 64, ..., 4096 bytes; LARGE marks a block from malloc of its own size. */
#define N_CLASSES 8
#define LARGE 0xff

/* In front of every block: its class (and, for a large block, nothing else is needed:
 * realloc asks malloc's usable size). The union keeps the block max_align_t-aligned. */
typedef union hdr {
    struct {
        uint8_t cls;
    } h;
    max_align_t align;
} hdr_t;

typedef struct free_block {
    struct free_block *next;
} free_block_t;

struct mempool {
    free_block_t *lists[N_CLASSES];
    size_t cached, max_cached;
};

static size_t class_size(unsigned cls)
{
    return (size_t)32 << cls;
}

static unsigned class_of(size_t n)
{
    if (n <= 32)
        return 0;
    /* the smallest cls with 32 << cls >= n */
    return (unsigned)(64 - __builtin_clzll((unsigned long long)(n - 1))) - 5;
}

mempool_t *mempool_new(size_t max_cached)
{
    mempool_t *p = calloc(1, sizeof *p);
    if (p)
        p->max_cached = max_cached;
    return p;
}

void mempool_free_all(mempool_t *p)
{
    if (!p)
        return;
    for (unsigned i = 0; i < N_CLASSES; i++) {
        while (p->lists[i]) {
            free_block_t *b = p->lists[i];
            p->lists[i] = b->next;
            free((hdr_t *)b - 1);
        }
    }
    free(p);
}

void *mempool_alloc(mempool_t *p, size_t n)
{
    if (n > MEMPOOL_CLASS_MAX) {
        if (n > SIZE_MAX - sizeof(hdr_t))
            return NULL;
        hdr_t *h = malloc(sizeof *h + n);
        if (!h)
            return NULL;
        h->h.cls = LARGE;
        return h + 1;
    }
    unsigned cls = class_of(n);
    free_block_t *b = p->lists[cls];
    if (b) {
        p->lists[cls] = b->next;
        p->cached -= class_size(cls);
        return b;
    }
    hdr_t *h = malloc(sizeof *h + class_size(cls));
    if (!h)
        return NULL;
    h->h.cls = (uint8_t)cls;
    return h + 1;
}

void mempool_free(mempool_t *p, void *ptr)
{
    if (!ptr)
        return;
    hdr_t *h = (hdr_t *)ptr - 1;
    unsigned cls = h->h.cls;
    if (cls == LARGE || p->cached + class_size(cls) > p->max_cached) {
        free(h);
        return;
    }
    free_block_t *b = ptr;
    b->next = p->lists[cls];
    p->lists[cls] = b;
    p->cached += class_size(cls);
}

void *mempool_calloc(mempool_t *p, size_t nmemb, size_t n)
{
    if (n && nmemb > SIZE_MAX / n)
        return NULL;
    void *ptr = mempool_alloc(p, nmemb * n);
    if (ptr)
        memset(ptr, 0, nmemb * n);
    return ptr;
}

void *mempool_realloc(mempool_t *p, void *ptr, size_t n)
{
    if (!ptr)
        return mempool_alloc(p, n);
    if (n == 0) {
        mempool_free(p, ptr);
        return NULL;
    }
    hdr_t *h = (hdr_t *)ptr - 1;
    if (h->h.cls == LARGE) {
        if (n > MEMPOOL_CLASS_MAX) {
            if (n > SIZE_MAX - sizeof(hdr_t))
                return NULL;
            hdr_t *nh = realloc(h, sizeof *nh + n);
            return nh ? nh + 1 : NULL;
        }
    } else if (n <= class_size(h->h.cls)) {
        return ptr; /* still fits its class */
    }
    size_t old = h->h.cls == LARGE ? 0 : class_size(h->h.cls);
    void *np = mempool_alloc(p, n);
    if (!np)
        return NULL;
    /* a large block shrinking into a class: n bytes of it fit, and n is all that is kept */
    memcpy(np, ptr, old && old < n ? old : n);
    mempool_free(p, ptr);
    return np;
}

size_t mempool_cached(const mempool_t *p)
{
    return p->cached;
}

static void *ng_malloc(size_t n, void *pool)
{
    return mempool_alloc(pool, n);
}

static void ng_free(void *ptr, void *pool)
{
    mempool_free(pool, ptr);
}

static void *ng_calloc(size_t nmemb, size_t n, void *pool)
{
    return mempool_calloc(pool, nmemb, n);
}

static void *ng_realloc(void *ptr, size_t n, void *pool)
{
    return mempool_realloc(pool, ptr, n);
}

void mempool_nghttp2_mem(mempool_t *p, nghttp2_mem *out)
{
    *out = (nghttp2_mem){p, ng_malloc, ng_free, ng_calloc, ng_realloc};
}
