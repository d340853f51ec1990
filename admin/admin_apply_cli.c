/* `ndd-admin apply`: a thin client of POST /api/v1/apply (admin_apply.c, docs/api.md
 * "Declarative apply"). It reads FILE, or every *.json of DIR in name order merged into one
 * document, sends it over HTTP/1.1 (HTTPS with OpenSSL, the admin's certificate verified
 * against --ca-file or the system store) and prints the changes the admin reports.
 *
 * The token comes from --token-file or NDD_ADMIN_TOKEN and is never printed; its copies in
 * memory are wiped after the request. Exit codes: 0 applied (or reported, --dry-run), 1 refused
 * (by the admin, or the input or the connection failed), 2 usage. */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "admin.h"
#include "admin_server.h"
#include "tls.h"

#define APPLY_RESPONSE_MAX (64u * 1024u * 1024u)

typedef struct apply_opts {
    bool dry_run, prune, json;
    const char *url, *token_file, *ca_file, *cert_file, *key_file, *input;
    int timeout_s, wait_s;
    bool quiet_connect; /* while --wait retries: a refused connection is not reported */
} apply_opts_t;

/* Where an object of the merged document came from: origin[kind][i] = "FILE: feeds[k]". */
typedef struct apply_doc {
    json_t *doc;
    json_t *origin;
} apply_doc_t;

static const char apply_usage[] =
    "usage: ndd-admin apply [--dry-run] [--prune] [--url URL] [--token-file F] [--ca-file F]\n"
    "                       [--cert-file F --key-file F] [--timeout S] [--wait S] [--json]\n"
    "                       FILE|DIR\n"
    "  Creates or updates the feeds, filters, sources and correlation settings FILE names\n"
    "  (DIR: every *.json in it, merged), matched by name; --prune also deletes the objects\n"
    "  of those kinds that it does not name; --dry-run reports the changes, writes nothing.\n"
    "  URL: the admin (default $NDD_ADMIN_URL or http://127.0.0.1:9100); the token from\n"
    "  --token-file or $NDD_ADMIN_TOKEN. --wait S: retry for up to S seconds while the admin\n"
    "  refuses connections or answers 503 (starting). Exit 0 done, 1 refused, 2 usage.\n";

/* Appends file's collections to a->doc, remembering where each object came from. */
static int apply_merge_file(apply_doc_t *a, const char *path)
{
    json_error_t je;
    json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!j) {
        fprintf(stderr, "ndd-admin apply: %s: line %d column %d: %s\n", path, je.line, je.column,
                je.text);
        return -1;
    }
    int rc = 0;
    const char *key;
    json_t *v;
    admin_kind_t k;
    if (!json_is_object(j)) {
        fprintf(stderr, "ndd-admin apply: %s: expected a JSON object {\"feeds\": [...], ...}\n",
                path);
        rc = -1;
    }
    json_object_foreach(rc == 0 ? j : NULL, key, v)
    {
        if (admin_kind_from_collection(key, strlen(key), &k) != 0 || !json_is_array(v)) {
            fprintf(stderr,
                    "ndd-admin apply: %s: \"%s\": expected the arrays feeds, filters, sources "
                    "and correlation\n",
                    path, key);
            rc = -1;
            break;
        }
        json_t *to = json_object_get(a->doc, key), *from = json_object_get(a->origin, key);
        if (!to) {
            json_object_set_new(a->doc, key, to = json_array());
            json_object_set_new(a->origin, key, from = json_array());
        }
        size_t i;
        json_t *o;
        json_array_foreach(v, i, o)
        {
            char where[1024];
            snprintf(where, sizeof(where), "%s: %s[%zu]", path, key, i);
            json_array_append(to, o);
            json_array_append_new(from, json_string(where));
        }
    }
    json_decref(j);
    return rc;
}

static int apply_name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* FILE, or DIR's *.json files in name order. */
static int apply_load(apply_doc_t *a, const char *input)
{
    struct stat st;
    if (stat(input, &st) != 0) {
        fprintf(stderr, "ndd-admin apply: %s: %s\n", input, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode))
        return apply_merge_file(a, input);
    DIR *d = opendir(input);
    if (!d) {
        fprintf(stderr, "ndd-admin apply: %s: %s\n", input, strerror(errno));
        return -1;
    }
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l <= 5 || strcmp(e->d_name + l - 5, ".json") != 0 || e->d_name[0] == '.')
            continue;
        char **nn = realloc(names, (n + 1) * sizeof(*names));
        if (!nn)
            break;
        names = nn;
        names[n] = malloc(strlen(input) + l + 2);
        if (names[n])
            sprintf(names[n++], "%s/%s", input, e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof(*names), apply_name_cmp);
    int rc = n ? 0 : -1;
    if (!n)
        fprintf(stderr, "ndd-admin apply: %s: no *.json file in it\n", input);
    for (size_t i = 0; i < n; i++) {
        if (rc == 0)
            rc = apply_merge_file(a, names[i]);
        free(names[i]);
    }
    free(names);
    return rc;
}

