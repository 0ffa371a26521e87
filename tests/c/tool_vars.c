/* MPI_T's variables. On any MPICH-ABI library: every control variable, performance variable and
 * category enumerates, finds itself by name, and reads; strings follow MPICH's length rules;
 * bad indices, names, handles, sessions and null outputs get MPICH 4.0.2's error codes (read
 * from its library: MPI_T_ERR_INVALID_INDEX, _INVALID_NAME, _INVALID_HANDLE, _INVALID_SESSION,
 * _INVALID for a null output or a negative length). On Billboard also: every BB_ tunable is a
 * cvar whose value is the environment's or its default, read-only ones refuse a write
 * (MPI_T_ERR_CVAR_SET_NEVER) and writable ones take it; a collective switch is an enumeration
 * that forces an algorithm; the per-peer byte and message counters rise by exactly what was
 * sent and received while started, and stop, reset, readreset and write act as MPI 4.0 says;
 * the unexpected-queue length counts the messages waiting. Any N >= 1. */
#include "common.h"

#define CHECK_RC(call, want) CHECK_EQ((call), (want), #call)

static int cvar_index(const char *name)
{
    int i = -1;
    CHECK_EQ(MPI_T_cvar_get_index(name, &i), MPI_SUCCESS, name);
    return i;
}

static int pvar_index(const char *name, int cls)
{
    int i = -1;
    CHECK_EQ(MPI_T_pvar_get_index(name, cls, &i), MPI_SUCCESS, name);
    return i;
}

/* Every variable and category enumerates and finds itself by name. */
static void enumerate(void)
{
    int ncvar = -1, npvar = -1, ncat = -1;
    CHECK_RC(MPI_T_cvar_get_num(&ncvar), MPI_SUCCESS);
    CHECK_RC(MPI_T_pvar_get_num(&npvar), MPI_SUCCESS);
    CHECK_RC(MPI_T_category_get_num(&ncat), MPI_SUCCESS);
    for (int i = 0; i < ncvar; i++) {
        char name[256], desc[1024];
        int nl = sizeof name, dl = sizeof desc, verbosity, bind, scope, idx = -1;
        MPI_Datatype dt;
        MPI_T_enum e;
        CHECK_RC(MPI_T_cvar_get_info(i, name, &nl, &verbosity, &dt, &e, desc, &dl, &bind, &scope), MPI_SUCCESS);
        CHECK(nl == (int)strlen(name) + 1 && nl > 1, "cvar %d: name_len %d for '%s'", i, nl, name);
        CHECK_RC(MPI_T_cvar_get_index(name, &idx), MPI_SUCCESS);
        CHECK(idx == i, "cvar '%s' at %d found at %d", name, i, idx);
        CHECK(scope >= MPI_T_SCOPE_CONSTANT && scope <= MPI_T_SCOPE_ALL_EQ, "cvar %s: scope %d", name, scope);
        if ((dt == MPI_INT || dt == MPI_UNSIGNED || dt == MPI_UNSIGNED_LONG) && bind == MPI_T_BIND_NO_OBJECT) {
            MPI_T_cvar_handle h;
            int count = -1;
            unsigned long value[64];
            CHECK_RC(MPI_T_cvar_handle_alloc(i, NULL, &h, &count), MPI_SUCCESS);
            CHECK(count >= 1 && count <= 64, "cvar %s: count %d", name, count);
            CHECK_RC(MPI_T_cvar_read(h, value), MPI_SUCCESS);
            CHECK_RC(MPI_T_cvar_handle_free(&h), MPI_SUCCESS);
            CHECK(h == MPI_T_CVAR_HANDLE_NULL, "cvar handle not null after free");
        }
    }
    for (int i = 0; i < npvar; i++) {
        char name[256];
        int nl = sizeof name, verbosity, cls, bind, ro, cont, atomic, idx = -1;
        MPI_Datatype dt;
        MPI_T_enum e;
        CHECK_RC(MPI_T_pvar_get_info(i, name, &nl, &verbosity, &cls, &dt, &e, NULL, NULL, &bind, &ro, &cont, &atomic),
                 MPI_SUCCESS);
        CHECK_RC(MPI_T_pvar_get_index(name, cls, &idx), MPI_SUCCESS);
        CHECK(idx == i, "pvar '%s' at %d found at %d", name, i, idx);
    }
    int listed = 0;
    for (int c = 0; c < ncat; c++) {
        char name[256];
        int nl = sizeof name, nc = -1, np = -1, nsub = -1, idx = -1;
        CHECK_RC(MPI_T_category_get_info(c, name, &nl, NULL, NULL, &nc, &np, &nsub), MPI_SUCCESS);
        CHECK_RC(MPI_T_category_get_index(name, &idx), MPI_SUCCESS);
        CHECK(idx == c, "category '%s' at %d found at %d", name, c, idx);
        int *cv = malloc(sizeof(int) * (nc + 1)), *pv = malloc(sizeof(int) * (np + 1));
        CHECK_RC(MPI_T_category_get_cvars(c, nc, cv), MPI_SUCCESS);
        CHECK_RC(MPI_T_category_get_pvars(c, np, pv), MPI_SUCCESS);
        for (int k = 0; k < nc; k++)
            CHECK(cv[k] >= 0 && cv[k] < ncvar, "category %s lists cvar %d of %d", name, cv[k], ncvar);
        for (int k = 0; k < np; k++)
            CHECK(pv[k] >= 0 && pv[k] < npvar, "category %s lists pvar %d of %d", name, pv[k], npvar);
        listed += nc;
        free(cv);
        free(pv);
    }
    if (t_on_billboard())
        CHECK(listed == ncvar, "categories list %d cvars of %d", listed, ncvar);
}

