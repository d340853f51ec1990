/* Traffic model of ndd-nf-sim: SBI operations per NF type, transactions of 2 or 4 copies,
 * sizes, error responses. docs/nfsim.md describes what is produced. */
#include "nfsim_gen.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

/* An SBI operation as the NFs of one topic see it. Templates expand {supi}, {gpsi}, {uuid},
 * {id}, {ip}, {pfqdn} (producer FQDN), {cfqdn} (consumer FQDN) and {n} (a small number). */
struct nfsim_op {
    const char *service;
    const char *method;
    const char *path;
    const char *consumer; /* NF type names */
    const char *producer;
    int ok_status;
    const char *req_body; /* NULL: no body */
    const char *req_ct;
    const char *rsp_body; /* NULL: no body */
    const char *rsp_ct;
    const char *location; /* for 201 Created */
};

static const char *const nfsim_nf_names[NFSIM_NF__COUNT] = {"SCP", "NRF", "SEPP", "BSF", "PCF"};

#define CT_JSON "application/json"
#define CT_PATCH "application/json-patch+json"

static const nfsim_op_t nfsim_ops_scp[] = {
    {"nudm-sdm", "GET",
     "/nudm-sdm/v2/{supi}/am-data?plmn-id=%7B%22mcc%22%3A%22001%22%2C%22mnc%22%3A%2201%22%7D",
     "AMF", "UDM", 200, NULL, NULL,
     "{\"gpsis\":[\"{gpsi}\"],\"subscribedUeAmbr\":{\"uplink\":\"1000 Mbps\",\"downlink\":\"2000 "
     "Mbps\"},\"nssai\":{\"defaultSingleNssais\":[{\"sst\":1,\"sd\":\"000001\"}],"
     "\"singleNssais\":[{\"sst\":1,\"sd\":\"000001\"},{\"sst\":2}]},\"ratRestrictions\":[],"
     "\"coreNetworkTypeRestrictions\":[],\"mpsPriority\":false,\"mcsPriority\":false,"
     "\"activeTime\":0,\"micoAllowed\":true,\"subsRegTimer\":3600}",
     CT_JSON, NULL},
    {"nudm-uecm", "PUT", "/nudm-uecm/v1/{supi}/registrations/amf-3gpp-access", "AMF", "UDM", 201,
     "{\"amfInstanceId\":\"{uuid}\",\"deregCallbackUri\":\"https://{cfqdn}:8443/namf-callback/v1/"
     "{supi}/dereg-notify\",\"guami\":{\"plmnId\":{\"mcc\":\"001\",\"mnc\":\"01\"},\"amfId\":"
     "\"020040\"},\"ratType\":\"NR\",\"initialRegistrationInd\":true}",
     CT_JSON,
     "{\"amfInstanceId\":\"{uuid}\",\"deregCallbackUri\":\"https://{cfqdn}:8443/namf-callback/v1/"
     "{supi}/dereg-notify\",\"guami\":{\"plmnId\":{\"mcc\":\"001\",\"mnc\":\"01\"},\"amfId\":"
     "\"020040\"},\"ratType\":\"NR\"}",
     CT_JSON, "https://{pfqdn}:8443/nudm-uecm/v1/{supi}/registrations/amf-3gpp-access"},
    {"nausf-auth", "POST", "/nausf-auth/v1/ue-authentications", "AMF", "AUSF", 201,
     "{\"supiOrSuci\":\"{supi}\",\"servingNetworkName\":\"5G:mnc001.mcc001.3gppnetwork.org\"}",
     CT_JSON,
     "{\"authType\":\"5G_AKA\",\"5gAuthData\":{\"rand\":\"4a6f2b1c9d8e7f60a1b2c3d4e5f60718\","
     "\"hxresStar\":\"9b1d2c3e4f5a6b7c8d9e0f1a2b3c4d5e\",\"autn\":"
     "\"1f2e3d4c5b6a79880f1e2d3c4b5a6978\"},\"_links\":{\"5g-aka\":{\"href\":\"https://{pfqdn}:"
     "8443/nausf-auth/v1/ue-authentications/{id}/5g-aka-confirmation\"}}}",
     "application/3gppHal+json", "https://{pfqdn}:8443/nausf-auth/v1/ue-authentications/{id}"},
    {"nsmf-pdusession", "POST", "/nsmf-pdusession/v1/sm-contexts", "AMF", "SMF", 201,
     "{\"supi\":\"{supi}\",\"gpsi\":\"{gpsi}\",\"pduSessionId\":{n},\"dnn\":\"internet\","
     "\"sNssai\":{\"sst\":1,\"sd\":\"000001\"},\"servingNfId\":\"{uuid}\",\"guami\":{\"plmnId\":"
     "{\"mcc\":\"001\",\"mnc\":\"01\"},\"amfId\":\"020040\"},\"servingNetwork\":{\"mcc\":\"001\","
     "\"mnc\":\"01\"},\"anType\":\"3GPP_ACCESS\",\"ratType\":\"NR\",\"smContextStatusUri\":"
     "\"https://{cfqdn}:8443/namf-callback/v1/smContextStatus/{supi}/{n}\"}",
     CT_JSON,
     "{\"pduSessionId\":{n},\"sNssai\":{\"sst\":1,\"sd\":\"000001\"},\"upCnxState\":"
     "\"ACTIVATING\"}",
     CT_JSON, "https://{pfqdn}:8443/nsmf-pdusession/v1/sm-contexts/{id}"},
    {"namf-comm", "POST", "/namf-comm/v1/ue-contexts/{supi}/n1-n2-messages", "SMF", "AMF", 200,
     "{\"n1MessageContainer\":{\"n1MessageClass\":\"SM\",\"n1MessageContent\":{\"contentId\":"
     "\"n1msg\"}},\"pduSessionId\":{n},\"skipInd\":false}",
     CT_JSON, "{\"cause\":\"N1_N2_TRANSFER_INITIATED\"}", CT_JSON, NULL},
};

