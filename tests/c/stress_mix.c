/* Stress: a randomized mix of point-to-point and collective operations on communicators created
 * and freed while other operations run; every message's content is checked.
 *
 * Each iteration (200 by default)
 *   1. starts a batch of nonblocking operations on 1-3 communicator families: point-to-point
 *      patterns (shifted exchanges, sparse all-to-some, probed receives) with specific, ANY_SOURCE
 *      and ANY_TAG receives, Isend or Issend, and nonblocking collectives (Ibarrier, Ibcast,
 *      Iallreduce, Ireduce, Iallgather, Ialltoall);
 *   2. meanwhile creates a family (MPI_Comm_split with random colors incl. MPI_UNDEFINED,
 *      MPI_Comm_create with disjoint groups per process, MPI_Comm_create_group, MPI_Comm_dup,
 *      MPI_Comm_idup completed iterations later, with traffic on its parent meanwhile) or frees one,
 *      possibly one whose operations are still pending;
 *   3. does blocking traffic on another family (Sendrecv, Send/Ssend+Recv pairs, Mprobe+Mrecv, a
 *      blocking collective);
 *   4. completes the batch by one of Waitall, Waitany, Waitsome, Testsome, Testany, Test,
 *      performing the probed receives (Iprobe, Probe, Improbe+Imrecv, Mprobe+Mrecv) first.
 * A family is one communicator per part: a split gives several disjoint ones, and every rank
 * knows all of them (members in rank order), so every receive knows what it must get.
 * Messages are 0 B to 256 KiB, some sent or received through vector and indexed types.
 *
 * All ranks draw the same schedule from the seed; timing varies from run to run.
 * Arguments: seed=N, iters=N, verbose; for Billboard (others ignore the variables) "fallback"
 * (BB_SHM_SINGLE_COPY=0) and "tcp" (BB_ROUTES=tcp). A failure names the seed and iteration. */
#include "stress_mix_ops.h"

static int iters = 200;

/* Families with an ANY_TAG receive in the batch ("wild"): no other point-to-point traffic may
 * use them meanwhile, and the batch ends with a barrier on them, as a rank that finished its part
 * of the batch could otherwise send the next iteration's messages into a receive still posted.
 * Other receives cannot take a later message: the tags name the iteration (tag_of). */
static int wild[MAXFAM], p2p_used[MAXFAM], probe_used[MAXFAM];

/* Tags of operation o (0-2 in the batch, 3 the blocking step) of this iteration: 4 each. */
static int tag_of(int o) { return (iter % 1024) * 16 + o * 4; }

/* Probed receives of the batch, done before it completes. */
typedef struct {
    int slot, expect, mode, any_tag;
    pattern_t *p;
} probe_t;
static probe_t probes[MAXPAT];
static int nprobe;

/* ---- point-to-point patterns ---- */

/* Everyone sends m messages to the rank `shift` places on and receives from the one before it:
 * exact source and tag, ANY_SOURCE, ANY_TAG or both (the last two make the family wild). */
static void p2p_exchange(int slot, uint64_t salt, int tagbase)
{
    fam_t *f = &fam[slot];
    int m = 1 + g(3), mode = g(4), shiftdraw = g(1 << 20), force = g(3) - 1, recv_first = g(2);
    TRACE("exchange: %d messages, receive mode %d", m, mode);
    if (mode >= 2) {
        wild[slot] = 1;
        if (force < 0)
            force = 1;
    }
    if (!me_in(f))
        return;
    pattern_t *p = pat_new(f, salt, tagbase, force);
    int n = p->n, r = comm_rank_of(p, ME);
    int shift = n > 1 ? 1 + shiftdraw % (n - 1) : 0;
    int to = p->map[(r + shift) % n], from = p->map[(r - shift + n) % n];
    for (int pass = 0; pass < 2; pass++) {
        if (pass == recv_first) {
            long cap = 0;
            for (int j = 0; j < m; j++)
                if (msg_spec(p, from, ME, j).n > cap)
                    cap = msg_spec(p, from, ME, j).n;
            for (int j = 0; j < m; j++)
                recv_post(recv_prep(p, from, mode & 2 ? -1 : j, mode & 1, mode & 2, cap), f->comm);
        } else {
            for (int j = 0; j < m; j++)
                send_msg(p, f->comm, to, j, 1);
        }
    }
}

