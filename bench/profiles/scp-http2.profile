# scp-http2: like OCNADD benchmark 4.1 — SCP traffic, 3,400-byte copies, two HTTP/2 feeds (each
# feed carries every copy to its own ndd-sink). Rate scaled to this machine (2 shared cores);
# raise it with --rate on bigger hardware.
DESCRIPTION="SCP, 3,400-byte copies, 4 copies/transaction, 2 h2c feeds, 30 s at 3,000 copies/s"
DURATION=30
RATE=3000
NF_MIX=SCP=1
SIZE=3400
COPIES=4
PARTITIONS=3
# more requests in flight than the adapter default (64): on a loaded host the sink answers late
MAX_IN_FLIGHT=512
FEEDS="feed1:http2 feed2:http2"
BASELINES="h2load kafka"
BASELINE_COUNT=50000
OCNADD="4.1 SCP, 3,400-byte copies, 2 HTTP/2 feeds: 135K MPS, 26.9 ms average E2E latency, 99.98 % success"
