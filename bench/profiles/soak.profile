# soak: one hour at half the `max` rate (8,000 copies/s sustained on the reference machine,
# docs/benchmarks.md: so 4,000 copies/s), the `max` traffic shape (SCP, 3,400 B, 4 copies per
# transaction, one h2c feed). The current RSS (VmRSS) of every daemon (ndd-aggregation,
# ndd-adapter, ndd-sink, and Kafka) is sampled every 10 s into W/run/rss.csv, and the result
# says per component first/last/max MiB and the slope (MiB/h, least squares after a 2-minute
# warm-up); "flat" when every NDD daemon's slope is at most RSS_FLAT_MB_PER_H. Exit 0 only
# with lost = 0. Not in CI: `bench/run.sh --profile soak` (or --duration 600 for a check).
DESCRIPTION="soak: SCP, 3,400-byte copies, 4 copies/transaction, 1 h2c feed, 1 h at 4,000 copies/s (half of max), RSS every 10 s"
DURATION=3600
RATE=4000
NF_MIX=SCP=1
SIZE=3400
COPIES=4
PARTITIONS=3
MAX_IN_FLIGHT=512
FEEDS="feed1:http2"
DRAIN_TIMEOUT=60
DRAIN_IDLE=15
BASELINES=""
RSS_SAMPLE_S=10
RSS_WARMUP_S=120
RSS_FLAT_MB_PER_H=16
OCNADD=""
