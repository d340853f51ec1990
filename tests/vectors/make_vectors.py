#!/usr/bin/env python3
"""Writes the message-copy test vectors (tests/vectors/{valid,invalid}/*.json).

The JSON files are the contract's examples and are committed; this script only exists so
that a vector set with 65 headers or a 1 MiB body stays consistent when the contract
changes. Run from anywhere: python3 tests/vectors/make_vectors.py
Format of a vector: docs/message-format.md, "Test vectors".
"""
import base64
import json
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))

CID = "scp-7f3a9c1e-0001"
TS = 1764486000000000  # 2025-11-30T07:00:00Z in microseconds
AMF = "10.0.1.15:41000"
SCP = "10.0.2.20:8443"
UDM = "10.0.3.30:8443"
SUPI_PATH = "/nudm-sdm/v2/imsi-208930000000001/am-data?plmn-id=%7B%22mcc%22%3A%22208%22%7D"
AM_DATA = json.dumps(
    {"gpsis": ["msisdn-33612345678"], "subscribedUeAmbr": {"uplink": "1 Gbps",
                                                            "downlink": "2 Gbps"}},
    separators=(",", ":"))


def meta(cid=CID, ts=TS, mtype="request", trig="rx-request", nf="SCP", **extra):
    h = []
    if cid is not None:
        h.append(["@correlation-id", cid])
    if ts is not None:
        h.append(["@timestamp-us", str(ts)])
    if mtype is not None:
        h.append(["@message-type", mtype])
    if trig is not None:
        h.append(["@trigger-point", trig])
    if nf is not None:
        h.append(["@nf-type", nf])
    for k, v in extra.items():
        h.append(["@" + k.replace("_", "-"), v])
    return h


def req_http(method="GET", path=SUPI_PATH, authority="udm.5gc.mnc093.mcc208.3gppnetwork.org"):
    return [[":method", method], [":scheme", "https"], [":authority", authority],
            [":path", path], ["accept", "application/json"],
            ["user-agent", "AMF-amf01.5gc.mnc093.mcc208.3gppnetwork.org"],
            ["3gpp-sbi-target-apiroot", "https://" + authority]]


def resp_http(status="200", ctype="application/json"):
    h = [[":status", status]]
    if ctype:
        h.append(["content-type", ctype])
    h.append(["server", "UDM-udm01"])
    return h


SCP_IDS = dict(nf_instance="5b1d3c52-9d0a-4b5e-8f3e-1a2b3c4d5e6f",
               consumer_id="1c8a7f44-amf0-4e1b-9f00-000000000001",
               consumer_fqdn="amf01.5gc.mnc093.mcc208.3gppnetwork.org",
               producer_id="8e2f1d66-udm0-4c2a-8b00-000000000002",
               producer_fqdn="udm01.5gc.mnc093.mcc208.3gppnetwork.org")

VALID = {}
INVALID = {}


def valid(name, description, headers, key=CID, value="", **kw):
    v = {"description": description, "key": key}
    if "value_base64" in kw:
        v["value_base64"] = kw["value_base64"]
    else:
        v["value"] = value
    v["headers"] = headers
    v["expect"] = {"result": "ok"}
    VALID[name] = v


def invalid(name, description, headers, reason, field, key=CID, value="", **kw):
    v = {"description": description, "key": key}
    if "value_repeat" in kw:
        v["value_repeat"] = kw["value_repeat"]
    else:
        v["value"] = value
    v["headers"] = headers
    v["expect"] = {"result": "error", "reason": reason, "field": field}
    INVALID[name] = v


def scp_copy(trig, extra_http=None, value="", **over):
    mtype = "request" if trig.endswith("request") else "response"
    src, dst = {"rx-request": (AMF, SCP), "tx-request": (SCP, UDM),
                "rx-response": (UDM, SCP), "tx-response": (SCP, AMF)}[trig]
    off = {"rx-request": 0, "tx-request": 180, "rx-response": 2310, "tx-response": 2420}[trig]
    ids = dict(SCP_IDS)
    ids.update(over)
    h = meta(ts=TS + off, mtype=mtype, trig=trig, src_addr=src, dst_addr=dst, **ids)
    h += req_http() if mtype == "request" else resp_http()
    if extra_http:
        h += extra_http
    return h


# ---- valid ----------------------------------------------------------------------------------

valid("scp_1_rx_request", "SCP transaction, copy 1 of 4: request received from the AMF",
      scp_copy("rx-request"))
valid("scp_2_tx_request",
      "SCP transaction, copy 2 of 4: request forwarded to the UDM (hop id set)",
      scp_copy("tx-request", hop_id="hop-2"))
valid("scp_3_rx_response", "SCP transaction, copy 3 of 4: response received from the UDM",
      scp_copy("rx-response"), value=AM_DATA)
