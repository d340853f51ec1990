/* Test PKI generation (see tls_testutil.h). */
#include "tls_testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#define TLS_TESTUTIL_PASSWORD "test-passphrase-not-secret"

static EVP_PKEY *make_key(void)
{
    return EVP_EC_gen("P-256");
}

static int add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
    X509_EXTENSION *ex = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    if (!ex)
        return -1;
    int ok = X509_add_ext(cert, ex, -1);
    X509_EXTENSION_free(ex);
    return ok ? 0 : -1;
}

/* A certificate for key signed by (issuer, issuer_key); self-signed when issuer is NULL. */
static X509 *make_cert(EVP_PKEY *key, const char *cn, X509 *issuer, EVP_PKEY *issuer_key, int is_ca,
                       const char *san, const char *eku, long serial)
{
    X509 *c = X509_new();
    if (!c)
        return NULL;
    X509_set_version(c, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(c), serial);
    X509_gmtime_adj(X509_getm_notBefore(c), -3600);
    X509_gmtime_adj(X509_getm_notAfter(c), 7L * 24 * 3600);
    X509_set_pubkey(c, key);
    X509_NAME *name = X509_get_subject_name(c);
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"NDD tests", -1, -1,
                               0);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509 *iss = issuer ? issuer : c;
    X509_set_issuer_name(c, X509_get_subject_name(iss));
    int rc = 0;
    if (is_ca) {
        rc |= add_ext(c, iss, NID_basic_constraints, "critical,CA:TRUE");
        rc |= add_ext(c, iss, NID_key_usage, "critical,keyCertSign,cRLSign");
    } else {
        rc |= add_ext(c, iss, NID_basic_constraints, "critical,CA:FALSE");
        rc |= add_ext(c, iss, NID_key_usage, "critical,digitalSignature");
        if (eku)
            rc |= add_ext(c, iss, NID_ext_key_usage, eku);
    }
    rc |= add_ext(c, iss, NID_subject_key_identifier, "hash");
    if (issuer)
        rc |= add_ext(c, iss, NID_authority_key_identifier, "keyid:always");
    if (san)
        rc |= add_ext(c, iss, NID_subject_alt_name, san);
    if (rc != 0 || !X509_sign(c, issuer_key ? issuer_key : key, EVP_sha256())) {
        X509_free(c);
        return NULL;
    }
    return c;
}

static int write_cert(const char *path, X509 *c)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int ok = PEM_write_X509(f, c);
    fclose(f);
    return ok ? 0 : -1;
}

static int write_key(const char *path, EVP_PKEY *k, const char *password)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int ok;
    if (password)
        ok = PEM_write_PrivateKey(f, k, EVP_aes_128_cbc(), (unsigned char *)password,
                                  (int)strlen(password), NULL, NULL);
    else
        ok = PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL);
    fclose(f);
    return ok ? 0 : -1;
}

static void path_in(char *dst, const tls_testutil_pki_t *pki, const char *file)
{
    snprintf(dst, TLS_TESTUTIL_PATH, "%s/%s", pki->dir, file);
}

int tls_testutil_make_pki(tls_testutil_pki_t *pki)
{
    memset(pki, 0, sizeof *pki);
    const char *tmp = getenv("TMPDIR");
    snprintf(pki->dir, sizeof pki->dir, "%s/ndd-pki-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(pki->dir)) {
        fprintf(stderr, "tls_testutil: mkdtemp %s failed\n", pki->dir);
        return -1;
    }
    path_in(pki->ca_cert, pki, "ca.pem");
    path_in(pki->server_cert, pki, "server.pem");
    path_in(pki->server_key, pki, "server.key");
    path_in(pki->server_key_encrypted, pki, "server-encrypted.key");
    path_in(pki->server_key_password_file, pki, "server-key.password");
    path_in(pki->client_cert, pki, "client.pem");
    path_in(pki->client_key, pki, "client.key");
    path_in(pki->other_ca_cert, pki, "other-ca.pem");
    path_in(pki->other_server_cert, pki, "other-server.pem");
    path_in(pki->other_server_key, pki, "other-server.key");

    int rc = -1;
    EVP_PKEY *ca_key = make_key(), *srv_key = make_key(), *cli_key = make_key();
    EVP_PKEY *oca_key = make_key(), *osrv_key = make_key();
    X509 *ca = NULL, *srv = NULL, *cli = NULL, *oca = NULL, *osrv = NULL;
    const char *san = "DNS:localhost,IP:127.0.0.1,IP:::1";
    if (!ca_key || !srv_key || !cli_key || !oca_key || !osrv_key)
        goto out;
    ca = make_cert(ca_key, "NDD test CA", NULL, NULL, 1, NULL, NULL, 1);
    srv = ca ? make_cert(srv_key, "localhost", ca, ca_key, 0, san, "serverAuth", 2) : NULL;
    cli = ca ? make_cert(cli_key, "ndd-test-client", ca, ca_key, 0, NULL, "clientAuth", 3) : NULL;
    oca = make_cert(oca_key, "Unrelated test CA", NULL, NULL, 1, NULL, NULL, 1);
    osrv = oca ? make_cert(osrv_key, "localhost", oca, oca_key, 0, san, "serverAuth", 2) : NULL;
    if (!ca || !srv || !cli || !oca || !osrv)
        goto out;
    FILE *pw = fopen(pki->server_key_password_file, "w");
    if (!pw)
        goto out;
    fprintf(pw, "%s\n", TLS_TESTUTIL_PASSWORD);
    fclose(pw);
    if (write_cert(pki->ca_cert, ca) || write_cert(pki->server_cert, srv) ||
        write_key(pki->server_key, srv_key, NULL) ||
        write_key(pki->server_key_encrypted, srv_key, TLS_TESTUTIL_PASSWORD) ||
        write_cert(pki->client_cert, cli) || write_key(pki->client_key, cli_key, NULL) ||
        write_cert(pki->other_ca_cert, oca) || write_cert(pki->other_server_cert, osrv) ||
        write_key(pki->other_server_key, osrv_key, NULL))
        goto out;
    rc = 0;
out:
    if (rc != 0)
        fprintf(stderr, "tls_testutil: cannot create the test PKI in %s\n", pki->dir);
    X509_free(ca);
    X509_free(srv);
    X509_free(cli);
    X509_free(oca);
    X509_free(osrv);
    EVP_PKEY_free(ca_key);
    EVP_PKEY_free(srv_key);
    EVP_PKEY_free(cli_key);
    EVP_PKEY_free(oca_key);
    EVP_PKEY_free(osrv_key);
    if (rc != 0)
        tls_testutil_remove_pki(pki);
    return rc;
}

void tls_testutil_remove_pki(tls_testutil_pki_t *pki)
{
    const char *files[] = {pki->ca_cert,
                           pki->server_cert,
                           pki->server_key,
                           pki->server_key_encrypted,
                           pki->server_key_password_file,
                           pki->client_cert,
                           pki->client_key,
                           pki->other_ca_cert,
                           pki->other_server_cert,
                           pki->other_server_key};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        if (files[i][0])
            unlink(files[i]);
    if (pki->dir[0])
        rmdir(pki->dir);
}