/* The token: first line of --token-file, or NDD_ADMIN_TOKEN. */
static int apply_token(const apply_opts_t *o, char *tok, size_t len)
{
    if (o->token_file) {
        FILE *f = fopen(o->token_file, "r");
        if (!f || !fgets(tok, (int)len, f)) {
            fprintf(stderr, "ndd-admin apply: --token-file %s: %s\n", o->token_file,
                    f ? "empty" : strerror(errno));
            if (f)
                fclose(f);
            return -1;
        }
        fclose(f);
    } else if (getenv("NDD_ADMIN_TOKEN")) {
        snprintf(tok, len, "%s", getenv("NDD_ADMIN_TOKEN"));
    } else {
        fprintf(stderr, "ndd-admin apply: no token: give --token-file FILE or set "
                        "NDD_ADMIN_TOKEN\n");
        return -1;
    }
    tok[strcspn(tok, "\r\n")] = '\0';
    if (!tok[0] || strspn(tok, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") !=
                       strlen(tok)) {
        fprintf(stderr, "ndd-admin apply: the token is empty or not of the shape ndd_<id>_<secret>"
                        "\n");
        return -1;
    }
    return 0;
}

/* http[s]://host[:port][/prefix] */
typedef struct apply_url {
    bool tls;
    char host[256], port[8], prefix[512];
} apply_url_t;

static int apply_parse_url(const char *url, apply_url_t *u)
{
    memset(u, 0, sizeof(*u));
    const char *p;
    if (strncmp(url, "http://", 7) == 0)
        p = url + 7;
    else if (strncmp(url, "https://", 8) == 0) {
        p = url + 8;
        u->tls = true;
    } else
        return -1;
    const char *host_end;
    if (*p == '[') { /* [v6]:port */
        host_end = strchr(p, ']');
        if (!host_end)
            return -1;
        snprintf(u->host, sizeof(u->host), "%.*s", (int)(host_end - p - 1), p + 1);
        host_end++;
    } else {
        host_end = p + strcspn(p, ":/");
        snprintf(u->host, sizeof(u->host), "%.*s", (int)(host_end - p), p);
    }
    const char *path = host_end + strcspn(host_end, "/");
    if (*host_end == ':')
        snprintf(u->port, sizeof(u->port), "%.*s", (int)(path - host_end - 1), host_end + 1);
    else
        snprintf(u->port, sizeof(u->port), "%s", u->tls ? "443" : "80");
    size_t pl = strlen(path);
    while (pl && path[pl - 1] == '/')
        pl--;
    snprintf(u->prefix, sizeof(u->prefix), "%.*s", (int)pl, path);
    char *end;
    long port = strtol(u->port, &end, 10);
    return u->host[0] && *end == '\0' && port > 0 && port < 65536 ? 0 : -1;
}

static int apply_connect(const apply_url_t *u, int timeout_s, bool quiet)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res, *ai;
    int gai = getaddrinfo(u->host, u->port, &hints, &res);
    if (gai != 0) {
        fprintf(stderr, "ndd-admin apply: %s: %s\n", u->host, gai_strerror(gai));
        return -1;
    }
    int fd = -1, last = 0;
    for (ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
        if (fd < 0)
            continue;
        /* Every send, receive (and connect, on Linux) is bounded by the timeout. */
        struct timeval tv = {timeout_s, 0};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
            last = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0 && !quiet)
        fprintf(stderr, "ndd-admin apply: cannot connect to %s:%s: %s\n", u->host, u->port,
                strerror(last));
    return fd;
}

/* One connection, plain or TLS. */
typedef struct apply_conn {
    int fd;
    SSL_CTX *ctx;
    SSL *ssl;
} apply_conn_t;

static void apply_conn_close(apply_conn_t *c)
{
    if (c->ssl) {
        SSL_shutdown(c->ssl);
        SSL_free(c->ssl);
    }
    tls_ctx_free(c->ctx);
    if (c->fd >= 0)
        close(c->fd);
}