/* MPICH's codes for what does not exist or is not there. */
static void error_codes(void)
{
    int n, idx = -5, count;
    char name[64];
    int nl = sizeof name, verbosity, bind, scope, dl = 0;
    MPI_Datatype dt;
    MPI_T_enum e;
    MPI_T_cvar_handle ch = MPI_T_CVAR_HANDLE_NULL;
    MPI_T_pvar_handle ph = MPI_T_PVAR_HANDLE_NULL;
    MPI_T_pvar_session s, none = MPI_T_PVAR_SESSION_NULL;
    CHECK_RC(MPI_T_cvar_get_num(&n), MPI_SUCCESS);
    CHECK_RC(MPI_T_cvar_get_info(-1, name, &nl, &verbosity, &dt, &e, NULL, &dl, &bind, &scope),
             MPI_T_ERR_INVALID_INDEX);
    CHECK_RC(MPI_T_cvar_get_info(n, name, &nl, &verbosity, &dt, &e, NULL, &dl, &bind, &scope),
             MPI_T_ERR_INVALID_INDEX);
    if (n > 0) {
        /* Length only, then a short buffer: MPICH's rules. */
        int need = 0, full = sizeof name;
        char first[64];
        CHECK_RC(MPI_T_cvar_get_info(0, NULL, &need, &verbosity, &dt, &e, NULL, &dl, &bind, &scope), MPI_SUCCESS);
        CHECK_RC(MPI_T_cvar_get_info(0, first, &full, &verbosity, &dt, &e, NULL, NULL, &bind, &scope), MPI_SUCCESS);
        CHECK_EQ(need, (int)strlen(first) + 1, "name length asked with a zero length");
        CHECK(dl > 1, "description length asked with a zero length: %d", dl);
        nl = 5;
        CHECK_RC(MPI_T_cvar_get_info(0, name, &nl, &verbosity, &dt, &e, NULL, NULL, &bind, &scope), MPI_SUCCESS);
        CHECK(nl == 5 && strlen(name) == 4 && strncmp(name, first, 4) == 0, "short name '%s' (%d)", name, nl);
    }
    CHECK_RC(MPI_T_cvar_get_index("no_such_cvar", &idx), MPI_T_ERR_INVALID_NAME);
    CHECK_EQ(idx, -5, "MPI_T_cvar_get_index changed the index of an unknown name");
    CHECK_RC(MPI_T_cvar_get_index(NULL, &idx), MPI_T_ERR_INVALID);
    CHECK_RC(MPI_T_pvar_get_index("no_such_pvar", MPI_T_PVAR_CLASS_COUNTER, &idx), MPI_T_ERR_INVALID_NAME);
    CHECK_RC(MPI_T_pvar_get_index(NULL, MPI_T_PVAR_CLASS_COUNTER, &idx), MPI_T_ERR_INVALID);
    CHECK_RC(MPI_T_category_get_index("no_such_category", &idx), MPI_T_ERR_INVALID_NAME);
    CHECK_RC(MPI_T_cvar_handle_alloc(-1, NULL, &ch, &count), MPI_T_ERR_INVALID_INDEX);
    if (n > 0) {
        CHECK_RC(MPI_T_cvar_handle_alloc(0, NULL, NULL, &count), MPI_T_ERR_INVALID);
        CHECK_RC(MPI_T_cvar_handle_alloc(0, NULL, &ch, NULL), MPI_T_ERR_INVALID);
    }
    CHECK_RC(MPI_T_cvar_read(MPI_T_CVAR_HANDLE_NULL, &count), MPI_T_ERR_INVALID_HANDLE);
    CHECK_RC(MPI_T_cvar_write(MPI_T_CVAR_HANDLE_NULL, &count), MPI_T_ERR_INVALID_HANDLE);
    ch = MPI_T_CVAR_HANDLE_NULL;
    CHECK_RC(MPI_T_cvar_handle_free(&ch), MPI_T_ERR_INVALID_HANDLE);
    CHECK_RC(MPI_T_enum_get_info(MPI_T_ENUM_NULL, &n, name, &nl), MPI_T_ERR_INVALID_HANDLE);
    CHECK_RC(MPI_T_enum_get_item(MPI_T_ENUM_NULL, 0, &n, name, &nl), MPI_T_ERR_INVALID_HANDLE);
    CHECK_RC(MPI_T_category_get_info(-1, name, &nl, NULL, NULL, &n, &n, &n), MPI_T_ERR_INVALID_INDEX);
    CHECK_RC(MPI_T_category_get_cvars(-1, 1, &n), MPI_T_ERR_INVALID_INDEX);
    CHECK_RC(MPI_T_category_get_cvars(0, -1, &n), MPI_T_ERR_INVALID);
    CHECK_RC(MPI_T_category_changed(NULL), MPI_T_ERR_INVALID);
    CHECK_RC(MPI_T_cvar_get_num(NULL), MPI_T_ERR_INVALID);
    CHECK_RC(MPI_T_pvar_session_create(NULL), MPI_T_ERR_INVALID);
    CHECK_RC(MPI_T_pvar_session_create(&s), MPI_SUCCESS);
    CHECK_RC(MPI_T_pvar_handle_alloc(MPI_T_PVAR_SESSION_NULL, 0, NULL, &ph, &count), MPI_T_ERR_INVALID_SESSION);
    CHECK_RC(MPI_T_pvar_read(s, MPI_T_PVAR_HANDLE_NULL, &count), MPI_T_ERR_INVALID_HANDLE);
    CHECK_RC(MPI_T_pvar_start(s, MPI_T_PVAR_HANDLE_NULL), MPI_T_ERR_INVALID_HANDLE);
    CHECK_RC(MPI_T_pvar_start(s, MPI_T_PVAR_ALL_HANDLES), MPI_SUCCESS);
    CHECK_RC(MPI_T_pvar_stop(s, MPI_T_PVAR_ALL_HANDLES), MPI_SUCCESS);
    CHECK_RC(MPI_T_pvar_reset(s, MPI_T_PVAR_ALL_HANDLES), MPI_SUCCESS);
    CHECK_RC(MPI_T_pvar_start(MPI_T_PVAR_SESSION_NULL, MPI_T_PVAR_ALL_HANDLES), MPI_T_ERR_INVALID_SESSION);
    ph = MPI_T_PVAR_HANDLE_NULL;
    CHECK_RC(MPI_T_pvar_handle_free(s, &ph), MPI_T_ERR_INVALID_HANDLE);
    CHECK_RC(MPI_T_pvar_session_free(&none), MPI_T_ERR_INVALID_SESSION);
    CHECK_RC(MPI_T_pvar_session_free(&s), MPI_SUCCESS);
    CHECK(s == MPI_T_PVAR_SESSION_NULL, "session not null after free");
}

