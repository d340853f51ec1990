# ocnadd: the whole pipeline under the conditions of OCNADD's published runs: SASL_SSL
# (SCRAM-SHA-512 over TLS) on every Kafka connection of ndd-nf-sim and the NDD daemons, SCP
# copies of 3,400-3,550 bytes, two feeds (binary frames over TCP, HTTP/2 over TLS), the NF
# topics and MAIN compressed. Codec, linger and batch size as measured in docs/benchmarks.md
# ("OCNADD's profiles"). Rate scaled to this machine (2 shared cores); raise it with --rate.
DESCRIPTION="SCP, 3,400-3,550-byte copies, 4 copies/transaction, SASL_SSL, lz4 + linger 20 ms, 1 HTTP/2-over-TLS + 1 TCP feed, 30 s at 2,000 copies/s"
DURATION=30
RATE=2000
NF_MIX=SCP=1
SIZE=3400-3550
COPIES=4
PARTITIONS=3
# more requests in flight than the adapter default (64): on a loaded host the sink answers late
MAX_IN_FLIGHT=512
FEEDS="h2tls1:https tcp1:tcp"
KAFKA_SECURITY=sasl_ssl
COMPRESSION=lz4
# lz4 and linger.ms 20: a quarter less CPU per copy for the whole system than no codec, p50 ~50 ms; zstd
# costs NDD more than it saves the broker. batch.size stays the client's 1 MB: at these rates a
# 20 ms batch holds tens of kB and never fills it (docs/benchmarks.md, "OCNADD's profiles").
LINGER_MS=20
BATCH_BYTES=""
# Nagle's algorithm is off in every NDD client by default (librdkafka's own default is on: every
# SASL_SSL hop then waited, p50 ~190 ms against ~25 ms without; plaintext ~22 ms either way;
# measured, same docs section). KAFKA_PROPS=socket.nagle.disable=false measures it on.
KAFKA_PROPS=""
BASELINES="h2load kafka"
BASELINE_COUNT=50000
OCNADD="4.2 SCP, TCP feed: 270K MPS on ~150 CPU cores (~1,800 copies per core-second, whole system), 51.1 ms average E2E latency"