valid("scp_4_tx_response", "SCP transaction, copy 4 of 4: response sent back to the AMF",
      scp_copy("tx-response"), value=AM_DATA)

NF_PROFILE = json.dumps({"nfInstanceId": "0f0e0d0c-0b0a-4909-8807-060504030201",
                         "nfType": "AMF", "nfStatus": "REGISTERED",
                         "ipv4Addresses": ["10.0.1.15"]}, separators=(",", ":"))
valid("nrf_nf_register_request", "NRF: NFRegister (PUT) received from an AMF, JSON body",
      meta(cid="nrf-0001", trig="rx-request", nf="NRF", nf_instance="nrf01",
           src_addr="10.0.1.15:41002", dst_addr="10.0.4.40:8080",
           consumer_fqdn="amf01.5gc.mnc093.mcc208.3gppnetwork.org") +
      req_http("PUT", "/nnrf-nfm/v1/nf-instances/0f0e0d0c-0b0a-4909-8807-060504030201",
               "nrf.5gc.mnc093.mcc208.3gppnetwork.org") +
      [["content-type", "application/json"]],
      key="nrf-0001", value=NF_PROFILE)
valid("nrf_nf_register_response", "NRF: 201 Created sent back, with a location field",
      meta(cid="nrf-0001", mtype="response", trig="tx-response", nf="NRF", nf_instance="nrf01")
      + [[":status", "201"], ["content-type", "application/json"],
         ["location", "https://nrf.5gc.mnc093.mcc208.3gppnetwork.org/nnrf-nfm/v1/nf-instances/"
                      "0f0e0d0c-0b0a-4909-8807-060504030201"]],
      key="nrf-0001", value=NF_PROFILE)
valid("sepp_n32f_request", "SEPP: N32-f forwarded request with a re-route cause",
      meta(cid="sepp-0001", trig="tx-request", nf="SEPP", nf_instance="sepp01",
           reroute_cause="peer-sepp-unreachable", src_addr="sepp01.example.org:443",
           dst_addr="sepp.roaming-partner.example.net:443") +
      req_http("POST", "/n32f-forward/v1/n32f-process", "sepp.roaming-partner.example.net") +
      [["content-type", "application/json"]],
      key="sepp-0001", value='{"reformattedData":{"payload":[]}}')
valid("bsf_binding_request", "BSF: PCF binding registration (POST)",
      meta(cid="bsf-0001", trig="rx-request", nf="BSF") +
      req_http("POST", "/nbsf-management/v1/pcfBindings", "bsf.example.org") +
      [["content-type", "application/json"]],
      key="bsf-0001",
      value='{"supi":"imsi-208930000000001","gpsi":"msisdn-33612345678","dnn":"internet",'
            '"pcfFqdn":"pcf01.example.org","snssai":{"sst":1}}')
valid("pcf_policy_response", "PCF: SM policy created, 201 with location",
      meta(cid="pcf-0001", mtype="response", trig="tx-response", nf="PCF",
           producer_fqdn="pcf01.example.org") +
      [[":status", "201"], ["content-type", "application/json"],
       ["location", "https://pcf01.example.org/npcf-smpolicycontrol/v1/sm-policies/4711"]],
      key="pcf-0001", value='{"sessRules":{}}')
valid("non_nf_request", "NON_NF: a third-party source (e.g. a probe) copying a GET",
      meta(cid="probe-0001", trig="rx-request", nf="NON_NF", nf_instance="probe-a") +
      req_http("GET", "/nausf-auth/v1/ue-authentications", "ausf.example.org"),
      key="probe-0001")
valid("empty_body_response", "204 No Content response: present but empty body",
      meta(cid="scp-empty-1", mtype="response", trig="tx-response") +
      resp_http("204", ctype=None), key="scp-empty-1", value="")
BIN = bytes(range(256)) + b"\x00\xff\x00binary\x80\x81"
valid("binary_body_request", "Binary body (multipart/related with non-UTF-8 bytes)",
      meta(cid="scp-bin-1") + req_http("POST", "/nsmf-pdusession/v1/sm-contexts") +
      [["content-type", "multipart/related; boundary=----Boundary"]],
      key="scp-bin-1", value_base64=base64.b64encode(BIN).decode())
valid("extension_metadata", "Unknown '@' headers are kept and passed on",
      meta(cid="scp-ext-1") + [["@vendor-trace-id", "trace-0042"], ["@x.site", "paris-1"]] +
      req_http(), key="scp-ext-1")
valid("ipv6_addresses", "IPv6 source and destination with ports (and a zone id)",
      meta(cid="scp-v6-1", src_addr="[2001:db8::15]:41000", dst_addr="[fe80::1%eth0]:8443") +
      req_http(), key="scp-v6-1")