static const nfsim_op_t nfsim_ops_nrf[] = {
    {"nnrf-disc", "GET",
     "/nnrf-disc/v1/nf-instances?target-nf-type=UDM&requester-nf-type=AMF&service-names=nudm-sdm",
     "AMF", "NRF", 200, NULL, NULL,
     "{\"validityPeriod\":3600,\"nfInstances\":[{\"nfInstanceId\":\"{uuid}\",\"nfType\":\"UDM\","
     "\"nfStatus\":\"REGISTERED\",\"fqdn\":\"udm1.5gc.mnc001.mcc001.3gppnetwork.org\","
     "\"ipv4Addresses\":[\"{ip}\"],\"priority\":1,\"capacity\":100,\"nfServices\":[{"
     "\"serviceInstanceId\":\"sdm-1\",\"serviceName\":\"nudm-sdm\",\"versions\":[{"
     "\"apiVersionInUri\":\"v2\",\"apiFullVersion\":\"2.2.0\"}],\"scheme\":\"https\","
     "\"nfServiceStatus\":\"REGISTERED\"}]}]}",
     CT_JSON, NULL},
    {"nnrf-nfm", "PATCH", "/nnrf-nfm/v1/nf-instances/{uuid}", "SMF", "NRF", 204,
     "[{\"op\":\"replace\",\"path\":\"/nfStatus\",\"value\":\"REGISTERED\"},{\"op\":\"replace\","
     "\"path\":\"/load\",\"value\":{n}}]",
     CT_PATCH, NULL, NULL, NULL},
    {"nnrf-nfm", "PUT", "/nnrf-nfm/v1/nf-instances/{uuid}", "PCF", "NRF", 201,
     "{\"nfInstanceId\":\"{uuid}\",\"nfType\":\"PCF\",\"nfStatus\":\"REGISTERED\","
     "\"heartBeatTimer\":"
     "10,\"plmnList\":[{\"mcc\":\"001\",\"mnc\":\"01\"}],\"fqdn\":\"{cfqdn}\",\"ipv4Addresses\":["
     "\"{ip}\"],\"nfServices\":[{\"serviceInstanceId\":\"smpc-1\",\"serviceName\":"
     "\"npcf-smpolicycontrol\",\"versions\":[{\"apiVersionInUri\":\"v1\",\"apiFullVersion\":"
     "\"1.2.0\"}],\"scheme\":\"https\",\"nfServiceStatus\":\"REGISTERED\"}]}",
     CT_JSON,
     "{\"nfInstanceId\":\"{uuid}\",\"nfType\":\"PCF\",\"nfStatus\":\"REGISTERED\","
     "\"heartBeatTimer\":10}",
     CT_JSON, "https://{pfqdn}:8443/nnrf-nfm/v1/nf-instances/{uuid}"},
};

static const nfsim_op_t nfsim_ops_sepp[] = {
    {"nudm-sdm", "GET", "/nudm-sdm/v2/{supi}/sm-data?single-nssai=%7B%22sst%22%3A1%7D&dnn=internet",
     "SMF", "UDM", 200, NULL, NULL,
     "[{\"singleNssai\":{\"sst\":1},\"dnnConfigurations\":{\"internet\":{\"pduSessionTypes\":{"
     "\"defaultSessionType\":\"IPV4\"},\"sscModes\":{\"defaultSscMode\":\"SSC_MODE_1\"},"
     "\"5gQosProfile\":{\"5qi\":9,\"arp\":{\"priorityLevel\":8,\"preemptCap\":\"NOT_PREEMPT\","
     "\"preemptVuln\":\"PREEMPTABLE\"}},\"sessionAmbr\":{\"uplink\":\"200 Mbps\",\"downlink\":"
     "\"500 Mbps\"}}}}]",
     CT_JSON, NULL},
    {"nausf-auth", "POST", "/nausf-auth/v1/ue-authentications", "AMF", "AUSF", 201,
     "{\"supiOrSuci\":\"{supi}\",\"servingNetworkName\":\"5G:mnc002.mcc208.3gppnetwork.org\"}",
     CT_JSON,
     "{\"authType\":\"5G_AKA\",\"5gAuthData\":{\"rand\":\"0a1b2c3d4e5f60718293a4b5c6d7e8f9\","
     "\"hxresStar\":\"e8f9a0b1c2d3e4f5061728394a5b6c7d\",\"autn\":"
     "\"5b6a79880f1e2d3c4b5a69781f2e3d4c\"}}",
     "application/3gppHal+json", "https://{pfqdn}:8443/nausf-auth/v1/ue-authentications/{id}"},
};

