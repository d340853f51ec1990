/* A throwaway PKI for TLS tests, made programmatically with OpenSSL (EC P-256 keys) in a
 * fresh temp dir: a test CA, a server certificate for localhost / 127.0.0.1 / ::1, a client
 * certificate, the same server key encrypted with a passphrase (and the passphrase file), and
 * a second, unrelated CA with its own server certificate (the "unknown CA" case). */
#ifndef NDD_TLS_TESTUTIL_H
#define NDD_TLS_TESTUTIL_H

#define TLS_TESTUTIL_PATH 512

typedef struct tls_testutil_pki {
    char dir[TLS_TESTUTIL_PATH - 64];
    char ca_cert[TLS_TESTUTIL_PATH];
    char server_cert[TLS_TESTUTIL_PATH];
    char server_key[TLS_TESTUTIL_PATH];
    char server_key_encrypted[TLS_TESTUTIL_PATH];
    char server_key_password_file[TLS_TESTUTIL_PATH];
    char client_cert[TLS_TESTUTIL_PATH];
    char client_key[TLS_TESTUTIL_PATH];
    char other_ca_cert[TLS_TESTUTIL_PATH];
    char other_server_cert[TLS_TESTUTIL_PATH];
    char other_server_key[TLS_TESTUTIL_PATH];
} tls_testutil_pki_t;

/* Creates the files under a new directory in $TMPDIR (or /tmp). 0, or -1 with a message on
 * stderr. */
int tls_testutil_make_pki(tls_testutil_pki_t *pki);
/* Deletes the files and the directory. */
void tls_testutil_remove_pki(tls_testutil_pki_t *pki);

#endif
