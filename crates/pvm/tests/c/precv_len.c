/*
 * pvm_precv's returned length (rlen): what Debian's PVM 3.4 reports for PVM_INT, PVM_BYTE
 * and PVM_DOUBLE, sent with pvm_psend by another task and by this task to itself, and when
 * the message is longer than the buffer. tests/messages.rs compares the output with Debian's.
 */
#include <stdio.h>
#include <string.h>
#include "pvm3.h"

static void sends(int to)
{
    int ints[3] = {1, 2, 3};
    char bytes[5] = "abcd";
    double doubles[2] = {1.5, 2.5};
    pvm_psend(to, 1, ints, 3, PVM_INT);
    pvm_psend(to, 2, bytes, 5, PVM_BYTE);
    pvm_psend(to, 3, doubles, 2, PVM_DOUBLE);
    pvm_psend(to, 4, ints, 3, PVM_INT);     /* received as doubles */
    pvm_psend(to, 5, doubles, 2, PVM_DOUBLE); /* received into 1 double: too long */
}

static void receives(const char *from, int tid)
{
    int ints[8], cc, rtid, rtag, rlen;
    char bytes[8];
    double doubles[4];
    rlen = -1;
    cc = pvm_precv(tid, 1, ints, 8, PVM_INT, &rtid, &rtag, &rlen);
    printf("%s: 3 ints: cc %d rlen %d, %d %d %d\n", from, cc, rlen, ints[0], ints[1], ints[2]);
    rlen = -1;
    cc = pvm_precv(tid, 2, bytes, 8, PVM_BYTE, &rtid, &rtag, &rlen);
    printf("%s: 5 bytes: cc %d rlen %d, %s\n", from, cc, rlen, bytes);
    rlen = -1;
    cc = pvm_precv(tid, 3, doubles, 4, PVM_DOUBLE, &rtid, &rtag, &rlen);
    printf("%s: 2 doubles: cc %d rlen %d, %g %g\n", from, cc, rlen, doubles[0], doubles[1]);
    rlen = -1;
    cc = pvm_precv(tid, 4, doubles, 4, PVM_DOUBLE, &rtid, &rtag, &rlen);
    printf("%s: 3 ints as doubles: cc %d rlen %d\n", from, cc, rlen);
    rlen = -1;
    cc = pvm_precv(tid, 5, doubles, 1, PVM_DOUBLE, &rtid, &rtag, &rlen);
    printf("%s: 2 doubles into 1: cc %d rlen %d\n", from, cc, rlen);
}

int main(int argc, char **argv)
{
    int kid;
    pvm_mytid();
    if (argc > 1 && strcmp(argv[1], "child") == 0) {
        sends(pvm_parent());
        pvm_exit();
        return 0;
    }
    setvbuf(stdout, 0, _IONBF, 0);
    sends(pvm_mytid());
    receives("self", pvm_mytid());
    if (pvm_spawn(argv[0], (char *[]){"child", 0}, PvmTaskDefault, "", 1, &kid) != 1) {
        printf("spawn failed: %d\n", kid);
        pvm_exit();
        return 1;
    }
    receives("other", kid);
    pvm_exit();
    return 0;
}
