dnl The runtime's dependencies, each through RP_CHECK_PKG.

AC_DEFUN([RP_CHECK_PMIX], [
    RP_CHECK_PKG([pmix], [pmix], [pmix.h], [PMIx_Init], [pmix],
        [RP_HEADER_VERSION([rp_pmix_version], [pmix_version.h],
             [PMIX_VERSION_MAJOR], [PMIX_VERSION_MINOR], [PMIX_VERSION_RELEASE])
         AS_IF([test "${rp_pmix_version%%.*}" -lt 4], [
             AC_MSG_WARN([PMIx $rp_pmix_version is too old (4.x needed)])
             rp_have_pmix=no])],
        [the PMIx bootstrap (srun --mpi=pmix, mpirun)])
])

AC_DEFUN([RP_CHECK_UCX], [
    RP_CHECK_PKG([ucx], [ucx], [ucp/api/ucp.h], [ucp_init_version], [ucp],
        [AS_IF([test -z "$rp_ucx_version"],
             [RP_HEADER_VERSION([rp_ucx_version], [ucp/api/ucp_version.h],
                  [UCP_API_MAJOR], [UCP_API_MINOR], [0])])],
        [the UCX host-memory transport])
])

dnl CUDA and NCCL default to /usr/local/cuda rather than pkg-config: that is
dnl where NVIDIA's packages put them, and neither ships a .pc file.
AC_DEFUN([RP_CHECK_CUDA], [
    RP_CHECK_PKG([cuda], [cuda-none], [cuda_runtime_api.h], [cudaGetDeviceCount], [cudart],
        [AC_COMPUTE_INT([rp_cudart], [CUDART_VERSION], [#include <cuda_runtime_api.h>], [rp_cudart=0])
         rp_cuda_version="$(( rp_cudart / 1000 )).$(( (rp_cudart % 1000) / 10 ))"],
        [the NCCL GPU transport], [/usr/local/cuda])
    AS_CASE([$with_cuda], [yes|check|no], [rp_cuda_dir=/usr/local/cuda], [rp_cuda_dir=$with_cuda])
])

AC_DEFUN([RP_CHECK_NCCL], [
    RP_CHECK_PKG([nccl], [nccl-none], [nccl.h], [ncclCommInitRank], [nccl],
        [RP_HEADER_VERSION([rp_nccl_version], [nccl.h],
             [NCCL_MAJOR], [NCCL_MINOR], [NCCL_PATCH])],
        [the NCCL GPU transport], [$rp_cuda_dir])
])

dnl The GPU module (runtime/nccl/, ringpoint-nccl.so) needs both CUDA and
dnl NCCL. Their headers are included as system headers: nccl.h declares
dnl ncclGroupStart() without a prototype, which -Wstrict-prototypes
dnl -Werror would otherwise refuse. libdl for the loader where libc lacks it.
AC_DEFUN([RP_CHECK_GPU_MODULE], [
    AC_SEARCH_LIBS([dlopen], [dl])
    rp_have_gpu_module=no
    AS_IF([test $rp_have_cuda = yes && test $rp_have_nccl = yes],
          [rp_have_gpu_module=yes])
    GPU_MODULE_CPPFLAGS=$(echo " $CUDA_CPPFLAGS $NCCL_CPPFLAGS" | sed 's/ -I/ -isystem /g')
    AC_SUBST([GPU_MODULE_CPPFLAGS])
    AM_CONDITIONAL([HAVE_GPU_MODULE], [test $rp_have_gpu_module = yes])
    AS_IF([test $rp_have_gpu_module = yes],
          [AC_DEFINE([HAVE_GPU_MODULE], [1], [Define if the NCCL GPU module is built])])
])