static int apply_conn_open(apply_conn_t *c, const apply_url_t *u, const apply_opts_t *o)
{
    memset(c, 0, sizeof(*c));
    c->fd = apply_connect(u, o->timeout_s, o->quiet_connect);
    if (c->fd < 0 || !u->tls)
        return c->fd < 0 ? -2 : 0;
    char err[512], endpoint[300];
    tls_config_t tc = {.ca_file = o->ca_file,
                       .cert_file = o->cert_file,
                       .key_file = o->key_file,
                       .alpn = "http/1.1"};
    snprintf(endpoint, sizeof(endpoint), "%s:%s", u->host, u->port);
    if (!(c->ctx = tls_client_ctx_new(&tc, err, sizeof(err))) ||
        !(c->ssl = tls_client_ssl_new(c->ctx, u->host, err, sizeof(err)))) {
        fprintf(stderr, "ndd-admin apply: TLS: %s\n", err);
        return -1;
    }
    SSL_set_fd(c->ssl, c->fd);
    int r = SSL_connect(c->ssl);
    if (r != 1) {
        fprintf(stderr, "ndd-admin apply: TLS handshake: %s\n",
                tls_describe_error(c->ssl, r, endpoint, err, sizeof(err)));
        return -1;
    }
    return 0;
}

static int apply_send(apply_conn_t *c, const char *b, size_t n)
{
    while (n > 0) {
        ssize_t w = c->ssl ? SSL_write(c->ssl, b, (int)(n > (1 << 30) ? 1 << 30 : n))
                           : send(c->fd, b, n, MSG_NOSIGNAL);
        if (w <= 0)
            return -1;
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Everything until the server closes (the request says Connection: close). */
static int apply_recv_all(apply_conn_t *c, buf_t *out)
{
    char tmp[16384];
    for (;;) {
        ssize_t r = c->ssl ? SSL_read(c->ssl, tmp, sizeof(tmp)) : recv(c->fd, tmp, sizeof(tmp), 0);
        if (r == 0 || (r < 0 && c->ssl && SSL_get_error(c->ssl, (int)r) == SSL_ERROR_ZERO_RETURN))
            return 0;
        if (r < 0)
            return out->len > 0 && c->ssl ? 0 : -1; /* a TLS peer may close without notify */
        if (buf_append(out, tmp, (size_t)r) != 0)
            return -1;
    }
}

/* Decodes a chunked body in place; its new length, or -1 when malformed. */
static long apply_dechunk(char *b, size_t n)
{
    size_t r = 0, w = 0;
    for (;;) {
        char *end;
        unsigned long len = strtoul(b + r, &end, 16);
        char *eol = memchr(b + r, '\n', n - r);
        if (end == b + r || !eol)
            return -1;
        r = (size_t)(eol - b) + 1;
        if (len == 0)
            return (long)w;
        if (len > n - r)
            return -1;
        memmove(b + w, b + r, len);
        w += len;
        r += len;
        while (r < n && (b[r] == '\r' || b[r] == '\n'))
            r++;
    }
}

/* "HTTP/1.1 200 OK\r\n…\r\n\r\nbody": the status, and the body as JSON (NULL when none). */
static int apply_parse_response(buf_t *raw, json_t **body)
{
    *body = NULL;
    if (buf_append(raw, "", 1) != 0)
        return -1;
    raw->len--;
    char *b = (char *)raw->data;
    int status = 0;
    if (sscanf(b, "HTTP/1.%*d %d", &status) != 1)
        return -1;
    char *sep = strstr(b, "\r\n\r\n");
    if (!sep)
        return -1;
    *sep = '\0';
    char *data = sep + 4;
    size_t n = raw->len - (size_t)(data - b);
    for (char *h = strstr(b, "\r\n"); h; h = strstr(h + 2, "\r\n")) {
        if (strncasecmp(h + 2, "Transfer-Encoding:", 18) == 0 && strstr(h + 20, "chunked")) {
            long l = apply_dechunk(data, n);
            if (l < 0)
                return -1;
            n = (size_t)l;
        } else if (strncasecmp(h + 2, "Content-Length:", 15) == 0) {
            size_t cl = strtoul(h + 17, NULL, 10);
            n = cl < n ? cl : n;
        }
    }
    *body = n ? json_loadb(data, n, 0, NULL) : NULL;
    return status;
}

/* POSTs doc to the admin: the HTTP status with *resp the JSON body, -2 when no connection
 * could be made, or -1. */
static int apply_post(const apply_opts_t *o, const char *token, json_t *doc, json_t **resp)
{
    apply_url_t u;
    if (apply_parse_url(o->url, &u) != 0) {
        fprintf(stderr, "ndd-admin apply: --url %s: expected http[s]://host[:port][/path]\n",
                o->url);
        return -1;
    }
    char *body = json_dumps(doc, JSON_COMPACT);
    buf_t req, raw;
    buf_init(&req, 0, APPLY_RESPONSE_MAX);
    buf_init(&raw, 0, APPLY_RESPONSE_MAX);
    int status = -1;
    apply_conn_t c = {.fd = -1};
    bool v6 = strchr(u.host, ':') != NULL;
    if (body &&
        buf_printf(&req,
                   "POST %s/api/v1/apply?dry_run=%s&prune=%s HTTP/1.1\r\nHost: %s%s%s:%s\r\n"
                   "Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
                   "Content-Length: %zu\r\nConnection: close\r\nUser-Agent: ndd-admin-apply\r\n"
                   "\r\n",
                   u.prefix, o->dry_run ? "true" : "false", o->prune ? "true" : "false",
                   v6 ? "[" : "", u.host, v6 ? "]" : "", u.port, token, strlen(body)) == 0 &&
        buf_append_str(&req, body) == 0 && (status = apply_conn_open(&c, &u, o)) == 0) {
        status = -1;
        if (apply_send(&c, (const char *)req.data, req.len) != 0 || apply_recv_all(&c, &raw) != 0)
            fprintf(stderr, "ndd-admin apply: %s: the request failed (%s)\n", o->url,
                    errno == EAGAIN ? "timed out" : strerror(errno));
        else if ((status = apply_parse_response(&raw, resp)) < 0)
            fprintf(stderr, "ndd-admin apply: %s: not an HTTP response\n", o->url);
        apply_conn_close(&c);
    } else if (!body || req.len == 0) {
        fprintf(stderr, "ndd-admin apply: out of memory\n");
    } else {
        apply_conn_close(&c);
    }
    OPENSSL_cleanse(req.data, req.cap); /* it held the token */
    buf_free(&req);
    buf_free(&raw);
    free(body);
    return status;
}

static void apply_print_value(const char *label, json_t *v)
{
    char *s = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    printf("%s%s", label, s ? s : "(absent)");
    free(s);
}

/* One line per object, and its changed paths for an update (for every change with
 * --dry-run); then the counts. */
static void apply_print(const apply_opts_t *o, json_t *r)
{
    static const char *const actions[] = {"create", "update", "delete", "unchanged"};
    int counts[4] = {0};
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(r, "changes"), i, c)
    {
        const char *action = json_string_value(json_object_get(c, "action"));
        for (int a = 0; a < 4; a++)
            counts[a] += action && strcmp(action, actions[a]) == 0;
        printf("%-9s %s %s\n", action ? action : "?", json_string_value(json_object_get(c, "kind")),
               json_string_value(json_object_get(c, "name")));
        if (!action || strcmp(action, "unchanged") == 0 ||
            (!o->dry_run && strcmp(action, "update") != 0))
            continue;
        size_t j;
        json_t *d;
        json_array_foreach(json_object_get(c, "diff"), j, d)
        {
            printf("    %s: ", json_string_value(json_object_get(d, "path")));
            apply_print_value("", json_object_get(d, "before"));
            apply_print_value(" -> ", json_object_get(d, "after"));
            printf("\n");
        }
    }
    if (o->dry_run)
        printf("dry run (nothing written): %d to create, %d to update, %d to delete, %d "
               "unchanged\n",
               counts[0], counts[1], counts[2], counts[3]);
    else
        printf("applied: %d created, %d updated, %d deleted, %d unchanged\n", counts[0], counts[1],
               counts[2], counts[3]);
}

/* The admin's refusal, with the file and index the object came from. */
static void apply_print_refusal(int status, json_t *r, json_t *origin)
{
    const char *field = json_string_value(json_object_get(r, "field"));
    const char *reason = json_string_value(json_object_get(r, "reason"));
    const char *error = json_string_value(json_object_get(r, "error"));
    fprintf(stderr, "ndd-admin apply: refused (%d%s%s)%s%s: %s\n", status, error ? " " : "",
            error ? error : "", field && *field ? " at " : "", field ? field : "",
            reason ? reason : "no reason given");
    char coll[32];
    size_t idx;
    if (field && sscanf(field, "%31[a-z][%zu]", coll, &idx) == 2) {
        const char *where = json_string_value(json_array_get(json_object_get(origin, coll), idx));
        if (where)
            fprintf(stderr, "  (the object %s)\n", where);
    }
    if (status < 300 || !field)
        return;
    fprintf(stderr, "nothing was applied\n");
}

static int apply_options(int argc, char **argv, apply_opts_t *o)
{
    static const struct option longopts[] = {
        {"dry-run", no_argument, NULL, 'n'},        {"prune", no_argument, NULL, 'p'},
        {"url", required_argument, NULL, 'u'},      {"token-file", required_argument, NULL, 't'},
        {"ca-file", required_argument, NULL, 'c'},  {"cert-file", required_argument, NULL, 'C'},
        {"key-file", required_argument, NULL, 'K'}, {"timeout", required_argument, NULL, 'T'},
        {"json", no_argument, NULL, 'j'},           {"wait", required_argument, NULL, 'w'},
        {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0}};
    *o = (apply_opts_t){.url = getenv("NDD_ADMIN_URL"), .timeout_s = 30};
    if (!o->url || !*o->url)
        o->url = "http://127.0.0.1:9100";
    optind = 1;
    int ch;
    while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (ch) {
        case 'n':
            o->dry_run = true;
            break;
        case 'p':
            o->prune = true;
            break;
        case 'u':
            o->url = optarg;
            break;
        case 't':
            o->token_file = optarg;
            break;
        case 'c':
            o->ca_file = optarg;
            break;
        case 'C':
            o->cert_file = optarg;
            break;
        case 'K':
            o->key_file = optarg;
            break;
        case 'T':
            o->timeout_s = atoi(optarg);
            break;
        case 'j':
            o->json = true;
            break;
        case 'w':
            o->wait_s = atoi(optarg);
            break;
        case 'h':
            fputs(apply_usage, stdout);
            return 1;
        default:
            fputs(apply_usage, stderr);
            return -1;
        }
    }
    if (optind != argc - 1 || o->timeout_s < 1 || o->wait_s < 0 || !o->cert_file != !o->key_file) {
        fprintf(stderr, "%s%s",
                optind != argc - 1 ? "ndd-admin apply: one FILE or DIR\n"
                : o->timeout_s < 1 ? "ndd-admin apply: --timeout: seconds >= 1\n"
                                   : "ndd-admin apply: --cert-file and --key-file "
                                     "go together\n",
                apply_usage);
        return -1;
    }
    o->input = argv[optind];
    return 0;
}

