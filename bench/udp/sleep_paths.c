// bench/udp/sleep_paths.c: what a UDP route's sleep costs against what a datagram costs with
// the receiving socket left in the epoll set, in one process (no scheduler, no peer): the two
// sides of the choice in transport/udp/channel.rs (sockets join the set for a sleep and leave
// it at the next poll that finds a datagram). Prints ns per operation, median of 7 runs:
//   send+recv          one 108-byte datagram (an 8-byte message's) sent on a connected socket
//                      and received on a socket in no epoll set
//   send+recv, in set  the same with the receiving socket in an epoll set, disabled (no events
//                      asked: its wait-queue entry stays and runs the set's callback anyway)
//   epoll_ctl add+del  joining and leaving the set: what a sleep pays now
//   epoll_pwait, 0     an empty wait on the set (the sleep's own call, minus the sleeping)
//   ppoll set+sock, 0  the set's descriptor and the socket in one ppoll: no add and delete, the
//                      socket watched for that call only
// Build and run: cc -O2 -o /tmp/sleep_paths bench/udp/sleep_paths.c && chrt -f 10 taskset -c 1 /tmp/sleep_paths
#define _GNU_SOURCE
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { N = 200000, RUNS = 7 };

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int rx, tx, ep;
static char buf[2048];

static void send_recv(void) {
    if (send(tx, buf, 108, 0) != 108 || recv(rx, buf, sizeof buf, MSG_DONTWAIT) != 108) {
        perror("send/recv");
        exit(1);
    }
}

static void add_del(void) {
    struct epoll_event e = {.events = EPOLLIN};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, rx, &e) != 0 || epoll_ctl(ep, EPOLL_CTL_DEL, rx, NULL) != 0) {
        perror("epoll_ctl");
        exit(1);
    }
}

static void empty_wait(void) {
    struct epoll_event e;
    if (epoll_pwait(ep, &e, 1, 0, NULL) != 0) {
        perror("epoll_pwait");
        exit(1);
    }
}

static void empty_ppoll(void) {
    struct pollfd p[2] = {{.fd = ep, .events = POLLIN}, {.fd = rx, .events = POLLIN}};
    struct timespec zero = {0, 0};
    if (ppoll(p, 2, &zero, NULL) != 0) {
        perror("ppoll");
        exit(1);
    }
}

static double median_ns(void (*op)(void)) {
    double runs[RUNS];
    for (int r = 0; r < RUNS; r++) {
        double t = now_ns();
        for (int i = 0; i < N; i++) op();
        runs[r] = (now_ns() - t) / N;
    }
    qsort(runs, RUNS, sizeof runs[0], cmp);
    return runs[RUNS / 2];
}

int main(void) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001)};
    socklen_t len = sizeof a;
    rx = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    tx = socket(AF_INET, SOCK_DGRAM, 0);
    ep = epoll_create1(0);
    if (rx < 0 || tx < 0 || ep < 0 || bind(rx, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(rx, (struct sockaddr *)&a, &len) != 0 || connect(tx, (struct sockaddr *)&a, sizeof a) != 0) {
        perror("setup");
        return 1;
    }
    printf("%-20s %8.1f\n", "send+recv", median_ns(send_recv));
    printf("%-20s %8.1f\n", "epoll_ctl add+del", median_ns(add_del));
    printf("%-20s %8.1f\n", "epoll_pwait, 0", median_ns(empty_wait));
    printf("%-20s %8.1f\n", "ppoll set+sock, 0", median_ns(empty_ppoll));
    struct epoll_event none = {.events = 0};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, rx, &none) != 0) {
        perror("epoll_ctl");
        return 1;
    }
    printf("%-20s %8.1f\n", "send+recv, in set", median_ns(send_recv));
    return 0;
}