/* An edge of a sparse pattern: does world rank s send to world rank d? */
static int edge(const pattern_t *p, int density, int s, int d) { return (int)(hash(p->salt, s, d, 11) % 4) < density; }

/* Each rank sends m messages to a random subset (itself maybe included); receives are posted
 * per source, per tag with ANY_SOURCE, or with both wildcards. */
static void p2p_sparse(int slot, uint64_t salt, int tagbase)
{
    fam_t *f = &fam[slot];
    int m = 1 + g(2), mode = g(3), density = 1 + g(3), force = g(2);
    TRACE("sparse: %d messages, receive mode %d", m, mode);
    if (mode == 2)
        wild[slot] = 1;
    if (!me_in(f))
        return;
    pattern_t *p = pat_new(f, salt, tagbase, mode == 0 ? -1 : force);
    int n = p->n;
    for (int j = 0; j < m; j++) {
        long cap = 0;
        int senders = 0;
        for (int i = 0; i < n; i++) {
            if (!edge(p, density, p->map[i], ME))
                continue;
            senders++;
            if (mode == 0)
                recv_post(recv_prep(p, p->map[i], j, 0, 0, 0), f->comm);
            for (int jj = 0; jj < m; jj++)
                if ((mode == 2 || jj == j) && msg_spec(p, p->map[i], ME, jj).n > cap)
                    cap = msg_spec(p, p->map[i], ME, jj).n;
        }
        if (mode == 1 || (mode == 2 && j == 0))
            for (int k = 0; k < senders * (mode == 2 ? m : 1); k++)
                recv_post(recv_prep(p, -1, mode == 2 ? -1 : j, 1, 0, cap), f->comm);
    }
    for (int j = 0; j < m; j++)
        for (int i = 0; i < n; i++)
            if (edge(p, density, ME, p->map[i]))
                send_msg(p, f->comm, p->map[i], j, 1);
}

/* Like sparse with one message per edge, received after probing (done in batch_finish). */
static void p2p_probe(int slot, uint64_t salt, int tagbase)
{
    fam_t *f = &fam[slot];
    int mode = g(4), any_tag = g(2), density = 1 + g(3), force = g(2);
    TRACE("probe: mode %d any_tag %d", mode, any_tag);
    probe_used[slot] = 1;
    if (any_tag)
        wild[slot] = 1;
    if (!me_in(f))
        return;
    pattern_t *p = pat_new(f, salt, tagbase, force);
    probe_t *pr = &probes[nprobe++];
    pr->slot = slot;
    pr->mode = mode;
    pr->any_tag = any_tag;
    pr->p = p;
    pr->expect = 0;
    for (int i = 0; i < p->n; i++) {
        pr->expect += edge(p, density, p->map[i], ME);
        if (edge(p, density, ME, p->map[i]))
            send_msg(p, f->comm, p->map[i], 0, 1);
    }
}

/* Receives one probed message per expected sender (Iprobe+Recv, Probe+Recv, Improbe+Imrecv
 * into the batch, Mprobe+Mrecv), into a buffer of exactly the probed size. */
static void probe_receive(probe_t *pr)
{
    pattern_t *p = pr->p;
    MPI_Comm c = fam[pr->slot].comm;
    int tag = pr->any_tag ? MPI_ANY_TAG : p->tagbase;
    for (int k = 0; k < pr->expect; k++) {
        MPI_Status st;
        MPI_Message msg = MPI_MESSAGE_NULL;
        int flag = 0;
        if (pr->mode == 0)
            while (!flag)
                SCHK(MPI_Iprobe(MPI_ANY_SOURCE, tag, c, &flag, &st));
        else if (pr->mode == 1)
            SCHK(MPI_Probe(MPI_ANY_SOURCE, tag, c, &st));
        else if (pr->mode == 2)
            while (!flag)
                SCHK(MPI_Improbe(MPI_ANY_SOURCE, tag, c, &flag, &msg, &st));
        else
            SCHK(MPI_Mprobe(MPI_ANY_SOURCE, tag, c, &msg, &st));
        int count = -1;
        SCHK(MPI_Get_count(&st, p->force ? MPI_INT : MPI_BYTE, &count));
        rec_t *r = recv_prep(p, -1, -1, 1, 1, count);
        if (pr->mode == 2) {
            SCHK(MPI_Imrecv(r->buf, count, r->L.dt, &msg, &r->req));
            continue;
        }
        MPI_Status st2;
        if (pr->mode == 3)
            SCHK(MPI_Mrecv(r->buf, count, r->L.dt, &msg, &st2));
        else
            SCHK(MPI_Recv(r->buf, count, r->L.dt, st.MPI_SOURCE, st.MPI_TAG, c, &st2));
        SCHECK(st2.MPI_SOURCE == st.MPI_SOURCE && st2.MPI_TAG == st.MPI_TAG,
               "probed (source %d, tag %d), received (%d, %d)", st.MPI_SOURCE, st.MPI_TAG, st2.MPI_SOURCE,
               st2.MPI_TAG);
        recv_check(r, &st2);
        r->done = 1;
    }
}