/* apply_post, retried every 500 ms for up to --wait seconds while the admin cannot be reached
 * or answers 503 (PostgreSQL not there yet); the last attempt reports its failure. */
static int apply_send_waiting(apply_opts_t *o, const char *token, json_t *doc, json_t **resp)
{
    int64_t t0 = mono_now_ms();
    for (;;) {
        int64_t ms = mono_now_ms() - t0;
        bool last = ms >= (int64_t)o->wait_s * 1000;
        o->quiet_connect = !last;
        int status = apply_post(o, token, doc, resp);
        if (last || (status != -2 && status != 503))
            return status == -2 ? -1 : status;
        json_decref(*resp);
        *resp = NULL;
        usleep(500 * 1000);
    }
}

int admin_apply_command(int argc, char **argv)
{
    apply_opts_t o;
    int rc = apply_options(argc, argv, &o);
    if (rc != 0)
        return rc > 0 ? 0 : 2;
    char token[256];
    if (apply_token(&o, token, sizeof(token)) != 0)
        return 2;
    apply_doc_t a = {json_object(), json_object()};
    json_t *resp = NULL;
    int status = apply_load(&a, o.input) == 0 ? apply_send_waiting(&o, token, a.doc, &resp) : -1;
    OPENSSL_cleanse(token, sizeof(token));
    rc = 1;
    if (status == 200 && json_is_array(json_object_get(resp, "changes"))) {
        if (o.json) {
            json_dumpf(resp, stdout, JSON_INDENT(2));
            printf("\n");
        } else {
            apply_print(&o, resp);
        }
        rc = 0;
    } else if (status >= 200 && status < 300) {
        fprintf(stderr,
                "ndd-admin apply: %s answered %d without an apply report: is it an "
                "ndd-admin?\n",
                o.url, status);
    } else if (status > 0) {
        apply_print_refusal(status, resp, a.origin);
    }
    json_decref(resp);
    json_decref(a.doc);
    json_decref(a.origin);
    return rc;
}
