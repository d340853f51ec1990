/* API tokens. A token is "ndd_<id>_<secret>": the id (16 hex) finds the row, the secret
 * (256 random bits, 64 hex) is never stored; the database keeps a per-token random salt and
 * SHA-256(salt || secret). A stolen database therefore yields no usable token, and tokens are
 * shown exactly once, by `ndd-admin token create`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "admin.h"
#include "log.h"

#define ADMIN_TOKEN_ID_BYTES 8
#define ADMIN_TOKEN_SECRET_BYTES 32
#define ADMIN_TOKEN_SALT_BYTES 16

static void admin_hex(const unsigned char *p, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[p[i] >> 4];
        out[2 * i + 1] = digits[p[i] & 15];
    }
    out[2 * n] = '\0';
}

static int admin_unhex(const char *s, unsigned char *out, size_t max)
{
    size_t n = strlen(s);
    if (n % 2 || n / 2 > max)
        return -1;
    for (size_t i = 0; i < n / 2; i++) {
        unsigned v = 0;
        for (int j = 0; j < 2; j++) {
            char c = s[2 * i + j];
            v <<= 4;
            if (c >= '0' && c <= '9')
                v |= (unsigned)(c - '0');
            else if (c >= 'a' && c <= 'f')
                v |= (unsigned)(c - 'a' + 10);
            else
                return -1;
        }
        out[i] = (unsigned char)v;
    }
    return (int)(n / 2);
}

static int admin_token_hash(const unsigned char *salt, size_t saltlen, const char *secret,
                            unsigned char out[32])
{
    unsigned int len = 0;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    int ok = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1 &&
             EVP_DigestUpdate(md, salt, saltlen) == 1 &&
             EVP_DigestUpdate(md, secret, strlen(secret)) == 1 &&
             EVP_DigestFinal_ex(md, out, &len) == 1 && len == 32;
    EVP_MD_CTX_free(md);
    return ok ? 0 : -1;
}

int admin_token_generate(char *id_out, char *token_out, char *salt_hex, char *hash_hex)
{
    unsigned char id[ADMIN_TOKEN_ID_BYTES], secret[ADMIN_TOKEN_SECRET_BYTES],
        salt[ADMIN_TOKEN_SALT_BYTES], hash[32];
    char secret_hex[2 * ADMIN_TOKEN_SECRET_BYTES + 1];
    if (RAND_bytes(id, sizeof(id)) != 1 || RAND_bytes(secret, sizeof(secret)) != 1 ||
        RAND_bytes(salt, sizeof(salt)) != 1)
        return -1;
    admin_hex(id, sizeof(id), id_out);
    admin_hex(secret, sizeof(secret), secret_hex);
    admin_hex(salt, sizeof(salt), salt_hex);
    if (admin_token_hash(salt, sizeof(salt), secret_hex, hash) != 0)
        return -1;
    admin_hex(hash, sizeof(hash), hash_hex);
    sprintf(token_out, "ndd_%s_%s", id_out, secret_hex);
    OPENSSL_cleanse(secret, sizeof(secret));
    OPENSSL_cleanse(secret_hex, sizeof(secret_hex));
    return 0;
}

int admin_token_parse(const char *token, char *id_out, size_t idlen, const char **secret)
{
    if (!token || strncmp(token, "ndd_", 4) != 0)
        return -1;
    const char *id = token + 4, *us = strchr(id, '_');
    if (!us || (size_t)(us - id) != 2 * ADMIN_TOKEN_ID_BYTES || idlen <= (size_t)(us - id))
        return -1;
    for (const char *p = id; p < us; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return -1;
    if (strlen(us + 1) != 2 * ADMIN_TOKEN_SECRET_BYTES)
        return -1;
    memcpy(id_out, id, (size_t)(us - id));
    id_out[us - id] = '\0';
    *secret = us + 1;
    return 0;
}

/* Equal or not in a time that does not depend on where they differ (a token or its digest),
 * eight bytes a step: CRYPTO_memcmp goes a byte at a time, and comparing the connection's
 * remembered token was 3 % of an admin read's instructions. */
static bool ct_equal(const void *a, const void *b, size_t n)
{
    const unsigned char *x = a, *y = b;
    uint64_t d = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t u, v;
        memcpy(&u, x + i, 8);
        memcpy(&v, y + i, 8);
        d |= u ^ v;
    }
    for (; i < n; i++)
        d |= (uint64_t)(x[i] ^ y[i]);
    return d == 0;
}

bool admin_token_verify(const char *secret, const char *salt_hex, const char *hash_hex)
{
    unsigned char salt[64], want[32], got[32];
    int saltlen = admin_unhex(salt_hex, salt, sizeof(salt));
    if (saltlen <= 0 || admin_unhex(hash_hex, want, sizeof(want)) != 32)
        return false;
    if (admin_token_hash(salt, (size_t)saltlen, secret, got) != 0)
        return false;
    return ct_equal(want, got, 32);
}

admin_role_t admin_role_parse(const char *s)
{
    if (s && strcmp(s, "admin") == 0)
        return ADMIN_ROLE_ADMIN;
    if (s && strcmp(s, "viewer") == 0)
        return ADMIN_ROLE_VIEWER;
    return ADMIN_ROLE_NONE;
}

const char *admin_role_name(admin_role_t role)
{
    switch (role) {
    case ADMIN_ROLE_ADMIN:
        return "admin";
    case ADMIN_ROLE_VIEWER:
        return "viewer";
    default:
        return "none";
    }
}

