/* MPICH's GPU support queries: Billboard, like Debian's MPICH 4.0.2 (built without GPU
 * support), takes host memory only, so every known GPU type answers 0 and an unknown one is
 * MPI_ERR_ARG; the MPIX_Query_*_support functions return 0. Any N >= 1. */
#include "common.h"

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "mpix_gpu", 1);
    int types[3] = {MPIX_GPU_SUPPORT_CUDA, MPIX_GPU_SUPPORT_ZE, MPIX_GPU_SUPPORT_HIP};
    for (int i = 0; i < 3; i++) {
        int sup = -1;
        MPI_CHK(MPIX_GPU_query_support(types[i], &sup));
        CHECK_EQ(sup, 0, "MPIX_GPU_query_support's answer");
    }
    int sup = -1, cls = -1;
    int rc = MPIX_GPU_query_support(7, &sup);
    CHECK(rc != MPI_SUCCESS, "MPIX_GPU_query_support(7) succeeded");
    MPI_Error_class(rc, &cls);
    CHECK_EQ(cls, MPI_ERR_ARG, "class of MPIX_GPU_query_support(7)");
    CHECK_EQ(MPIX_Query_cuda_support(), 0, "MPIX_Query_cuda_support");
    CHECK_EQ(MPIX_Query_ze_support(), 0, "MPIX_Query_ze_support");
    CHECK_EQ(MPIX_Query_hip_support(), 0, "MPIX_Query_hip_support");
    return t_finish();
}
