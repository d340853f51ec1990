/* One file descriptor that becomes readable when a consumer's queue or a producer's main
 * queue (delivery reports) gets work, through librdkafka's rd_kafka_queue_io_event_enable, so
 * a blocking loop can sleep in poll() until there is something to do instead of waking every
 * millisecond to look (at 1,000 copies/s a 1 ms poll timeout made the aggregation a tenth as
 * efficient per CPU-second as on a backlog).
 *
 * librdkafka writes one byte when a queue turns non-empty and again only after it was served,
 * so the order that loses no wake-up is: kafka_wake_drain, serve the queues (poll them with a
 * zero timeout), and only when they gave nothing, kafka_wake_wait. */
#ifndef NDD_KAFKA_WAKE_H
#define NDD_KAFKA_WAKE_H

#include <stdbool.h>
#include <librdkafka/rdkafka.h>

#define KAFKA_WAKE_MAX_QUEUES 4

typedef struct kafka_wake {
    int fd[2]; /* pipe: [0] read by kafka_wake_wait, [1] written by librdkafka */
    rd_kafka_queue_t *q[KAFKA_WAKE_MAX_QUEUES];
    rd_kafka_t *rk[KAFKA_WAKE_MAX_QUEUES]; /* whose queue q[i] is */
    int n;
} kafka_wake_t;

/* Makes the pipe (fd[] = -1 before). 0, or -1 with errno. */
int kafka_wake_init(kafka_wake_t *w);

/* Watches rk's consumer queue (consumer = true; its main queue must be redirected to it, as
 * kafka_consumer_new does) or its main queue (a producer's delivery reports). 0, or -1 when
 * the queue is unavailable or KAFKA_WAKE_MAX_QUEUES are watched. */
int kafka_wake_watch(kafka_wake_t *w, rd_kafka_t *rk, bool consumer);

/* Stops watching rk's queues (before rk is destroyed: a consumer rebuilt after a fatal error,
 * kafka_consumer_rebuild). The pipe stays open. */
void kafka_wake_unwatch(kafka_wake_t *w, rd_kafka_t *rk);

/* Empties the pipe: call before serving the queues. */
void kafka_wake_drain(kafka_wake_t *w);

/* Sleeps until a watched queue got work or timeout_ms passed (also returns at once when the
 * pipe already holds a byte). 1 woken, 0 timed out, -1 on error (EINTR: a signal). */
int kafka_wake_wait(kafka_wake_t *w, int timeout_ms);

/* Stops the io events (before the clients are destroyed) and closes the pipe. Idempotent. */
void kafka_wake_close(kafka_wake_t *w);

#endif