static const nfsim_op_t nfsim_ops_bsf[] = {
    {"nbsf-management", "POST", "/nbsf-management/v1/pcfBindings", "PCF", "BSF", 201,
     "{\"supi\":\"{supi}\",\"gpsi\":\"{gpsi}\",\"ipv4Addr\":\"{ip}\",\"dnn\":\"internet\","
     "\"pcfFqdn\":\"{cfqdn}\",\"pcfIpEndPoints\":[{\"ipv4Address\":\"10.30.5.1\",\"port\":8443}],"
     "\"snssai\":{\"sst\":1,\"sd\":\"000001\"}}",
     CT_JSON,
     "{\"supi\":\"{supi}\",\"gpsi\":\"{gpsi}\",\"ipv4Addr\":\"{ip}\",\"dnn\":\"internet\","
     "\"pcfFqdn\":\"{cfqdn}\",\"snssai\":{\"sst\":1,\"sd\":\"000001\"}}",
     CT_JSON, "https://{pfqdn}:8443/nbsf-management/v1/pcfBindings/{id}"},
    {"nbsf-management", "GET", "/nbsf-management/v1/pcfBindings?ipv4Addr={ip}&dnn=internet", "AF",
     "BSF", 200, NULL, NULL,
     "{\"supi\":\"{supi}\",\"gpsi\":\"{gpsi}\",\"ipv4Addr\":\"{ip}\",\"dnn\":\"internet\","
     "\"pcfFqdn\":\"pcf1.5gc.mnc001.mcc001.3gppnetwork.org\",\"snssai\":{\"sst\":1,\"sd\":"
     "\"000001\"}}",
     CT_JSON, NULL},
    {"nbsf-management", "DELETE", "/nbsf-management/v1/pcfBindings/{id}", "PCF", "BSF", 204, NULL,
     NULL, NULL, NULL, NULL},
};

static const nfsim_op_t nfsim_ops_pcf[] = {
    {"npcf-smpolicycontrol", "POST", "/npcf-smpolicycontrol/v1/sm-policies", "SMF", "PCF", 201,
     "{\"supi\":\"{supi}\",\"gpsi\":\"{gpsi}\",\"pduSessionId\":{n},\"pduSessionType\":\"IPV4\","
     "\"dnn\":\"internet\",\"notificationUri\":\"https://{cfqdn}:8443/npcf-callback/v1/{id}\","
     "\"ipv4Address\":\"{ip}\",\"sliceInfo\":{\"sst\":1,\"sd\":\"000001\"},\"servingNetwork\":{"
     "\"mcc\":\"001\",\"mnc\":\"01\"},\"ratType\":\"NR\",\"subsSessAmbr\":{\"uplink\":\"200 "
     "Mbps\",\"downlink\":\"500 Mbps\"},\"subsDefQos\":{\"5qi\":9,\"arp\":{\"priorityLevel\":8,"
     "\"preemptCap\":\"NOT_PREEMPT\",\"preemptVuln\":\"PREEMPTABLE\"}}}",
     CT_JSON,
     "{\"sessRules\":{\"sr-1\":{\"sessRuleId\":\"sr-1\",\"authSessAmbr\":{\"uplink\":\"200 Mbps\","
     "\"downlink\":\"500 Mbps\"},\"authDefQos\":{\"5qi\":9,\"arp\":{\"priorityLevel\":8,"
     "\"preemptCap\":\"NOT_PREEMPT\",\"preemptVuln\":\"PREEMPTABLE\"}}}},\"pccRules\":{"
     "\"pcc-1\":{\"pccRuleId\":\"pcc-1\",\"precedence\":255,\"flowInfos\":[{\"flowDescription\":"
     "\"permit out ip from any to assigned\"}]}},\"policyCtrlReqTriggers\":[\"PLMN_CH\","
     "\"RES_MO_RE\"]}",
     CT_JSON, "https://{pfqdn}:8443/npcf-smpolicycontrol/v1/sm-policies/{id}"},
    {"npcf-smpolicycontrol", "POST", "/npcf-smpolicycontrol/v1/sm-policies/{id}/update", "SMF",
     "PCF", 200,
     "{\"repPolicyCtrlReqTriggers\":[\"RES_MO_RE\"],\"ratType\":\"NR\",\"ueLocation\":{"
     "\"nrLocation\":{\"tai\":{\"plmnId\":{\"mcc\":\"001\",\"mnc\":\"01\"},\"tac\":\"000001\"},"
     "\"ncgi\":{\"plmnId\":{\"mcc\":\"001\",\"mnc\":\"01\"},\"nrCellId\":\"000000010\"}}}}",
     CT_JSON,
     "{\"policyCtrlReqTriggers\":[\"PLMN_CH\",\"RES_MO_RE\"],\"revalidationTime\":"
     "\"2026-12-01T00:00:00Z\"}",
     CT_JSON, NULL},
    {"npcf-am-policy-control", "POST", "/npcf-am-policy-control/v1/policies", "AMF", "PCF", 201,
     "{\"notificationUri\":\"https://{cfqdn}:8443/namf-callback/v1/am-policy/{id}\",\"supi\":"
     "\"{supi}\",\"gpsi\":\"{gpsi}\",\"accessType\":\"3GPP_ACCESS\",\"ratType\":\"NR\","
     "\"servingPlmn\":{\"mcc\":\"001\",\"mnc\":\"01\"},\"suppFeat\":\"0\"}",
     CT_JSON,
     "{\"rfsp\":1,\"servAreaRes\":{\"restrictionType\":\"ALLOWED_AREAS\"},\"suppFeat\":\"0\"}",
     CT_JSON, "https://{pfqdn}:8443/npcf-am-policy-control/v1/policies/{id}"},
    {"npcf-smpolicycontrol", "POST", "/npcf-smpolicycontrol/v1/sm-policies/{id}/delete", "SMF",
     "PCF", 204, "{}", CT_JSON, NULL, NULL, NULL},
};

