# correlation: the smoke traffic with ndd-correlation on MAIN as well (xDRs to XDR): what the
# correlation tier costs (component `correlation` in cpu_s / rss_mb / msgs_per_cpu_s) and
# whether it slows the feed path. Every transaction has both copies of one side, so SCP (a proxy
# type, four copies expected) closes at the timeout; NRF and PCF close as `complete`.
DESCRIPTION="SCP+NRF+PCF, natural-size copies, 2 copies/transaction, 1 h2c feed + ndd-correlation, 10 s at 500 copies/s"
DURATION=10
RATE=500
NF_MIX=SCP=1,NRF=1,PCF=1
SIZE=natural
COPIES=2
PARTITIONS=3
FEEDS="f1:http2"
CORRELATION=1
DRAIN_TIMEOUT=30
DRAIN_IDLE=10
BASELINES=""
OCNADD=""