/* ---- the schedule ---- */

static int usable(int s) { return fam[s].live && !fam[s].pending; }
static int quiet(int s) { return usable(s) && !wild[s]; }
static int pending(int s) { return fam[s].live && fam[s].pending; }
static int idup_in_batch[MAXFAM];

/* A parent of a pending idup stays (MPI_Comm_free needs its idups complete); so does a family the
 * batch will still probe on. One whose nonblocking operations are pending may go. */
static int freeable(int s)
{
    if (s == 0 || !usable(s) || probe_used[s])
        return 0;
    for (int c = 0; c < MAXFAM; c++)
        if (pending(c) && fam[c].parent == s)
            return 0;
    return 1;
}

/* One of the slots `ok` accepts, drawn from the schedule; -1 if none. */
static int pick_slot(int (*ok)(int))
{
    int list[MAXFAM], c = 0;
    for (int s = 0; s < MAXFAM; s++)
        if (ok(s))
            list[c++] = s;
    return c ? list[g(c)] : -1;
}

static void set_phase(const char *what)
{
    static int secs;
    if (!secs) {
        const char *e = getenv("BB_CTEST_TIMEOUT");
        secs = e && atoi(e) > 0 ? atoi(e) : 60;
    }
    phase = what;
    snprintf(t_alarm_msg, sizeof t_alarm_msg,
             "FAIL stress_mix: timed out after %d s (rank %d, seed %llu, iteration %d, %s)\n",
             secs, ME, (unsigned long long)seed, iter, what);
}

static void batch_start(void)
{
    set_phase("starting the batch");
    nrec = npat = nprobe = 0;
    memset(wild, 0, sizeof wild);
    memset(p2p_used, 0, sizeof p2p_used);
    memset(probe_used, 0, sizeof probe_used);
    memset(idup_in_batch, 0, sizeof idup_in_batch);
    int nops = 1 + g(3);
    for (int o = 0; o < nops; o++) {
        int slot = pick_slot(usable), kind = g(6), ctype = g(NCOLL), to_parent = g(2);
        int pend = pick_slot(pending);
        if (pend >= 0 && to_parent && usable(fam[pend].parent))
            slot = fam[pend].parent; /* traffic on the parent of an idup in flight */
        uint64_t salt = hash(seed, iter, o, 1);
        int tagbase = tag_of(o);
        if (kind < 3 && p2p_used[slot])
            kind = 3;
        if (kind < 3)
            p2p_used[slot] = 1;
        TRACE("batch op %d: kind %d (coll %d) on family %d (slot %d)", o, kind, ctype, fam[slot].serial, slot);
        if (kind == 0)
            p2p_exchange(slot, salt, tagbase);
        else if (kind == 1)
            p2p_sparse(slot, salt, tagbase);
        else if (kind == 2)
            p2p_probe(slot, salt, tagbase);
        else
            coll_run(&fam[slot], salt, ctype, 0);
    }
}

