# scp-tcp: like OCNADD benchmark 4.2 — SCP traffic, 3,400-byte copies, one TCP feed (binary
# frames, docs/encodings.md). Rate scaled to this machine (2 shared cores).
DESCRIPTION="SCP, 3,400-byte copies, 4 copies/transaction, 1 TCP (frame) feed, 30 s at 3,000 copies/s"
DURATION=30
RATE=3000
NF_MIX=SCP=1
SIZE=3400
COPIES=4
PARTITIONS=3
# more requests in flight than the adapter default (64): on a loaded host the sink answers late
MAX_IN_FLIGHT=512
FEEDS="tcp1:tcp"
BASELINES="h2load kafka"
BASELINE_COUNT=50000
OCNADD="4.2 SCP, TCP feed: 270K MPS, 51.1 ms average E2E latency, 99.99 % success, ~150 CPU cores (~1,800 msgs per core-second)"
