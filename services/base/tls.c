/* TLS contexts and error text on OpenSSL 3 (API: tls.h). */
#include "tls.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

/* The server's ALPN list in wire format, kept with the SSL_CTX (ex_data, freed with it). */
typedef struct tls_alpn {
    unsigned int len;
    unsigned char wire[];
} tls_alpn_t;

static int tls_alpn_index = -1;
static CRYPTO_ONCE tls_once = CRYPTO_ONCE_STATIC_INIT;

static void tls_alpn_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl,
                          void *argp)
{
    free(ptr);
}

static void tls_init_once(void)
{
    tls_alpn_index = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, tls_alpn_free);
}

const char *tls_last_error(char *buf, size_t len)
{
    size_t off = 0;
    unsigned long e;
    if (len == 0)
        return buf;
    buf[0] = '\0';
    while ((e = ERR_get_error()) != 0) {
        char one[256];
        const char *reason = ERR_reason_error_string(e);
        if (reason)
            snprintf(one, sizeof one, "%s", reason);
        else
            ERR_error_string_n(e, one, sizeof one);
        /* Same reason twice in a row says nothing new. */
        if (off > 0 && strstr(buf, one) != NULL)
            continue;
        int n = snprintf(buf + off, len - off, "%s%s", off ? "; " : "", one);
        if (n < 0 || (size_t)n >= len - off) {
            off = len - 1;
            break;
        }
        off += (size_t)n;
    }
    return buf;
}

/* "h2,http/1.1" -> wire format (length-prefixed). Returns length or -1. */
static int alpn_wire(const char *list, unsigned char *out, size_t cap)
{
    size_t o = 0;
    const char *p = list;
    while (*p) {
        const char *c = strchr(p, ',');
        size_t n = c ? (size_t)(c - p) : strlen(p);
        while (n > 0 && *p == ' ') {
            p++;
            n--;
        }
        while (n > 0 && p[n - 1] == ' ')
            n--;
        if (n == 0 || n > 255 || o + 1 + n > cap)
            return -1;
        out[o++] = (unsigned char)n;
        memcpy(out + o, p, n);
        o += n;
        if (!c)
            break;
        p = c + 1;
    }
    return o > 0 ? (int)o : -1;
}

/* Reads the first line of a passphrase file into dst; the caller cleanses it. */
static int read_secret_file(const char *path, char *dst, size_t cap, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "cannot open key password file %s", path);
        return -1;
    }
    if (!fgets(dst, (int)cap, f)) {
        dst[0] = '\0';
    }
    fclose(f);
    size_t n = strlen(dst);
    while (n > 0 && (dst[n - 1] == '\n' || dst[n - 1] == '\r'))
        dst[--n] = '\0';
    return 0;
}

static int passwd_cb(char *buf, int size, int rwflag, void *u)
{
    const char *pw = u;
    size_t n = pw ? strlen(pw) : 0;
    if (n == 0 || n > (size_t)size)
        return -1;
    memcpy(buf, pw, n);
    return (int)n;
}