/* Makes or frees a family while the batch runs; completes the idups that are due. */
static void manage(void)
{
    set_phase("managing communicators");
    int action = g(10), nlive = 0, slot = -1;
    for (int s = 0; s < MAXFAM; s++) {
        nlive += fam[s].live;
        if (!fam[s].live && slot < 0)
            slot = s;
    }
    if (action < 5 && slot >= 0) {
        int parent = pick_slot(usable), how = g(NMK);
        TRACE("make family %d in slot %d from slot %d by %s", serials + 1, slot, parent, mk_names[how]);
        fam_make(slot, parent, how);
    } else if (action < 8 || slot < 0) {
        int victim = pick_slot(freeable);
        TRACE("free slot %d", victim);
        if (victim >= 0) {
            fam_free(victim);
            wild[victim] = 0; /* gone: nothing can be sent on it later */
        }
    }
    for (int s = 0; s < MAXFAM; s++) {
        if (!pending(s) || fam[s].deadline > iter)
            continue;
        int how = g(3);
        TRACE("complete idup of slot %d (how %d)", s, how);
        if (how < 2) {
            fam_idup_complete(s, how);
        } else {
            idup_in_batch[s] = 1;
            if (fam[s].req != MPI_REQUEST_NULL) {
                rec_t *r = rec_new(R_IDUP);
                r->req = fam[s].req;
                r->slot = s;
            }
        }
    }
}

/* Blocking traffic on a family no wildcard receive of the batch listens on. */
static void blocking_step(void)
{
    set_phase("blocking traffic");
    int type = g(6), ctype = g(NCOLL), shiftdraw = g(1 << 20), slot = pick_slot(quiet);
    if (slot < 0)
        return;
    uint64_t salt = hash(seed, iter, 7, 1);
    fam_t *f = &fam[slot];
    TRACE("blocking type %d (coll %d) on slot %d", type, ctype, slot);
    if (type >= 3) {
        coll_run(f, salt, ctype, 1);
        return;
    }
    if (!me_in(f))
        return;
    pattern_t *p = pat_new(f, salt, tag_of(3), -1);
    int n = p->n, r = comm_rank_of(p, ME), tag = p->tagbase;
    int shift = n > 1 ? 1 + shiftdraw % (n - 1) : 0;
    int to = (r + shift) % n, from = (r - shift + n) % n;
    if (type == 1) /* pairs: the lower rank sends first */
        to = from = (r ^ 1) < n ? (r ^ 1) : r;
    TRACE("blocking p2p on comm %#x: n %d r %d to %d from %d", (unsigned)f->comm, n, r, to, from);
    rec_t *s = send_msg(p, f->comm, p->map[to], 0, 0), *rr = recv_prep(p, p->map[from], 0, 0, 0, 0);
    MPI_Status st;
    if (type == 0 || to == r) {
        SCHK(MPI_Sendrecv(s->buf, s->L.count, s->L.dt, to, tag, rr->buf, rr->L.count, rr->L.dt, from, tag, f->comm,
                          &st));
    } else if (type == 1) {
        for (int pass = 0; pass < 2; pass++) {
            if ((pass == 0) == (r < to)) {
                if (hash(salt, ME, 0, 2) % 2)
                    SCHK(MPI_Ssend(s->buf, s->L.count, s->L.dt, to, tag, f->comm));
                else
                    SCHK(MPI_Send(s->buf, s->L.count, s->L.dt, to, tag, f->comm));
            } else {
                SCHK(MPI_Recv(rr->buf, rr->L.count, rr->L.dt, from, tag, f->comm, &st));
            }
        }
    } else {
        MPI_Message msg;
        MPI_Status pst;
        SCHK(MPI_Isend(s->buf, s->L.count, s->L.dt, to, tag, f->comm, &s->req));
        SCHK(MPI_Mprobe(MPI_ANY_SOURCE, tag, f->comm, &msg, &pst));
        SCHECK(pst.MPI_SOURCE == from, "Mprobe: source %d, expected %d", pst.MPI_SOURCE, from);
        SCHK(MPI_Mrecv(rr->buf, rr->L.count, rr->L.dt, &msg, &st));
        SCHK(MPI_Wait(&s->req, MPI_STATUS_IGNORE));
    }
    recv_check(rr, &st);
    s->done = rr->done = 1;
}

static void on_done(rec_t *r, const MPI_Status *st)
{
    if (r->kind == R_RECV)
        recv_check(r, st);
    else if (r->kind == R_COLL)
        coll_check(r);
    r->done = 1;
}