/* The value a BB_ tunable should have: the environment's, else the default its description names. */
static unsigned long expected_value(const char *env, const char *desc)
{
    const char *set = getenv(env);
    if (set)
        return strtoul(set, NULL, 0);
    const char *d = strstr(desc, "(default ");
    CHECK(d != NULL, "%s: no default in '%s'", env, desc);
    return strtoul(d + 9, NULL, 10);
}

/* Billboard's control variables: values, scopes, writes, a switch as an enumeration. */
static void billboard_cvars(void)
{
    char name[256], desc[1024];
    int nl = sizeof name, dl = sizeof desc, verbosity, bind, scope, count;
    MPI_Datatype dt;
    MPI_T_enum e;
    unsigned long value = 0;
    MPI_T_cvar_handle h;

    /* Read-only, fixed at setup. */
    int slots = cvar_index("BB_SHM_SLOTS");
    CHECK_RC(MPI_T_cvar_get_info(slots, name, &nl, &verbosity, &dt, &e, desc, &dl, &bind, &scope), MPI_SUCCESS);
    CHECK(dt == MPI_UNSIGNED_LONG && scope == MPI_T_SCOPE_READONLY && bind == MPI_T_BIND_NO_OBJECT,
          "BB_SHM_SLOTS: datatype %x scope %d bind %d", dt, scope, bind);
    CHECK(strstr(desc, "read-only") != NULL, "BB_SHM_SLOTS description: %s", desc);
    CHECK_RC(MPI_T_cvar_handle_alloc(slots, NULL, &h, &count), MPI_SUCCESS);
    CHECK_RC(MPI_T_cvar_read(h, &value), MPI_SUCCESS);
    CHECK_EQ(value, expected_value("BB_SHM_SLOTS", desc), "BB_SHM_SLOTS read through MPI_T");
    CHECK_RC(MPI_T_cvar_write(h, &value), MPI_T_ERR_CVAR_SET_NEVER);
    CHECK_RC(MPI_T_cvar_handle_free(&h), MPI_SUCCESS);
    CHECK_RC(MPI_T_cvar_read(h, &value), MPI_T_ERR_INVALID_HANDLE);

    /* Writable, this process alone. */
    int sleep_us = cvar_index("BB_SLEEP_US");
    nl = sizeof name, dl = sizeof desc;
    CHECK_RC(MPI_T_cvar_get_info(sleep_us, name, &nl, &verbosity, &dt, &e, desc, &dl, &bind, &scope), MPI_SUCCESS);
    CHECK(scope == MPI_T_SCOPE_LOCAL, "BB_SLEEP_US scope %d", scope);
    CHECK_RC(MPI_T_cvar_handle_alloc(sleep_us, NULL, &h, &count), MPI_SUCCESS);
    unsigned long old, set = 1234, back = 0;
    CHECK_RC(MPI_T_cvar_read(h, &old), MPI_SUCCESS);
    CHECK_EQ(old, expected_value("BB_SLEEP_US", desc), "BB_SLEEP_US read through MPI_T");
    CHECK_RC(MPI_T_cvar_write(h, &set), MPI_SUCCESS);
    CHECK_RC(MPI_T_cvar_read(h, &back), MPI_SUCCESS);
    CHECK_EQ(back, 1234, "BB_SLEEP_US after a write");
    CHECK_RC(MPI_T_cvar_write(h, &old), MPI_SUCCESS);
    CHECK_RC(MPI_T_cvar_handle_free(&h), MPI_SUCCESS);

    /* A collective switch: an enumeration of "auto" and its algorithms; forcing each one on
     * every rank keeps MPI_Allreduce right. */
    int sw = cvar_index("BB_COLL_ALLREDUCE");
    nl = sizeof name, dl = sizeof desc;
    CHECK_RC(MPI_T_cvar_get_info(sw, name, &nl, &verbosity, &dt, &e, desc, &dl, &bind, &scope), MPI_SUCCESS);
    CHECK(dt == MPI_INT && scope == MPI_T_SCOPE_ALL_EQ && e != MPI_T_ENUM_NULL, "BB_COLL_ALLREDUCE: %x %d", dt, scope);
    int items = -1;
    nl = sizeof name;
    CHECK_RC(MPI_T_enum_get_info(e, &items, name, &nl), MPI_SUCCESS);
    CHECK(items >= 3 && strcmp(name, "BB_COLL_ALLREDUCE") == 0, "enumeration %s of %d items", name, items);
    int item_value = -1;
    nl = sizeof name;
    CHECK_RC(MPI_T_enum_get_item(e, 0, &item_value, name, &nl), MPI_SUCCESS);
    CHECK(item_value == 0 && strcmp(name, "auto") == 0, "item 0: %d %s", item_value, name);
    CHECK_RC(MPI_T_enum_get_item(e, items, &item_value, name, &nl), MPI_T_ERR_INVALID_ITEM);
    CHECK_RC(MPI_T_cvar_handle_alloc(sw, NULL, &h, &count), MPI_SUCCESS);
    for (int v = 0; v < items; v++) {
        int forced = v, now = -1;
        CHECK_RC(MPI_T_cvar_write(h, &forced), MPI_SUCCESS);
        CHECK_RC(MPI_T_cvar_read(h, &now), MPI_SUCCESS);
        CHECK_EQ(now, v, "BB_COLL_ALLREDUCE after a write");
        long in[100], out[100];
        for (int k = 0; k < 100; k++)
            in[k] = t_rank + k;
        MPI_CHK(MPI_Allreduce(in, out, 100, MPI_LONG, MPI_SUM, MPI_COMM_WORLD));
        for (int k = 0; k < 100; k++)
            CHECK(out[k] == (long)t_size * k + (long)t_size * (t_size - 1) / 2, "allreduce by item %d: [%d] = %ld",
                  v, k, out[k]);
    }
    int bad = items, zero = 0;
    CHECK_RC(MPI_T_cvar_write(h, &bad), MPI_T_ERR_INVALID);
    CHECK_RC(MPI_T_cvar_write(h, &zero), MPI_SUCCESS);
    CHECK_RC(MPI_T_cvar_handle_free(&h), MPI_SUCCESS);

    /* Every layer is a category. */
    const char *layers[] = {"transport", "engine", "collectives", "processes", "rma"};
    for (int i = 0; i < 5; i++) {
        int c = -1;
        CHECK_EQ(MPI_T_category_get_index(layers[i], &c), MPI_SUCCESS, layers[i]);
    }
}

