# correlation: the smoke traffic with ndd-correlation on MAIN as well (xDRs to XDR): what the
# correlation tier costs (component `correlation` in cpu_s / rss_mb / msgs_per_cpu_s), whether
# it slows the feed path, and how long an xDR takes to reach XDR (travel_xdr_ms, by completion).
#
# Four copies per transaction, so that xDRs close as `complete` and their travel time is the
# pipeline's, not the correlation timeout's (docs/xdr.md, "Transactions"): SCP is a proxy and is
# complete only with all four trigger points (with two copies every SCP transaction waited for
# the 5 s timeout and its xDR travelled ~5 s by design); NRF and PCF copies of both sides are
# treated as a proxy transaction too and complete with the fourth copy. An xDR is emitted when
# its last copy is consumed from MAIN, so its travel is NF -> MAIN of that copy + correlation +
# the XDR produce. Run with --set COPIES=2 to see the timeout path (SCP xDRs as `timeout`).
DESCRIPTION="SCP+NRF+PCF, natural-size copies, 4 copies/transaction, 1 h2c feed + ndd-correlation, 20 s at 500 copies/s"
DURATION=20
RATE=500
NF_MIX=SCP=1,NRF=1,PCF=1
SIZE=natural
COPIES=4
PARTITIONS=3
FEEDS="f1:http2"
CORRELATION=1
DRAIN_TIMEOUT=30
DRAIN_IDLE=10
BASELINES=""
OCNADD=""
