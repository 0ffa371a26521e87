/*
 * PVM ping-pong, built once against Debian's pvm3.h and libpvm3 and run unchanged on either
 * library (Billboard's through LD_LIBRARY_PATH): `pvm_pingpong BYTES ITERS TRIALS [ENC]`
 * started from a shell spawns its echo (itself by name, `echo`: the daemon's path must find
 * it), then times TRIALS trials of ITERS
 * round trips of BYTES (pvm_initsend + pvm_pkbyte + pvm_send, pvm_recv + pvm_upkbyte each
 * way, as NetPIPE's NPpvm does) after a warm-up, and prints one line per trial: the one-way
 * time in microseconds (round trip / 2). ENC: the encoding (default 1, PvmDataRaw; NPpvm
 * packs with PvmDataInPlace, 2). `bench/peers/pvm.sh` runs it for both libraries.
 * PIN=1: the timer on core 0, the echo on core 1; RTPRIO=1: both under SCHED_FIFO 10 (set by
 * each process itself: the echo is started by the PVM daemon, not by the shell).
 * PAUSE_US=n: the timer sleeps n us before each receive, so that the reply is there when it
 * asks (`pvm_calls.sh` counts a receive's instructions under callgrind without its wait).
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>
#include "pvm3.h"

static double now(void)
{
    struct timeval tv;
    gettimeofday(&tv, 0);
    return tv.tv_sec + tv.tv_usec * 1e-6;
}

/* PIN and RTPRIO, as the header says. */
static void place(int core)
{
    const char *pin = getenv("PIN"), *rt = getenv("RTPRIO");
    if (pin && strcmp(pin, "1") == 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(core, &set);
        sched_setaffinity(0, sizeof set, &set);
    }
    if (rt && strcmp(rt, "1") == 0) {
        struct sched_param p = {.sched_priority = 10};
        sched_setscheduler(0, SCHED_FIFO, &p);
    }
}

static void bounce(int to, char *buf, int n, int enc)
{
    pvm_initsend(enc);
    pvm_pkbyte(buf, n, 1);
    pvm_send(to, 1);
}

int main(int argc, char **argv)
{
    int n, iters, trials, enc = PvmDataRaw, peer, i, t;
    char *buf;
    char *args[] = {"echo", 0, 0, 0};
    if (pvm_mytid() < 0)
        return 1;
    /* Task to task, not through the daemons (Debian's default route), as NPpvm asks. */
    pvm_setopt(PvmRoute, PvmRouteDirect);
    if (argc >= 2 && strcmp(argv[1], "echo") == 0) {
        /* The echo: argv[2] bytes, argv[3] encoding, until a message with tag 2. */
        int parent = pvm_parent();
        place(1);
        n = atoi(argv[2]);
        enc = atoi(argv[3]);
        buf = calloc(1, n ? n : 1);
        for (;;) {
            int b = pvm_recv(parent, -1), tag;
            pvm_bufinfo(b, 0, &tag, 0);
            if (tag == 2)
                break;
            pvm_upkbyte(buf, n, 1);
            bounce(parent, buf, n, enc);
        }
        pvm_exit();
        return 0;
    }
    if (argc < 4)
        return 2;
    n = atoi(argv[1]);
    iters = atoi(argv[2]);
    trials = atoi(argv[3]);
    if (argc > 4)
        enc = atoi(argv[4]);
    place(0);
    const char *pause_us = getenv("PAUSE_US");
    int pause = pause_us ? atoi(pause_us) : 0;
    buf = calloc(1, n ? n : 1);
    args[1] = argv[1];
    args[2] = argc > 4 ? argv[4] : "1";
    /* By name: both daemons look it up in their path (PVM_PATH, the hostfile's ep=). */
    if (pvm_spawn(strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0], args, 0, "", 1, &peer) != 1)
        return 3;
    for (t = -1; t < trials; t++) {
        double t0 = now();
        for (i = 0; i < iters; i++) {
            bounce(peer, buf, n, enc);
            if (pause)
                usleep(pause);
            pvm_recv(peer, 1);
            pvm_upkbyte(buf, n, 1);
        }
        if (t >= 0) /* trial -1 warms up */
            printf("%.4f\n", (now() - t0) / iters / 2 * 1e6);
    }
    pvm_initsend(PvmDataRaw);
    pvm_send(peer, 2);
    pvm_exit();
    return 0;
}
