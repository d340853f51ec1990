# max-throughput: like `max`, but with the latency limit relaxed to 5 s, for hosts (like a shared
# 2-core machine) where Kafka alone already misses 50 ms at p99. Finds the highest rate with zero
# loss that the pipeline keeps up with (delivery done within MAX_DRAIN_S of the traffic's end).
DESCRIPTION="SCP, 3,400-byte copies, 4 copies/transaction, 1 h2c feed, steps of 20 s, p99 < 5 s"
DURATION=20
STEPS="1000 2000 4000 8000 16000 32000"
RATE=1000
NF_MIX=SCP=1
SIZE=3400
COPIES=4
PARTITIONS=3
MAX_IN_FLIGHT=512
FEEDS="feed1:http2"
P99_LIMIT_MS=5000
MAX_DRAIN_S=10
DRAIN_TIMEOUT=40
BASELINES="h2load kafka"
BASELINE_COUNT=50000
OCNADD="~150 CPU cores for 270K MPS = ~1,800 msgs per core-second (whole system)"
