/* What the tests of a daemon run as a child process share (ndd-aggregation, ndd-correlation):
 * a private temp dir for its log and port file, waiting for a line in its log, reading the
 * HTTP port it bound, and a clean stop. */
#ifndef NDD_DAEMON_TESTUTIL_H
#define NDD_DAEMON_TESTUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Creates a fresh private directory /tmp/<name>.<6 random characters> (mkdtemp) and writes
 * its path into dir. 0, or -1 when it cannot. */
int dtu_tmpdir_make(char *dir, size_t dir_size, const char *name);
/* Deletes the files of dir and dir itself, unless env NDD_TEST_KEEP_LOGS is set (then says
 * on stderr where the logs are). */
void dtu_tmpdir_remove(const char *dir);

/* Number of lines of the log at path that hold needle (0 when there is no log yet). */
int dtu_log_count(const char *path, const char *needle);
/* True once the log at path holds needle (waits up to timeout_ms); says on stderr when not. */
bool dtu_log_wait(const char *path, const char *needle, int timeout_ms);

/* Stops the daemon *pid with SIGTERM (waiting up to timeout_ms) and sets *pid to 0: true
 * when it exited by itself with status 0, false (said on stderr) otherwise. */
bool dtu_stop_clean(pid_t *pid, int timeout_ms);

/* The port a daemon wrote to its --http.port-file (waits up to timeout_ms); 0 when none. */
uint16_t dtu_port_file_wait(const char *path, int timeout_ms);

/* With env NDD_TEST_ALLINONE set (the "_in_ndd" registration of a test, tests/CMakeLists.txt),
 * a test's daemons run as roles of ndd, the all-in-one: the spawn helpers (ktu_spawn,
 * atu_spawn) hand a daemon's command line to dtu_allinone_argv, which writes the same
 * settings as ndd's configuration file and gives `ndd --config FILE` in its place. The test
 * then checks the same things of the role in ndd as of the daemon alone. */
bool dtu_allinone(void);
/* argv of ndd-aggregation, -correlation, -adapter, -admin, -ingress or -gui-api: the file is
 * written (beside log_path, else in /tmp: its path in file) and out gets ndd's argv (out[0..3],
 * pointing into file). 1 when translated, 0 when argv is no daemon of ndd's (or a
 * subcommand such as `ndd-admin token`), -1 when the file cannot be written (said on
 * stderr). The daemon's options map as ndd's file says (docs/ndd.md): bootstrap, log.* and
 * kafka.* at the top (every role gets them), http.* at the top for a role that answers on
 * ndd's server, --nf-type X as nf-types [X]; NDD_PG (env, or env_extra "NDD_PG=...") becomes
 * the admin role's pg, since a role reads no environment. */
int dtu_allinone_argv(char *const argv[], char *const env_extra[], const char *log_path, char *file,
                      size_t file_size, char *out[4]);

#endif
