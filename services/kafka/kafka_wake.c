/* The wake-up file descriptor of a blocking Kafka loop (kafka_wake.h): librdkafka's queue io
 * events into one non-blocking pipe, and poll() on its read end. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <unistd.h>

#include "kafka_wake.h"

int kafka_wake_init(kafka_wake_t *w)
{
    w->n = 0;
    w->fd[0] = w->fd[1] = -1;
    if (pipe(w->fd) != 0)
        return -1;
    for (int i = 0; i < 2; i++) {
        int fl = fcntl(w->fd[i], F_GETFL);
        if (fl < 0 || fcntl(w->fd[i], F_SETFL, fl | O_NONBLOCK) != 0 ||
            fcntl(w->fd[i], F_SETFD, FD_CLOEXEC) != 0) {
            int e = errno;
            kafka_wake_close(w);
            errno = e;
            return -1;
        }
    }
    return 0;
}

int kafka_wake_watch(kafka_wake_t *w, rd_kafka_t *rk, bool consumer)
{
    if (!rk || w->fd[1] < 0 || w->n >= KAFKA_WAKE_MAX_QUEUES)
        return -1;
    rd_kafka_queue_t *q = consumer ? rd_kafka_queue_get_consumer(rk) : rd_kafka_queue_get_main(rk);
    if (!q)
        return -1;
    rd_kafka_queue_io_event_enable(q, w->fd[1], "w", 1);
    w->rk[w->n] = rk;
    w->q[w->n++] = q;
    return 0;
}

void kafka_wake_unwatch(kafka_wake_t *w, rd_kafka_t *rk)
{
    int kept = 0;
    for (int i = 0; i < w->n; i++) {
        if (w->rk[i] == rk) {
            rd_kafka_queue_io_event_enable(w->q[i], -1, NULL, 0);
            rd_kafka_queue_destroy(w->q[i]);
            continue;
        }
        w->q[kept] = w->q[i];
        w->rk[kept++] = w->rk[i];
    }
    w->n = kept;
}

void kafka_wake_drain(kafka_wake_t *w)
{
    char b[64];
    while (w->fd[0] >= 0 && read(w->fd[0], b, sizeof b) > 0)
        ;
}

int kafka_wake_wait(kafka_wake_t *w, int timeout_ms)
{
    struct pollfd p = {.fd = w->fd[0], .events = POLLIN};
    int r = poll(&p, 1, timeout_ms);
    return r < 0 ? -1 : r > 0;
}

void kafka_wake_close(kafka_wake_t *w)
{
    for (int i = 0; i < w->n; i++) {
        rd_kafka_queue_io_event_enable(w->q[i], -1, NULL, 0);
        rd_kafka_queue_destroy(w->q[i]);
    }
    w->n = 0;
    for (int i = 0; i < 2; i++) {
        if (w->fd[i] >= 0)
            close(w->fd[i]);
        w->fd[i] = -1;
    }
}