/* Shared part of client and server contexts: versions, trust, certificate and key. */
static SSL_CTX *ctx_common(const SSL_METHOD *method, const tls_config_t *cfg, bool server,
                           char *err, size_t errlen)
{
    char ebuf[256];
    CRYPTO_THREAD_run_once(&tls_once, tls_init_once);
    ERR_clear_error();
    SSL_CTX *ctx = SSL_CTX_new(method);
    if (!ctx) {
        snprintf(err, errlen, "SSL_CTX_new: %s", tls_last_error(ebuf, sizeof ebuf));
        return NULL;
    }
    int minv = cfg->min_version ? cfg->min_version : TLS1_2_VERSION;
    if (!SSL_CTX_set_min_proto_version(ctx, minv) ||
        (cfg->max_version && !SSL_CTX_set_max_proto_version(ctx, cfg->max_version))) {
        snprintf(err, errlen, "bad TLS version bounds: %s", tls_last_error(ebuf, sizeof ebuf));
        goto fail;
    }
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
    SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_ENABLE_PARTIAL_WRITE |
                              SSL_MODE_RELEASE_BUFFERS);

    if (cfg->ca_file) {
        if (SSL_CTX_load_verify_locations(ctx, cfg->ca_file, NULL) != 1) {
            snprintf(err, errlen, "cannot load CA file %s: %s", cfg->ca_file,
                     tls_last_error(ebuf, sizeof ebuf));
            goto fail;
        }
    } else if (!server && SSL_CTX_set_default_verify_paths(ctx) != 1) {
        snprintf(err, errlen, "cannot load the system trust store: %s",
                 tls_last_error(ebuf, sizeof ebuf));
        goto fail;
    }

    if (cfg->cert_file || cfg->key_file) {
        if (!cfg->cert_file || !cfg->key_file) {
            snprintf(err, errlen, "cert_file and key_file go together (got only %s)",
                     cfg->cert_file ? "cert_file" : "key_file");
            goto fail;
        }
        if (SSL_CTX_use_certificate_chain_file(ctx, cfg->cert_file) != 1) {
            snprintf(err, errlen, "cannot load certificate %s: %s", cfg->cert_file,
                     tls_last_error(ebuf, sizeof ebuf));
            goto fail;
        }
        char pw[1024];
        pw[0] = '\0';
        if (cfg->key_password_file &&
            read_secret_file(cfg->key_password_file, pw, sizeof pw, err, errlen) != 0)
            goto fail;
        /* Always our callback: OpenSSL's default would prompt on the terminal. */
        SSL_CTX_set_default_passwd_cb(ctx, passwd_cb);
        SSL_CTX_set_default_passwd_cb_userdata(ctx, pw);
        int ok = SSL_CTX_use_PrivateKey_file(ctx, cfg->key_file, SSL_FILETYPE_PEM);
        /* The passphrase lives only for the load. */
        OPENSSL_cleanse(pw, sizeof pw);
        SSL_CTX_set_default_passwd_cb_userdata(ctx, NULL);
        if (ok != 1) {
            snprintf(err, errlen, "cannot load private key %s: %s", cfg->key_file,
                     tls_last_error(ebuf, sizeof ebuf));
            goto fail;
        }
        if (SSL_CTX_check_private_key(ctx) != 1) {
            snprintf(err, errlen, "private key %s does not match certificate %s", cfg->key_file,
                     cfg->cert_file);
            ERR_clear_error();
            goto fail;
        }
    }
    return ctx;
fail:
    SSL_CTX_free(ctx);
    return NULL;
}

SSL_CTX *tls_client_ctx_new(const tls_config_t *cfg, char *err, size_t errlen)
{
    SSL_CTX *ctx = ctx_common(TLS_client_method(), cfg, false, err, errlen);
    if (!ctx)
        return NULL;
    SSL_CTX_set_verify(ctx, cfg->insecure_no_verify ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, NULL);
    if (cfg->alpn) {
        unsigned char wire[256];
        int n = alpn_wire(cfg->alpn, wire, sizeof wire);
        /* SSL_CTX_set_alpn_protos returns 0 on success (unlike most of OpenSSL). */
        if (n < 0 || SSL_CTX_set_alpn_protos(ctx, wire, (unsigned int)n) != 0) {
            snprintf(err, errlen, "bad ALPN list \"%s\"", cfg->alpn);
            SSL_CTX_free(ctx);
            return NULL;
        }
    }
    return ctx;
}

static int alpn_select_cb(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                          const unsigned char *in, unsigned int inlen, void *arg)
{
    const tls_alpn_t *a = SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), tls_alpn_index);
    if (!a)
        return SSL_TLSEXT_ERR_NOACK;
    unsigned char *sel = NULL;
    unsigned char sel_len = 0;
    /* Server preference order: the first of our protocols the client also offers. */
    if (SSL_select_next_proto(&sel, &sel_len, a->wire, a->len, in, inlen) != OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_NOACK;
    *out = sel;
    *outlen = sel_len;
    return SSL_TLSEXT_ERR_OK;
}

SSL_CTX *tls_server_ctx_new(const tls_config_t *cfg, char *err, size_t errlen)
{
    if (!cfg->cert_file || !cfg->key_file) {
        snprintf(err, errlen, "a TLS server needs cert_file and key_file");
        return NULL;
    }
    if (cfg->require_client_cert && !cfg->ca_file) {
        snprintf(err, errlen, "require_client_cert needs ca_file (the CA clients are signed by)");
        return NULL;
    }
    SSL_CTX *ctx = ctx_common(TLS_server_method(), cfg, true, err, errlen);
    if (!ctx)
        return NULL;
    if (cfg->require_client_cert) {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
        STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(cfg->ca_file);
        if (names)
            SSL_CTX_set_client_CA_list(ctx, names);
        ERR_clear_error();
    } else {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    }
    if (cfg->alpn) {
        tls_alpn_t *a = malloc(sizeof *a + 256);
        int n = a ? alpn_wire(cfg->alpn, a->wire, 256) : -1;
        if (n < 0 || !SSL_CTX_set_ex_data(ctx, tls_alpn_index, a)) {
            snprintf(err, errlen, "bad ALPN list \"%s\"", cfg->alpn);
            free(a);
            SSL_CTX_free(ctx);
            return NULL;
        }
        a->len = (unsigned int)n;
        SSL_CTX_set_alpn_select_cb(ctx, alpn_select_cb, NULL);
    }
    /* One server context serves many connections: resumption helps reconnect storms. */
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
    static const unsigned char sid_ctx[] = "ndd";
    SSL_CTX_set_session_id_context(ctx, sid_ctx, sizeof sid_ctx - 1);
    return ctx;
}

