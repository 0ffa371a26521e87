// bench/udp/kernel_paths.c: what the kernel adds to a polled UDP ping-pong for each socket
// setting the UDP route uses, with no user-space work besides the system calls. Two processes
// (one per core), loopback, one datagram each way, non-blocking receives in a loop; prints the
// median one-way latency in us. The first argument picks the settings, by letter:
//   X  none: one connected socket each way (the raw floor, as bb-bench udp-floor)
//   S  a separate connected socket to send from (the route's sender sockets)
//   A  recvfrom with the sender's address (the route's receive)
//   R  IP_RECVERR on the sockets (ICMP reports)
//   E  the receiving socket in an epoll set (EPOLLIN)
//   F  the sending socket in an epoll set (edge-triggered, no events: errors only)
//   G  UDP_SEGMENT set on the sending socket (generic segmentation offload for every send)
// Build and run (bench/README.md, "The UDP floor"):
//   cc -O2 -o /tmp/kernel_paths bench/udp/kernel_paths.c
//   for v in X SAR SARF ESAR SARG; do chrt -f 10 /tmp/kernel_paths $v 108 20000 31000; done
#define _GNU_SOURCE
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static struct sockaddr_in loopback(int port) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(0x7f000001)};
    return a;
}

static int bound(int port) {
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in a = loopback(port);
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) != 0) {
        perror("socket/bind");
        exit(1);
    }
    return s;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: kernel_paths SETTINGS BYTES TRIALS BASE_PORT\n");
        return 2;
    }
    const char *f = argv[1];
    int size = atoi(argv[2]), n = atoi(argv[3]), base = atoi(argv[4]);
    int E = !!strchr(f, 'E'), F = !!strchr(f, 'F'), S = !!strchr(f, 'S'), A = !!strchr(f, 'A'),
        R = !!strchr(f, 'R'), G = !!strchr(f, 'G');
    int me = fork() == 0;
    int rs = bound(base + me), ss = S ? bound(base + 10 + me) : rs;
    struct sockaddr_in to = loopback(base + 1 - me);
    connect(ss, (struct sockaddr *)&to, sizeof to);
    int one = 1, seg = 1472;
    if (R) {
        setsockopt(rs, IPPROTO_IP, IP_RECVERR, &one, sizeof one);
        setsockopt(ss, IPPROTO_IP, IP_RECVERR, &one, sizeof one);
    }
    if (G) setsockopt(ss, SOL_UDP, UDP_SEGMENT, &seg, sizeof seg);
    int ep = epoll_create1(0);
    if (E) {
        struct epoll_event ev = {.events = EPOLLIN};
        epoll_ctl(ep, EPOLL_CTL_ADD, rs, &ev);
    }
    if (F && ss != rs) {
        struct epoll_event ev = {.events = EPOLLET};
        epoll_ctl(ep, EPOLL_CTL_ADD, ss, &ev);
    }
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    CPU_SET(me, &cpus);
    sched_setaffinity(0, sizeof cpus, &cpus);
    usleep(200000); // both ends set up
    static char in[65536], out[65536];
    struct sockaddr_in from;
    socklen_t len;
    double *oneway = malloc(sizeof(double) * n);
    const int warmup = 1000;
    for (int i = 0; i < n + warmup; i++) {
        double t0 = now_us();
        if (me == 0)
            while (send(ss, out, size, 0) < 0) {}
        for (;;) {
            ssize_t r;
            if (A) {
                len = sizeof from;
                r = recvfrom(rs, in, sizeof in, MSG_DONTWAIT, (struct sockaddr *)&from, &len);
            } else {
                r = recv(rs, in, sizeof in, MSG_DONTWAIT);
            }
            if (r >= 0) break;
        }
        if (me == 1)
            while (send(ss, out, size, 0) < 0) {}
        if (me == 0 && i >= warmup) oneway[i - warmup] = (now_us() - t0) / 2;
    }
    if (me == 0) {
        qsort(oneway, n, sizeof(double), cmp);
        printf("%-6s %5d B  %.3f us\n", f, size, oneway[n / 2]);
        wait(NULL);
    }
    return 0;
}
