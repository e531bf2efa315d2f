dnl RP_CHECK_MPI: an MPI C compiler wrapper, for contrib/bench's
dnl MPI_Allreduce benchmark only (ringpoint itself never links MPI).
dnl Takes the wrapper's flags (Open MPI's --showme, else MPICH's -compile-info
dnl style is not tried: the benchmark compares against Open MPI) and checks
dnl that a program calling MPI_Init links with them. Sets MPI_CFLAGS,
dnl MPI_LIBS, rp_have_mpi and the HAVE_MPI conditional.
AC_DEFUN([RP_CHECK_MPI], [
    AC_ARG_WITH([mpi-bench],
        [AS_HELP_STRING([--without-mpi-bench],
            [do not build the MPI_Allreduce benchmark even if mpicc is found])],
        [], [with_mpi_bench=check])
    rp_have_mpi=no
    AS_IF([test "x$with_mpi_bench" != xno], [
        AC_PATH_PROG([MPICC], [mpicc])
        AS_IF([test -n "$MPICC"], [
            MPI_CFLAGS=$($MPICC --showme:compile 2>/dev/null)
            MPI_LIBS=$($MPICC --showme:link 2>/dev/null)
            AS_IF([test -n "$MPI_LIBS"], [
                rp_save_CFLAGS=$CFLAGS
                rp_save_LIBS=$LIBS
                CFLAGS="$CFLAGS $MPI_CFLAGS"
                LIBS="$MPI_LIBS $LIBS"
                AC_MSG_CHECKING([whether MPI programs link with $MPICC's flags])
                AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]],
                                                [[return MPI_Init(0, 0);]])],
                    [rp_have_mpi=yes], [rp_have_mpi=no])
                AC_MSG_RESULT([$rp_have_mpi])
                CFLAGS=$rp_save_CFLAGS
                LIBS=$rp_save_LIBS
            ])
        ])
        AS_IF([test $rp_have_mpi = no && test "x$with_mpi_bench" = xyes],
            [AC_MSG_ERROR([--with-mpi-bench: no working Open MPI mpicc found])])
    ])
    AC_SUBST([MPI_CFLAGS])
    AC_SUBST([MPI_LIBS])
    AM_CONDITIONAL([HAVE_MPI], [test $rp_have_mpi = yes])
])
