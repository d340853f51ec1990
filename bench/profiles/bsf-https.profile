# bsf-https: like OCNADD benchmark 4.3 — BSF traffic to one HTTP/2 feed over TLS (ALPN h2, the
# server certificate verified against a private CA made for the run).
DESCRIPTION="BSF, 1,941-byte copies, 2 copies/transaction, 1 HTTP/2-over-TLS feed, 30 s at 1,000 copies/s"
DURATION=30
RATE=1000
NF_MIX=BSF=1
SIZE=1941
COPIES=2
PARTITIONS=3
# more requests in flight than the adapter default (64): on a loaded host the sink answers late
MAX_IN_FLIGHT=512
FEEDS="tls1:https"
BASELINES="h2load kafka"
BASELINE_COUNT=30000
OCNADD="4.3 HTTPS feed: 9K MPS, 115 ms average E2E latency"
