/* TLS helpers on OpenSSL 3: client and server SSL_CTX from files, peer verification on by
 * default, TLS 1.2 minimum by default, ALPN, SNI + hostname verification, mTLS, and error
 * text that says why a handshake failed ("certificate verify failed: unable to get local
 * issuer certificate (endpoint 127.0.0.1:8443)").
 *
 * Secrets: a key passphrase is read from a file (key_password_file) only, wiped after use,
 * and never logged; error texts name files, never their contents. */
#ifndef NDD_TLS_H
#define NDD_TLS_H

#include <stdbool.h>
#include <stddef.h>

#include <openssl/ssl.h>

/* Settings of one TLS context. A zero-initialised struct is the secure default: peer verified,
 * TLS 1.2 minimum, system trust store (client) when ca_file is NULL. */
typedef struct tls_config {
    const char *ca_file;           /* PEM trust anchors; NULL: system default paths */
    const char *cert_file;         /* PEM certificate (chain); required for a server */
    const char *key_file;          /* PEM private key; required with cert_file */
    const char *key_password_file; /* file whose first line is the key passphrase; optional */
    bool insecure_no_verify;       /* turn OFF peer verification (tests, explicit opt-out) */
    bool require_client_cert;      /* server: mTLS, refuse clients without a cert from ca_file */
    int min_version;               /* TLS1_2_VERSION when 0; e.g. TLS1_3_VERSION */
    int max_version;               /* 0: highest supported */
    /* ALPN protocols, comma separated in preference order, e.g. "h2" or "h2,http/1.1".
     * Client: offered. Server: the first of the server's list the client also offers is
     * selected; a client offering none of them gets no ALPN (the handshake still succeeds,
     * the caller checks tls_alpn_is). NULL: no ALPN. */
    const char *alpn;
} tls_config_t;

/* Client context. Returns NULL with a reason in err (naming the file at fault). */
SSL_CTX *tls_client_ctx_new(const tls_config_t *cfg, char *err, size_t errlen);
/* Server context: cert_file and key_file required; with require_client_cert also ca_file. */
SSL_CTX *tls_server_ctx_new(const tls_config_t *cfg, char *err, size_t errlen);
void tls_ctx_free(SSL_CTX *ctx);

/* A client SSL for one connection to `host` (a DNS name or an IP literal, may be NULL):
 * sets SNI (names only, not IPs) and, unless the context was made with insecure_no_verify,
 * requires the peer certificate to match host (X509_VERIFY_PARAM_set1_host / _ip_asc).
 * The caller attaches the fd/BIO (or gives it to bufferevent_openssl). */
SSL *tls_client_ssl_new(SSL_CTX *ctx, const char *host, char *err, size_t errlen);
SSL *tls_server_ssl_new(SSL_CTX *ctx, char *err, size_t errlen);

/* true when the negotiated ALPN protocol equals `proto`, e.g. tls_alpn_is(ssl, "h2"). */
bool tls_alpn_is(const SSL *ssl, const char *proto);

/* Drains the thread's OpenSSL error queue into buf as one readable line ("" when empty) and
 * returns buf. */
const char *tls_last_error(char *buf, size_t len);

/* Why a handshake/read/write failed, as one line for a log or a DLQ reason: combines
 * SSL_get_error(ssl, ret), the verify result and the OpenSSL error queue (drained), with
 * the endpoint name appended, e.g.
 * "certificate verify failed: unable to get local issuer certificate (endpoint h:443)".
 * ret is the return value of the failed SSL_* call. Returns buf. */
const char *tls_describe_error(const SSL *ssl, int ret, const char *endpoint, char *buf,
                               size_t len);

#endif