static const struct {
    const nfsim_op_t *ops;
    size_t n;
} nfsim_ops_by_nf[NFSIM_NF__COUNT] = {
    [NFSIM_SCP] = {nfsim_ops_scp, sizeof nfsim_ops_scp / sizeof nfsim_ops_scp[0]},
    [NFSIM_NRF] = {nfsim_ops_nrf, sizeof nfsim_ops_nrf / sizeof nfsim_ops_nrf[0]},
    [NFSIM_SEPP] = {nfsim_ops_sepp, sizeof nfsim_ops_sepp / sizeof nfsim_ops_sepp[0]},
    [NFSIM_BSF] = {nfsim_ops_bsf, sizeof nfsim_ops_bsf / sizeof nfsim_ops_bsf[0]},
    [NFSIM_PCF] = {nfsim_ops_pcf, sizeof nfsim_ops_pcf / sizeof nfsim_ops_pcf[0]},
};

/* Error answers: status and the ProblemDetails cause (TS 29.500 / 29.571). */
static const struct {
    int status;
    const char *title;
    const char *cause;
} nfsim_errors[] = {
    {404, "Not Found", "USER_NOT_FOUND"},
    {403, "Forbidden", "UNSPECIFIED"},
    {400, "Bad Request", "MANDATORY_IE_MISSING"},
    {429, "Too Many Requests", "NF_CONGESTION_RISK"},
    {500, "Internal Server Error", "SYSTEM_FAILURE"},
    {503, "Service Unavailable", "NF_CONGESTION"},
};

/* The published profiles' message sizes. */
static const size_t nfsim_mix_sizes[] = {1941, 3400, 3769};

#define NFSIM_PAD_HEADER "x-ndd-sim-pad"
#define NFSIM_PAD_HEADER_MAX 8000 /* under the codec's 8192-byte field value limit */
#define NFSIM_TEXT_MAX 2048       /* expanded path, location, one header value */
#define NFSIM_BODY_NATURAL_MAX 8192
/* Padding is cut from this much SBI-like text at a random place: larger than what lz4 or zstd
 * see of one batch, so a compressed batch of copies shrinks about as much as real JSON bodies
 * (repeated field names, random identifiers), not like a run of one letter. */
#define NFSIM_PAD_POOL (1024 * 1024)

typedef struct nfsim_txn {
    nfsim_nf_t nf;
    const nfsim_op_t *op;
    char corr[80];
    size_t corr_len;
    char supi[32], gpsi[32], uuid[40], id[24], ip[20], n[8];
    char cfqdn[80], pfqdn[80];
    char caddr[32], paddr[32], xaddr[32]; /* consumer, producer, the copying proxy */
    int status;
    int err_idx; /* -1: success */
    size_t target;
    int next;
    int64_t last_ts;
} nfsim_txn_t;

struct nfsim_gen {
    nfsim_config_t cfg;
    char run_id[24];
    uint64_t rng;
    uint64_t seq;
    uint64_t txns;
    unsigned weight_total;
    nfsim_txn_t t;
    char path[NFSIM_TEXT_MAX];
    char location[NFSIM_TEXT_MAX];
    char body[NFSIM_BODY_NATURAL_MAX]; /* natural body of the current copy */
    size_t body_len;
    char *value; /* body + padding, NFSIM_MAX_SIZE + slack */
    size_t value_cap;
    char pad_hdr[NFSIM_PAD_HEADER_MAX + 1];
    char seq_text[24], ts_text[24];
    char *pad_pool; /* NFSIM_PAD_POOL bytes of text; NULL with cfg.pad_x */
};

/* ------------------------------------------------------------------------------ helpers */