valid("key_only", "Correlation id only in the record key (no @correlation-id header)",
      meta(cid=None) + req_http(), key="scp-keyonly-1")
valid("correlation_header_only", "No record key: @correlation-id is the correlation id",
      meta(cid="scp-hdronly-1") + req_http(), key=None)
valid("aggregated_copy",
      "A copy as ndd-aggregation re-produces it on MAIN: @seq, @agg-timestamp-us, @agg-seq, "
      "@origin",
      meta(cid="scp-agg-1", seq="17", agg_timestamp_us=str(TS + 900), agg_seq="123456",
           origin="SCP/3/998877") + req_http(), key="scp-agg-1")
valid("repeated_http_field", "An HTTP field may repeat (both kept, in order)",
      meta(cid="scp-rep-1") + req_http() + [["accept-encoding", "gzip"],
                                            ["accept-encoding", "deflate"]], key="scp-rep-1")
valid("response_with_request_pseudo",
      "A response copy may also carry :method and :path of its request",
      meta(cid="scp-rp-1", mtype="response", trig="rx-response") +
      [[":status", "404"], [":method", "GET"], [":path", "/nudm-sdm/v2/imsi-1/am-data"],
       ["content-type", "application/problem+json"]],
      key="scp-rp-1", value='{"status":404,"cause":"USER_NOT_FOUND"}')
valid("http_header_count_at_limit", "Exactly 64 HTTP fields (the limit)",
      meta(cid="scp-lim-1") + req_http() + [["x-f%02d" % i, "v"] for i in range(57)],
      key="scp-lim-1")
valid("null_http_header_value", "An HTTP field with a null Kafka header value means empty",
      meta(cid="scp-null-1") + req_http() + [["x-empty", None]], key="scp-null-1")

# ---- invalid --------------------------------------------------------------------------------

REQ = req_http()
for field in ["@timestamp-us", "@message-type", "@trigger-point", "@nf-type"]:
    h = [x for x in meta() if x[0] != field] + REQ
    invalid("missing_" + field[1:].replace("-", "_"), "Required %s absent" % field, h,
            "missing-field", field)
invalid("missing_correlation_id", "No key and no @correlation-id", meta(cid=None) + REQ,
        "missing-field", "@correlation-id", key=None)
invalid("missing_method", "Request copy without :method",
        meta() + [x for x in REQ if x[0] != ":method"], "missing-field", ":method")
invalid("missing_path", "Request copy without :path",
        meta() + [x for x in REQ if x[0] != ":path"], "missing-field", ":path")
invalid("missing_status", "Response copy without :status",
        meta(mtype="response", trig="tx-response") + [["content-type", "application/json"]],
        "missing-field", ":status")
invalid("bad_timestamp_fraction", "Timestamp with a fraction", meta(ts="1764486000.5") + REQ,
        "bad-value", "@timestamp-us")
invalid("bad_timestamp_negative", "Negative timestamp", meta(ts="-1") + REQ, "bad-value",
        "@timestamp-us")
invalid("bad_message_type", "Message type neither request nor response",
        meta(mtype="req") + REQ, "bad-value", "@message-type")
invalid("bad_trigger_point", "Unknown trigger point", meta(trig="ingress") + REQ, "bad-value",
        "@trigger-point")
invalid("bad_nf_type", "NF type not one of the six", meta(nf="AMF") + REQ, "bad-value",
        "@nf-type")
invalid("bad_status_two_digits", ":status of two digits",
        meta(mtype="response", trig="tx-response") + [[":status", "20"]], "bad-value", ":status")
invalid("bad_status_600", ":status above 599",
        meta(mtype="response", trig="tx-response") + [[":status", "600"]], "bad-value", ":status")
invalid("bad_src_addr_bare_ipv6", "IPv6 address without brackets",
        meta(src_addr="2001:db8::1:8080") + REQ, "bad-value", "@src-addr")
invalid("bad_dst_addr_port", "Port out of range", meta(dst_addr="10.0.0.1:70000") + REQ,
        "bad-value", "@dst-addr")
invalid("bad_seq", "@seq not a number", meta(seq="abc") + REQ, "bad-value", "@seq")
invalid("bad_origin", "@origin without a numeric partition", meta(origin="SCP/x/12") + REQ,
        "bad-value", "@origin")
invalid("bad_path", ":path not starting with /",
        meta() + [[":method", "GET"], [":path", "nudm-sdm/v2/x"]], "bad-value", ":path")
invalid("bad_method", ":method with a space",
        meta() + [[":method", "GET /"], [":path", "/x"]], "bad-value", ":method")
invalid("bad_meta_control_char", "Control character in @nf-instance",
        meta(nf_instance="scp\u000101") + REQ, "bad-value", "@nf-instance")
