# max: the highest rate this machine sustains with zero loss and p99 < 50 ms. Steps the rate up
# (each step a fresh set of daemons and topics on the same broker, DURATION seconds) and stops at
# the first step that loses a copy, misses p99 < P99_LIMIT_MS, or where the simulator cannot
# reach the rate. Reports the last sustained step, with each component's msgs per CPU-second.
DESCRIPTION="SCP, 3,400-byte copies, 4 copies/transaction, 1 h2c feed, steps of 20 s"
DURATION=20
STEPS="250 500 1000 2000 4000 8000 16000 32000"
RATE=1000
NF_MIX=SCP=1
SIZE=3400
COPIES=4
PARTITIONS=3
# more requests in flight than the adapter default (64): on a loaded host the sink answers late
MAX_IN_FLIGHT=512
FEEDS="feed1:http2"
P99_LIMIT_MS=50
DRAIN_TIMEOUT=30
BASELINES="h2load kafka"
BASELINE_COUNT=50000
OCNADD="~150 CPU cores for 270K MPS = ~1,800 msgs per core-second (whole system)"