static uint64_t nfsim_rand(nfsim_gen_t *g)
{
    /* xorshift64*: deterministic for a given --seed, fast, good enough for traffic shape. */
    uint64_t x = g->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    g->rng = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static double nfsim_unit(nfsim_gen_t *g)
{
    return (double)(nfsim_rand(g) >> 11) / 9007199254740992.0;
}

/* Field names of NF profiles, policies and subscription data: what repeats in SBI bodies. */
static const char *const nfsim_pad_names[] = {
    "nfInstanceId",
    "nfType",
    "nfStatus",
    "ipv4Addresses",
    "fqdn",
    "priority",
    "capacity",
    "load",
    "sNssais",
    "sst",
    "sd",
    "dnn",
    "supi",
    "gpsi",
    "pduSessionId",
    "ratType",
    "servingPlmn",
    "mcc",
    "mnc",
    "ueIpv4",
    "notifUri",
    "suppFeat",
    "policyCtrlReqTriggers",
    "sessRules",
    "pccRules",
    "qosDecs",
    "5qi",
    "arp",
    "maxbrUl",
    "maxbrDl",
    "chargingId",
};

/* One `name:value,` token of the padding text; value shapes as in SBI (uuid, address, number,
 * fqdn, hex). No quote or backslash: the text sits inside a JSON string. */
static size_t nfsim_pad_token(nfsim_gen_t *g, char *o, size_t room)
{
    size_t k = nfsim_rand(g) % (sizeof nfsim_pad_names / sizeof *nfsim_pad_names);
    uint64_t a = nfsim_rand(g), b = nfsim_rand(g);
    int n;
    switch (k % 5) {
    case 0:
        n = snprintf(o, room, "%s:%08x-%04x-4%03x-%04x-%012llx,", nfsim_pad_names[k], (unsigned)a,
                     (unsigned)(a >> 32) & 0xffff, (unsigned)(a >> 48) & 0xfff,
                     (unsigned)b & 0xffff, (unsigned long long)(b >> 16) & 0xffffffffffffULL);
        break;
    case 1:
        n = snprintf(o, room, "%s:10.%u.%u.%u,", nfsim_pad_names[k], (unsigned)(a & 255),
                     (unsigned)(a >> 8 & 255), (unsigned)(a >> 16 & 255));
        break;
    case 2:
        n = snprintf(o, room, "%s:%llu,", nfsim_pad_names[k], (unsigned long long)(a % 100000));
        break;
    case 3:
        n = snprintf(o, room, "%s:nf-%02u.%s.5gc.mnc%03u.mcc%03u.3gppnetwork.org,",
                     nfsim_pad_names[k], (unsigned)(a % 64), nfsim_nf_names[a % NFSIM_NF__COUNT],
                     (unsigned)(b % 1000), (unsigned)((b >> 10) % 1000));
        break;
    default:
        n = snprintf(o, room, "%s:%016llx%016llx,", nfsim_pad_names[k], (unsigned long long)a,
                     (unsigned long long)b);
    }
    return n > 0 && (size_t)n < room ? (size_t)n : 0;
}

static char *nfsim_pad_pool_new(nfsim_gen_t *g)
{
    char *p = malloc(NFSIM_PAD_POOL);
    size_t at = 0, n;
    if (!p)
        return NULL;
    while ((n = nfsim_pad_token(g, p + at, NFSIM_PAD_POOL - at)) > 0)
        at += n;
    memset(p + at, '0', NFSIM_PAD_POOL - at);
    return p;
}

/* n bytes of padding: a run of 'x', or text from random places of the pool. */
static void nfsim_pad(nfsim_gen_t *g, char *dst, size_t n)
{
    if (!g->pad_pool) {
        memset(dst, 'x', n);
        return;
    }
    while (n > 0) {
        size_t c = n < NFSIM_PAD_POOL / 2 ? n : NFSIM_PAD_POOL / 2;
        memcpy(dst, g->pad_pool + nfsim_rand(g) % (NFSIM_PAD_POOL - c), c);
        dst += c;
        n -= c;
    }
}

const char *nfsim_nf_name(nfsim_nf_t nf)
{
    return nf < NFSIM_NF__COUNT ? nfsim_nf_names[nf] : "?";
}

int nfsim_parse_mix(const char *s, unsigned weights[NFSIM_NF__COUNT], char *err, size_t errlen)
{
    memset(weights, 0, sizeof(unsigned) * NFSIM_NF__COUNT);
    unsigned total = 0;
    const char *p = s;
    while (p && *p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        size_t name_len = eq ? (size_t)(eq - p) : len;
        int nf = -1;
        for (int i = 0; i < NFSIM_NF__COUNT; i++)
            if (strlen(nfsim_nf_names[i]) == name_len &&
                strncasecmp(nfsim_nf_names[i], p, name_len) == 0)
                nf = i;
        if (nf < 0) {
            snprintf(err, errlen, "--nf-mix: unknown NF type \"%.*s\" (SCP, NRF, SEPP, BSF, PCF)",
                     (int)name_len, p);
            return -1;
        }
        unsigned long w = 1;
        if (eq) {
            char num[16] = "";
            size_t nl = len - name_len - 1;
            if (nl == 0 || nl >= sizeof num) {
                snprintf(err, errlen, "--nf-mix: bad weight for %s", nfsim_nf_names[nf]);
                return -1;
            }
            memcpy(num, eq + 1, nl);
            char *stop;
            w = strtoul(num, &stop, 10);
            if (*stop || w > 1000000) {
                snprintf(err, errlen, "--nf-mix: bad weight \"%s\" for %s", num,
                         nfsim_nf_names[nf]);
                return -1;
            }
        }
        weights[nf] = (unsigned)w;
        total += (unsigned)w;
        p = end ? end + 1 : NULL;
    }
    if (total == 0) {
        snprintf(err, errlen, "--nf-mix: no NF type with a weight above 0");
        return -1;
    }
    return 0;
}

/* Expands a template into out (cap bytes, NUL-terminated); returns the length. Unknown
 * tokens are copied as they are; output beyond cap is cut (templates are far smaller). */
static size_t nfsim_expand(const nfsim_txn_t *t, const char *tmpl, char *out, size_t cap)
{
    size_t o = 0;
    for (const char *p = tmpl; *p && o + 1 < cap;) {
        const char *val = NULL;
        size_t skip = 0;
        if (*p == '{') {
            static const char *const names[] = {"{supi}", "{gpsi}", "{uuid}",  "{id}",
                                                "{ip}",   "{n}",    "{cfqdn}", "{pfqdn}"};
            const char *vals[] = {t->supi, t->gpsi, t->uuid,  t->id,
                                  t->ip,   t->n,    t->cfqdn, t->pfqdn};
            for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
                size_t nl = strlen(names[i]);
                if (strncmp(p, names[i], nl) == 0) {
                    val = vals[i];
                    skip = nl;
                    break;
                }
            }
        }
        if (val) {
            size_t vl = strlen(val);
            if (o + vl >= cap)
                vl = cap - o - 1;
            memcpy(out + o, val, vl);
            o += vl;
            p += skip;
        } else {
            out[o++] = *p++;
        }
    }
    out[o] = '\0';
    return o;
}

