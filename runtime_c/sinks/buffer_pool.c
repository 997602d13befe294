/*
 * buffer_pool.c -- freed Arrow output buffers kept for reuse (invariants
 * in buffer_pool.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "buffer_pool.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

/* capacities GSQ_POOL_ALIGN << k for k < GSQ_POOL_CLASSES (up to 2^47) */
#define GSQ_POOL_CLASSES 42

typedef struct held_buf {
    struct held_buf *next;
} held_buf;

struct gsqlc_buffer_pool {
    pthread_mutex_t lock;
    uint64_t refs;
    uint64_t max_bytes, held_bytes;
    uint64_t reused, fresh;     /* takes served from the lists / by malloc */
    held_buf *held[GSQ_POOL_CLASSES];
};

/* The class of capacity cap, or -1 when it is not GSQ_POOL_ALIGN << k. */
static int class_of(size_t cap)
{
    int k;
    for (k = 0; k < GSQ_POOL_CLASSES; k++)
        if (cap == (size_t)GSQ_POOL_ALIGN << k)
            return k;
    return -1;
}

GSQ_EXPORT gsqlc_buffer_pool *gsqlc_buffer_pool_create(uint64_t max_bytes)
{
    gsqlc_buffer_pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    if (pthread_mutex_init(&p->lock, NULL) != 0) {
        free(p);
        return NULL;
    }
    p->refs = 1;
    p->max_bytes = max_bytes;
    return p;
}

gsqlc_buffer_pool *gsq_pool_retain(gsqlc_buffer_pool *pool)
{
    if (pool) {
        pthread_mutex_lock(&pool->lock);
        pool->refs++;
        pthread_mutex_unlock(&pool->lock);
    }
    return pool;
}

GSQ_EXPORT void gsqlc_buffer_pool_release(gsqlc_buffer_pool *pool)
{
    uint64_t left;
    int k;
    if (!pool)
        return;
    pthread_mutex_lock(&pool->lock);
    left = --pool->refs;
    pthread_mutex_unlock(&pool->lock);
    if (left)
        return;
    for (k = 0; k < GSQ_POOL_CLASSES; k++)
        while (pool->held[k]) {
            held_buf *b = pool->held[k];
            pool->held[k] = b->next;
            free(b);
        }
    pthread_mutex_destroy(&pool->lock);
    free(pool);
}

GSQ_EXPORT void gsqlc_buffer_pool_counts(gsqlc_buffer_pool *pool, uint64_t out[3])
{
    pthread_mutex_lock(&pool->lock);
    out[0] = pool->held_bytes;
    out[1] = pool->reused;
    out[2] = pool->fresh;
    pthread_mutex_unlock(&pool->lock);
}

void *gsq_pool_take(gsqlc_buffer_pool *pool, size_t cap)
{
    void *p = NULL;
    int k = pool ? class_of(cap) : -1;
    if (k >= 0) {
        pthread_mutex_lock(&pool->lock);
        if (pool->held[k]) {
            held_buf *b = pool->held[k];
            pool->held[k] = b->next;
            pool->held_bytes -= cap;
            pool->reused++;
            p = b;
        } else {
            pool->fresh++;
        }
        pthread_mutex_unlock(&pool->lock);
        if (p)
            return p;
    }
    if (posix_memalign(&p, GSQ_POOL_ALIGN, cap) != 0)
        return NULL;
    return p;
}

void gsq_pool_give(gsqlc_buffer_pool *pool, void *p, size_t cap)
{
    int k = pool && p ? class_of(cap) : -1;
    if (k >= 0) {
        int kept = 0;
        pthread_mutex_lock(&pool->lock);
        if (cap <= pool->max_bytes - pool->held_bytes && pool->held_bytes <= pool->max_bytes) {
            held_buf *b = p;
            b->next = pool->held[k];
            pool->held[k] = b;
            pool->held_bytes += cap;
            kept = 1;
        }
        pthread_mutex_unlock(&pool->lock);
        if (kept)
            return;
    }
    free(p);
}
