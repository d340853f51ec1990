# smoke: the test-suite profile (tests/e2e/test_bench_smoke.sh). 10 s of modest SCP traffic
# through one aggregation worker, one HTTP/2 (h2c) feed to one ndd-sink. Asserts lost = 0.
DESCRIPTION="SCP, natural-size copies (~0.5-1.5 KB), 2 copies/transaction, 1 h2c feed, 10 s at 500 copies/s"
DURATION=10
RATE=500
NF_MIX=SCP=1
SIZE=natural
COPIES=2
PARTITIONS=3
FEEDS="f1:http2"
DRAIN_TIMEOUT=30
DRAIN_IDLE=10
BASELINES=""
OCNADD=""