static void nfsim_lower(char *s)
{
    for (; *s; s++)
        *s = (char)tolower((unsigned char)*s);
}

/* ------------------------------------------------------------------------- transactions */

static void nfsim_txn_begin(nfsim_gen_t *g)
{
    nfsim_txn_t *t = &g->t;
    unsigned pick = (unsigned)(nfsim_rand(g) % g->weight_total), acc = 0;
    t->nf = NFSIM_SCP;
    for (int i = 0; i < NFSIM_NF__COUNT; i++) {
        acc += g->cfg.weights[i];
        if (pick < acc) {
            t->nf = (nfsim_nf_t)i;
            break;
        }
    }
    t->op = &nfsim_ops_by_nf[t->nf].ops[nfsim_rand(g) % nfsim_ops_by_nf[t->nf].n];
    t->corr_len = (size_t)snprintf(t->corr, sizeof t->corr, "sim-%s-%llu", g->run_id,
                                   (unsigned long long)g->txns);
    uint64_t sub = nfsim_rand(g) % (g->cfg.subscribers ? g->cfg.subscribers : 1);
    snprintf(t->supi, sizeof t->supi, "imsi-00101%010llu", (unsigned long long)sub);
    snprintf(t->gpsi, sizeof t->gpsi, "msisdn-336%08llu", (unsigned long long)(sub % 100000000));
    uint64_t a = nfsim_rand(g), b = nfsim_rand(g);
    snprintf(t->uuid, sizeof t->uuid, "%08x-%04x-4%03x-a%03x-%012llx", (unsigned)(a >> 32),
             (unsigned)(a >> 16) & 0xffff, (unsigned)a & 0xfff, (unsigned)(b >> 52) & 0xfff,
             (unsigned long long)(b & 0xffffffffffffULL));
    snprintf(t->id, sizeof t->id, "%llu", (unsigned long long)(nfsim_rand(g) % 1000000000ULL));
    snprintf(t->ip, sizeof t->ip, "10.45.%u.%u", (unsigned)(sub >> 8) & 0xff, (unsigned)sub & 0xff);
    snprintf(t->n, sizeof t->n, "%u", (unsigned)(nfsim_rand(g) % 15) + 1);
    unsigned ci = (unsigned)(nfsim_rand(g) % 4) + 1, pi = (unsigned)(nfsim_rand(g) % 4) + 1;
    snprintf(t->cfqdn, sizeof t->cfqdn, "%s%u.5gc.mnc001.mcc001.3gppnetwork.org", t->op->consumer,
             ci);
    snprintf(t->pfqdn, sizeof t->pfqdn, "%s%u.5gc.mnc%s.mcc%s.3gppnetwork.org", t->op->producer, pi,
             t->nf == NFSIM_SEPP ? "002" : "001", t->nf == NFSIM_SEPP ? "208" : "001");
    nfsim_lower(t->cfqdn);
    nfsim_lower(t->pfqdn);
    snprintf(t->caddr, sizeof t->caddr, "10.10.%u.%u:%u", (unsigned)t->nf, ci,
             40000 + (unsigned)(nfsim_rand(g) % 20000));
    snprintf(t->paddr, sizeof t->paddr, "10.30.%u.%u:8443", (unsigned)t->nf, pi);
    snprintf(t->xaddr, sizeof t->xaddr, "10.20.%u.1:8443", (unsigned)t->nf);

    t->err_idx = -1;
    t->status = t->op->ok_status;
    if (g->cfg.error_rate > 0 && nfsim_unit(g) < g->cfg.error_rate) {
        t->err_idx = (int)(nfsim_rand(g) % (sizeof nfsim_errors / sizeof nfsim_errors[0]));
        t->status = nfsim_errors[t->err_idx].status;
    }
    switch (g->cfg.size_mode) {
    case NFSIM_SIZE_NATURAL:
        t->target = 0;
        break;
    case NFSIM_SIZE_FIXED:
        t->target = g->cfg.size;
        break;
    case NFSIM_SIZE_RANGE:
        t->target = g->cfg.size + (size_t)(nfsim_rand(g) % (g->cfg.size_max - g->cfg.size + 1));
        break;
    case NFSIM_SIZE_MIX: {
        size_t c = nfsim_mix_sizes[nfsim_rand(g) % 3];
        double j = 0.95 + 0.10 * nfsim_unit(g);
        t->target = (size_t)((double)c * j);
        break;
    }
    }
    t->next = 0;
    t->last_ts = 0;
    g->txns++;
}

/* Which copy: trigger point, message type, source and destination. */
static void nfsim_copy_role(const nfsim_gen_t *g, int idx, const char **trigger, bool *request,
                            const char **src, const char **dst)
{
    const nfsim_txn_t *t = &g->t;
    /* The copying NF is a proxy (SCP, SEPP) or, for NRF/BSF/PCF, the producer itself. */
    bool proxy = t->nf == NFSIM_SCP || t->nf == NFSIM_SEPP;
    const char *self = proxy ? t->xaddr : t->paddr;
    if (g->cfg.copies == 4) {
        static const char *const trig[4] = {"rx-request", "tx-request", "rx-response",
                                            "tx-response"};
        *trigger = trig[idx];
        *request = idx < 2;
        const char *s[4] = {t->caddr, self, t->paddr, self};
        const char *d[4] = {self, t->paddr, self, t->caddr};
        *src = s[idx];
        *dst = d[idx];
        return;
    }
    *trigger = idx == 0 ? "rx-request" : "tx-response";
    *request = idx == 0;
    *src = idx == 0 ? t->caddr : self;
    *dst = idx == 0 ? self : t->caddr;
}