void tls_ctx_free(SSL_CTX *ctx)
{
    SSL_CTX_free(ctx);
}

static bool is_ip_literal(const char *host)
{
    unsigned char tmp[16];
    return inet_pton(AF_INET, host, tmp) == 1 || inet_pton(AF_INET6, host, tmp) == 1;
}

SSL *tls_client_ssl_new(SSL_CTX *ctx, const char *host, char *err, size_t errlen)
{
    char ebuf[256];
    SSL *ssl = SSL_new(ctx);
    if (!ssl) {
        snprintf(err, errlen, "SSL_new: %s", tls_last_error(ebuf, sizeof ebuf));
        return NULL;
    }
    if (host && *host) {
        bool ip = is_ip_literal(host);
        if (!ip && SSL_set_tlsext_host_name(ssl, host) != 1) {
            snprintf(err, errlen, "cannot set SNI %s: %s", host, tls_last_error(ebuf, sizeof ebuf));
            SSL_free(ssl);
            return NULL;
        }
        if (SSL_CTX_get_verify_mode(ctx) & SSL_VERIFY_PEER) {
            X509_VERIFY_PARAM *vp = SSL_get0_param(ssl);
            X509_VERIFY_PARAM_set_hostflags(vp, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
            int ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(vp, host)
                        : X509_VERIFY_PARAM_set1_host(vp, host, 0);
            if (ok != 1) {
                snprintf(err, errlen, "cannot set expected peer name %s: %s", host,
                         tls_last_error(ebuf, sizeof ebuf));
                SSL_free(ssl);
                return NULL;
            }
        }
    }
    return ssl;
}

SSL *tls_server_ssl_new(SSL_CTX *ctx, char *err, size_t errlen)
{
    char ebuf[256];
    SSL *ssl = SSL_new(ctx);
    if (!ssl)
        snprintf(err, errlen, "SSL_new: %s", tls_last_error(ebuf, sizeof ebuf));
    return ssl;
}

/* The selected ALPN protocol after the handshake (not NUL-terminated); false when none. */
static bool tls_alpn_selected(const SSL *ssl, const unsigned char **proto, unsigned int *len)
{
    const unsigned char *p = NULL;
    unsigned int n = 0;
    SSL_get0_alpn_selected(ssl, &p, &n);
    if (!p || n == 0)
        return false;
    if (proto)
        *proto = p;
    if (len)
        *len = n;
    return true;
}

bool tls_alpn_is(const SSL *ssl, const char *proto)
{
    const unsigned char *p;
    unsigned int n;
    return tls_alpn_selected(ssl, &p, &n) && n == strlen(proto) && memcmp(p, proto, n) == 0;
}

const char *tls_describe_error(const SSL *ssl, int ret, const char *endpoint, char *buf, size_t len)
{
    char q[384];
    char what[512];
    int e = ssl ? SSL_get_error(ssl, ret) : SSL_ERROR_SSL;
    tls_last_error(q, sizeof q);
    long vr = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;

    if (ssl && vr != X509_V_OK && (e == SSL_ERROR_SSL || strstr(q, "verify") != NULL)) {
        /* The queue says "certificate verify failed"; the verify result says why. */
        snprintf(what, sizeof what, "certificate verify failed: %s",
                 X509_verify_cert_error_string(vr));
    } else if (e == SSL_ERROR_SSL) {
        snprintf(what, sizeof what, "%s", q[0] ? q : "TLS protocol error");
    } else if (e == SSL_ERROR_SYSCALL) {
        if (q[0])
            snprintf(what, sizeof what, "%s", q);
        else if (ret == 0)
            snprintf(what, sizeof what, "connection closed by peer during TLS");
        else
            snprintf(what, sizeof what, "I/O error during TLS");
    } else if (e == SSL_ERROR_ZERO_RETURN) {
        snprintf(what, sizeof what, "TLS connection closed by peer");
    } else if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        snprintf(what, sizeof what, "TLS operation would block");
    } else {
        snprintf(what, sizeof what, "TLS error %d%s%s", e, q[0] ? ": " : "", q);
    }
    if (endpoint && *endpoint)
        snprintf(buf, len, "%s (endpoint %s)", what, endpoint);
    else
        snprintf(buf, len, "%s", what);
    return buf;
}
