/* Communicator families of stress_mix.c. A family is what one creation call makes on every
 * rank: one communicator per part (a split or a Comm_create by disjoint groups makes several),
 * and every rank knows all parts, their members in rank order, so it can tell what any receive
 * must get. Families are made by MPI_Comm_split (random colors, MPI_UNDEFINED included, keys with
 * ties), MPI_Comm_create (a group per process, MPI 2.2), MPI_Comm_create_group (only the members
 * call), MPI_Comm_dup and MPI_Comm_idup (pending until completed, iterations later). */
#ifndef BB_STRESS_MIX_COMM_H
#define BB_STRESS_MIX_COMM_H

#include "stress_mix.h"

#define MAXW 64   /* world ranks */
#define MAXFAM 10 /* live families, the world included */

typedef struct {
    int live, pending, parent, deadline;
    int serial;
    MPI_Request req; /* the MPI_Comm_idup in flight */
    MPI_Comm comm;   /* my communicator of the family, or MPI_COMM_NULL */
    int part[MAXW];  /* world rank -> part (-1: none) */
    int crank[MAXW]; /* world rank -> rank in its part */
    int nparts, psize[MAXW], members[MAXW][MAXW];
} fam_t;

static fam_t fam[MAXFAM];
static int W, ME, serials;

static int me_in(const fam_t *f) { return f->part[ME] >= 0; }
static int fsize(const fam_t *f) { return f->psize[f->part[ME]]; }
static const int *fmap(const fam_t *f) { return f->members[f->part[ME]]; }

enum { MK_SPLIT, MK_CREATE, MK_CREATE_GROUP, MK_DUP, MK_IDUP, NMK };
static const char *mk_names[] = {"Comm_split", "Comm_create", "Comm_create_group", "Comm_dup", "Comm_idup"};
static long stat_made[NMK], stat_freed;

static void fam_world(fam_t *f)
{
    memset(f, 0, sizeof *f);
    f->live = 1;
    f->comm = MPI_COMM_WORLD;
    f->req = MPI_REQUEST_NULL;
    f->nparts = 1;
    f->psize[0] = W;
    for (int w = 0; w < W; w++) {
        f->members[0][w] = w;
        f->crank[w] = w;
    }
}

/* My communicator of f is the one the model says. */
static void fam_verify(const fam_t *f, const char *how)
{
    if (!me_in(f)) {
        SCHECK(f->comm == MPI_COMM_NULL, "%s (family %d): not a member, got a communicator", how, f->serial);
        return;
    }
    int n = fsize(f), size = -1, rank = -1;
    SCHECK(f->comm != MPI_COMM_NULL, "%s (family %d): got MPI_COMM_NULL, expected %d members", how, f->serial, n);
    SCHK(MPI_Comm_size(f->comm, &size));
    SCHK(MPI_Comm_rank(f->comm, &rank));
    SCHECK(size == n && rank == f->crank[ME], "%s (family %d): size %d rank %d, expected %d and %d", how, f->serial,
           size, rank, n, f->crank[ME]);
    MPI_Group grp, world;
    int idx[MAXW], got[MAXW];
    SCHK(MPI_Comm_group(f->comm, &grp));
    SCHK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    for (int i = 0; i < n; i++)
        idx[i] = i;
    SCHK(MPI_Group_translate_ranks(grp, n, idx, world, got));
    for (int i = 0; i < n; i++)
        SCHECK(got[i] == fmap(f)[i], "%s (family %d): rank %d is world rank %d, expected %d", how, f->serial, i,
               got[i], fmap(f)[i]);
    SCHK(MPI_Group_free(&grp));
    SCHK(MPI_Group_free(&world));
    int res = -1;
    SCHK(MPI_Comm_compare(f->comm, MPI_COMM_WORLD, &res));
    SCHECK(res != MPI_IDENT, "%s (family %d): the new communicator is MPI_COMM_WORLD", how, f->serial);
}

/* The parts of a family made from P: one per (part of P, label), members of label -1 in none,
 * ranked by key, ties by their rank in P (as MPI_Comm_split ranks them). */
