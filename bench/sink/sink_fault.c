/* ndd-sink fault injection: what the next request gets, and the control document.
 *
 * POST /control (JSON, every member optional, applied in one go):
 *   {"status":503,"count":10}                 answer 503 to the next 10 requests/frames
 *   {"status":429,"retry_after":2,"duration_ms":5000}   ... for 5 s, with Retry-After: 2
 *   {"delay_ms":200,"count":50}               delay the answer of the next 50 (or
 *   {"delay_ms":200,"duration_ms":3000}       for 3 s, or without either: until reset)
 *   {"close":true}                            close every data connection now
 *   {"close":true,"count":3}                  the next 3 requests: close without answering
 *   {"refuse_s":5}                            stop listening for 5 s (connect refused)
 *   {"reset":true}                            clear every fault
 * A status without count or duration applies until reset. */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "sink.h"

void sink_fault_next(sink_fault_t *f, double now, sink_verdict_t *v)
{
    memset(v, 0, sizeof *v);
    if (f->drop_left > 0) {
        f->drop_left--;
        v->drop = true;
        return;
    }
    if (f->status) {
        bool by_time = f->status_until > 0;
        if (by_time && now >= f->status_until) {
            f->status = 0;
        } else if (!by_time && f->status_left == 0) {
            f->status = 0;
        } else {
            v->status = f->status;
            v->retry_after_s = f->retry_after_s;
            if (f->status_left > 0 && --f->status_left == 0 && !by_time)
                f->status = 0;
        }
    }
    if (f->delay_ms) {
        bool by_time = f->delay_until > 0;
        if (by_time && now >= f->delay_until) {
            f->delay_ms = 0;
        } else if (!by_time && f->delay_left == 0) {
            f->delay_ms = 0;
        } else {
            v->delay_ms = f->delay_ms;
            if (f->delay_left > 0 && --f->delay_left == 0 && !by_time)
                f->delay_ms = 0;
        }
    }
}

static int get_int(json_t *o, const char *name, long long lo, long long hi, long long *out,
                   bool *present, char *err, size_t errlen)
{
    json_t *v = json_object_get(o, name);
    *present = v != NULL;
    if (!v)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        snprintf(err, errlen, "\"%s\" must be an integer in [%lld, %lld]", name, lo, hi);
        return -1;
    }
    *out = json_integer_value(v);
    return 0;
}

int sink_fault_apply_json(sink_fault_t *f, const char *text, size_t len, double now,
                          double *refuse_s, bool *close_now, char *err, size_t errlen)
{
    json_error_t je;
    *refuse_s = 0;
    *close_now = false;
    json_t *o = json_loadb(text, len, 0, &je);
    if (!o || !json_is_object(o)) {
        snprintf(err, errlen, "control body must be a JSON object: %s",
                 o ? "not an object" : je.text);
        json_decref(o);
        return -1;
    }
    static const char *known[] = {"status",   "count", "duration_ms", "retry_after",
                                  "delay_ms", "close", "refuse_s",    "reset"};
    const char *key;
    json_t *val;
    json_object_foreach(o, key, val)
    {
        bool ok = false;
        for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
            ok |= strcmp(key, known[i]) == 0;
        if (!ok) {
            snprintf(err, errlen, "unknown control member \"%s\"", key);
            json_decref(o);
            return -1;
        }
    }
    long long status = 0, count = 0, dur = 0, ra = 0, delay = 0, refuse = 0;
    bool has_status, has_count, has_dur, has_ra, has_delay, has_refuse;
    if (get_int(o, "status", 100, 599, &status, &has_status, err, errlen) ||
        get_int(o, "count", 1, 1000000000LL, &count, &has_count, err, errlen) ||
        get_int(o, "duration_ms", 1, 86400000LL, &dur, &has_dur, err, errlen) ||
        get_int(o, "retry_after", 0, 86400, &ra, &has_ra, err, errlen) ||
        get_int(o, "delay_ms", 0, 600000, &delay, &has_delay, err, errlen) ||
        get_int(o, "refuse_s", 1, 3600, &refuse, &has_refuse, err, errlen)) {
        json_decref(o);
        return -1;
    }
    json_t *reset = json_object_get(o, "reset");
    json_t *close = json_object_get(o, "close");
    if ((reset && !json_is_boolean(reset)) || (close && !json_is_boolean(close))) {
        snprintf(err, errlen, "\"reset\" and \"close\" must be booleans");
        json_decref(o);
        return -1;
    }
    if (has_count && has_dur) {
        snprintf(err, errlen, "give \"count\" or \"duration_ms\", not both");
        json_decref(o);
        return -1;
    }
    if (reset && json_is_true(reset))
        memset(f, 0, sizeof *f);
    if (has_status) {
        f->status = (int)status;
        f->status_left = has_count ? count : -1;
        f->status_until = has_dur ? now + (double)dur / 1000.0 : 0;
        f->retry_after_s = has_ra ? (int)ra : 0;
    }
    if (has_delay) {
        f->delay_ms = (int)delay;
        f->delay_left = has_count ? count : -1;
        f->delay_until = has_dur ? now + (double)dur / 1000.0 : 0;
    }
    if (close && json_is_true(close)) {
        if (has_count)
            f->drop_left = count;
        else
            *close_now = true;
    }
    if (has_refuse) {
        f->refuse_until = now + (double)refuse;
        *refuse_s = (double)refuse;
    }
    json_decref(o);
    return 0;
}

int sink_fault_to_json(const sink_fault_t *f, double now, buf_t *out)
{
    return buf_printf(
        out,
        "{\"status\":%d,\"status_left\":%lld,\"status_remaining_ms\":%.0f,"
        "\"retry_after\":%d,\"delay_ms\":%d,\"delay_left\":%lld,"
        "\"delay_remaining_ms\":%.0f,\"drop_left\":%lld,\"refuse_remaining_ms\":%.0f}",
        f->status, (long long)f->status_left,
        f->status_until > now ? (f->status_until - now) * 1000 : 0, f->retry_after_s, f->delay_ms,
        (long long)f->delay_left, f->delay_until > now ? (f->delay_until - now) * 1000 : 0,
        (long long)f->drop_left, f->refuse_until > now ? (f->refuse_until - now) * 1000 : 0);
}