/* ---- token cache ----
 * A verified token is remembered by a hash of the whole presented token string, so a hit
 * costs one SHA-256 and a compare, never a database round trip; an unknown id costs one
 * lookup. Entries expire after ttl_ms so that revocation takes effect. The digest of a hit
 * runs on a SHA-256 fetched once and a context reused across requests: EVP_Digest() with
 * EVP_sha256() fetches the algorithm and allocates a context on every call, which was most
 * of a read's token check (bench/admin/ir.sh). Only digests are kept, never a secret. */

typedef struct admin_token_entry {
    unsigned char digest[32]; /* SHA-256 of the presented token */
    admin_role_t role;
    char name[64];
    char id[32];
    int64_t expires_ms;
    bool used;
} admin_token_entry_t;

struct admin_tokens {
    admin_db_t *db;
    EVP_MD *sha256;    /* fetched once */
    EVP_MD_CTX *mdctx; /* reused: requests run on one thread */
    admin_token_entry_t *slots;
    size_t max;
    int64_t ttl_ms;
};

admin_tokens_t *admin_tokens_new(admin_db_t *db, size_t max, int64_t ttl_ms)
{
    admin_tokens_t *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->db = db;
    t->max = max ? max : 1024;
    t->ttl_ms = ttl_ms;
    t->slots = calloc(t->max, sizeof(*t->slots));
    t->sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
    t->mdctx = EVP_MD_CTX_new();
    if (!t->slots || !t->sha256 || !t->mdctx) {
        admin_tokens_free(t);
        return NULL;
    }
    return t;
}

void admin_tokens_free(admin_tokens_t *t)
{
    if (!t)
        return;
    if (t->slots)
        OPENSSL_cleanse(t->slots, t->max * sizeof(*t->slots));
    free(t->slots);
    EVP_MD_CTX_free(t->mdctx);
    EVP_MD_free(t->sha256);
    free(t);
}

static void admin_memo_keep(admin_token_memo_t *memo, const char *token, size_t tl,
                            const admin_principal_t *p, int64_t expires_ms)
{
    if (!memo)
        return;
    if (tl >= sizeof(memo->token)) {
        OPENSSL_cleanse(memo, sizeof(*memo));
        return;
    }
    memcpy(memo->token, token, tl);
    memo->len = tl;
    memo->role = p->role;
    memcpy(memo->name, p->name, sizeof(memo->name));
    memcpy(memo->id, p->token_id, sizeof(memo->id));
    memo->expires_ms = expires_ms;
}

void admin_tokens_authenticate_memo(admin_tokens_t *t, const char *authorization,
                                    admin_token_memo_t *memo, admin_principal_t *out)
{
    memset(out, 0, sizeof(*out));
    if (!t || !authorization || strncasecmp(authorization, "Bearer ", 7) != 0)
        return;
    const char *token = authorization + 7;
    while (*token == ' ')
        token++;
    size_t tl = strlen(token);
    if (memo && memo->len && memo->len == tl && memo->expires_ms > wall_now_ms() &&
        ct_equal(memo->token, token, tl)) {
        out->role = memo->role;
        memcpy(out->name, memo->name, sizeof(out->name));
        memcpy(out->token_id, memo->id, sizeof(out->token_id));
        return;
    }
    unsigned char digest[32];
    unsigned int dlen = 0;
    if (EVP_DigestInit_ex2(t->mdctx, t->sha256, NULL) != 1 ||
        EVP_DigestUpdate(t->mdctx, token, tl) != 1 ||
        EVP_DigestFinal_ex(t->mdctx, digest, &dlen) != 1 || dlen != 32)
        return;
    size_t slot = (((size_t)digest[0] << 8) | digest[1]) % t->max;
    admin_token_entry_t *e = &t->slots[slot];
    int64_t now = wall_now_ms();
    bool known = e->used && ct_equal(e->digest, digest, 32);
    if (known && e->expires_ms > now) {
        /* Same sizes, both NUL-terminated when stored: plain copies, no formatting. */
        out->role = e->role;
        memcpy(out->name, e->name, sizeof(out->name));
        memcpy(out->token_id, e->id, sizeof(out->token_id));
        admin_memo_keep(memo, token, tl, out, e->expires_ms);
        return;
    }
    char id[32], name[64], salt[65], hash[65];
    const char *secret;
    admin_role_t role;
    if (admin_token_parse(token, id, sizeof(id), &secret) != 0)
        return;
    int found = t->db ? admin_db_token_lookup(t->db, id, &role, name, sizeof(name), salt, hash) : 0;
    if (found < 0 && known) {
        /* PostgreSQL is unreachable: a token verified before keeps its role, so reads of
         * applied configuration go on (writes fail with 503 anyway). A revocation made
         * meanwhile takes effect when the database answers again. */
        out->role = e->role;
        snprintf(out->name, sizeof(out->name), "%s", e->name);
        snprintf(out->token_id, sizeof(out->token_id), "%s", e->id);
        return;
    }
    if (found < 0) {
        out->unverifiable = true;
        return;
    }
    if (found != 1)
        return;
    if (!admin_token_verify(secret, salt, hash))
        return;
    /* Direct-mapped: a colliding token simply evicts the previous one. */
    memcpy(e->digest, digest, 32);
    e->role = role;
    snprintf(e->name, sizeof(e->name), "%s", name);
    snprintf(e->id, sizeof(e->id), "%s", id);
    e->expires_ms = now + t->ttl_ms;
    e->used = true;
    out->role = role;
    snprintf(out->name, sizeof(out->name), "%s", name);
    snprintf(out->token_id, sizeof(out->token_id), "%s", id);
    admin_memo_keep(memo, token, tl, out, e->expires_ms);
}