static void fam_build(fam_t *f, const fam_t *P, const int *label, const int *key, int nlabels)
{
    for (int w = 0; w < W; w++)
        f->part[w] = -1;
    for (int pp = 0; pp < P->nparts; pp++) {
        for (int c = 0; c < nlabels; c++) {
            int n = 0, *m = f->members[f->nparts];
            for (int r = 0; r < P->psize[pp]; r++)
                if (label[P->members[pp][r]] == c)
                    m[n++] = P->members[pp][r];
            if (!n)
                continue;
            for (int i = 1; i < n; i++) { /* stable insertion sort by key */
                int x = m[i], j = i;
                for (; j > 0 && key[m[j - 1]] > key[x]; j--)
                    m[j] = m[j - 1];
                m[j] = x;
            }
            f->psize[f->nparts] = n;
            for (int r = 0; r < n; r++) {
                f->part[m[r]] = f->nparts;
                f->crank[m[r]] = r;
            }
            f->nparts++;
        }
    }
}

/* Makes family `slot` from family `parent` by `how`. */
static void fam_make(int slot, int parent, int how)
{
    fam_t *P = &fam[parent], *f = &fam[slot];
    int label[MAXW], key[MAXW];
    int nlabels = 1 + g(3), tag = g(1000), later = g(3);
    for (int w = 0; w < W; w++) {
        int l = g(5), k = g(1 << 16);
        label[w] = P->part[w] < 0 ? -1 : how >= MK_DUP ? 0 : l == 0 ? -1 : l % nlabels;
        key[w] = how >= MK_DUP ? P->crank[w] : how == MK_SPLIT ? k % 5 - 2 : k;
    }
    memset(f, 0, sizeof *f);
    f->live = 1;
    f->serial = ++serials;
    f->parent = parent;
    f->comm = MPI_COMM_NULL;
    f->req = MPI_REQUEST_NULL;
    fam_build(f, P, label, key, how >= MK_DUP ? 1 : nlabels);
    stat_made[how]++;
    if (how == MK_IDUP) {
        f->pending = 1;
        f->deadline = iter + 1 + later;
    }
    if (!me_in(P))
        return;
    switch (how) {
    case MK_SPLIT:
        SCHK(MPI_Comm_split(P->comm, label[ME] < 0 ? MPI_UNDEFINED : label[ME], key[ME], &f->comm));
        break;
    case MK_CREATE:
    case MK_CREATE_GROUP: {
        MPI_Group grp = MPI_GROUP_EMPTY, pg;
        if (me_in(f)) {
            int ranks[MAXW];
            for (int r = 0; r < fsize(f); r++)
                ranks[r] = P->crank[fmap(f)[r]];
            SCHK(MPI_Comm_group(P->comm, &pg));
            SCHK(MPI_Group_incl(pg, fsize(f), ranks, &grp));
            SCHK(MPI_Group_free(&pg));
        }
        if (how == MK_CREATE)
            SCHK(MPI_Comm_create(P->comm, grp, &f->comm));
        else if (me_in(f))
            SCHK(MPI_Comm_create_group(P->comm, grp, tag, &f->comm));
        if (grp != MPI_GROUP_EMPTY)
            SCHK(MPI_Group_free(&grp));
        break;
    }
    case MK_DUP:
        SCHK(MPI_Comm_dup(P->comm, &f->comm));
        break;
    case MK_IDUP:
        SCHK(MPI_Comm_idup(P->comm, &f->comm, &f->req));
        return;
    }
    fam_verify(f, mk_names[how]);
}

/* The idup of `slot` completed (on every rank: non-members only update the model). */
static void fam_idup_done(int slot)
{
    fam[slot].pending = 0;
    fam[slot].req = MPI_REQUEST_NULL;
    fam_verify(&fam[slot], "Comm_idup");
}

/* Completes the idup of `slot` now, by MPI_Wait or by polling MPI_Test. */
static void fam_idup_complete(int slot, int poll)
{
    fam_t *f = &fam[slot];
    if (f->req != MPI_REQUEST_NULL) {
        int flag = 0;
        if (poll)
            while (!flag)
                SCHK(MPI_Test(&f->req, &flag, MPI_STATUS_IGNORE));
        else
            SCHK(MPI_Wait(&f->req, MPI_STATUS_IGNORE));
    }
    fam_idup_done(slot);
}

static void fam_free(int slot)
{
    if (fam[slot].comm != MPI_COMM_NULL)
        SCHK(MPI_Comm_free(&fam[slot].comm));
    fam[slot].live = 0;
    stat_freed++;
}

#endif