/* Probed receives, then every request of the batch by one completion call, drawn. */
static void batch_finish(void)
{
    int mode = g(6);
    set_phase("probed receives");
    for (int i = 0; i < nprobe; i++)
        probe_receive(&probes[i]);
    static const char *modes[] = {"Waitall", "Waitany", "Testsome", "Waitsome", "Testany", "Test"};
    set_phase(modes[mode]);
    static MPI_Request reqs[MAXREC];
    static MPI_Status sts[MAXREC];
    static int which[MAXREC], idx[MAXREC];
    int nr = 0, left;
    for (int i = 0; i < nrec; i++)
        if (!recs[i].done) {
            which[nr] = i;
            reqs[nr++] = recs[i].req;
        }
    for (left = nr; left > 0;) {
        int k = 0, flag = 0;
        switch (mode) {
        case 0:
            SCHK(MPI_Waitall(nr, reqs, sts));
            for (int i = 0; i < nr; i++)
                on_done(&recs[which[i]], &sts[i]);
            left = 0;
            break;
        case 1:
        case 4:
            if (mode == 1)
                SCHK(MPI_Waitany(nr, reqs, &k, sts));
            else
                SCHK(MPI_Testany(nr, reqs, &k, &flag, sts));
            if (mode == 4 && !flag)
                break;
            SCHECK(k >= 0 && k < nr, "%s returned index %d of %d with %d requests left", modes[mode], k, nr, left);
            on_done(&recs[which[k]], sts);
            left--;
            break;
        case 2:
        case 3:
            if (mode == 2)
                SCHK(MPI_Testsome(nr, reqs, &k, idx, sts));
            else
                SCHK(MPI_Waitsome(nr, reqs, &k, idx, sts));
            SCHECK(k != MPI_UNDEFINED && k <= left, "%s returned %d with %d requests left", modes[mode], k, left);
            for (int i = 0; i < k; i++)
                on_done(&recs[which[idx[i]]], &sts[i]);
            left -= k;
            break;
        default:
            for (int i = 0; i < nr; i++) {
                if (reqs[i] == MPI_REQUEST_NULL)
                    continue;
                SCHK(MPI_Test(&reqs[i], &flag, sts));
                if (flag) {
                    on_done(&recs[which[i]], sts);
                    left--;
                }
            }
        }
    }
    for (int s = 0; s < MAXFAM; s++)
        if (idup_in_batch[s])
            fam_idup_done(s);
    set_phase("barrier after ANY_TAG receives");
    for (int s = 0; s < MAXFAM; s++)
        if (wild[s] && me_in(&fam[s]))
            SCHK(MPI_Barrier(fam[s].comm));
    for (int i = 0; i < nrec; i++) {
        lay_free(&recs[i].L);
        free(recs[i].buf);
        free(recs[i].buf2);
    }
}

int main(int argc, char **argv)
{
    int verbose = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "fallback"))
            setenv("BB_SHM_SINGLE_COPY", "0", 1);
        else if (!strcmp(argv[i], "tcp"))
            setenv("BB_ROUTES", "tcp", 1);
        else if (!strncmp(argv[i], "seed=", 5))
            seed = strtoull(argv[i] + 5, NULL, 0);
        else if (!strncmp(argv[i], "iters=", 6))
            iters = atoi(argv[i] + 6);
        else if (!strcmp(argv[i], "verbose"))
            verbose = 1;
        else if (!strcmp(argv[i], "trace"))
            tracing = verbose = 1;
    }
    t_init(&argc, &argv, "stress_mix", 1);
    W = t_size;
    ME = t_rank;
    SCHECK(W <= MAXW, "at most %d ranks, got %d", MAXW, W);
    g_state = seed;
    fam_world(&fam[0]);
    double t0 = MPI_Wtime();
    for (iter = 0; iter < iters; iter++) {
        batch_start();
        manage();
        blocking_step();
        batch_finish();
    }
    set_phase("teardown");
    for (int s = 0; s < MAXFAM; s++)
        if (pending(s))
            fam_idup_complete(s, 0);
    for (int s = 1; s < MAXFAM; s++)
        if (fam[s].live)
            fam_free(s);
    if (verbose)
        printf("rank %d: seed %llu, %d iterations in %.2f s: %ld messages (%ld bytes) sent, %ld collectives, "
               "%ld split, %ld create, %ld create_group, %ld dup, %ld idup, %ld freed\n",
               ME, (unsigned long long)seed, iters, MPI_Wtime() - t0, stat_msgs, stat_bytes, stat_colls,
               stat_made[0], stat_made[1], stat_made[2], stat_made[3], stat_made[4], stat_freed);
    return t_finish();
}