static int nfsim_hdr(rd_kafka_headers_t *h, size_t *bytes, const char *name, const char *value)
{
    size_t nl = strlen(name), vl = strlen(value);
    *bytes += nl + vl;
    return rd_kafka_header_add(h, name, (ssize_t)nl, value, (ssize_t)vl) ? -1 : 0;
}

static int64_t nfsim_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

rd_kafka_headers_t *nfsim_next(nfsim_gen_t *g, nfsim_copy_t *out)
{
    nfsim_txn_t *t = &g->t;
    if (g->txns == 0 || t->next >= g->cfg.copies)
        nfsim_txn_begin(g);
    int idx = t->next++;
    const nfsim_op_t *op = t->op;
    const char *trigger, *src, *dst;
    bool request;
    nfsim_copy_role(g, idx, &trigger, &request, &src, &dst);

    rd_kafka_headers_t *h = rd_kafka_headers_new(24);
    if (!h)
        return NULL;
    size_t bytes = 0;
    int rc = 0;
    int64_t ts = nfsim_now_us();
    if (ts <= t->last_ts)
        ts = t->last_ts + 1;
    t->last_ts = ts;
    snprintf(g->ts_text, sizeof g->ts_text, "%lld", (long long)ts);
    snprintf(g->seq_text, sizeof g->seq_text, "%llu", (unsigned long long)g->seq);

    rc |= nfsim_hdr(h, &bytes, "@correlation-id", t->corr);
    rc |= nfsim_hdr(h, &bytes, "@timestamp-us", g->ts_text);
    rc |= nfsim_hdr(h, &bytes, "@message-type", request ? "request" : "response");
    rc |= nfsim_hdr(h, &bytes, "@trigger-point", trigger);
    rc |= nfsim_hdr(h, &bytes, "@nf-type", nfsim_nf_names[t->nf]);
    char inst[48];
    snprintf(inst, sizeof inst, "%s-%s-1", g->run_id, nfsim_nf_names[t->nf]);
    nfsim_lower(inst);
    rc |= nfsim_hdr(h, &bytes, "@nf-instance", inst);
    rc |= nfsim_hdr(h, &bytes, "@src-addr", src);
    rc |= nfsim_hdr(h, &bytes, "@dst-addr", dst);
    rc |= nfsim_hdr(h, &bytes, "@consumer-fqdn", t->cfqdn);
    rc |= nfsim_hdr(h, &bytes, "@producer-fqdn", t->pfqdn);
    rc |= nfsim_hdr(h, &bytes, "@seq", g->seq_text);

    const char *body_tmpl, *ct;
    if (request) {
        nfsim_expand(t, op->path, g->path, sizeof g->path);
        rc |= nfsim_hdr(h, &bytes, ":method", op->method);
        rc |= nfsim_hdr(h, &bytes, ":scheme", "https");
        char auth[96];
        snprintf(auth, sizeof auth, "%s:8443", t->pfqdn);
        rc |= nfsim_hdr(h, &bytes, ":authority", auth);
        rc |= nfsim_hdr(h, &bytes, ":path", g->path);
        char ua[112];
        snprintf(ua, sizeof ua, "%s-%s", op->consumer, t->cfqdn);
        rc |= nfsim_hdr(h, &bytes, "user-agent", ua);
        rc |= nfsim_hdr(h, &bytes, "accept", "application/json, application/problem+json");
        if (t->nf == NFSIM_SCP || t->nf == NFSIM_SEPP) {
            char root[112];
            snprintf(root, sizeof root, "https://%s:8443", t->pfqdn);
            rc |= nfsim_hdr(h, &bytes, "3gpp-sbi-target-apiroot", root);
        }
        body_tmpl = op->req_body;
        ct = op->req_ct;
    } else {
        char st[8];
        snprintf(st, sizeof st, "%d", t->status);
        rc |= nfsim_hdr(h, &bytes, ":status", st);
        char server[112];
        snprintf(server, sizeof server, "%s-%s", op->producer, t->pfqdn);
        rc |= nfsim_hdr(h, &bytes, "server", server);
        if (t->err_idx < 0 && t->status == 201 && op->location) {
            nfsim_expand(t, op->location, g->location, sizeof g->location);
            rc |= nfsim_hdr(h, &bytes, "location", g->location);
        }
        body_tmpl = t->err_idx < 0 ? op->rsp_body : NULL;
        ct = op->rsp_ct;
    }

    if (!request && t->err_idx >= 0) {
        g->body_len = (size_t)snprintf(
            g->body, sizeof g->body,
            "{\"type\":\"https://%s/problem\",\"title\":\"%s\",\"status\":%d,\"detail\":\"%s "
            "for %s\",\"cause\":\"%s\",\"instance\":\"%s\"}",
            t->pfqdn, nfsim_errors[t->err_idx].title, t->status, nfsim_errors[t->err_idx].cause,
            t->supi, nfsim_errors[t->err_idx].cause, g->path);
        ct = "application/problem+json";
    } else if (body_tmpl) {
        g->body_len = nfsim_expand(t, body_tmpl, g->body, sizeof g->body);
    } else {
        g->body_len = 0;
    }

    /* Padding up to the target size (key + value + headers). */
    size_t natural = t->corr_len + g->body_len + bytes + (g->body_len ? 12 + strlen(ct) : 0);
    size_t need = t->target > natural ? t->target - natural : 0;
    const char *value = g->body;
    size_t value_len = g->body_len;
    if (need > 0 && g->body_len == 0 && need <= NFSIM_PAD_HEADER_MAX + strlen(NFSIM_PAD_HEADER) &&
        need > strlen(NFSIM_PAD_HEADER)) {
        /* Bodiless message (GET, 204): pad in a header rather than invent a body. */
        size_t n = need - strlen(NFSIM_PAD_HEADER);
        nfsim_pad(g, g->pad_hdr, n);
        g->pad_hdr[n] = '\0';
        rc |= nfsim_hdr(h, &bytes, NFSIM_PAD_HEADER, g->pad_hdr);
    } else if (need > 0) {
        if (g->body_len == 0) {
            memcpy(g->body, "{}", 2);
            g->body_len = 2;
            ct = CT_JSON;
            need = need > 30 ? need - 30 : 0; /* "{}" + "content-type" + "application/json" */
        }
        /* Insert `,"nddSimPad":"xx…"` before the closing brace (or, in a JSON array, a
         * json-patch-like element), keeping the body valid JSON. */
        char last = g->body[g->body_len - 1];
        bool empty_obj = g->body_len == 2 && last == '}';
        const char *open = last == ']' ? ",{\"op\":\"add\",\"path\":\"/nddSimPad\",\"value\":\""
                           : empty_obj ? "\"nddSimPad\":\""
                                       : ",\"nddSimPad\":\"";
        const char *close = last == ']' ? "\"}" : "\"";
        size_t overhead = strlen(open) + strlen(close);
        size_t fill = need > overhead ? need - overhead : 0;
        if (fill > 0 && g->body_len + overhead + fill <= g->value_cap) {
            char *v = g->value;
            size_t o = g->body_len - 1;
            memcpy(v, g->body, o);
            memcpy(v + o, open, strlen(open));
            o += strlen(open);
            nfsim_pad(g, v + o, fill);
            o += fill;
            memcpy(v + o, close, strlen(close));
            o += strlen(close);
            v[o++] = last;
            value = v;
            value_len = o;
        } else {
            value = g->body;
            value_len = g->body_len;
        }
    }
    if (value_len > 0)
        rc |= nfsim_hdr(h, &bytes, "content-type", ct);
    if (rc) {
        rd_kafka_headers_destroy(h);
        return NULL;
    }

    out->nf = t->nf;
    out->topic_suffix = nfsim_nf_names[t->nf];
    out->key = t->corr;
    out->key_len = t->corr_len;
    out->value = value;
    out->value_len = value_len;
    out->size = t->corr_len + value_len + bytes;
    out->seq = g->seq++;
    out->index = idx;
    out->first = idx == 0;
    return h;
}