invalid("bad_meta_empty", "Empty optional metadata text", meta(producer_fqdn="") + REQ,
        "bad-value", "@producer-fqdn")
invalid("bad_http_value_newline", "LF inside an HTTP field value",
        meta() + REQ + [["x-note", "a\nb"]], "bad-value", "x-note")
invalid("bad_key_space", "Key with a space", meta(cid=None) + REQ, "bad-value", "key",
        key="scp 1")
invalid("bad_correlation_id_empty", "Empty @correlation-id and no key", meta(cid="") + REQ,
        "bad-value", "@correlation-id", key=None)
invalid("oversized_key", "Key of 257 bytes", meta(cid=None) + REQ, "oversized", "key",
        key="k" * 257)
invalid("oversized_correlation_id", "@correlation-id of 257 bytes, no key",
        meta(cid="c" * 257) + REQ, "oversized", "@correlation-id", key=None)
invalid("oversized_body", "Body one byte over the 1 MiB default", meta() + REQ, "oversized",
        "value", value_repeat={"text": "a", "count": 1048577})
invalid("oversized_meta_value", "Metadata value of 256 bytes",
        meta(consumer_fqdn="a" * 256) + REQ, "oversized", "@consumer-fqdn")
invalid("oversized_http_value", "HTTP field value of 8193 bytes",
        meta() + REQ + [["x-big", "b" * 8193]], "oversized", "x-big")
invalid("oversized_header_name", "Header name of 129 bytes",
        meta() + REQ + [["x" * 129, "v"]], "oversized", "x" * 63)
invalid("oversized_headers_total", "Header bytes above 64 KiB in total",
        meta() + REQ + [["x-h%d" % i, "h" * 8000] for i in range(9)], "oversized", "headers")
invalid("too_many_http_headers", "65 HTTP fields",
        meta() + REQ + [["x-f%02d" % i, "v"] for i in range(58)], "too-many-headers", "x-f57")
invalid("too_many_ext_headers", "17 extension '@' headers",
        meta() + [["@x%02d" % i, "v"] for i in range(17)] + REQ, "too-many-headers", "@x16")
invalid("bad_header_uppercase", "HTTP field name with capitals",
        meta() + REQ + [["Content-Type", "application/json"]], "bad-header", "Content-Type")
invalid("bad_header_unknown_pseudo", "Unknown pseudo-header",
        meta() + REQ + [[":foo", "bar"]], "bad-header", ":foo")
invalid("bad_header_ext_name", "'@' name with capitals", meta() + [["@Vendor", "x"]] + REQ,
        "bad-header", "@Vendor")
invalid("bad_header_space", "Field name with a space", meta() + REQ + [["x y", "1"]],
        "bad-header", "x y")
invalid("bad_header_empty_name", "Empty header name", meta() + REQ + [["", "1"]],
        "bad-header", "")
invalid("duplicate_nf_type", "@nf-type twice", meta() + [["@nf-type", "NRF"]] + REQ,
        "duplicate-field", "@nf-type")
invalid("duplicate_path", ":path twice", meta() + REQ + [[":path", "/other"]],
        "duplicate-field", ":path")
invalid("duplicate_ext", "Extension '@' header twice",
        meta() + [["@vendor-x", "1"], ["@vendor-x", "2"]] + REQ, "duplicate-field", "@vendor-x")
invalid("key_mismatch", "Key differs from @correlation-id", meta() + REQ, "key-mismatch", "key",
        key="another-id")
invalid("inconsistent_request_response_trigger", "Request copy at a response trigger point",
        meta(trig="rx-response") + REQ, "inconsistent", "@trigger-point")
invalid("inconsistent_response_request_trigger", "Response copy at a request trigger point",
        meta(mtype="response", trig="tx-request") + resp_http(), "inconsistent",
        "@trigger-point")
invalid("inconsistent_request_with_status", "Request copy carrying :status",
        meta() + REQ + [[":status", "200"]], "inconsistent", ":status")


def write(dirname, vectors):
    d = os.path.join(HERE, dirname)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for name, v in sorted(vectors.items()):
        # One member per line and one header per line: readable, and diffs stay small.
        lines = []
        for k, val in v.items():
            if k == "headers":
                hs = ",\n".join("    " + json.dumps(h, ensure_ascii=True) for h in val)
                lines.append('  "headers": [\n%s\n  ]' % hs)
            else:
                lines.append("  %s: %s" % (json.dumps(k), json.dumps(val, ensure_ascii=True)))
        with open(os.path.join(d, name + ".json"), "w") as f:
            f.write("{\n" + ",\n".join(lines) + "\n}\n")


write("valid", VALID)
write("invalid", INVALID)
print("wrote %d valid and %d invalid vectors" % (len(VALID), len(INVALID)))
