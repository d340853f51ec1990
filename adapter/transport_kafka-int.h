/* The Kafka transport's types, shared by its two files: transport_kafka.c (the producer, the
 * sends and their delivery reports) and transport_kafka_txn.c (exactly once: transactions,
 * their commits and aborts, and the records refused for good in one). */
#ifndef NDD_TRANSPORT_KAFKA_INT_H
#define NDD_TRANSPORT_KAFKA_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <event2/event.h>
#include <librdkafka/rdkafka.h>

#include "kafka_txn.h"
#include "metrics.h"
#include "transport.h"

/* Transaction batching (docs/kafka-feed.md, "Guarantees"): a commit every KTX_TXN_MS or after
 * KTX_TXN_RECORDS records, whichever comes first. init_transactions and the flushes wait at
 * most KTX_TXN_WAIT_MS on the feed thread; send offsets + commit at most KAFKA_TXN_CALL_MS
 * (kafka_txn_pair_commit: on a helper thread, since send_offsets may ignore its timeout; past
 * it the producer is made again, the hung handle set aside), abort at most KAFKA_TXN_CALL_MS. */
#ifndef KTX_TXN_MS /* -DKTX_TXN_MS=… for the measurement of docs/benchmarks.md */
#define KTX_TXN_MS 100
#endif
#define KTX_TXN_RECORDS 10000
#define KTX_TXN_WAIT_MS 10000
/* With no records to produce, the offsets of filtered records still move on: committed in a
 * transaction of their own at most this often (else a feed whose tail is filtered out would
 * read it again after every restart and show lag). */
#define KTX_IDLE_COMMIT_MS 500

/* Source records whose batch a broker refused for good inside a transaction, remembered until
 * their replay is refused (dead-lettered); KTX_POS_MAX records of one batch are looked at. */
#define KTX_POISON_MAX 4096
#define KTX_POS_MAX 1024

typedef enum ktx_state { KTX_DOWN = 0, KTX_CONNECTING, KTX_UP } ktx_state_t;

/* One batch (one send()) in flight: its messages outstanding and its first error. */
typedef struct ktx_slot {
    void *cookie;
    uint32_t left;           /* messages not yet reported */
    rd_kafka_resp_err_t err; /* first error of its messages; 0: none */
    bool used;
    bool ready;   /* every message reported while send() still held it: report from the loop */
    bool refused; /* err is librdkafka's refusal of a record in send(): never produced */
    char reason[640];
} ktx_slot_t;

typedef struct ktx {
    transport_t base;
    struct event_base *evb;
    transport_config_t cfg;
    transport_events_t ev;
    void *owner;
    ktx_state_t state;
    char topic[250];
    char bootstrap[128];
    rd_kafka_t *rk;
    rd_kafka_topic_t *rkt;
    rd_kafka_queue_t *mainq;
    int pipefd[2];
    struct event *io_ev;     /* the main queue's signal pipe readable */
    struct event *check_ev;  /* deferred work: the first metadata check, a pending teardown */
    struct event *report_ev; /* batches whose messages were all reported during send() */
    ktx_slot_t *slots;
    unsigned cap, live;
    bool down_pending; /* every broker down / fatal error: tear down from the loop */
    bool in_poll;      /* inside rd_kafka_poll: the producer cannot be destroyed now */
    bool raw;          /* pass-through payloads (one record's value), not DATA frames */
    char down_reason[640];
    /* exactly once */
    transport_source_t *src; /* NULL: at-least-once only */
    bool eos;                /* the producer is transactional */
    bool txn_open;           /* begun, not yet committed or aborted */
    bool committing;         /* no more sends: commit once the last report is in */
    bool abort_pending;      /* a message of the transaction failed: abort from the loop */
    bool ignore_drs;         /* the reports of an aborted transaction's purged messages */
    uint64_t txn_records;
    struct event *commit_ev; /* the commit interval, or the last report of a committing one */
    struct event *idle_ev;   /* offsets-only commits while no record is produced */
    rd_kafka_topic_partition_list_t *last_offs; /* committed by the last transaction */
    char txn_reason[640];
    /* positions of records refused for good in an aborted transaction (a ring), and why */
    transport_pos_t *poison, *pos_scratch;
    unsigned n_poison, poison_next;
    char poison_reason[640];
    metrics_gauge_t *m_eos;
    metrics_counter_t *m_produced, *m_committed, *m_aborted;
    metrics_histogram_t *m_commit; /* send offsets + commit, the feed thread's wait */
    kafka_txn_pair_t *txn;         /* the bounded commit (kafka_txn.h); NULL: at-least-once */
} ktx_t;

/* transport_kafka.c */
/* Closes the producer, fails what is in flight (retryable) and reports down. */
void ktx_teardown(ktx_t *t, const char *reason);
/* Errors a retry cannot fix: the batch goes to the feed's DLQ with the reason. */
bool ktx_err_permanent(rd_kafka_resp_err_t e);

/* transport_kafka_txn.c */
void ktx_forget(ktx_t *t);
void ktx_poison_add(ktx_t *t, const ktx_slot_t *s);
bool ktx_poison_take(ktx_t *t, void *cookie);
void ktx_txn_abort(ktx_t *t, bool abortable, char *reason, size_t rlen);
/* The transaction's offsets and commit (kafka_txn_commit); reason filled on failure. */
kafka_txn_rc_t ktx_commit_offsets(ktx_t *t, char *reason, size_t rlen);
void ktx_commit_cb(evutil_socket_t fd, short what, void *arg);
void ktx_idle_cb(evutil_socket_t fd, short what, void *arg);
void ktx_revoked(transport_t *base);

#endif