nfsim_gen_t *nfsim_gen_new(const nfsim_config_t *cfg, uint64_t seq_start, char *err, size_t errlen)
{
    if (cfg->copies != 2 && cfg->copies != 4) {
        snprintf(err, errlen, "--copies must be 2 or 4");
        return NULL;
    }
    if (cfg->size_mode == NFSIM_SIZE_FIXED && (cfg->size < 1 || cfg->size > NFSIM_MAX_SIZE)) {
        snprintf(err, errlen, "--size must be 1..%d bytes", NFSIM_MAX_SIZE);
        return NULL;
    }
    if (cfg->size_mode == NFSIM_SIZE_RANGE &&
        (cfg->size < 1 || cfg->size_max < cfg->size || cfg->size_max > NFSIM_MAX_SIZE)) {
        snprintf(err, errlen, "--size MIN-MAX wants 1 <= MIN <= MAX <= %d bytes", NFSIM_MAX_SIZE);
        return NULL;
    }
    unsigned total = 0;
    for (int i = 0; i < NFSIM_NF__COUNT; i++)
        total += cfg->weights[i];
    if (total == 0) {
        snprintf(err, errlen, "the NF mix has no NF type with a weight above 0");
        return NULL;
    }
    nfsim_gen_t *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    g->cfg = *cfg;
    g->weight_total = total;
    g->seq = seq_start;
    g->rng = cfg->seed ? cfg->seed : 0x9E3779B97F4A7C15ULL;
    for (int i = 0; i < 4; i++)
        nfsim_rand(g);
    if (cfg->run_id && *cfg->run_id)
        snprintf(g->run_id, sizeof g->run_id, "%.20s", cfg->run_id);
    else
        snprintf(g->run_id, sizeof g->run_id, "%08llx",
                 (unsigned long long)(nfsim_rand(g) & 0xffffffffULL));
    size_t largest = cfg->size_mode == NFSIM_SIZE_FIXED   ? cfg->size
                     : cfg->size_mode == NFSIM_SIZE_RANGE ? cfg->size_max
                                                          : 4096;
    g->value_cap = largest + NFSIM_BODY_NATURAL_MAX;
    g->value = malloc(g->value_cap);
    if (!cfg->pad_x)
        g->pad_pool = nfsim_pad_pool_new(g);
    if (!g->value || (!cfg->pad_x && !g->pad_pool)) {
        free(g->value);
        free(g->pad_pool);
        free(g);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    return g;
}

void nfsim_gen_free(nfsim_gen_t *g)
{
    if (!g)
        return;
    free(g->value);
    free(g->pad_pool);
    free(g);
}

uint64_t nfsim_transactions(const nfsim_gen_t *g)
{
    return g->txns;
}
