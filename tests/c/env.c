/* Environment: Init/Init_thread levels, Initialized, Finalized, Get_version, Get_library_version,
 * Get_processor_name, Wtime, Wtick, Query_thread, Is_thread_main, Pcontrol, Alloc_mem/Free_mem;
 * MPICH's version strings a program built for it may read (MPII_Version_*: the MPICH release and
 * library ABI the library is compatible with).
 * argv[1] picks the init call: init | single | funneled | serialized | multiple (default multiple). */
#include "common.h"

extern const char MPII_Version_string[], MPII_Version_ABI[], MPII_Version_device[];

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "multiple";
    t_name = "env";
    t_watchdog();

    int flag = -1;
    CHECK(MPI_Initialized(&flag) == MPI_SUCCESS, "MPI_Initialized before init failed");
    CHECK(flag == 0, "MPI_Initialized before MPI_Init: expected 0, got %d", flag);
    flag = -1;
    CHECK(MPI_Finalized(&flag) == MPI_SUCCESS, "MPI_Finalized before init failed");
    CHECK(flag == 0, "MPI_Finalized before MPI_Init: expected 0, got %d", flag);

    /* Get_version may be called before init. */
    int ver = -1, sub = -1;
    CHECK(MPI_Get_version(&ver, &sub) == MPI_SUCCESS, "MPI_Get_version before init failed");
    CHECK(ver > 3 || (ver == 3 && sub >= 1), "MPI_Get_version: expected >= 3.1, got %d.%d", ver, sub);
    /* The library implements the standard its header declares: MPI 4.0 (MPICH 4.0.2's and ours). */
    CHECK(ver == MPI_VERSION && sub == MPI_SUBVERSION, "MPI_Get_version %d.%d, the header's MPI_VERSION %d.%d", ver,
          sub, MPI_VERSION, MPI_SUBVERSION);

    int required = MPI_THREAD_MULTIPLE, provided = -1;
    if (!strcmp(mode, "init")) {
        CHECK(MPI_Init(&argc, &argv) == MPI_SUCCESS, "MPI_Init failed");
    } else {
        if (!strcmp(mode, "single"))
            required = MPI_THREAD_SINGLE;
        else if (!strcmp(mode, "funneled"))
            required = MPI_THREAD_FUNNELED;
        else if (!strcmp(mode, "serialized"))
            required = MPI_THREAD_SERIALIZED;
        else if (!strcmp(mode, "multiple"))
            required = MPI_THREAD_MULTIPLE;
        else
            FAIL("unknown mode %s", mode);
        CHECK(MPI_Init_thread(&argc, &argv, required, &provided) == MPI_SUCCESS, "MPI_Init_thread failed");
    }
    t_setup("env", 1);

    /* Thread level constants are ordered. */
    CHECK(MPI_THREAD_SINGLE < MPI_THREAD_FUNNELED && MPI_THREAD_FUNNELED < MPI_THREAD_SERIALIZED &&
              MPI_THREAD_SERIALIZED < MPI_THREAD_MULTIPLE,
          "thread levels not ordered: %d %d %d %d", MPI_THREAD_SINGLE, MPI_THREAD_FUNNELED, MPI_THREAD_SERIALIZED,
          MPI_THREAD_MULTIPLE);
    int q = -1;
    MPI_CHK(MPI_Query_thread(&q));
    CHECK(q >= MPI_THREAD_SINGLE && q <= MPI_THREAD_MULTIPLE, "MPI_Query_thread out of range: %d", q);
    if (strcmp(mode, "init")) {
        CHECK(provided >= MPI_THREAD_SINGLE && provided <= MPI_THREAD_MULTIPLE, "provided out of range: %d", provided);
        CHECK(q == provided, "MPI_Query_thread: expected provided=%d, got %d", provided, q);
        /* The issue requires real MPI_THREAD_MULTIPLE; every lower request is satisfiable too. */
        CHECK(provided >= required, "MPI_Init_thread(required=%d): provided %d", required, provided);
    }
    int main_thread = -1;
    MPI_CHK(MPI_Is_thread_main(&main_thread));
    CHECK(main_thread == 1, "MPI_Is_thread_main on the main thread: expected 1, got %d", main_thread);

    flag = -1;
    MPI_CHK(MPI_Initialized(&flag));
    CHECK(flag == 1, "MPI_Initialized after init: expected 1, got %d", flag);
    flag = -1;
    MPI_CHK(MPI_Finalized(&flag));
    CHECK(flag == 0, "MPI_Finalized after init: expected 0, got %d", flag);

    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = -1;
    memset(lib, 0x7f, sizeof lib);
    MPI_CHK(MPI_Get_library_version(lib, &len));
    CHECK(len > 0 && len < MPI_MAX_LIBRARY_VERSION_STRING, "MPI_Get_library_version length %d", len);
    CHECK(memchr(lib, 0, (size_t)len + 1) != NULL, "library version string not NUL-terminated within len+1");
    CHECK((int)strlen(lib) == len, "library version: strlen %d != resultlen %d", (int)strlen(lib), len);
    CHECK(strcmp(MPII_Version_string, "4.0.2") == 0, "MPII_Version_string %s", MPII_Version_string);
    CHECK(strcmp(MPII_Version_ABI, "14:2:2") == 0, "MPII_Version_ABI %s", MPII_Version_ABI);
    CHECK(MPII_Version_device[0] != 0, "MPII_Version_device is empty");

    char host[MPI_MAX_PROCESSOR_NAME];
    len = -1;
    MPI_CHK(MPI_Get_processor_name(host, &len));
    CHECK(len > 0 && len < MPI_MAX_PROCESSOR_NAME, "MPI_Get_processor_name length %d", len);
    CHECK((int)strlen(host) == len, "processor name: strlen %d != resultlen %d", (int)strlen(host), len);
    char uts[256];
    if (gethostname(uts, sizeof uts) == 0)
        CHECK(strncmp(uts, host, strlen(host)) == 0 || strstr(uts, host) || strstr(host, uts),
              "processor name '%s' unrelated to hostname '%s'", host, uts);

    /* Wtime is monotonic and in seconds; Wtick is a small positive resolution. */
    double tick = MPI_Wtick();
    CHECK(tick > 0.0 && tick <= 0.01, "MPI_Wtick: expected in (0, 0.01], got %g", tick);
    double t0 = MPI_Wtime();
    usleep(50000);
    double t1 = MPI_Wtime();
    CHECK(t1 - t0 >= 0.045 && t1 - t0 < 5.0, "MPI_Wtime over a 50 ms sleep: got %g s", t1 - t0);
    double prev = MPI_Wtime();
    for (int i = 0; i < 100000; i++) {
        double t = MPI_Wtime();
        CHECK(t >= prev, "MPI_Wtime went backwards: %.9f after %.9f", t, prev);
        prev = t;
    }

    /* Pcontrol accepts any level and returns success. */
    MPI_CHK(MPI_Pcontrol(0));
    MPI_CHK(MPI_Pcontrol(1));

    /* Alloc_mem / Free_mem */
    void *mem = NULL;
    MPI_CHK(MPI_Alloc_mem(1 << 20, MPI_INFO_NULL, &mem));
    CHECK(mem != NULL, "MPI_Alloc_mem returned NULL");
    memset(mem, 0xab, 1 << 20);
    MPI_CHK(MPI_Free_mem(mem));

    /* Every rank agrees on the world size; ranks are distinct. */
    int sum = 0;
    MPI_CHK(MPI_Allreduce(&t_rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK_EQ(sum, t_size * (t_size - 1) / 2, "sum of ranks");

    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    int rank = t_rank;
    MPI_CHK(MPI_Finalize());
    flag = -1;
    CHECK(MPI_Finalized(&flag) == MPI_SUCCESS && flag == 1, "MPI_Finalized after finalize: expected 1, got %d", flag);
    flag = -1;
    CHECK(MPI_Initialized(&flag) == MPI_SUCCESS && flag == 1, "MPI_Initialized after finalize: expected 1, got %d",
          flag);
    ver = -1;
    CHECK(MPI_Get_version(&ver, &sub) == MPI_SUCCESS && ver >= 3, "MPI_Get_version after finalize");
    if (rank == 0)
        printf("PASS env\n");
    return 0;
}