/* Sends `bytes` bytes to `peer` (0: a message with no payload). */
static void send_bytes(int peer, int bytes, int tag)
{
    char buf[4096];
    memset(buf, 7, sizeof buf);
    MPI_CHK(MPI_Send(buf, bytes, MPI_CHAR, peer, tag, MPI_COMM_WORLD));
}

static void recv_bytes(int peer, int bytes, int tag)
{
    char buf[4096];
    MPI_CHK(MPI_Recv(buf, bytes, MPI_CHAR, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
}

/* A point where the bytes between the left rank and this one are settled: the left's empty
 * message (`tag`), received here, follows everything it sent before (messages from one peer
 * arrive in order), and the left sends nothing more here until gate_release says this rank has
 * read its counts. The gate's messages carry no bytes, so only message counts could differ by
 * them; the check compares bytes. */
static void gate(int left, int right, int tag)
{
    MPI_CHK(MPI_Send(NULL, 0, MPI_CHAR, right, tag, MPI_COMM_WORLD));
    MPI_CHK(MPI_Recv(NULL, 0, MPI_CHAR, left, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
}

static void gate_release(int left, int right, int tag)
{
    MPI_CHK(MPI_Send(NULL, 0, MPI_CHAR, left, tag, MPI_COMM_WORLD));
    MPI_CHK(MPI_Recv(NULL, 0, MPI_CHAR, right, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
}

/* Billboard's performance variables: exact counts of a ring exchange, handle semantics. */
static void billboard_pvars(void)
{
    int bytes_sent = pvar_index("bb_bytes_sent", MPI_T_PVAR_CLASS_COUNTER);
    int msgs_sent = pvar_index("bb_messages_sent", MPI_T_PVAR_CLASS_COUNTER);
    int bytes_recv = pvar_index("bb_bytes_received", MPI_T_PVAR_CLASS_COUNTER);
    int msgs_recv = pvar_index("bb_messages_received", MPI_T_PVAR_CLASS_COUNTER);
    int level = pvar_index("unexpected_recvq_length", MPI_T_PVAR_CLASS_LEVEL);
    int idx;
    CHECK_RC(MPI_T_pvar_get_index("bb_bytes_sent", MPI_T_PVAR_CLASS_LEVEL, &idx), MPI_T_ERR_INVALID_NAME);
    MPI_T_pvar_session s, other, whole;
    MPI_T_pvar_handle hb, hm, hr, hn, hq, all[4];
    int count = -1;
    MPI_CHK(MPI_T_pvar_session_create(&s));
    MPI_CHK(MPI_T_pvar_session_create(&other));
    /* Counting from here to the end, to compare the bytes each rank received from the left with
     * those the left sent to it. */
    MPI_CHK(MPI_T_pvar_session_create(&whole));
    int every[4] = {bytes_sent, msgs_sent, bytes_recv, msgs_recv};
    for (int k = 0; k < 4; k++)
        MPI_CHK(MPI_T_pvar_handle_alloc(whole, every[k], NULL, &all[k], &count));
    int right = (t_rank + 1) % t_size, left = (t_rank + t_size - 1) % t_size;
    gate(left, right, 95);
    MPI_CHK(MPI_T_pvar_start(whole, MPI_T_PVAR_ALL_HANDLES));
    gate_release(left, right, 96);
    MPI_CHK(MPI_T_pvar_handle_alloc(s, bytes_sent, NULL, &hb, &count));
    CHECK_EQ(count, t_size, "elements of bb_bytes_sent");
    MPI_CHK(MPI_T_pvar_handle_alloc(s, msgs_sent, NULL, &hm, &count));
    MPI_CHK(MPI_T_pvar_handle_alloc(s, bytes_recv, NULL, &hr, &count));
    MPI_CHK(MPI_T_pvar_handle_alloc(s, msgs_recv, NULL, &hn, &count));
    MPI_CHK(MPI_T_pvar_handle_alloc(s, level, NULL, &hq, &count));
    CHECK_EQ(count, 1, "elements of unexpected_recvq_length");
    CHECK_RC(MPI_T_pvar_start(s, hq), MPI_T_ERR_PVAR_NO_STARTSTOP);
    CHECK_RC(MPI_T_pvar_reset(s, hq), MPI_T_ERR_PVAR_NO_WRITE);
    CHECK_RC(MPI_T_pvar_read(other, hb, &count), MPI_T_ERR_INVALID_HANDLE);

    unsigned long long *v = calloc(t_size, sizeof *v), *m = calloc(t_size, sizeof *v);
    /* Stopped: a new handle reads 0 and sending changes nothing. The message from the left
     * also flushes what the left sent before (the barrier's messages may still be on their way:
     * messages from one peer arrive in order), so none of it lands in the window below. */
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_Request r;
    char in[4096];
    MPI_CHK(MPI_Irecv(in, 1000, MPI_CHAR, left, 1, MPI_COMM_WORLD, &r));
    send_bytes(right, 1000, 1);
    MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    MPI_CHK(MPI_T_pvar_read(s, hb, v));
    for (int p = 0; p < t_size; p++)
        CHECK_EQ(v[p], 0, "bb_bytes_sent of a stopped handle");

    /* Started: exactly one message of 1000 bytes to the right, one of 0 bytes, and one of 500
     * bytes to this rank itself. Sends are counted as they start, so what this rank sent is
     * exact for every peer. Arrivals are counted as they arrive, which for other ranks may be
     * before this rank starts its handle: only the messages to itself are exact here (the
     * totals from other ranks are compared with what they sent at the end). */
    MPI_CHK(MPI_T_pvar_start(s, MPI_T_PVAR_ALL_HANDLES));
    MPI_CHK(MPI_Irecv(in, 1000, MPI_CHAR, left, 2, MPI_COMM_WORLD, &r));
    send_bytes(right, 1000, 2);
    MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    MPI_CHK(MPI_Irecv(in, 0, MPI_CHAR, left, 3, MPI_COMM_WORLD, &r));
    send_bytes(right, 0, 3);
    MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    MPI_CHK(MPI_Irecv(in, 500, MPI_CHAR, t_rank, 5, MPI_COMM_WORLD, &r));
    send_bytes(t_rank, 500, 5);
    MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    MPI_CHK(MPI_T_pvar_stop(s, MPI_T_PVAR_ALL_HANDLES));
    MPI_CHK(MPI_T_pvar_read(s, hb, v));
    MPI_CHK(MPI_T_pvar_read(s, hm, m));
    for (int p = 0; p < t_size; p++) {
        unsigned long long bytes = (p == right ? 1000u : 0u) + (p == t_rank ? 500u : 0u);
        unsigned long long msgs = (p == right ? 2u : 0u) + (p == t_rank ? 1u : 0u);
        CHECK(v[p] == bytes, "bytes sent to %d: %llu, not %llu", p, v[p], bytes);
        CHECK(m[p] == msgs, "messages sent to %d: %llu, not %llu", p, m[p], msgs);
    }
    MPI_CHK(MPI_T_pvar_read(s, hr, v));
    MPI_CHK(MPI_T_pvar_read(s, hn, m));
    unsigned long long self_bytes = 500u + (t_size == 1 ? 1000u : 0u), self_msgs = t_size == 1 ? 3u : 1u;
    CHECK(v[t_rank] == self_bytes, "bytes received from itself: %llu, not %llu", v[t_rank], self_bytes);
    CHECK(m[t_rank] == self_msgs, "messages received from itself: %llu, not %llu", m[t_rank], self_msgs);

    /* Stopped again: the value stays; restarted: it goes on from there. */
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    unsigned long long to_right = 1000u + (right == t_rank ? 500u : 0u);
    MPI_CHK(MPI_T_pvar_read(s, hb, v));
    CHECK(v[right] == to_right, "bytes sent to %d while stopped: %llu", right, v[right]);
    MPI_CHK(MPI_T_pvar_start(s, hb));
    MPI_CHK(MPI_Irecv(in, 24, MPI_CHAR, left, 4, MPI_COMM_WORLD, &r));
    send_bytes(right, 24, 4);
    MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    MPI_CHK(MPI_T_pvar_readreset(s, hb, v));
    CHECK(v[right] == to_right + 24, "bytes sent to %d after a restart: %llu", right, v[right]);
    MPI_CHK(MPI_T_pvar_read(s, hb, v));
    CHECK(v[right] == 0, "bytes sent to %d after readreset: %llu", right, v[right]);
    for (int p = 0; p < t_size; p++)
        m[p] = 5000 + p;
    MPI_CHK(MPI_T_pvar_write(s, hb, m));
    MPI_CHK(MPI_T_pvar_read(s, hb, v));
    CHECK(v[right] == 5000u + right, "bytes sent to %d after a write: %llu", right, v[right]);
    MPI_CHK(MPI_T_pvar_reset(s, hb));
    MPI_CHK(MPI_T_pvar_read(s, hb, v));
    CHECK(v[right] == 0, "bytes sent to %d after reset: %llu", right, v[right]);
    MPI_CHK(MPI_T_pvar_stop(s, hb));

    /* The unexpected queue: three messages to this rank itself, none received yet. A collective's
     * message may wait there too (one that came after its call ended here): first every peer's
     * message (tag 97) shows that all it sent before is here, and none sends more until this
     * rank says it is done (tag 98). */
    unsigned queued = 99, before = 99;
    MPI_Request *flags = malloc(sizeof(MPI_Request) * 2 * t_size);
    for (int p = 0; p < t_size; p++) {
        MPI_CHK(MPI_Irecv(NULL, 0, MPI_CHAR, p, 97, MPI_COMM_WORLD, &flags[p]));
        MPI_CHK(MPI_Isend(NULL, 0, MPI_CHAR, p, 97, MPI_COMM_WORLD, &flags[t_size + p]));
    }
    MPI_CHK(MPI_Waitall(2 * t_size, flags, MPI_STATUSES_IGNORE));
    for (int p = 0; p < t_size; p++)
        MPI_CHK(MPI_Irecv(NULL, 0, MPI_CHAR, p, 98, MPI_COMM_WORLD, &flags[p]));
    MPI_CHK(MPI_T_pvar_read(s, hq, &before));
    MPI_Request sends[3];
    char small[3][8] = {"a", "b", "c"};
    for (int k = 0; k < 3; k++)
        MPI_CHK(MPI_Isend(small[k], 8, MPI_CHAR, t_rank, 10 + k, MPI_COMM_WORLD, &sends[k]));
    int there = 0;
    while (!there)
        MPI_CHK(MPI_Iprobe(t_rank, 12, MPI_COMM_WORLD, &there, MPI_STATUS_IGNORE));
    MPI_CHK(MPI_T_pvar_read(s, hq, &queued));
    CHECK_EQ(queued, before + 3, "unexpected_recvq_length with three more messages waiting");
    for (int k = 0; k < 3; k++)
        recv_bytes(t_rank, 8, 10 + k);
    MPI_CHK(MPI_Waitall(3, sends, MPI_STATUSES_IGNORE));
    MPI_CHK(MPI_T_pvar_read(s, hq, &queued));
    CHECK_EQ(queued, before, "unexpected_recvq_length once received");
    for (int p = 0; p < t_size; p++)
        MPI_CHK(MPI_Isend(NULL, 0, MPI_CHAR, p, 98, MPI_COMM_WORLD, &flags[t_size + p]));
    MPI_CHK(MPI_Waitall(2 * t_size, flags, MPI_STATUSES_IGNORE));
    free(flags);

    /* The totals, read between the same kind of gates. */
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    gate(left, right, 97);
    unsigned long long mine[4], theirs[4];
    for (int k = 0; k < 4; k++) {
        unsigned long long *per_peer = calloc(t_size, sizeof *per_peer);
        MPI_CHK(MPI_T_pvar_read(whole, all[k], per_peer));
        /* What this rank sent to the right; what it received from the left. */
        mine[k] = per_peer[k < 2 ? right : left];
        free(per_peer);
    }
    gate_release(left, right, 98);
    MPI_CHK(MPI_Sendrecv(mine, 2, MPI_UNSIGNED_LONG_LONG, right, 100, theirs, 2, MPI_UNSIGNED_LONG_LONG, left, 100,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(mine[2] == theirs[0] && theirs[0] >= 2024 && mine[3] > 0,
          "received from %d: %llu bytes in %llu messages; it sent %llu bytes in %llu", left, mine[2], mine[3], theirs[0],
          theirs[1]);
    MPI_CHK(MPI_T_pvar_session_free(&whole));

    MPI_CHK(MPI_T_pvar_handle_free(s, &hb));
    CHECK(hb == MPI_T_PVAR_HANDLE_NULL, "pvar handle not null after free");
    CHECK_RC(MPI_T_pvar_read(s, hb, v), MPI_T_ERR_INVALID_HANDLE);
    MPI_CHK(MPI_T_pvar_session_free(&s));
    CHECK_RC(MPI_T_pvar_read(s, hm, v), MPI_T_ERR_INVALID_SESSION);
    MPI_CHK(MPI_T_pvar_session_free(&other));
    free(v);
    free(m);
}

int main(int argc, char **argv)
{
    int provided = -1, n;
    t_name = "tool_vars";
    CHECK_RC(MPI_T_cvar_get_num(&n), MPI_T_ERR_NOT_INITIALIZED);
    CHECK_RC(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided), MPI_SUCCESS);
    /* Before MPI_Init the control variables are there already. */
    enumerate();
    t_init(&argc, &argv, "tool_vars", 1);
    enumerate();
    error_codes();
    if (t_on_billboard()) {
        billboard_cvars();
        billboard_pvars();
    }
    CHECK_RC(MPI_T_finalize(), MPI_SUCCESS);
    CHECK_RC(MPI_T_cvar_get_num(&n), MPI_T_ERR_NOT_INITIALIZED);
    return t_finish();
}
